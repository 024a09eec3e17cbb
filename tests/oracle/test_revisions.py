"""Two revisions of ACP v2 side by side: the seed's text and the one the official SDKs ship.

Both sides of every difference: what the newer revision forbids fails there and passes under
the seed (and the other way round), each new MUST has a violating trace, ``auto`` decides by
the first prompt response and says why, and a reading a revision decides cannot be chosen
otherwise under it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_model.oracle.offline import check_records
from acp_model.spec import revisions
from acp_model.spec.readings import DEFAULT, ReadingError
from acp_model.spec.rules import RULES
from acp_model.trace import dialect
from acp_model.trace.builder import TraceBuilder
from acp_model.trace.format import iter_trace
from tests.helpers import S, base, check, failed_rules, warned_rules

SDK = DEFAULT.parse(["SPEC=sdk-2.4.0"])


def receipt(mid: str) -> dict[str, Any]:
    return {"messageId": mid}


def sdk_turn(t: TraceBuilder, rid: int, mid: str, text: str = "hello") -> TraceBuilder:
    """A conforming turn of the newer revision: a receipt and the user message it names."""
    return t.prompt(S, rid, text).accepted(rid, receipt(mid)).user_message(S, mid, text) \
        .running(S)


def sdk_flow() -> TraceBuilder:
    t = sdk_turn(base(), 10, "u1").agent_message(S).idle(S, "end_turn")
    return sdk_turn(t, 11, "u2", "again").idle(S, "end_turn")


# --- the decision: --spec auto ---------------------------------------------------------------

def test_auto_decides_by_the_first_prompt_response_and_states_it() -> None:
    report = check_records(sdk_flow().records, spec="auto")
    assert report["verdict"] == "pass", report["violations"]
    spec = report["spec"]
    assert spec["revision"] == "sdk-2.4.0" and spec["requested"] == "auto"
    assert "receipt with messageId 'u1'" in spec["evidence"] and spec["index"] > 0
    seed = check_records(base().prompt(S, 10).accepted(10).user_message(S).running(S)
                         .idle(S, "end_turn").records, spec="auto")
    assert seed["spec"]["revision"] == "seed" and "no messageId" in seed["spec"]["evidence"]
    empty = check_records(base().records, spec="auto")
    assert empty["spec"]["revision"] == "seed" and "no successful" in empty["spec"]["evidence"]


def test_auto_reads_a_trace_only_as_far_as_its_decision(tmp_path: Path) -> None:
    """A long trace is decided and then checked as a stream (nothing is held in memory), and
    `check` hears how far it has read (its progress bar)."""
    records = [r.to_json() for r in sdk_flow().records]
    pulled: list[int] = []

    def stream() -> Iterator[dict[str, Any]]:
        for n, rec in enumerate(records):
            pulled.append(n)
            yield rec

    decision, again = dialect.detect_ahead(stream())
    assert decision.revision == "sdk-2.4.0" and pulled[-1] == decision.index < len(records) - 1
    assert list(again) == records  # those read ahead first, then the rest, each once
    decision, again = dialect.detect_ahead(iter(records[:3]))  # no prompt: undecided
    assert decision.revision == "seed" and list(again) == records[:3]
    path = sdk_flow().log.write(tmp_path / "t.jsonl")
    heard: list[int] = []
    assert len(list(iter_trace(path, heard.append))) == len(records)
    assert heard[-1] == path.stat().st_size and heard == sorted(heard)


def test_a_named_revision_is_stated_too() -> None:
    report = check_records(sdk_flow().records, spec="seed")
    fit = report["spec"].pop("fit")
    assert report["spec"] == {"revision": "seed", "requested": "seed",
                              "evidence": "--spec seed"}
    assert fit["revision"] == "seed"


def test_a_revision_fixes_the_readings_it_decides() -> None:
    assert SDK["A-10"] == "cancel" and SDK["A-16"] == "allow" and SDK["A-05"] == "allow"
    with pytest.raises(ReadingError, match=r"contradicts spec revision sdk-2\.4\.0"):
        SDK.parse(["A-10=keep"])
    assert SDK.parse(["SPEC=seed"]) == DEFAULT  # leaving it opens them again
    assert SDK.changed() == {"SPEC": "sdk-2.4.0"}


def test_every_rule_says_which_revisions_it_applies_to() -> None:
    for rule in RULES.values():
        assert rule.revisions and set(rule.revisions) <= set(revisions.NAMES), rule.id
    new = {r.id for r in RULES.values() if r.revisions == ("sdk-2.4.0",)}
    assert {"SDK-RECEIPT-01", "SDK-RECEIPT-02", "SDK-RECEIPT-03", "SDK-PROMPT-02",
            "SDK-BG-01", "SDK-BG-02", "SDK-BG-03"} <= new
    assert RULES["STATE-03"].effective_strength(revision="sdk-2.4.0") == "SHOULD"
    assert RULES["STATE-03"].effective_strength(revision="seed") == "MUST"


# --- the newer revision's MUSTs, each with a violating trace --------------------------------

def test_a_receipt_that_is_never_echoed_fails_receipt_02() -> None:
    t = base().prompt(S, 10).accepted(10, receipt("u-wrong")).user_message(S, "u-right")
    t.running(S).idle(S, "end_turn")
    report = check(t, SDK)
    assert failed_rules(report) == {"SDK-RECEIPT-02"}
    assert "u-wrong" in report["violations"][0]["message"]
    assert failed_rules(check(t)) == set()  # the seed: messageId is an extra result field


def test_the_echo_may_come_before_the_receipt() -> None:
    t = base().prompt(S, 10).user_message(S, "u1").running(S).accepted(10, receipt("u1"))
    t.idle(S, "end_turn")
    assert failed_rules(check(t, SDK)) == set()


def test_two_receipts_with_one_id_fail_receipt_03() -> None:
    t = sdk_turn(base(), 10, "u1").idle(S, "end_turn")
    t.prompt(S, 11).accepted(11, receipt("u1")).user_message(S, "u1").running(S)
    t.idle(S, "end_turn")
    report = check(t, SDK)
    assert "SDK-RECEIPT-03" in failed_rules(report)
    v = next(v for v in report["violations"] if v["rule"] == "SDK-RECEIPT-03")
    assert [e["role"] for e in v["evidence"]] == ["the earlier receipt",
                                                  "the receipt reusing its id"]
    assert "SDK-RECEIPT-03" not in failed_rules(check(t))


def test_a_receipt_without_message_id_fails_receipt_01() -> None:
    t = base().prompt(S, 10).accepted(10).user_message(S).running(S).idle(S, "end_turn")
    assert failed_rules(check(t, SDK)) == {"SDK-RECEIPT-01"}
    assert failed_rules(check(t)) == set()


def test_an_error_after_the_user_message_was_inserted_fails_prompt_02() -> None:
    t = base().prompt(S, 10, "fix it").user_message(S, "u1", "fix it").running(S)
    t.rejected(10, -32603).idle(S, "error")
    report = check(t, SDK)
    assert failed_rules(report) == {"SDK-PROMPT-02"}
    roles = [e["role"] for e in report["violations"][0]["evidence"]]
    assert roles == ["the prompt", "its user message", "the error response"]


def test_an_error_with_a_user_message_of_other_content_proves_nothing() -> None:
    """A user message of other content may be agent-initiated (the revision allows that)."""
    t = base().prompt(S, 10, "fix it").user_message(S, "u1", "something else").running(S)
    t.rejected(10, -32603).idle(S, "error")
    assert "SDK-PROMPT-02" not in failed_rules(check(t, SDK))


def _background(t: TraceBuilder, state: str, items: list[str] | None,
                reason: str | None = None) -> TraceBuilder:
    upd: dict[str, Any] = {"sessionUpdate": "state_update", "state": state}
    if reason is not None:
        upd["stopReason"] = reason
    if items is not None:
        upd["background"] = [{"type": "tool_call", "toolCallId": i} for i in items]
    return t.update(S, upd)


def _watching() -> TraceBuilder:
    t = sdk_turn(base(), 10, "u1").tool(S, "w1", "in_progress", title="Watch tests",
                                         kind="execute")
    return _background(t, "idle", ["w1"], "end_turn")


def test_background_work_kept_on_every_state_update() -> None:
    t = _watching().tool(S, "w1", "completed")
    t = _background(t, "idle", [])
    assert failed_rules(check(t, SDK)) == set()
    dropped = _watching().prompt(S, 11).accepted(11, receipt("u2")).user_message(S, "u2")
    dropped.running(S)  # no background list: the watcher is still running
    _background(dropped, "idle", ["w1"], "end_turn")
    assert failed_rules(check(dropped, SDK)) == {"SDK-BG-01"}
    assert failed_rules(check(dropped)) == set()


def test_a_background_item_must_be_announced_first() -> None:
    t = _background(sdk_turn(base(), 10, "u1"), "idle", ["ghost"], "end_turn")
    assert failed_rules(check(t, SDK)) == {"SDK-BG-02"}


def test_a_tool_call_leaves_the_background_list_only_when_final() -> None:
    t = _background(_watching(), "idle", []).tool(S, "w1", "completed")
    assert failed_rules(check(t, SDK)) == {"SDK-BG-03"}


# --- what changes between the revisions ------------------------------------------------------

def test_a_held_prompt_that_outlives_a_cancel_fails_only_in_the_newer_revision() -> None:
    t = sdk_turn(base(), 10, "u1").prompt(S, 11).cancel(S).sync().idle(S, "cancelled")
    t.accepted(11, receipt("u2")).user_message(S, "u2").running(S).idle(S, "end_turn")
    assert failed_rules(check(t, SDK)) == {"A-10.cancel"}
    assert warned_rules(check(t)) == {"A-10.cancel"} and failed_rules(check(t)) == set()


def test_work_starting_blocked_is_legal_only_in_the_newer_revision() -> None:
    t = base().prompt(S, 10).accepted(10, receipt("u1")).user_message(S, "u1")
    t.permission(S, 50).requires_action(S).answer(50, "allow").running(S).idle(S, "end_turn")
    assert failed_rules(check(t, SDK)) == set()
    assert "STATE-01" in failed_rules(check(t, DEFAULT.parse(["SPEC=seed"])))


def test_a_missing_stop_reason_only_warns_in_the_newer_revision() -> None:
    t = sdk_turn(base(), 10, "u1").idle(S)
    assert warned_rules(check(t, SDK)) == {"STATE-03"} and failed_rules(check(t, SDK)) == set()
    assert "STATE-03" in failed_rules(check(base().prompt(S, 10).accepted(10).user_message(S)
                                            .running(S).idle(S)))


def test_the_error_stop_reason_exists_only_in_the_newer_revision() -> None:
    t = sdk_turn(base(), 10, "u1").idle(S, "error")
    assert failed_rules(check(t, SDK)) == set()
    seed = base().prompt(S, 10).accepted(10).user_message(S).running(S).idle(S, "error")
    # the seed reserves unknown values for future ACP variants, and this one is sdk-2.4.0's:
    # a warning that the agent follows that revision, not the seed's STOP-03 failure
    seed_report = check(seed)
    assert failed_rules(seed_report) == set()
    assert warned_rules(seed_report) == {"ACPM-ENUM-REVISION"}
    invented = base().prompt(S, 10).accepted(10).user_message(S).running(S).idle(S, "crashed")
    assert "STOP-03" in failed_rules(check(invented))


def test_a_value_of_another_revision_is_one_warning_then_counted_in_the_fit() -> None:
    """The seed judging sdk-2.4.0's stop reason ``error`` twice: one ACPM-ENUM-REVISION
    warning, and the revision fit counts both messages (one cause, one finding)."""
    t = base()
    for rid in (10, 11):
        t.prompt(S, rid).accepted(rid).user_message(S).running(S).idle(S, "error")
    report = check(t)
    assert [v["rule"] for v in report["violations"]] == ["ACPM-ENUM-REVISION"]
    [shape] = report["spec"]["fit"]["shapes"]
    assert shape["follows"] == ["sdk-2.4.0"] and shape["messages"] == 2

def test_a_cancelled_work_reported_as_error_fails_cancel_07_in_the_newer_revision() -> None:
    t = sdk_turn(base(), 10, "u1").cancel(S).sync().idle(S, "error")
    report = check(t, SDK)
    assert failed_rules(report) == {"CANCEL-07"}
    rules = {r["id"]: r for r in report["rules"]}
    assert "not error" in rules["CANCEL-07"]["citation"]


# --- the fuzzer plays either revision ----------------------------------------------------

@pytest.mark.parametrize(("agent_args", "revision"), [
    ([], "seed"), (["--spec", "sdk-2.4.0"], "sdk-2.4.0"),
    (["--design", "result=message-id"], "sdk-2.4.0"),  # a receipt is what auto goes by
])
def test_auto_probes_a_live_agent(agent_args: list[str], revision: str) -> None:
    import sys

    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.fuzzing.run import run_fuzz

    argv = [sys.executable, "-m", "acp_model.agents.reference", *agent_args]
    result = run_fuzz(FuzzConfig(argv, max_examples=3, steps=6, seed=1, spec="auto",
                                 replay_runs=1, max_rounds=1))
    assert result.cfg.decision is not None and result.cfg.decision.revision == revision
    assert result.cfg.readings.revision == revision
    assert result.cfg.decision.evidence.startswith("probe: the response to session/prompt")
    assert all(m.rev == revision for m in result.monitors)


def test_a_reading_the_decided_revision_fixes_otherwise_is_a_usage_error() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--reading", "A-10=keep", "--max-examples",
         "1", "--", sys.executable, "-m", "acp_model.agents.reference", "--spec", "sdk-2.4.0"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "contradicts spec revision sdk-2.4.0" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_check_asks_the_readings_object_and_a_misspelt_value_fails_at_once() -> None:
    """Checks ask ``readings.chose(ID, VALUE)``: a value the reading lacks is an error, never a
    comparison that is silently always false (and no check compares a reading inline)."""
    import re
    from pathlib import Path

    from acp_model.spec.readings import DEFAULT, ReadingError

    assert DEFAULT.chose("A-11", "provable") and not DEFAULT.chose("A-11", "sent")
    assert DEFAULT.parse(["SPEC=v1"]).chose("SPEC", "v1")
    with pytest.raises(ReadingError, match="no value 'snet'"):
        DEFAULT.chose("A-11", "snet")
    with pytest.raises(ReadingError):
        DEFAULT.chose("A-99", "x")
    model = Path(__file__).resolve().parents[2] / "acp_model" / "model"
    inline = [f"{p.name}:{n}" for p in model.glob("*.py")
              for n, line in enumerate(p.read_text().splitlines(), 1)
              if re.search(r'readings\["[A-Z0-9-]+"\] *[!=]= *"', line)]
    assert inline == []


# --- the revision an agent really speaks (the revision fit) -----------------------------------

def _seed_commands_sdk_receipts() -> TraceBuilder:
    """sdk-2.4.0's receipts with the seed's AvailableCommand (no type), three times."""
    t = base()
    for _ in range(3):
        t.update(S, {"sessionUpdate": "available_commands_update",
                     "availableCommands": [{"name": "plan", "description": "Plan"}]})
    return sdk_turn(t, 10, "u1").idle(S, "end_turn")


def test_a_shape_of_another_revision_is_one_finding_and_the_header_says_which() -> None:
    from rich.console import Console

    from acp_model.report.html import render_html
    from acp_model.report.text import render

    report = check_records(_seed_commands_sdk_receipts().records, spec="auto")
    assert report["spec"]["revision"] == "sdk-2.4.0"
    assert report["verdict"] == "pass", report["violations"]
    assert [v["rule"] for v in report["violations"]] == ["ACPM-SCHEMA-TOLERATED"]
    fit = report["spec"]["fit"]
    assert not fit["fits"]
    [shape] = fit["shapes"]
    assert shape["follows"] == ["seed"] and shape["messages"] == 3
    assert "availableCommands/*/type" in shape["shape"]
    console = Console(record=True, width=200)
    render(report, console)
    assert "revision fit: the agent speaks sdk-2.4.0 except" in console.export_text()
    assert "revision fit" in render_html(report)


def test_an_agent_that_fits_its_revision_says_so() -> None:
    report = check_records(sdk_flow().records, spec="auto")
    assert report["spec"]["fit"]["fits"] and report["spec"]["fit"]["shapes"] == []


def _v1_agent_naming_version_2(v1_fields: bool) -> TraceBuilder:
    """An agent written from the v1 text that answers initialize with protocol version 2."""
    t = TraceBuilder().rpc.request("c2a", "initialize", {
        "protocolVersion": 2, "capabilities": {}, "info": {"name": "e", "version": "1"}}, 0)
    t.rpc.result("a2c", 0, {"protocolVersion": 2, "authMethods": [],
                            "agentCapabilities": {"loadSession": False, "promptCapabilities": {}},
                            "agentInfo": {"name": "a", "version": "1"}} if v1_fields else
                 {"protocolVersion": 2, "capabilities": {}, "info": {"name": "a", "version": "1"}})
    t = t.v1.new_session(S).rpc.request("c2a", "session/prompt", {
        "sessionId": S, "prompt": [{"type": "text", "text": "go"}]}, 10)
    t.v1.tool_call(S, "t1").v1.permission(S, "p1", "t1")
    t.rpc.result("c2a", "p1", {"outcome": {"outcome": "selected", "optionId": "allow"}})
    t.update(S, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
    return t.v1.chunk(S, "done").v1.ended(10)


@pytest.mark.parametrize("v1_fields", [True, False], ids=["v1-initialize", "v1-turn-end"])
def test_negotiating_one_version_and_speaking_another_is_one_failure(v1_fields: bool) -> None:
    trace = _v1_agent_naming_version_2(v1_fields)
    report = check_records(trace.records, spec="auto")
    assert report["spec"]["revision"] == "v1" and report["spec"]["negotiated"] == 2
    failures = [v for v in report["violations"] if v["level"] == "fail"]
    assert [v["rule"] for v in failures] == ["INIT-03"], report["violations"]
    proof = "agentCapabilities, agentInfo" if v1_fields else "stopReason 'end_turn'"
    assert proof in failures[0]["message"]
    # judged by the version it names, the one cause was several failures
    assert len(failed_rules(check_records(trace.records, spec="seed"))) > 1
