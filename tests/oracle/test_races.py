"""Race soundness: every legal ordering passes, the orderings no timing can explain fail."""

from __future__ import annotations

import itertools

import pytest

from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, assert_clean, base, check, failed_rules, turn_start, warned_rules

# --- prompt response, user message and running in any order ------------------------


@pytest.mark.parametrize("order", list(itertools.permutations(("ok", "user", "running"))))
def test_accept_user_message_running_in_any_order(order: tuple[str, ...]) -> None:
    t = base().prompt(S, 10)
    for step in order:
        {"ok": lambda: t.accepted(10), "user": lambda: t.user_message(S),
         "running": lambda: t.running(S)}[step]()
    t.agent_message(S).idle(S, "end_turn")
    assert_clean(check(t))
    strict = check(t, DEFAULT.parse(["A-03=diagram"]))
    if order == ("ok", "user", "running"):
        assert_clean(strict)
    else:
        assert "A-03.diagram" in failed_rules(strict)


# --- cancel vs end_turn ----------------------------------------------------------------------


def test_end_turn_racing_an_unread_cancel_is_legal() -> None:
    t = turn_start(base(), 10).agent_message(S).cancel(S).idle(S, "end_turn")
    assert_clean(check(t))


def test_race_then_cancelled_reply_while_idle_is_tolerated() -> None:
    t = turn_start(base(), 10).cancel(S).idle(S, "end_turn").idle(S, "cancelled")
    assert_clean(check(t))


def test_end_turn_after_provably_read_cancel_fails() -> None:
    t = turn_start(base(), 10).cancel(S).sync().idle(S, "end_turn")
    report = check(t)
    assert failed_rules(report) == {"CANCEL-07"}
    bad = report["violations"][0]
    assert bad["index"] == t.log.last
    assert "cancelled" in bad["message"]


def test_a_prompt_response_is_also_a_proof_of_reading() -> None:
    t = turn_start(base(), 10).cancel(S).prompt(S, 11).accepted(11).user_message(S)
    t.idle(S, "end_turn")
    assert failed_rules(check(t)) == {"CANCEL-07"}


def test_proof_for_an_earlier_message_does_not_cover_a_later_cancel() -> None:
    t = turn_start(base(), 10).rpc.request("c2a", "_acp_model/sync", {}, 70).cancel(S)
    t.rpc.error("a2c", 70, -32601).idle(S, "end_turn")
    assert_clean(check(t))


def test_reading_sent_judges_every_cancel_sent_during_work() -> None:
    t = turn_start(base(), 10).cancel(S).idle(S, "end_turn")
    assert "CANCEL-07" in failed_rules(check(t, DEFAULT.parse(["cancel-race=sent"])))
    never = base().prompt(S, 10).accepted(10).user_message(S).running(S).cancel(S).sync()
    never.idle(S, "end_turn")
    assert_clean(check(never, DEFAULT.parse(["A-11=never"])))


# --- updates between cancel and the cancelled idle; background updates while idle ----------


def test_updates_between_cancel_and_cancelled_idle_are_legal() -> None:
    t = turn_start(base(), 10).tool(S, "t1", "in_progress", title="Build").cancel(S).sync()
    t.agent_message(S, text="stopping").tool_chunk(S, "t1").tool(S, "t1", "cancelled")
    t.usage(S).idle(S, "cancelled")
    assert_clean(check(t))


def test_background_updates_while_idle_are_legal() -> None:
    t = turn_start(base(), 10).idle(S, "end_turn")
    t.usage(S).agent_message(S, text="fyi").tool(S, "bg", "in_progress", title="Index")
    t.tool(S, "bg", "completed").update(S, {"sessionUpdate": "_vendor_status", "x": 1})
    assert_clean(check(t))


def test_updates_to_the_cancelled_work_after_its_idle_fail() -> None:
    t = turn_start(base(), 10).tool(S, "t1", "in_progress", title="Build").cancel(S)
    t.idle(S, "cancelled").tool(S, "t1", "completed")
    assert failed_rules(check(t)) == {"CANCEL-09"}
    assert warned_rules(check(t, DEFAULT.parse(["A-13=warn"]))) == {"CANCEL-09"}
    assert_clean(check(t, DEFAULT.parse(["A-13=allow"])))


# --- cancel at every point ----------------------------------------------------------------


def test_cancel_before_acceptance_then_accept_and_cancelled_idle() -> None:
    t = base().prompt(S, 10).cancel(S).accepted(10).user_message(S).running(S)
    t.idle(S, "cancelled")
    assert_clean(check(t))


def test_cancel_before_acceptance_answered_with_an_error() -> None:
    t = base().prompt(S, 10).cancel(S).rejected(10, -32800)
    assert_clean(check(t))


def test_cancel_before_acceptance_may_still_end_normally() -> None:
    """A-10: the agent may read the cancel before accepting; nothing was running yet."""
    t = base().prompt(S, 10).cancel(S).accepted(10).user_message(S).running(S)
    t.idle(S, "end_turn")
    assert_clean(check(t))


def test_unanswered_prompt_under_a_read_cancel_does_not_bind_a_later_prompts_turn() -> None:
    """Prompt 11 was open when the cancel was read, so its work (if any) must end cancelled
    (A-10); but prompt 12, sent after the cancel, was accepted, and the work that ends with
    end_turn may be 12's alone. Found by the fuzzer on the busy_prompt_deadlock mutant, whose
    real bug (11 is never answered) is PROMPT-04."""
    t = turn_start(base(), 10).prompt(S, 11).cancel(S).sync().idle(S, "cancelled")
    t.prompt(S, 12).accepted(12).user_message(S).running(S).idle(S, "end_turn")
    assert failed_rules(check(t)) == {"PROMPT-04"}


def test_cancel_during_permission_answered_cancelled() -> None:
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Edit")
    t.permission(S, 50, "t1").requires_action(S).cancel(S).answer(50, "cancelled")
    t.tool(S, "t1", "cancelled").idle(S, "cancelled")
    assert_clean(check(t))


def test_withdrawn_permission_may_be_answered_with_minus_32800() -> None:
    t = turn_start(base(), 10).permission(S, 50).requires_action(S).cancel(S)
    t.cancel_request("a2c", 50).answer_error(50, -32800).idle(S, "cancelled")
    assert_clean(check(t))
    assert "CANCEL-04" in failed_rules(check(t, DEFAULT.parse(["A-14=outcome-only"])))


def test_permission_answered_allow_after_cancel_is_a_client_violation() -> None:
    t = turn_start(base(), 10).permission(S, 50).requires_action(S).cancel(S)
    t.answer(50, "allow").idle(S, "cancelled")
    report = check(t)
    assert failed_rules(report) == {"CANCEL-04"}
    assert report["violations"][0]["party"] == "client"


def test_double_cancel_with_one_or_two_cancelled_idles() -> None:
    t = turn_start(base(), 10).cancel(S).cancel(S).idle(S, "cancelled")
    assert_clean(check(t))
    t.idle(S, "cancelled")  # the agent answered the second cancel while idle (A-04 b)
    assert_clean(check(t))
    t.idle(S, "cancelled")  # ... but a third cancelled idle has no cancel left to answer
    assert failed_rules(check(t)) == {"CANCEL-11"}


def test_cancel_while_idle_then_prompt_ends_normally() -> None:
    t = turn_start(base(), 10).idle(S, "end_turn").cancel(S)
    turn_start(t, 11).idle(S, "end_turn")
    assert_clean(check(t))


def test_cancel_while_idle_is_noop_or_obligation_by_reading() -> None:
    t = turn_start(base(), 10).idle(S, "end_turn").cancel(S)
    assert_clean(check(t))
    assert "A-04.idle-cancelled" in failed_rules(check(t, DEFAULT.parse(["A-04=idle-cancelled"])))
    t.idle(S, "cancelled")
    assert_clean(check(t, DEFAULT.parse(["A-04=idle-cancelled"])))


# --- the late cancel that kills the next turn --------------------------------------------


def test_late_cancel_read_before_the_next_prompt_cannot_cancel_it() -> None:
    t = turn_start(base(), 10).cancel(S).idle(S, "end_turn")  # legal race
    t.sync()  # answered before prompt 11 is sent: the cancel was read first
    turn_start(t, 11).idle(S, "cancelled")
    report = check(t)
    assert failed_rules(report) == {"CANCEL-11"}


def test_late_cancel_perhaps_read_with_the_next_prompt_is_probable() -> None:
    """ok#11 proves the cancel was read before the work began, but not before prompt 11 was
    sent: the agent may have read both at once and handled the prompt first (the text does
    not order it), so a turn that ran and then ended `cancelled` is a warning."""
    t = turn_start(base(), 10).cancel(S).idle(S, "end_turn")
    turn_start(t, 11).agent_message(S, chunk=True).idle(S, "cancelled")
    report = check(t)
    assert failed_rules(report) == set(), report["violations"]
    assert warned_rules(report) == {"CANCEL-11"}, report["violations"]


def test_late_cancel_is_not_judged_without_proof() -> None:
    t = turn_start(base(), 10).cancel(S).idle(S, "end_turn")
    t.prompt(S, 11).running(S).idle(S, "cancelled").accepted(11).user_message(S)
    assert_clean(check(t))


def test_cancel_after_a_queued_prompt_may_cancel_its_work() -> None:
    t = turn_start(base(), 10).prompt(S, 11).accepted(11)  # queued: no user message yet
    t.idle(S, "end_turn").cancel(S).sync().user_message(S).running(S).idle(S, "cancelled")
    assert_clean(check(t))


def test_cancel_on_one_session_does_not_justify_another() -> None:
    t = base().new_session("s2")
    turn_start(t, 10)
    turn_start(t, 11, "s2")
    t.cancel(S).idle(S, "cancelled").idle("s2", "cancelled")
    report = check(t)
    assert failed_rules(report) == {"CANCEL-11"}
    assert report["violations"][0]["session"] == "s2"


def test_a_second_stop_reason_for_one_turn_warns_and_fails_only_when_forbidden() -> None:
    """No sentence says MUST here (and the newer revision lets a repeated snapshot carry the
    last stop reason): a warning by default, a failure under its own rule under A-05=forbid."""
    t = turn_start(base(), 10).idle(S, "end_turn").idle(S, "end_turn")
    report = check(t)
    assert failed_rules(report) == set() and warned_rules(report) == {"ACPM-ONE-STOP"}
    assert failed_rules(check(t, DEFAULT.parse(["A-05=forbid"]))) == {"A-05.forbid"}
    assert_clean(check(t, DEFAULT.parse(["A-05=allow"])))
    t2 = turn_start(base(), 10).idle(S, "end_turn").idle(S, "cancelled")
    assert failed_rules(check(t2)) == {"CANCEL-11"}


# --- prompts while busy, several sessions, benign variants --------------------------------


def test_prompt_while_running_joins_the_work() -> None:
    t = turn_start(base(), 10).prompt(S, 11).accepted(11).user_message(S).agent_message(S)
    t.idle(S, "end_turn")
    assert_clean(check(t))
    assert "A-01.forbid" in failed_rules(check(t, DEFAULT.parse(["A-01=forbid"])))


def test_prompt_while_busy_may_be_rejected() -> None:
    t = turn_start(base(), 10).prompt(S, 11).rejected(11, -32602).idle(S, "end_turn")
    assert_clean(check(t))


def test_two_sessions_interleaved() -> None:
    t = base().new_session("s2")
    t.prompt(S, 10).prompt("s2", 11).accepted(11).accepted(10).user_message("s2").running("s2")
    t.user_message(S).running(S).agent_message("s2").agent_message(S).cancel("s2")
    t.idle(S, "end_turn").idle("s2", "cancelled")
    assert_clean(check(t))


def test_benign_variants_pass() -> None:
    t = base().idle(S)  # a bare "session ready" idle right after session/new
    t.prompt(S, 10).running(S).running(S).accepted(10, {"messageId": "m-1", "_meta": {}})
    t.update(S, {"sessionUpdate": "user_message_chunk", "messageId": "u1",
                 "content": {"type": "text", "text": "he"}})
    t.update(S, {"sessionUpdate": "user_message_chunk", "messageId": "u1",
                 "content": {"type": "text", "text": "llo"}})
    t.rpc.a2c([{"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": S, "update": {"sessionUpdate": "usage_update", "used": 1,
                                                      "size": 9}}},
               {"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": S, "update": {"sessionUpdate": "state_update",
                                                      "state": "idle", "stopReason": "end_turn"}}}])
    assert_clean(check(t))


def test_stop_reason_without_running_is_a_warning_under_lenient_minimal_turn() -> None:
    t = base().prompt(S, 10).accepted(10).user_message(S).idle(S, "refusal")
    assert "STATE-01" in failed_rules(check(t))
    assert warned_rules(check(t, DEFAULT.parse(["minimal-turn=lenient"]))) == {"STATE-01"}


def test_requires_action_from_idle_by_reading() -> None:
    t = base().permission(S, 50).requires_action(S)
    t.answer(50, "allow").running(S).idle(S, "end_turn")
    assert "STATE-01" in failed_rules(check(t))
    assert warned_rules(check(t, DEFAULT.parse(["A-16=lenient"]))) == {"STATE-01"}
    assert_clean(check(t, DEFAULT.parse(["A-16=allow"])))


def test_permission_wait_not_reported_is_a_warning() -> None:
    """The agent went on writing while its request blocked the work, and never said so."""
    t = turn_start(base(), 10).permission(S, 50).agent_message(S).answer(50, "allow")
    t.running(S).idle(S, "end_turn")
    report = check(t)
    assert report["verdict"] == "pass"
    assert warned_rules(report) == {"STATE-05"}


def test_one_of_two_requests_answered_lets_the_work_run() -> None:
    """Two permission requests, one answered: the agent reports running and goes on while the
    other waits (codex-acp). The answered tool is work that progresses: sdk-2.4.0 "If other
    foreground work can progress, the state remains running", so no STATE-05. A request no
    sibling answer relieved is still a warning when the agent goes on writing past it."""
    t = turn_start(base(), 10).permission(S, 50).permission(S, 51).requires_action(S)
    t.answer(50, "allow").running(S).agent_message(S).answer(51, "allow").idle(S, "end_turn")
    assert_clean(check(t))
    t = turn_start(base(), 10).permission(S, 50).requires_action(S).answer(50, "allow")
    t.running(S).permission(S, 51).agent_message(S).answer(51, "allow").idle(S, "end_turn")
    assert warned_rules(check(t)) == {"STATE-05"}


def test_running_reported_while_a_request_waits_says_other_work_progresses() -> None:
    """codex-acp runs a reply's tool calls side by side: it asks for the first one's
    permission, reports running and goes on with the second while the first request waits.
    The agent said the work progresses, which the newer text allows when other work can
    ("If other foreground work can progress, the state remains running"): no STATE-05."""
    t = turn_start(base(), 10).requires_action(S).permission(S, 50).running(S)
    t.agent_message(S).answer(50, "allow").idle(S, "end_turn")
    assert_clean(check(t))


def test_a_request_that_outlived_its_turn_holds_up_no_later_turn() -> None:
    """codex-acp ended a turn (idle) while a permission request of it was still open, then ran
    the next prompt, reporting running: the agent says that work progresses while the old
    request waits, as when it reports running mid-turn ("If other foreground work can
    progress, the state remains running"): no STATE-05 when the next turn ends. (It was read as
    the new turn's unreported wait, a warning in a clean-clone run of make test.)"""
    t = turn_start(base(), 10).permission(S, 50).requires_action(S).idle(S, "end_turn")
    t.prompt(S, 11).accepted(11).user_message(S).running(S).agent_message(S)
    t.answer(50, "allow").idle(S, "end_turn")
    assert "STATE-05" not in warned_rules(check(t)), check(t)["violations"]


def test_a_wait_a_cancel_reached_holds_nothing_up() -> None:
    """After a cancel (here written together with the next prompt, as an editor's "stop and
    send this" does), the agent winds the work down as running while its permission request
    still waits for the client's cancelled answer: nothing is blocked on the user any more, so
    no STATE-05 (codex-acp). Without the cancel the same silence is still a warning."""
    t = turn_start(base(), 10).permission(S, 50).requires_action(S).cancel(S)
    t.prompt(S, 11).running(S).agent_message(S).answer(50, "cancelled").idle(S, "cancelled")
    t.accepted(11).user_message(S).running(S).idle(S, "end_turn")
    assert_clean(check(t))


def test_a_permission_answered_before_the_agent_wrote_again_owes_no_report() -> None:
    """An answer that came at once (the client's cancelled answer after a cancel, say) left
    the agent no time to report the block (codex-acp)."""
    t = turn_start(base(), 10).permission(S, 50).answer(50, "allow").running(S)
    assert_clean(check(t.idle(S, "end_turn")))


def test_permission_answered_before_requires_action_arrives_is_fine() -> None:
    t = turn_start(base(), 10).permission(S, 50).answer(50, "allow").requires_action(S)
    t.running(S).idle(S, "end_turn")
    assert_clean(check(t))


def test_a_tool_started_after_an_unread_reject_had_no_allow() -> None:
    """Read or not, the reject left the agent without an allow: had it not read the answer,
    it went ahead with the request still open (no proof of reading is needed either way)."""
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="x").permission(S, 50, "t1")
    t.requires_action(S).answer(50, "reject").running(S).tool(S, "t1", "in_progress")
    t.idle(S, "end_turn")
    report = check(t)
    assert failed_rules(report) == {"PERM-11"}
    roles = {e["role"] for e in report["violations"][0]["evidence"]}
    assert roles == {"permission request", "the answer", "the tool update"}
    assert "the client's only answer was 'reject'" in report["violations"][0]["message"]


def test_an_unread_reject_leaves_a_running_or_withdrawn_tool_alone() -> None:
    """A tool that was already running when it asked may go on reporting until the agent reads
    the answer; a request the agent withdrew is its own to settle."""
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="x").tool(S, "t1", "in_progress")
    t.permission(S, 50, "t1").requires_action(S).answer(50, "reject").running(S)
    t.tool(S, "t1", "completed").idle(S, "end_turn")
    assert_clean(check(t))
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="x").permission(S, 50, "t1")
    t.requires_action(S).cancel_request("a2c", 50).answer(50, "reject").running(S)
    t.tool(S, "t1", "in_progress").idle(S, "end_turn")
    assert_clean(check(t))


def test_strength_source_schema_downgrades_stop_reason_rule() -> None:
    t = turn_start(base(), 10).idle(S, None)
    assert failed_rules(check(t)) == {"STATE-03"}
    assert warned_rules(check(t, DEFAULT.parse(["strength-source=schema"]))) == {"STATE-03"}


def test_agent_initiated_work_by_reading() -> None:
    t = base().running(S).agent_message(S).idle(S, "end_turn")
    assert_clean(check(t))
    assert "A-07.forbid" in failed_rules(check(t, DEFAULT.parse(["A-07=forbid"])))


def test_unreported_initial_state_then_idle_with_reason_warns_one_stop() -> None:
    t = TraceBuilder().handshake().new_session(S).idle(S, "end_turn")
    assert warned_rules(check(t)) == {"ACPM-ONE-STOP"} and failed_rules(check(t)) == set()


def test_session_close_cancels_like_session_cancel() -> None:
    t = turn_start(base(), 10).rpc.request("c2a", "session/close", {"sessionId": S}, 77)
    t.idle(S, "cancelled").rpc.result("a2c", 77, {})
    assert_clean(check(t))


def test_request_id_that_is_an_object_is_an_envelope_error_not_a_crash() -> None:
    t = base().rpc.c2a({"jsonrpc": "2.0", "id": {"x": 1}, "method": "session/list", "params": {}})
    t.rpc.a2c({"jsonrpc": "2.0", "id": {"x": 1}, "result": {"sessions": []}})
    report = check(t)
    assert failed_rules(report) == {"RPC-01"}
    assert len(report["violations"]) == 2


def test_null_id_errors_only_answer_unreadable_input() -> None:
    t = base().rpc.raw("c2a", "{not json", probe=True).rpc.error("a2c", None, -32700, "Parse error")
    assert_clean(check(t))
    t.rpc.error("a2c", None, -32700, "Parse error")  # a second one: nothing left to answer
    assert failed_rules(check(t)) == {"RPC-09"}
    # a valid batch of notifications only gets no answer at all: an error for it replies
    # to them (RPC-09; transports.mdx says so of a batch too)
    batch = base().rpc.c2a([{"jsonrpc": "2.0", "method": "_x/note", "params": {}}])
    batch.rpc.error("a2c", None, -32600, "Invalid Request")
    assert failed_rules(check(batch)) == {"RPC-09"}
    # a valid batch holding a request rejected as a whole: one cause, one warning under the
    # batch rules (its request is answered by that rejection)
    mixed = base().rpc.c2a([{"jsonrpc": "2.0", "id": 7, "method": "_x/ask", "params": {}}])
    mixed.rpc.error("a2c", None, -32600, "Invalid Request")
    report = check(mixed)
    assert failed_rules(report) == set() and warned_rules(report) == {"ACPM-BATCH"}


def test_accepted_turn_that_never_runs_is_a_liveness_failure() -> None:
    t = base().prompt(S, 10).accepted(10).user_message(S)
    report = check(t)
    assert failed_rules(report) == {"STATE-02"}
    assert report["violations"][0]["kind"] == "liveness"
    assert_clean(check(t.running(S).idle(S, "end_turn")))


def test_idle_cancelled_reading_wants_the_reply_before_the_next_acceptance() -> None:
    strict = DEFAULT.parse(["A-04=idle-cancelled"])
    t = turn_start(base(), 10).idle(S, "end_turn").cancel(S).prompt(S, 11).accepted(11)
    assert "A-04.idle-cancelled" in failed_rules(check(t, strict))
    ok = turn_start(base(), 10).idle(S, "end_turn").cancel(S).idle(S, "cancelled")
    ok.prompt(S, 11).accepted(11).user_message(S).running(S).idle(S, "end_turn")
    assert_clean(check(ok, strict))


def test_cancel_of_a_pending_prompt_read_before_its_idle_must_cancel_it() -> None:
    """A-10 + A-11: the cancel arrived while the prompt was pending; once provably read before
    the idle, every reading of A-10 cancels that prompt's work."""
    t = base().prompt(S, 10).cancel(S).sync().accepted(10).user_message(S).running(S)
    t.idle(S, "end_turn")
    assert failed_rules(check(t)) == {"CANCEL-07"}
    ok = base().prompt(S, 10).cancel(S).sync().rejected(10, -32800)
    turn_start(ok, 11).idle(S, "end_turn")
    assert_clean(check(ok))  # the rejected prompt was what the cancel stopped


def test_cancels_that_stopped_pending_prompts_owe_no_idle_reply() -> None:
    """Regression (Python SDK fuzzing, A-04=idle-cancelled): cancels that reached queued
    prompts, answered by rejecting those prompts with -32800, owe no idle(cancelled)."""
    strict = DEFAULT.parse(["A-04=idle-cancelled"])
    t = turn_start(base(), 10).prompt(S, 11).cancel(S).idle(S, "cancelled")
    t.rejected(11, -32800).sync()
    turn_start(t, 12).idle(S, "end_turn")
    assert_clean(check(t, strict))


def test_one_cancel_may_end_the_work_and_a_prompt_it_caught_unaccepted() -> None:
    """Regression (reference agent, found while writing the notebooks): a cancel right behind
    a prompt sent while busy ends the running work, and the prompt, read before the cancel
    but accepted after it, gets a cancelled turn of its own (A-10 b)."""
    t = turn_start(base(), 10).prompt(S, 11).cancel(S).idle(S, "cancelled")
    t.accepted(11).user_message(S).running(S).idle(S, "cancelled")
    assert_clean(check(t))
    t.prompt(S, 12).accepted(12).user_message(S).running(S).idle(S, "cancelled")
    assert failed_rules(check(t)) == {"CANCEL-11"}  # but it does not reach a later prompt


def test_what_is_owed_says_whether_the_agent_provably_knew() -> None:
    """ACPM-ALIVE fails an agent that exits cleanly only for what it provably knew it owed: a
    prompt still unread when it exited may have been sent as it did."""
    from acp_model.oracle.monitor import Monitor

    t = base().prompt(S, 50)
    monitor = Monitor(DEFAULT)
    for rec in t.records:
        monitor.feed(rec)
    assert [provable for text, provable in monitor.liveness.owed() if "#" in text] == [False]
    for rec in TraceBuilder().sync(req_id=51).records:  # a later request, answered
        monitor.feed(rec)
    assert [provable for text, provable in monitor.liveness.owed()
            if "session/prompt" in text] == [True]


def test_a_quiet_cancel_owed_a_reply_is_known_once_read() -> None:
    """Under A-04=idle-cancelled the reply a quiet cancel is owed rests on that client message:
    the agent provably knew of it only once it read the cancel."""
    from acp_model.oracle.monitor import Monitor

    monitor = Monitor(DEFAULT.parse(["A-04=idle-cancelled"]))
    for rec in base().cancel(S).records:
        monitor.feed(rec)
    assert [provable for text, provable in monitor.liveness.owed() if "cancel" in text] == [False]
    for rec in TraceBuilder().sync(req_id=51).records:
        monitor.feed(rec)
    assert [provable for text, provable in monitor.liveness.owed() if "cancel" in text] == [True]


def test_v1_a_response_ends_only_its_own_prompt() -> None:
    """v1 does not say which unanswered prompt a turn's content belongs to: the oldest is
    assumed, so a later prompt's response must not end the older prompt too. A cancel sent
    while the older prompt is still unanswered may end it `cancelled` (CANCEL-11 holds)."""
    v1 = DEFAULT.parse(["SPEC=v1"])
    t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10).v1.chunk(S)
    t.prompt(S, 11).v1.ended(11).prompt(S, 12).cancel(S).v1.ended(12, "cancelled")
    # the client's second prompt is its own failure (v1: one turn at a time), not the agent's
    assert failed_rules(check(t.v1.ended(10, "cancelled"), v1)) == {"A-01.forbid"}
    # the late-cancel bug is still one: a cancel provably read while idle kills no turn
    late = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10).v1.ended(10)
    late.cancel(S).rpc.request("c2a", "_acp_model/sync", {}, 99).rpc.error("a2c", 99, -32601)
    late.prompt(S, 11).v1.chunk(S).v1.ended(11, "cancelled")
    assert "CANCEL-11" in failed_rules(check(late, v1))


def test_v1_a_turn_ended_cancelled_for_a_second_prompt_the_client_sent_is_not_cancel_11() -> None:
    """v1 forbids a second prompt while a turn runs (A-01=forbid): a client that sends one
    anyway breaks that rule, and an agent that ends the running turn `cancelled` for it (copilot
    supersedes the turn) has a cause; without the second prompt, CANCEL-11 still fails."""
    v1 = DEFAULT.parse(["SPEC=v1"])
    t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 3).v1.chunk(S)
    t.prompt(S, 9).v1.ended(3, "cancelled").v1.ended(9)
    assert failed_rules(check(t, v1)) == {"A-01.forbid"}
    alone = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 3).v1.chunk(S)
    assert failed_rules(check(alone.v1.ended(3, "cancelled"), v1)) == {"CANCEL-11"}
