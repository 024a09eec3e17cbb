"""v1, one more revision of the same model: the reference agent's v1 mode passes, each of its
v1 mutants is found under the rule v1 breaks, and a recorded v1 trace is judged as v1 without
being told."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from acp_model.agents.mutants import BY_NAME, V1_RULES
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.run import run_fuzz
from acp_model.oracle.offline import check_records
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S

REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]


def _fuzz(argv: list[str], **kw: object) -> tuple[dict[str, object], object]:
    # what is found is read, not its counterexample: no replays, a second of minimizing (a
    # liveness mutant's every fresh-process run waits out a deadline)
    cfg = FuzzConfig(argv, seed=1, spec="auto", protocol=1, deadline=3.0, replay_runs=0,
                     shrink_budget=5.0, minimize_budget=1.0, **kw)  # type: ignore[arg-type]
    result = run_fuzz(cfg)
    return result.recorder.found, cfg


def test_the_reference_agent_passes_under_v1() -> None:
    """The probe decides v1 from the initialize answer; the reference agent advertises
    loadSession and session resume, and the fuzzer loads and resumes its sessions, quiet and
    working: nothing is judged against it, not even a warning. (One run for what were two,
    the v1 pass and the v1 load rules.)"""
    from acp_model.report.reach import Reach

    # slow timing: work lasts long enough for loads during it (seed 1 draws loads in most
    # examples; seed 5 drew five, none during work): whether one meets work is the agent's
    # timing, so a run without one is followed by the next seed's (awaiting the proof)
    during = []
    for seed in (1, 2, 3):
        result = _passing_v1_run(seed)
        during.append(result.recorder.reach[Reach.LOADS_DURING_WORK])
        if during[-1]:
            break
    assert during[-1] > 0, during


def _passing_v1_run(seed: int) -> Any:
    """One v1 run of the reference agent, which passes with its lifecycle exercised."""
    from acp_model.report.reach import Reach

    cfg = FuzzConfig([*REFERENCE, "--timing", "slow"], seed=seed, spec="auto", protocol=1,
                     max_examples=40, steps=20, deadline=2.0, time_budget=90)
    result = run_fuzz(cfg)
    assert result.unusable is None
    monitor = result.monitors[0]
    assert monitor.rev == "v1" and monitor.decision.evidence.startswith("probe: the initialize")
    assert not result.recorder.found, {r: f.message for r, f in result.recorder.found.items()}
    assert result.recorder.warnings == {}, sorted(result.recorder.warnings)
    assert result.recorder.examples >= 20
    # the lifecycle was exercised (over every agent process of the run): turns ended by their
    # response, cancels during a turn, permissions answered (a v1 turn shows as running only
    # once its first update arrived, so a loaded machine may answer some before that)
    transitions: dict[str, int] = {}
    for m in result.monitors:
        for key, n in m.machines.transition_counts().items():
            transitions[key] = transitions.get(key, 0) + n
    assert transitions.get("running:idle_reported", 0) > 10, transitions
    assert transitions.get("running:cancel", 0) > 0, transitions
    assert sum(n for k, n in transitions.items() if k.endswith(":permission_answer")) > 0, \
        transitions
    assert result.recorder.reach[Reach.LOADS] > 0
    return result


@pytest.mark.slow  # fuzzes each mutant until its rule is found (the cap: a loaded machine)
@pytest.mark.parametrize("name", sorted(V1_RULES))
def test_each_v1_mutant_is_found_under_its_v1_rule(name: str) -> None:
    rule = V1_RULES[name]
    mutant = BY_NAME[name]
    found, _ = _fuzz([*REFERENCE, "--mutant", name], max_examples=400, time_budget=90.0,
                     max_rounds=6, stop_on=frozenset({rule}))
    assert rule in found, (name, mutant.rule, sorted(found))


def _v1() -> TraceBuilder:
    return TraceBuilder().v1.handshake().v1.new_session(S)


def test_a_recorded_v1_trace_is_judged_as_v1_without_being_told() -> None:
    clean = _v1().prompt(S, 10).v1.chunk(S).v1.tool_call(S, "t1").v1.permission(S, 50, "t1")
    clean.answer(50, "allow").tool(S, "t1", "completed").v1.ended(10)
    clean.prompt(S, 11).v1.chunk(S).cancel(S).v1.chunk(S, "wrapping up").v1.ended(11, "cancelled")
    report = check_records(clean.records, spec="auto")
    assert report["spec"]["revision"] == "v1"
    assert "protocolVersion 1" in report["spec"]["evidence"]
    assert report["verdict"] == "pass", report["violations"]
    # the same exchange judged as v2 is meaningless: the v2 schema rejects v1's messages
    as_v2 = check_records(clean.records, spec="seed")
    assert as_v2["verdict"] == "fail"


@pytest.mark.slow  # builds and checks every witness on both wires
def test_diff_spec_across_protocols_lists_behaviours_whose_verdicts_differ(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`explore --diff-spec v1,seed`: each behaviour's witness passes under one revision and
    fails under the other, and `acp-model check` on the written file (auto) agrees."""
    import json
    import subprocess

    from acp_model.explorer.protocol_diff import protocol_diff

    out = subprocess.run([sys.executable, "-m", "acp_model", "explore", "--diff-spec",
                          "v1,seed", "--format", "json", "--witness-dir", str(tmp_path)],
                         capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    for other, diff in (("seed", doc), ("sdk-2.4.0", protocol_diff("v1", "sdk-2.4.0"))):
        assert len(diff["behaviours"]) >= 5
        for row in diff["behaviours"]:
            assert {row["v1"]["verdict"], row[other]["verdict"]} == {"pass", "fail"}, row
    from acp_model.cli.main import main

    for row in doc["behaviours"]:  # the CLI's own entry point, in this process (a start each)
        for rev in ("v1", "seed"):
            path = tmp_path / f"behaviours-{row['id']}-{rev}.jsonl"
            code = main(["check", str(path), "--spec", rev])
            assert code == (0 if row[rev]["verdict"] == "pass" else 1), (
                row["id"], rev, capsys.readouterr().out[-600:])


def test_content_after_a_prompt_withdrawn_with_cancel_request_is_not_cancel_09() -> None:
    """v1 says 'before responding' of session/cancel; a prompt the client withdrew with
    $/cancel_request and the agent ended cancelled is not bound (codex-acp sends a late
    warning chunk then)."""
    t = _v1().prompt(S, 10).cancel_request("c2a", 10).v1.ended(10, "cancelled")
    t.v1.chunk(S, "Warning: model metadata not found")
    report = check_records([r.to_json() for r in t.records], spec="auto")
    assert report["verdict"] == "pass", report["violations"]
    t = _v1().prompt(S, 10).cancel(S).v1.ended(10, "cancelled").v1.chunk(S, "late")
    assert {v["rule"] for v in check_records([r.to_json() for r in t.records],
                                             spec="auto")["violations"]} == {"CANCEL-09"}


def test_the_proxy_judges_a_v1_session_as_v1_live(tmp_path) -> None:
    """An editor speaking v1 through `acp-model proxy`: the initialize exchange decides v1,
    and a v1 violation (content after the cancelled response) shows live."""
    from acp_model.fuzzing.transport import AgentProcess, is_response_to

    log = tmp_path / "live.log"
    argv = [sys.executable, "-m", "acp_model", "proxy", "--log", str(log), "--",
            *REFERENCE, "--mutant", "updates_after_cancelled_idle", "--timing", "slow"]
    with AgentProcess(argv) as p:
        init = p.calls.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}},
                      timeout=30)
        assert init["protocolVersion"] == 1 and "agentCapabilities" in init
        sid = p.calls.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})["sessionId"]
        rid = p.calls.request("session/prompt", {"sessionId": sid, "prompt": [
            {"type": "text", "text": "analyze the project"}]})
        p.calls.wait_for(lambda m: m.get("method") == "session/update", timeout=10)
        p.calls.notify("session/cancel", {"sessionId": sid})
        response = p.calls.wait_for(lambda m: is_response_to(m, rid), timeout=10)
        assert response is not None and response["msg"]["result"]["stopReason"] == "cancelled"
        p.stderr.wait("CANCEL-09", timeout=10)
        assert "acp-model: FAIL CANCEL-09 (MUST)" in p.stderr_text()
    text = log.read_text()
    assert "FAIL CANCEL-09" in text
    assert "v1" in text, text[-800:]  # the revision that judged, and why


def test_the_reference_agent_replays_a_loaded_session_before_answering() -> None:
    """v1 session/load: the prompt's text and the agent's reply come back as chunks, then the
    answer; session/resume answers without them."""
    from acp_model.fuzzing.actions import Finish, LoadSession, NewSession, Prompt
    from acp_model.fuzzing.client import FuzzClient
    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.spec.readings import DEFAULT

    client = FuzzClient(FuzzConfig([*REFERENCE, "--timing", "fast"], deadline=3.0,
                                   readings=DEFAULT.parse(["SPEC=v1"])))
    try:
        client.initialize()
        assert client.handshake.reloads == {"session/load", "session/resume"}
        for action in (NewSession(), Prompt(0, [{"type": "text", "text": "fix tests"}]),
                       Finish(0), LoadSession(0), LoadSession(0, replay=False)):
            client.perform(action)
        msgs = [r["msg"] for r in client.proc.transcript if isinstance(r.get("msg"), dict)]
        load = next(i for i, m in enumerate(msgs) if m.get("method") == "session/load")
        answered = next(i for i, m in enumerate(msgs) if m.get("id") == msgs[load]["id"]
                        and "result" in m)
        kinds = [m["params"]["update"]["sessionUpdate"] for m in msgs[load:answered]
                 if m.get("method") == "session/update"]
        assert kinds[0] == "user_message_chunk" and "agent_message_chunk" in kinds, kinds
        resume = next(i for i, m in enumerate(msgs) if m.get("method") == "session/resume")
        assert msgs[resume + 1].get("id") == msgs[resume]["id"], msgs[resume:]
        assert client.monitor.violations == []
    finally:
        client.close()
