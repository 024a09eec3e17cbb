"""A session this connection made, reopened with session/load or session/resume (what the
fuzzer's ``load_session`` action sends): the history it replays is judged by the replay rules,
never taken for new work of the session."""

from __future__ import annotations

from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, base, check, failed_rules, turn_start, warned_rules

V1 = DEFAULT.parse(["SPEC=v1"])
LOAD = {"sessionId": S, "cwd": "/tmp/project", "mcpServers": []}
LOADS = {"loadSession": True}  # an agent that advertises session/load


def _v1_cancelled_turn() -> TraceBuilder:
    """v1: a turn that shows, is cancelled and ends cancelled."""
    t = TraceBuilder().v1.handshake(agent_caps=LOADS).v1.new_session(S)
    return t.prompt(S, 10).v1.chunk(S, "working").cancel(S).v1.ended(10, "cancelled")


def test_a_load_after_a_cancelled_turn_replays_history_without_a_failure() -> None:
    """The replay of a cancelled turn's content is history, not content after the cancelled
    end (CANCEL-09), nor a turn of its own."""
    t = _v1_cancelled_turn().rpc.request("c2a", "session/load", LOAD, 20)
    t.v1.chunk(S, "hello", "user_message_chunk").v1.chunk(S, "working")
    report = check(t.rpc.result("a2c", 20, {}), V1)
    assert failed_rules(report) == set(), report["violations"]
    assert warned_rules(report) == set(), report["violations"]


def test_without_the_load_the_same_content_is_a_failure() -> None:
    """The control: the same chunk after the cancelled end, with no load asking for it."""
    report = check(_v1_cancelled_turn().v1.chunk(S, "working"), V1)
    assert "CANCEL-09" in failed_rules(report), report["violations"]


def test_a_history_replayed_after_the_load_answer_is_still_warned() -> None:
    t = _v1_cancelled_turn().rpc.request("c2a", "session/load", LOAD, 20).rpc.result("a2c", 20, {})
    report = check(t.v1.chunk(S, "working"), V1)
    assert "V1-LOAD-01" in warned_rules(report), report["violations"]


def test_a_load_while_the_turn_runs_leaves_the_turn_to_be_judged() -> None:
    """Content while a prompt is unanswered may be the turn's own: it is judged as the turn's
    (here it ends end_turn after a cancel read before the load: CANCEL-07), and the load
    answer does not mark what follows as replay. A cancel sent after the load binds the turn
    no more: the text does not say whether a reopen replaces the session the turn runs in."""
    t = TraceBuilder().v1.handshake(agent_caps=LOADS).v1.new_session(S)
    t.prompt(S, 10).cancel(S).sync()
    t.rpc.request("c2a", "session/load", LOAD, 20).v1.chunk(S, "hello", "user_message_chunk")
    t.rpc.result("a2c", 20, {}).v1.chunk(S, "working").v1.ended(10, "end_turn")
    report = check(t, V1)
    assert "CANCEL-07" in failed_rules(report), report["violations"]
    assert "V1-LOAD-01" not in warned_rules(report), report["violations"]
    after = TraceBuilder().v1.handshake(agent_caps=LOADS).v1.new_session(S).prompt(S, 10)
    after.rpc.request("c2a", "session/load", LOAD, 20).v1.chunk(S, "hello", "user_message_chunk")
    after.rpc.result("a2c", 20, {}).v1.chunk(S, "working").cancel(S).sync().v1.ended(10, "end_turn")
    assert "CANCEL-07" not in failed_rules(check(after, V1))


def _v2_resume_after_turn(user_id: str, agent_id: str) -> TraceBuilder:
    t = turn_start(base(), 10).agent_message(S, "m_agent", "answer").idle(S, "end_turn")
    t.rpc.request("c2a", "session/resume", {**LOAD, "replayFrom": {"type": "start"}}, 20)
    t.user_message(S, user_id, "hello").agent_message(S, agent_id, "answer")
    return t.rpc.result("a2c", 20, {})


def test_a_resumed_session_of_this_connection_replays_without_a_failure() -> None:
    user_id = _first_user_message_id(turn_start(base(), 10))
    report = check(_v2_resume_after_turn(user_id, "m_agent"))
    assert failed_rules(report) == set(), report["violations"]


def test_a_replay_under_one_id_for_two_messages_breaks_sess_08() -> None:
    report = check(_v2_resume_after_turn("msg_replayed", "msg_replayed"))
    assert "SESS-08" in failed_rules(report), report["violations"]


def _first_user_message_id(t: TraceBuilder) -> str:
    for record in t.records:
        msg = record.msg
        params = msg.get("params") if isinstance(msg, dict) else None
        update = params.get("update") if isinstance(params, dict) else None
        if isinstance(update, dict) and update.get("sessionUpdate") == "user_message":
            return str(update["messageId"])
    raise AssertionError("no user message")


def test_a_second_load_replays_before_its_own_answer_without_a_warning() -> None:
    t = _v1_cancelled_turn().rpc.request("c2a", "session/load", LOAD, 20).rpc.result("a2c", 20, {})
    t.rpc.request("c2a", "session/load", LOAD, 21).v1.chunk(S, "working")
    report = check(t.rpc.result("a2c", 21, {}), V1)
    assert warned_rules(report) == set(), report["violations"]
