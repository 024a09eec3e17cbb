"""The teardown's acts are named where a proof rests on them: a cancel the client wrote after
the program's last action (cancel what is still busy) is not one of the numbered actions, and
a maintainer must not look for it there (the s7 matrix's qwen-code and opencode CANCEL-07)."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

from acp_model.fuzzing import shrink
from acp_model.fuzzing.actions import Action, Cancel, NewSession, Prompt
from acp_model.fuzzing.artifacts import counterexample_text, fuzz_report
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.recorder import Found, Recorder
from acp_model.fuzzing.replay import ReplayOutcome
from acp_model.fuzzing.run import FuzzResult
from acp_model.oracle.monitor import Violation
from acp_model.report.proof import TEARDOWN_ROLE, proof_lines
from tests.helpers import kept_issue_body

RULE = "CANCEL-07"
PROGRAM: list[Action] = [NewSession(), Prompt(0, [{"type": "text", "text": "go"}])]
SID = {"sessionId": "s1"}
TEARDOWN = 6  # the message number where the teardown began
RECORDS: list[dict[str, Any]] = [
    {"dir": "c2a", "msg": {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}},
    {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}},
    {"dir": "c2a", "msg": {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}},
    {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 1, "result": SID}},
    {"dir": "c2a", "msg": {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                           "params": {**SID, "prompt": [{"type": "text", "text": "go"}]}}},
    {"dir": "a2c", "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {
        **SID, "update": {"sessionUpdate": "agent_message_chunk",
                          "content": {"type": "text", "text": "hi"}}}}},
    {"dir": "c2a", "msg": {"jsonrpc": "2.0", "method": "session/cancel", "params": SID}},
    {"dir": "c2a", "msg": {"jsonrpc": "2.0", "id": 1000, "method": "_acp_model/sync"}},
    {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 1000, "result": {}}},
    {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}},
]
VIOLATION = Violation(RULE, "fail", "MUST", 9, "response #9 (stopReason 'end_turn'): "
                      "session/cancel #6 was read (#8) while the prompt #4 was open",
                      evidence=[(4, "the prompt"), (6, "session/cancel"),
                                (8, "response proving it was read")])

EVIDENCE = [{"index": i, "role": r} for i, r in VIOLATION.evidence]  # as a report carries it


def _replay(cfg: FuzzConfig, actions: list[Action], rule: str | None,
            abort: threading.Event | None = None, **_: Any) -> ReplayOutcome:
    """Every replay of a program with its prompt reproduces; the teardown's cancel (#6, after
    the program's last action) is what the proof cites."""
    if not any(isinstance(a, Prompt) for a in actions):
        return ReplayOutcome(False, [], [], None)
    return ReplayOutcome(True, [VIOLATION], RECORDS, 9, teardown=TEARDOWN)


@pytest.fixture
def found(monkeypatch: pytest.MonkeyPatch) -> tuple[Found, FuzzConfig]:
    monkeypatch.setattr(shrink, "replay_once", _replay)
    cfg = FuzzConfig(["agent"], replay_runs=2, minimize_budget=5.0)
    found = Found(RULE, VIOLATION, list(PROGRAM), RECORDS, 9, [list(PROGRAM)], 1.0, 1.0,
                  candidates=[(list(PROGRAM), [list(PROGRAM)])])
    shrink.measure_reproduction(cfg, found)
    return found, cfg


def test_the_counterexample_names_the_teardown_s_cancel(found: tuple[Found, FuzzConfig]
                                                         ) -> None:
    f, cfg = found
    assert f.replay_teardown == TEARDOWN
    text = counterexample_text(f, cfg)
    assert "The proof cites the teardown's session/cancel #6 (written after the program's " \
           "last action" in text
    assert "then the teardown (from #6 on in the transcript below)" in text
    lines = text.splitlines()
    cancel = next(n for n, line in enumerate(lines) if line.lstrip().startswith("#6 "))
    assert lines[cancel].endswith("(teardown)") and "teardown's messages" in lines[cancel - 1]
    prompt = next(line for line in lines if line.lstrip().startswith("#4 "))
    assert "(teardown)" not in prompt  # the program's own messages are not the teardown's


def test_the_report_and_the_issue_carry_where_the_teardown_began(
        found: tuple[Found, FuzzConfig], tmp_path: Any) -> None:
    f, cfg = found
    result = FuzzResult(cfg, Recorder(found={RULE: f}), [], 1.0)
    (ce,) = fuzz_report(result)["counterexamples"]
    assert ce["teardown_at"] == TEARDOWN
    lines = proof_lines(RECORDS, 9, EVIDENCE,
                        TEARDOWN)
    cancel = next(line for line in lines if "#6 " in line)
    assert cancel.endswith(f"<- session/cancel ({TEARDOWN_ROLE})")
    assert not any(TEARDOWN_ROLE in line for line in lines if "#4 " in line or "#9 " in line)
    # an older run's entry (no teardown_at) reads as before
    assert not any(TEARDOWN_ROLE in line for line in proof_lines(
        RECORDS, 9, EVIDENCE))
    body = kept_issue_body(tmp_path, PROGRAM, RECORDS,
                           {"rule": RULE, "message": VIOLATION.message,
                            "teardown_at": TEARDOWN, "index": 9, "evidence": EVIDENCE})
    assert "(the teardown, from message #6 on)" in body
    assert f"<- session/cancel ({TEARDOWN_ROLE})" in body



def test_a_zoo_mutant_s_failure_on_the_teardown_s_cancel_names_it() -> None:
    """The reference agent's cancel_as_end_turn mutant on a program that ends with its prompt:
    the cancel CANCEL-07's proof rests on is the teardown's, and the counterexample says so."""
    cfg = FuzzConfig([sys.executable, "-m", "acp_model.agents.reference", "--mutant",
                      "cancel_as_end_turn"], replay_runs=1, minimize_budget=60.0)
    v = Violation(RULE, "fail", "MUST", 0, "as the run saw it")
    f = Found(RULE, v, list(PROGRAM), [], 0, [list(PROGRAM)], 1.0, 1.0,
              candidates=[(list(PROGRAM), [list(PROGRAM)])])
    shrink.measure_reproduction(cfg, f)
    assert f.verified and f.replay_teardown is not None, f.notes
    assert not any(isinstance(a, Cancel) for a in f.actions)  # no cancel of the program's
    assert f.replay_records is not None
    cancel = next(i for i, _ in f.violation.evidence if i >= f.replay_teardown
                  and f.replay_records[i]["msg"].get("method") == "session/cancel")
    text = counterexample_text(f, cfg)
    assert f"The proof cites the teardown's session/cancel #{cancel}" in text, text
