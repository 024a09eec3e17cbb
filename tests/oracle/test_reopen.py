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
    report = check(after, V1)
    assert "CANCEL-07" not in failed_rules(report)
    assert "CANCEL-07" in warned_rules(report), report["violations"]  # but not silently


# --- a cancel sent after a reopen of the working session: every check that rests on it -------

def _reopened_prompt(*, shown: bool) -> TraceBuilder:
    """v1: a prompt (its turn shown or not yet), a session/load of its session while it is
    open, then a cancel the agent provably read."""
    t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10)
    if shown:
        t.v1.chunk(S, "working")
    t.rpc.request("c2a", "session/load", LOAD, 20).rpc.result("a2c", 20, {})
    return t.cancel(S).sync()


def test_a_cancel_after_a_reopen_binds_no_prompt_whose_turn_had_not_shown() -> None:
    """A v1 prompt with no update yet when its session was reopened (kilo's shape, issue 49):
    the cancel after the reopen may address a fresh session object, as for a turn that had
    shown; before, only a cancel of status W was exempted, and this failed CANCEL-07."""
    report = check(_reopened_prompt(shown=False).v1.ended(10, "end_turn"), V1)
    assert "CANCEL-07" not in failed_rules(report), report["violations"]
    warning = next(v for v in report["violations"] if v["rule"] == "CANCEL-07")
    assert warning["level"] == "warn" and "reopened the session at #" in warning["message"]
    roles = [e["role"] for e in warning["evidence"]]
    assert roles[:2] == ["the reopen, while the work ran", "session/cancel"], roles
    control = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10).cancel(S).sync()
    assert "CANCEL-07" in failed_rules(check(control.v1.ended(10, "end_turn"), V1))


def test_a_prompt_reopened_while_it_worked_is_no_deadline_failure() -> None:
    """The zed-codex-acp PROMPT-04 of issue 49: a prompt whose session the client reopened
    while it worked, cancelled after the reopen and unanswered when the client stopped
    looking. The turn may run on in the session object the reopen replaced: a warning that
    says so, not "never answered"."""
    for shown in (True, False):
        report = check(_reopened_prompt(shown=shown), V1, deadline=5.0)
        assert "PROMPT-04" not in failed_rules(report), report["violations"]
        warning = next(v for v in report["violations"] if v["rule"] == "PROMPT-04")
        assert "reopened the session at #" in warning["message"], warning
    control = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10).v1.chunk(S)
    assert "PROMPT-04" in failed_rules(check(control.cancel(S).sync(), V1, deadline=5.0))
    # a prompt sent after the reopen is that session's own: its deadline stands
    later = _reopened_prompt(shown=True).v1.ended(10, "cancelled").prompt(S, 11).cancel(S)
    assert "PROMPT-04" in failed_rules(check(later.sync(), V1, deadline=5.0))


def test_a_warning_in_doubt_brings_back_no_rule_the_revision_lacks() -> None:
    """A deadline in doubt is reported as a warning; that level must not revive a rule the
    revision switches off (zed-codex-acp v1 showed STATE-02, a v2 rule, on a reopened prompt:
    the doubt's warning level overrode the rule's OFF)."""
    from acp_model.spec.rules import RULES

    for shown in (True, False):
        report = check(_reopened_prompt(shown=shown), V1, deadline=5.0)
        revived = {v["rule"] for v in report["violations"]
                   if "v1" not in RULES[v["rule"]].revisions}
        assert not revived, report["violations"]


def test_v2_work_reopened_while_it_ran_owes_no_cancelled_end_on_our_deadline() -> None:
    """v2: the same for reported work (CANCEL-07 at its end, STATE-02 while it runs)."""
    t = turn_start(base(), 10).agent_message(S)
    t.rpc.request("c2a", "session/resume", LOAD, 20).rpc.result("a2c", 20, {})
    t.cancel(S).sync()
    running = check(t, deadline=5.0)
    assert failed_rules(running) == set(), running["violations"]
    assert {"STATE-02"} <= warned_rules(running), running["violations"]
    ended = check(t.agent_message(S).idle(S, "end_turn"))
    assert failed_rules(ended) == set(), ended["violations"]
    assert "CANCEL-07" in warned_rules(ended), ended["violations"]


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


def test_reading_a30_same_makes_a_cancel_after_a_reopen_bind() -> None:
    """The strict reading: the reopened session is the work's own, so the cancel binds and
    ignoring it fails (the shape of claude-agent-acp#415 and codex-acp#186)."""
    same = V1.parse(["A-30=same"])
    report = check(_reopened_prompt(shown=True).v1.ended(10, "end_turn"), same)
    assert "CANCEL-07" in failed_rules(report), report["violations"]
    hung = check(_reopened_prompt(shown=True), same, deadline=5.0)
    assert "PROMPT-04" in failed_rules(hung), hung["violations"]
