"""The client's deliberate breaches in a counterexample (issue 49, cause J): minimizing tries
the program without them first and keeps one only when the failure needs it; a counterexample
that keeps one names it in words, and a proof that rests on what the text leaves undefined
after it (what the agent did with an allow sent after the cancel) is a warning."""

from __future__ import annotations

import dataclasses
import sys
import threading
from typing import Any

import pytest

from acp_model.fuzzing import shrink
from acp_model.fuzzing.actions import (
    Action,
    Cancel,
    LateAllow,
    NegativeInput,
    NewSession,
    Probe,
    Prompt,
    SloppyAnswer,
)
from acp_model.fuzzing.artifacts import counterexample_text, fuzz_report
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.ops import Mistake
from acp_model.fuzzing.recorder import Found, Recorder
from acp_model.fuzzing.replay import replay_once
from acp_model.fuzzing.run import FuzzResult
from acp_model.fuzzing.schedule import Schedule
from acp_model.fuzzing.shrink import ReplayOutcome, Stage
from acp_model.oracle.monitor import Violation
from acp_model.report.breaches import Breach, breach_words, kept_breaches

CMD = ["true"]  # never started: every replay here is a stand-in
SID = {"sessionId": "s1"}
TOOL = {"toolCallId": "t1", "title": "rm"}
OPTIONS = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]


def _c(msg: dict[str, Any], probe: bool = False) -> dict[str, Any]:
    return {"dir": "c2a", "msg": {"jsonrpc": "2.0", **msg}, **({"probe": True} if probe else {})}


def _a(msg: dict[str, Any]) -> dict[str, Any]:
    return {"dir": "a2c", "msg": {"jsonrpc": "2.0", **msg}}


def _update(**update: Any) -> dict[str, Any]:
    return _a({"method": "session/update", "params": {**SID, "update": update}})


RECORDS: list[dict[str, Any]] = [
    _c({"id": 1, "method": "session/new", "params": {}}),  # 0
    _a({"id": 1, "result": SID}),  # 1
    _c({"id": 9, "method": "session/prompt", "params": {  # 2: a prompt for no session
        "sessionId": "nobody", "prompt": []}}, probe=True),
    _a({"id": 9, "error": {"code": -32002, "message": "not found"}}),  # 3
    _c({"id": 10, "method": "_acp_model/unknown", "params": {}}, probe=True),  # 4: legal
    _a({"id": 10, "error": {"code": -32601, "message": "no"}}),  # 5
    _c({"id": 2, "method": "session/prompt", "params": {**SID, "prompt": []}}),  # 6
    _update(sessionUpdate="tool_call", status="pending", **TOOL),  # 7
    _a({"id": 0, "method": "session/request_permission", "params": {  # 8
        **SID, "toolCall": TOOL, "options": OPTIONS}}),
    _c({"method": "session/cancel", "params": SID}),  # 9
    _c({"id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}},
       probe=True),  # 10: an allow after the cancel (CANCEL-04 broken on purpose)
    _a({"id": 2, "result": {"stopReason": "cancelled"}}),  # 11
    _update(sessionUpdate="tool_call_update", toolCallId="t1", status="completed"),  # 12
    {"dir": "c2a", "raw": '{"jsonrpc": "2.0", "method"', "probe": True},  # 13: after it
]
NUMBERS = list(range(len(RECORDS)))


def test_the_breaches_are_read_off_the_transcript() -> None:
    kept = kept_breaches(RECORDS, NUMBERS)
    assert [(k.number, k.breach) for k in kept] == [
        (2, Breach.UNKNOWN_SESSION), (10, Breach.ALLOW_AFTER_CANCEL), (13, Breach.GARBAGE)]
    assert kept[1].request == 8 and kept[1].tool_call == "t1"
    assert Breach.ALLOW_AFTER_CANCEL.rule == "CANCEL-04"  # what the client breaks


def test_a_proof_citing_what_the_agent_did_with_the_stray_allow_rests_on_it() -> None:
    lines, resting = breach_words(RECORDS, NUMBERS, 12, [11, 12])  # CANCEL-09-like
    assert [k.number for k in resting] == [10]
    assert any("#10 is a deliberate breach of CANCEL-04" in line and "a warning" in line
               for line in lines), lines
    assert not any("#13" in line for line in lines)  # after the offending message


def test_a_stray_allow_taken_for_another_request_is_cited_but_not_rested_on() -> None:
    """PERM-11's proof names the stray allow the agent took for a new request whose own
    answer never came: that tool needed its own allow, which the text defines (the zoo's
    late_allow_next_permission mutant must still fail)."""
    other = {"toolCallId": "t2", "title": "rm -rf"}
    records = [*RECORDS[:13],
               _a({"id": 1, "method": "session/request_permission", "params": {
                   **SID, "toolCall": other, "options": OPTIONS}}),  # 13
               _update(sessionUpdate="tool_call_update", toolCallId="t2",
                       status="completed")]  # 14
    lines, resting = breach_words(records, list(range(len(records))), 14, [13, 10, 14])
    assert resting == [], lines
    assert any("#10 is a deliberate breach of CANCEL-04" in line and "another request" in line
               and "does not rest on it" in line for line in lines), lines


@pytest.mark.parametrize(("later", "rests"), [
    ([], True),  # the write right after the allow may be the allowed tool running
    # after the client's next prompt in that session, the write is that turn's own
    ([_c({"id": 3, "method": "session/prompt", "params": {**SID, "prompt": []}})], False),
])
def test_a_client_method_the_allowed_tool_may_have_called_rests_on_the_allow(
        later: list[dict[str, Any]], rests: bool) -> None:
    """opencode v1's INIT-16 (s15): fs/write_text_file, which names no tool call, came right
    after a late allow of the tool that writes; the proof rests on what the agent did with an
    answer it should not have had, so the failure is a warning."""
    write = _a({"id": 5, "method": "fs/write_text_file", "params": {
        **SID, "path": "/tmp/a", "content": "x"}})
    records = [*RECORDS[:12], *later, write]
    n = len(records) - 1
    lines, resting = breach_words(records, list(range(len(records))), n, [10, n])
    assert [k.number for k in resting] == ([10] if rests else []), lines


def test_a_proof_that_only_uses_a_probe_s_answer_does_not_rest_on_it() -> None:
    lines, resting = breach_words(RECORDS, NUMBERS, 11, [2, 3, 11])
    assert resting == []
    first = next(line for line in lines if line.startswith("#2 "))
    assert "SESS-13" in first and "reading A-26" in first and "oracle/store.py" in first
    assert "the proof cites #2 only as a request whose answer proves" in first
    assert any("#10" in line and "does not rest on it" in line for line in lines)


def _found(index: int, evidence: list[int]) -> Found:
    v = Violation("CANCEL-09", "fail", "MUST", index, "a tool update after the cancelled end",
                  evidence=[(i, "cited") for i in evidence])
    program: list[Action] = [NewSession(), Prompt(0, [{"type": "text", "text": "go"}])]
    found = Found("CANCEL-09", v, program, RECORDS, index, [program], 0.0, 0.0)
    found.replay_records, found.replay_offending = RECORDS, index
    found.fresh_hits = found.reproduced = found.replays = 1
    return found


def test_a_failure_resting_on_a_breach_is_a_warning_that_says_why() -> None:
    cfg = FuzzConfig(CMD)
    resting = _found(12, [11, 12])
    assert not resting.stands
    text = counterexample_text(resting, cfg)
    assert "WARNING, not a failure: its proof rests on what the agent did after the " \
           "client's deliberate breach #10 (CANCEL-04)" in text, text
    assert "Deliberate breaches the program keeps" in text
    (v,) = fuzz_report(FuzzResult(cfg, Recorder(found={"CANCEL-09": resting}), [], 1.0)
                       )["violations"]
    assert v["level"] == "warn" and "deliberate breach #10" in v["message"]
    standing = _found(11, [2, 3, 11])
    assert standing.stands and "WARNING" not in counterexample_text(standing, cfg)


BREACHING = (Probe, SloppyAnswer, LateAllow)  # (those here all break a client rule)


class _NeedsCancel:
    """A bug that needs a session, a prompt and then a cancel (a sloppy answer's cancel will
    do): any breach is noise to it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: list[list[Action]] = []

    def __call__(self, cfg: FuzzConfig, actions: list[Action], rule: str | None,
                 abort: threading.Event | None = None, **kw: Any) -> ReplayOutcome:
        with self.lock:
            self.runs.append(list(actions))
        opened = prompted = False
        out = ReplayOutcome(False, [], [], None)
        for n, a in enumerate(actions, start=1):
            opened = opened or isinstance(a, NewSession)
            prompted = prompted or (opened and isinstance(a, Prompt))
            if prompted and (isinstance(a, Cancel) or (isinstance(a, SloppyAnswer)
                                                       and a.mistake == Mistake.AFTER_CANCEL)):
                out = ReplayOutcome(True, [Violation(rule or "X", "fail", "MUST", 1, "x")],
                                    [], 1, None, n)
                break
        return dataclasses.replace(out, schedule=Schedule((), len(actions)),
                                   held=kw.get("schedule") is not None)


def test_minimizing_removes_the_breaches_first_and_keeps_only_the_legal_part(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _NeedsCancel()
    monkeypatch.setattr(shrink, "replay_once", fake)
    go = Prompt(0, [{"type": "text", "text": "go"}])
    program: list[Action] = [
        NewSession(), Probe(0, NegativeInput.UNKNOWN_SESSION), go,
        LateAllow(0, Prompt(0, [{"type": "text", "text": "again"}])),
        Probe(0, NegativeInput.GARBAGE), SloppyAnswer(0, Mistake.AFTER_CANCEL)]
    v = Violation("X", "fail", "MUST", 1, "x")
    found = Found("X", v, program, [], 0, [program], 0.0, 0.0,
                  candidates=[(program, [program])])
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=2, minimize_budget=10.0), found)
    assert not any(isinstance(a, BREACHING) for a in found.actions), found.actions
    assert [type(a) for a in found.actions] == [NewSession, Prompt, Cancel], found.actions
    m = found.minimize
    assert m is not None and m["stages"][Stage.BREACHES.value]["changes"] >= 1, m
    # the first trial after the search (the program, and it letting its session settle) is
    # the program without any of its breaches
    first = next(p for p in fake.runs if p[:len(program)] != program)
    assert not any(isinstance(a, BREACHING) for a in first), first


def test_the_zoo_s_stray_allow_mutant_still_fails_with_the_breach_named() -> None:
    """late_allow_next_permission keeps a late allow for cancelled work and takes it for the
    next request: PERM-11's proof cites that allow, which the counterexample names as the
    client's breach of CANCEL-04, and the failure stands (the new request needed its own)."""
    cfg = FuzzConfig([sys.executable, "-m", "acp_model.agents.reference", "--mutant",
                      "late_allow_next_permission"])
    program: list[Action] = [NewSession(), Prompt(0, [{"type": "text", "text": "go"}]),
                             LateAllow(0, Prompt(0, [{"type": "text", "text": "again"}]))]
    out = next((o for o in (replay_once(cfg, program, "PERM-11") for _ in range(3))
                if o.reproduced), None)
    assert out is not None, "the mutant did not show PERM-11 in three replays"
    v = next(v for v in out.violations if v.rule == "PERM-11")
    lines, resting = breach_words(out.records, list(range(len(out.records))), v.index,
                                  [i for i, _ in v.evidence])
    assert resting == [], lines
    assert any("deliberate breach of CANCEL-04 by the client, written by action 3" in line
               for line in lines), lines
