"""What a turn's end implies (issue 50 item 2): v1's response ends the turn ("If there are no
pending tool calls, the turn ends and the Agent MUST respond"), so content of that turn
written after it, with no prompt since, shows work still pending when the agent answered:
V1-TURN-01's warning (a cancelled turn's is CANCEL-09's failure). What is not turn content,
and what a race explains, is left alone; v2 lets background activity write while idle."""

from __future__ import annotations

from typing import Any

from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, base, check, turn_start

V1 = DEFAULT.parse(["SPEC=v1"])
LOAD = {"sessionId": S, "cwd": "/tmp/project", "mcpServers": []}


def _ended() -> TraceBuilder:
    """v1: a turn with a reply and a tool call still in progress, answered end_turn."""
    t = TraceBuilder().v1.handshake(agent_caps={"loadSession": True}).v1.new_session(S)
    t.prompt(S, 10).v1.chunk(S, "reply")
    t.v1.tool_call(S, "t1").tool(S, "t1", "in_progress")
    return t.v1.ended(10, "end_turn")


def _verdicts(t: TraceBuilder, readings: Any = V1) -> list[tuple[str, str]]:
    return [(v["rule"], v["level"]) for v in check(t, readings)["violations"]]


def test_a_message_after_the_turns_end_is_a_warning_with_its_proof() -> None:
    report = check(_ended().v1.chunk(S, "the reply's tail"), V1)
    assert [(v["rule"], v["level"]) for v in report["violations"]] == [("V1-TURN-01", "warn")]
    v = report["violations"][0]
    assert [e["role"] for e in v["evidence"]] == ["the response ending the turn",
                                                  "content after it"]
    assert "still pending when the agent answered" in v["message"]


def test_a_tool_of_the_turn_finishing_after_its_end_is_a_warning() -> None:
    """The tool call was in progress when the agent answered end_turn."""
    assert _verdicts(_ended().tool(S, "t1", "completed")) == [("V1-TURN-01", "warn")]


def test_a_thought_after_the_end_is_turn_content_too() -> None:
    t = _ended().v1.chunk(S, "hmm", "agent_thought_chunk")
    assert _verdicts(t) == [("V1-TURN-01", "warn")]


def test_session_level_updates_after_the_end_are_no_turn_content() -> None:
    t = _ended()
    t.update(S, {"sessionUpdate": "available_commands_update", "availableCommands": []})
    t.update(S, {"sessionUpdate": "usage_update", "used": 10, "size": 100})
    t.update(S, {"sessionUpdate": "current_mode_update", "currentModeId": "ask"})
    assert _verdicts(t) == []


def test_content_after_a_new_prompt_was_sent_may_be_its_turn() -> None:
    """The race: the next prompt went out before the content arrived, so the content may be
    the new turn's (the agent may have read the prompt first)."""
    assert _verdicts(_ended().prompt(S, 11).v1.chunk(S, "new turn").v1.ended(11)) == []


def test_a_loads_replay_is_no_late_content() -> None:
    t = _ended().rpc.request("c2a", "session/load", LOAD, 20)
    t.v1.chunk(S, "hello", "user_message_chunk").v1.chunk(S, "reply")
    assert _verdicts(t.rpc.result("a2c", 20, {})) == []


def test_a_cancelled_turns_late_content_stays_cancel_09s_failure() -> None:
    t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10).v1.chunk(S).cancel(S)
    t.v1.ended(10, "cancelled").v1.chunk(S, "late")
    assert _verdicts(t) == [("CANCEL-09", "fail")]


def test_a_session_handed_out_again_shows_no_late_content() -> None:
    """gptme's reuse of one session id for every session/new (SESS-01 judges it): what it
    writes for the 'new' session is not the old turn's."""
    t = _ended().v1.new_session(S).v1.chunk(S, "Resumed session")
    assert _verdicts(t) == [("SESS-01", "fail")]


def test_v2_background_activity_may_write_after_idle() -> None:
    """seed §Session States: 'Background activity MAY continue and emit other session/update
    notifications while the Agent reports idle' (sdk-2.4.0 $defs.StateUpdate alike)."""
    t = turn_start(base(), 10).agent_message(S).idle(S, "end_turn").agent_message(S, chunk=True)
    assert _verdicts(t, DEFAULT) == []
    sdk = _verdicts(t, DEFAULT.parse(["SPEC=sdk-2.4.0"]))
    assert "V1-TURN-01" not in {rule for rule, _ in sdk}, sdk
