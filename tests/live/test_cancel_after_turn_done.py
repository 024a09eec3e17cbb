"""CANCEL-07 in the end-of-turn window, live (issue 49): the fuzzer writes on a cancel's record
that its scripted model had released the turn's whole final response, and the oracle, judging
the same records, makes the turn's real end answering that cancel a warning.

``own_tools_agent.py --finish-after-final MS`` (a small agent on the scripted model: the bundled
reference agent has none) ignores a cancel read once its model's final response ended and
answers ``end_turn`` MS later. The reference agent's ``cancel_as_end_turn`` mutant, whose
cancels come mid-turn with no model behind it, still fails CANCEL-07 (``tests/live/agents``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from acp_model.fuzzing.actions import Action, from_json
from acp_model.fuzzing.backend import backend
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.replay import ReplayOutcome, replay_once
from acp_model.oracle.offline import check_records
from acp_model.spec.readings import DEFAULT

AGENT = [sys.executable, str(Path(__file__).resolve().parents[1] / "hostile"
                             / "own_tools_agent.py"), "--finish-after-final", "1500"]
RULE = "CANCEL-07"


def _cfg(*readings: str) -> FuzzConfig:
    return FuzzConfig(AGENT, protocol=1, model_api="openai-chat", spec="v1",
                      readings=DEFAULT.parse(["SPEC=v1", *readings]), deadline=5.0)


def _program() -> list[Action]:
    """A prompt whose model answers one chunk of text, and a cancel (proved read by a sync)
    once the client saw that chunk: the model's turn is done, the agent still writing up."""
    return [from_json(a) for a in (
        {"op": "new_session"},
        {"op": "prompt", "s": 0, "blocks": [{"type": "text", "text": "explain"}],
         "model": [{"reply": "text", "chunks": 1}]},
        {"op": "wait", "s": 0, "mode": "update"},
        {"op": "cancel", "s": 0, "sync": True},
        {"op": "wait", "s": 0, "mode": "settled"})]


def _done_cancel(outcome: ReplayOutcome) -> dict[str, Any] | None:
    return next((r for r in outcome.records
                 if (r.get("msg") or {}).get("method") == "session/cancel"
                 and "turn_done" in r), None)


def _ended_end_turn(outcome: ReplayOutcome) -> bool:
    return any((r.get("msg") or {}).get("result") == {"stopReason": "end_turn"}
               for r in outcome.records)


def _runs(cfg: FuzzConfig) -> list[ReplayOutcome]:
    """Replays until one wrote its cancel after the model's final response and the agent then
    ignored it. On a loaded machine the agent may forward the chunk before the model's server
    saw the response end (no fact), or read the cancel before it noted the end itself (it
    honours it: ``cancelled``)."""
    tried: list[ReplayOutcome] = []
    with backend(cfg) as running:
        for _ in range(5):
            tried.append(replay_once(running, _program(), None))
            if _done_cancel(tried[-1]) is not None and _ended_end_turn(tried[-1]):
                break
    return tried


def _cancel_07(outcome: ReplayOutcome) -> list[Any]:
    return [v for v in outcome.violations if v.rule == RULE]


def test_a_cancel_after_the_model_s_final_response_is_a_warning() -> None:
    """Live, no failure; the same records judged offline give the warning and its proof."""
    tried = _runs(_cfg())
    outcome = tried[-1]
    cancel = _done_cancel(outcome)
    assert cancel is not None and _ended_end_turn(outcome), [o.records for o in tried]
    assert _cancel_07(outcome) == [], outcome.violations  # (a replay keeps its failures)
    report = check_records(outcome.records, readings=_cfg().readings)
    found = [v for v in report["violations"] if v["rule"] == RULE]
    assert [v["level"] for v in found] == ["warn"], (found, outcome.records)
    assert "the scripted model had released the turn's final response" in found[0]["message"]


def test_under_the_strict_reading_it_fails() -> None:
    tried = _runs(_cfg("A-33=strict"))
    assert _done_cancel(tried[-1]) is not None and _ended_end_turn(tried[-1]), \
        [o.records for o in tried]
    assert [v.level for v in _cancel_07(tried[-1])] == ["fail"], tried[-1].records
