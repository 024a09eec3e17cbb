"""`acp-model check --one-sided agent`: a recording of the agent's messages alone.

The recording of the reference agent (tests/data/one_sided, made by ``python -m
tests.data.one_sided.record``) is checked both ways; hand-written recordings in the vendors'
golden-file shape show the inference and the faults it still catches.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_model.cli.main import main
from acp_model.model.implied import PLACEHOLDERS
from acp_model.oracle.offline import check_one_sided, check_records, check_trace
from acp_model.oracle.one_sided import (
    OneSidedError,
    golden_lines,
    infer,
    method_of_result,
    not_judged,
    read_lines,
)
from acp_model.report.document import NOT_JUDGED
from acp_model.spec.levels import Level
from acp_model.trace.format import read_trace

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "one_sided"
FULL = DATA / "reference-full.jsonl"
AGENT = DATA / "reference-agent.jsonl"
SID = "<session>"


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["status"] for r in report["rules"]}


def findings(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(v["rule"], v["level"]) for v in report["violations"]}


def update(kind: str, /, **fields: Any) -> dict[str, Any]:
    return {"kind": "notification", "method": "session/update",
            "payload": {"sessionId": SID, "update": {"sessionUpdate": kind, **fields}}}


def state(name: str, **fields: Any) -> dict[str, Any]:
    return update("state_update", state=name, **fields)


def golden_sdk() -> list[dict[str, Any]]:
    """A vendor-shaped recording (sdk-2.4.0 receipts, normalized ids and paths): one turn
    whose edit asks for permission."""
    tool = {"toolCallId": "toolu_1", "title": "Edit src/app.ts", "kind": "edit",
            "status": "pending", "locations": [{"path": "<cwd>/src/app.ts"}]}
    return [
        {"kind": "response", "method": "initialize", "payload": {
            "protocolVersion": 2, "capabilities": {},
            "info": {"name": "golden-agent", "version": "<version>"}}},
        {"kind": "response", "method": "session/new", "payload": {"sessionId": SID}},
        update("available_commands_update",
               availableCommands=[{"type": "command", "name": "plan",
                                   "description": "Plan first"}]),
        update("user_message", messageId="<id-1>",
               content=[{"type": "text", "text": "prompt 1"}]),
        state("running"),
        {"kind": "response", "method": "session/prompt", "payload": {"messageId": "<id-1>"}},
        update("tool_call_update", **tool),
        state("requires_action"),
        {"kind": "request", "method": "session/request_permission", "payload": {
            "sessionId": SID, "title": "Edit src/app.ts?",
            "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                        {"optionId": "no", "name": "No", "kind": "reject_once"}],
            "subject": {"type": "tool_call", "toolCall": tool}}},
        state("running"),
        update("tool_call_update", toolCallId="toolu_1", status="completed"),
        update("agent_message", messageId="<id-2>", content=[{"type": "text", "text": "done"}]),
        state("idle", stopReason="end_turn"),
    ]


# ------------------------------------------------------------- the reference agent


def test_the_agent_only_file_is_the_full_traces_agent_side() -> None:
    """The stored one-sided recording is what ``golden_lines`` makes of the full trace."""
    stored = [json.loads(line) for line in AGENT.read_text().splitlines()]
    assert stored == golden_lines(read_trace(FULL))
    assert len(stored) == sum(1 for r in read_trace(FULL) if r.dir == "a2c")


def test_same_verdicts_as_the_full_trace_for_every_rule_it_judges() -> None:
    full = check_trace(FULL, spec="auto")
    one, _ = check_one_sided(AGENT, spec="auto")
    assert one["spec"]["revision"] == full["spec"]["revision"]
    assert one["verdict"] == full["verdict"]
    full_status, one_status = statuses(full), statuses(one)
    judged = [rid for rid, st in one_status.items() if st != NOT_JUDGED]
    assert {rid: one_status[rid] for rid in judged} == {rid: full_status[rid] for rid in judged}
    held = [rid for rid in judged if one_status[rid] == "held"]
    assert {"STATE-02", "STATE-03", "PROMPT-06", "PERM-02", "ACPM-SCHEMA"} <= set(held)
    assert findings(one) == {f for f in findings(full) if f[0] in judged}


def test_a_fault_in_the_agents_messages_fails_one_sided_as_in_the_full_trace(
        tmp_path: Path) -> None:
    """The first turn's running dropped (STATE-01) and a usage_update broken (USAGE-02):
    each fails under its rule in the one-sided recording, at its line, and in the full one."""
    records = read_trace(FULL)

    def broken(msg: Any) -> Any:
        upd = msg.get("params", {}).get("update", {}) if isinstance(msg, dict) else {}
        if upd.get("sessionUpdate") == "usage_update":
            return {**msg, "params": {**msg["params"], "update": {**upd, "used": -1}}}
        return msg

    first_running = next(i for i, r in enumerate(records) if r.dir == "a2c"
                         and r.msg.get("params", {}).get("update", {}).get("state") == "running")
    mutated = [type(r)(r.dir, msg=broken(r.msg)) for i, r in enumerate(records)
               if i != first_running]
    full = check_records(mutated, spec="auto")
    one, _ = check_one_sided(write_lines(tmp_path / "a.jsonl", golden_lines(mutated)),
                             spec="auto")
    for report in (full, one):
        assert report["verdict"] == "fail"
        assert {"STATE-01", "USAGE-02"} <= {v["rule"] for v in report["violations"]
                                            if v["level"] == Level.FAIL}
    usage = next(v for v in one["violations"] if v["rule"] == "USAGE-02")
    line = json.loads((tmp_path / "a.jsonl").read_text().splitlines()[usage["line"] - 1])
    assert line["payload"]["update"]["sessionUpdate"] == "usage_update"


def test_rules_needing_the_client_are_not_judged_never_held() -> None:
    one, _ = check_one_sided(AGENT, spec="auto")
    st = {r["id"]: r for r in one["rules"]}
    for rid in ("CANCEL-07", "CANCEL-11", "PERM-11", "INIT-01", "PROMPT-04", "ACPM-ANSWER"):
        assert st[rid]["status"] == NOT_JUDGED, rid
        assert st[rid]["not_judged"]
    assert statuses(check_trace(FULL, spec="auto"))["CANCEL-11"] == "held"  # judged there
    assert set(not_judged()) >= {"CANCEL-07", "CANCEL-11", "PERM-11"}


def test_what_was_inferred_is_stated() -> None:
    one, recording = check_one_sided(AGENT, spec="auto")
    whats = [i["what"] for i in one["one_sided"]["inferred"]]
    assert whats[:2] == ["initialize request", "session/new request"]
    assert sum(w.startswith("session/prompt request") for w in whats) == 3
    assert any("permission request" in w and "unknown" in w for w in whats)
    assert any(w.startswith("session/cancel") for w in whats)
    for item in one["one_sided"]["inferred"]:
        assert recording.lines[item["index"]] is None
        assert recording.records[item["index"]].dir == "c2a"
    assert one["one_sided"]["agent_messages"] == len(AGENT.read_text().splitlines())


# ------------------------------------------------------------- the vendors' shape


def test_a_vendor_shaped_recording_is_rebuilt_in_order(tmp_path: Path) -> None:
    report, recording = check_one_sided(write_lines(tmp_path / "g.jsonl", golden_sdk()),
                                        spec="auto")
    assert report["verdict"] == "pass" and not report["violations"], report["violations"]
    assert report["spec"]["revision"] == "sdk-2.4.0"
    methods = [(r.dir, r.msg.get("method") or ("result" if "result" in r.msg else ""))
               for r in recording.records]
    # the prompt goes right after session/new, before the commands update it precedes
    assert methods[4] == ("c2a", "session/prompt")
    assert methods[5] == ("a2c", "session/update")
    permission = next(i for i, r in enumerate(recording.records)
                      if r.msg.get("method") == "session/request_permission")
    answer = next(i for i, r in enumerate(recording.records) if r.dir == "c2a" and
                  r.msg.get("id") == recording.records[permission].msg["id"])
    assert recording.records[answer].msg["result"]["outcome"]["optionId"] == "yes"
    assert recording.records[answer + 1].msg["params"]["update"]["state"] == "running"
    st = statuses(report)
    assert st["TOOL-19"] == "held"  # <cwd> read as an absolute path
    assert report["one_sided"]["placeholders"] == {"<cwd>": "/acp-model-inferred/cwd"}


def test_a_message_schema_error_fails_at_its_line(tmp_path: Path) -> None:
    lines = golden_sdk()
    del lines[11]["payload"]["update"]["messageId"]  # required of every message update
    report, _ = check_one_sided(write_lines(tmp_path / "g.jsonl", lines), spec="auto")
    failed = [v for v in report["violations"] if v["level"] == Level.FAIL]
    assert failed and all(v["line"] == 12 for v in failed)
    assert "MSG-01" in {v["rule"] for v in failed}


def test_an_update_for_a_tool_call_never_announced_is_flagged_in_v1(tmp_path: Path) -> None:
    v1 = [
        {"kind": "response", "method": "initialize", "payload": {
            "protocolVersion": 1, "agentCapabilities": {}}},
        {"kind": "response", "method": "session/new", "payload": {"sessionId": SID}},
        update("tool_call_update", toolCallId="ghost", status="completed"),
        {"kind": "response", "method": "session/prompt", "payload": {"stopReason": "end_turn"}},
    ]
    report, recording = check_one_sided(write_lines(tmp_path / "v1.jsonl", v1), spec="auto")
    assert report["spec"]["revision"] == "v1"
    assert recording.records[0].msg["params"]["protocolVersion"] == 1
    ghost = [v for v in report["violations"] if v["rule"] == "V1-TOOL-01"]
    assert ghost and ghost[0]["line"] == 3
    clean, _ = check_one_sided(write_lines(tmp_path / "ok.jsonl", [*v1[:2], v1[3]]),
                               spec="auto")
    assert not [v for v in clean["violations"] if v["rule"] == "V1-TOOL-01"]


def test_a_cancelled_stop_implies_a_cancel_just_before_it() -> None:
    lines = read_lines(AGENT)
    recording = infer(lines)
    cancel = next(i for i, r in enumerate(recording.records)
                  if r.msg.get("method") == "session/cancel")
    after = recording.records[cancel + 1].msg["params"]["update"]
    assert after == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}


# ------------------------------------------------------------- other input


def test_an_agent_only_trace_is_read_where_results_name_their_request(tmp_path: Path) -> None:
    trace = tmp_path / "a2c.jsonl"
    trace.write_text("\n".join(json.dumps({"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": n,
                                                                 "result": result}})
                               for n, result in enumerate([
                                   {"protocolVersion": 2, "capabilities": {},
                                    "info": {"name": "a", "version": "1"}},
                                   {"sessionId": "s1"}])) + "\n")
    assert [ln.method for ln in read_lines(trace)] == ["initialize", "session/new"]
    assert method_of_result({"messageId": "m"}) == "session/prompt"
    assert method_of_result({}) is None
    ambiguous = tmp_path / "amb.jsonl"
    ambiguous.write_text(json.dumps({"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 1,
                                                           "result": {}}}) + "\n")
    with pytest.raises(OneSidedError, match="cannot tell which request"):
        read_lines(ambiguous)


def test_what_an_answer_implies_is_its_rows_inference() -> None:
    """The request an answer implies is written by its method's row (``implies``), and a
    result is told by the row whose shape it has (``told``): a prompt's result that names its
    session is a prompt's; a fork, which has no row, is inferred as a reopen that reopens
    nothing (its result names the new session)."""
    from acp_model.model import implied, wire_table
    from acp_model.oracle.one_sided import _At, _implies, _Inference

    rows = wire_table.messages()
    assert _implies("session/resume") is rows["session/resume"].implies is implied.resume
    assert _implies("session/list") is implied.session_scoped
    told = {row.method for row in wire_table.MESSAGES if row.told is not None}
    assert told == {"initialize", "session/new", "session/prompt"}
    assert method_of_result({"sessionId": "s1", "stopReason": "end_turn"}) == "session/prompt"
    assert method_of_result({"sessionId": "s1", "protocolVersion": 1}) == "initialize"
    inference = _Inference([])
    inference.sessions.append("s1")
    forked = _implies("session/fork")({"sessionId": "s2"}, _At(inference, 0))
    assert forked == {"sessionId": "s1", "cwd": PLACEHOLDERS["<cwd>"], "mcpServers": []}
    assert inference.sessions == ["s1"]  # a load would have reopened it
    _implies("session/load")({}, _At(inference, 0))
    assert inference.sessions == ["s1", "s1"]


@pytest.mark.parametrize(("content", "needle"), [
    ("not json\n", "not valid JSON"),
    ('[1, 2]\n', "expected a JSON object"),
    ('{"kind": "reply", "method": "x", "payload": {}}\n', "'kind' must be one of"),
    ('{"kind": "response", "payload": {}}\n', "'method' must name"),
    ('{"kind": "response", "method": "initialize"}\n', "'payload' is missing"),
    ("\n", "no messages"),
    ('{"dir": "c2a", "msg": {"jsonrpc": "2.0", "method": "x"}}\n', "a client message"),
])
def test_bad_input_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    content: str, needle: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    assert main(["check", "--one-sided", "agent", str(path)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_one_sided_client_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--one-sided", "client", str(AGENT)]) == 2
    assert "only recordings of the agent's messages" in capsys.readouterr().err


def test_cli_reports_in_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, html, sarif = tmp_path / "r.json", tmp_path / "r.html", tmp_path / "r.sarif"
    assert main(["check", "--one-sided", "agent", str(AGENT), "--report", str(report),
                 "--html", str(html), "--sarif", str(sarif)]) == 0
    out = capsys.readouterr().out
    assert "client message(s) inferred" in out and "not judged" in out
    data = json.loads(report.read_text())
    assert data["one_sided"]["inferred"] and data["one_sided"]["side"] == "agent"
    page = html.read_text()
    assert "one-sided" in page and "initialize request" in page and "[inferred]" in page
    assert "not judged" in page


def test_junit_skips_what_was_not_judged() -> None:
    from acp_model.report.junit import junit_xml

    one, _ = check_one_sided(AGENT, spec="auto")
    xml = junit_xml(one)
    assert 'name="CANCEL-11"' in xml
    case = xml[xml.index('name="CANCEL-11"'):]
    case = case[:case.index("</testcase>")]
    assert "<skipped" in case and "cancel" in case


def resumed() -> list[dict[str, Any]]:
    """A session of an earlier connection resumed with its history replayed, a prompt
    rejected, then one accepted (sdk-2.4.0)."""
    def upd(kind: str, /, **fields: Any) -> dict[str, Any]:
        return {"kind": "notification", "method": "session/update",
                "payload": {"sessionId": "S1", "update": {"sessionUpdate": kind, **fields}}}

    return [
        {"kind": "response", "method": "initialize", "payload": {
            "protocolVersion": 2, "capabilities": {"session": {"resume": {}}},
            "info": {"name": "x", "version": "1"}}},
        upd("user_message", messageId="m1", content=[{"type": "text", "text": "old"}]),
        upd("agent_message", messageId="m2", content=[{"type": "text", "text": "old answer"}]),
        upd("state_update", state="idle"),
        {"kind": "response", "method": "session/resume", "payload": {}},
        {"kind": "error", "method": "session/prompt",
         "payload": {"code": -32603, "message": "the model failed"}},
        upd("user_message", messageId="m3", content=[{"type": "text", "text": "new"}]),
        upd("state_update", state="running"),
        {"kind": "response", "method": "session/prompt", "payload": {"messageId": "m3"}},
        upd("state_update", state="idle", stopReason="end_turn"),
    ]


def test_a_resume_with_replay_is_inferred_before_the_replay(tmp_path: Path) -> None:
    report, recording = check_one_sided(write_lines(tmp_path / "r.jsonl", resumed()),
                                        spec="auto")
    assert report["verdict"] == "pass" and not report["violations"], report["violations"]
    resume = recording.records[2].msg  # right after the initialize answer
    assert resume["method"] == "session/resume"
    assert resume["params"]["sessionId"] == "S1"
    assert resume["params"]["replayFrom"] == {"type": "start"}
    prompts = [r.msg for r in recording.records if r.msg.get("method") == "session/prompt"]
    assert [p["params"]["sessionId"] for p in prompts] == ["S1", "S1"]
    assert statuses(report)["SDK-RESUME-01"] == "held"


def test_a_resume_answered_without_its_state_snapshot_fails(tmp_path: Path) -> None:
    lines = resumed()
    del lines[3]  # the state_update the resume response must follow
    report, _ = check_one_sided(write_lines(tmp_path / "r.jsonl", lines), spec="auto")
    failed = [(v["rule"], v["line"]) for v in report["violations"] if v["level"] == Level.FAIL]
    assert failed == [("SDK-RESUME-01", 4)]


def test_a_finding_about_an_inferred_request_is_set_aside_not_counted(tmp_path: Path) -> None:
    """sdk-2.4.0 has no session/load: the inferred request breaks ENUM-02 as a client
    message would. That is the inference's doing: set aside, and ENUM-02 not violated."""
    lines = resumed()
    lines[4] = {**lines[4], "method": "session/load"}
    report, _ = check_one_sided(write_lines(tmp_path / "l.jsonl", lines), spec="sdk-2.4.0")
    aside = report["one_sided"]["set_aside"]
    assert {"rule": "ENUM-02", "level": Level.FAIL, "index": 2,
            "why": "a finding about an inferred client message"} in aside
    assert "ENUM-02" not in {v["rule"] for v in report["violations"]}
    assert statuses(report)["ENUM-02"] != "violated"
