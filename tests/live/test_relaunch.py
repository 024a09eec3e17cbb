"""Sessions reopened where editors reopen them: in a fresh agent process (``relaunch``).

The action brings the example's sessions to rest, replaces the agent process by a fresh one
of the same command, directory and environment, and reopens the session there with what the
agent advertised. The bundled reference agent keeps sessions in memory only: the new process
does not know the session, says so with an error (no failure: an agent need not keep its
sessions across processes), and the session is gone for the actions that follow. An agent
that keeps its sessions on disk (``own_tools_agent.py --persist``) finds it, replays its
history, and goes on with it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from acp_model.fuzzing.actions import Action, from_json
from acp_model.fuzzing.backend import backend
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.replay import ReplayOutcome, replay_once
from acp_model.spec.readings import DEFAULT

REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]
OWN_TOOLS = str(Path(__file__).resolve().parents[1] / "hostile" / "own_tools_agent.py")


def _program(replay: bool = True) -> list[Action]:
    return [from_json(a) for a in (
        {"op": "new_session"},
        {"op": "prompt", "s": 0, "blocks": [{"type": "text", "text": "hello there"}]},
        {"op": "wait", "s": 0, "mode": "settled"},
        {"op": "relaunch", "s": 0, "replay": replay},
        {"op": "prompt", "s": 0, "blocks": [{"type": "text", "text": "and again"}]},
        {"op": "wait", "s": 0, "mode": "settled"})]


def _sent(outcome: ReplayOutcome, method: str) -> list[dict[str, Any]]:
    return [r["msg"] for r in outcome.records if r["dir"] == "c2a"
            and isinstance(r.get("msg"), dict) and r["msg"].get("method") == method]


def _answer(outcome: ReplayOutcome, request: dict[str, Any]) -> dict[str, Any]:
    return next(r["msg"] for r in outcome.records if r["dir"] == "a2c"
                and isinstance(r.get("msg"), dict) and r["msg"].get("id") == request["id"]
                and "method" not in r["msg"])


@pytest.mark.parametrize(("protocol", "method"), [(2, "session/resume"), (1, "session/load")])
def test_the_reference_agent_does_not_keep_a_session_across_processes(
        protocol: int, method: str) -> None:
    readings = DEFAULT.parse(["SPEC=v1"]) if protocol == 1 else DEFAULT
    cfg = FuzzConfig(REFERENCE, deadline=2.0, protocol=protocol, readings=readings)
    outcome = replay_once(cfg, _program(), None)
    assert outcome.error is None and not outcome.violations, outcome.violations
    # the records are the new process's: its own initialize, then the reopen
    assert [r["msg"].get("method") for r in outcome.records[:1]] == ["initialize"]
    (reopen,) = _sent(outcome, method)
    assert reopen["params"]["sessionId"].startswith("sess_")
    answer = _answer(outcome, reopen)
    assert answer["error"]["code"] == -32602 and "unknown session" in answer["error"]["message"]
    # the session is gone: the next prompt is not sent to a process that does not know it
    assert _sent(outcome, "session/prompt") == []


def test_an_agent_that_keeps_sessions_on_disk_reopens_one_in_a_new_process() -> None:
    cfg = FuzzConfig([sys.executable, OWN_TOOLS, "--persist"], protocol=1,
                     model_api="openai-chat", spec="v1", readings=DEFAULT.parse(["SPEC=v1"]),
                     deadline=3.0)
    with backend(cfg) as running:
        outcome = replay_once(running, _program(), None)
    assert outcome.error is None and not outcome.violations, outcome.violations
    (load,) = _sent(outcome, "session/load")
    sid = load["params"]["sessionId"]
    assert "result" in _answer(outcome, load)
    replayed = [r["msg"]["params"]["update"] for r in outcome.records
                if r["dir"] == "a2c" and isinstance(r.get("msg"), dict)
                and r["msg"].get("method") == "session/update"
                and r["msg"]["params"]["update"].get("sessionUpdate") == "user_message_chunk"]
    assert replayed and "hello there" in replayed[0]["content"]["text"]
    # the reopened session goes on in the new process
    (prompt,) = _sent(outcome, "session/prompt")
    assert prompt["params"]["sessionId"] == sid and "and again" in str(prompt["params"])
    assert _answer(outcome, prompt)["result"]["stopReason"] == "end_turn"
