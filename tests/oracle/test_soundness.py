"""What correct agents written by others do, judged as the text allows (issue: soundness).

The four patterns that failed agents we did not write, and both sides of the line each one
draws: the behaviour the text allows passes (or warns, when a probable deviation deserves a
look), and the strict reading that forbids it fails under its own rule.
"""

from __future__ import annotations

import pytest

from acp_model.model.check import CHECKS
from acp_model.spec.readings import DEFAULT, ReadingError, Readings
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, assert_clean, base, check, failed_rules, turn_start, warned_rules
from tests.oracle.audit_cases import _elicit_turn, sdk_elicit_01_breaks

CANCEL = DEFAULT.parse(["A-10=cancel"])
KEEP = DEFAULT.parse(["A-10=keep"])


def _held_prompt() -> TraceBuilder:
    """Prompt 11 arrives while prompt 10's work runs; the agent holds it unanswered; the cancel
    is provably read; the running work ends cancelled."""
    return turn_start(base(), 10).prompt(S, 11).cancel(S).sync().idle(S, "cancelled")


# --- pattern 1: a prompt queued behind running work, and a cancel ---------------------------

def test_a_held_prompt_that_outlives_the_cancel_warns_by_default() -> None:
    t = _held_prompt().accepted(11).user_message(S).running(S).agent_message(S)
    t.idle(S, "end_turn")
    report = check(t)
    assert failed_rules(report) == set()
    assert warned_rules(report) == {"A-10.cancel"}
    warning = next(v for v in report["violations"] if v["rule"] == "A-10.cancel")
    assert "held behind other work" in warning["message"]
    roles = {e["role"] for e in warning["evidence"]}
    assert {"session/cancel", "response proving it was read", "the held prompt"} <= roles
    # under the reading the newer revision decided, it fails under its own rule
    assert failed_rules(check(t, CANCEL)) == {"A-10.cancel"}
    assert_clean(check(t, KEEP))


def test_a_held_prompt_s_work_still_running_at_the_end_owes_only_its_end() -> None:
    """The held prompt's work outlived the cancel and is still running when the trace ends:
    it owes an idle (STATE-02), not the cancelled idle the cancel asked of the work before it
    (CANCEL-06), unless A-10=cancel says the cancel reached it."""
    t = _held_prompt().accepted(11).user_message(S).running(S).agent_message(S)
    assert failed_rules(check(t)) == {"STATE-02"}
    assert failed_rules(check(t, CANCEL)) == {"CANCEL-06"}


@pytest.mark.parametrize("design", ["reject", "cancel-at-once", "fold"])
def test_the_other_held_prompt_designs_pass_under_every_reading(design: str) -> None:
    t = turn_start(base(), 10).prompt(S, 11).cancel(S).sync()
    if design == "reject":
        t.rejected(11, -32800).idle(S, "cancelled")
    elif design == "cancel-at-once":
        t.idle(S, "cancelled").accepted(11).user_message(S).running(S).idle(S, "cancelled")
    else:  # folded into the cancelled work: one idle for both
        t.accepted(11).user_message(S).idle(S, "cancelled")
    for readings in (DEFAULT, CANCEL):
        assert_clean(check(t, readings))


def test_under_keep_a_cancelled_stop_reason_for_the_held_prompt_has_no_cause() -> None:
    t = _held_prompt().accepted(11).user_message(S).running(S).idle(S, "cancelled")
    assert_clean(check(t))
    assert failed_rules(check(t, KEEP)) == {"CANCEL-11"}


def test_a_cancel_read_while_a_prompt_is_being_started_still_binds_its_work() -> None:
    """The line A-10 draws: no other work in front of the prompt, so the cancel stops it under
    every reading (the cancel_as_end_turn mutant)."""
    t = base().prompt(S, 10)
    prompt_at = t.log.last
    t.cancel(S).sync().accepted(10).user_message(S).running(S)
    t.idle(S, "end_turn")
    for readings in (DEFAULT, CANCEL, KEEP):
        report = check(t, readings)
        assert failed_rules(report) == {"CANCEL-07"}
        evidence = report["violations"][0]["evidence"]
        assert [e["role"] for e in evidence] == ["the prompt being started", "session/cancel",
                                                 "request sent after it",
                                                 "response proving it was read", "the idle"]
        assert [e["index"] for e in evidence][:2] == [prompt_at, prompt_at + 1]


def test_a_second_cancel_sent_before_the_first_work_began_may_have_met_a_held_prompt() -> None:
    """Prompt 10, cancel, prompt 11, cancel: the second cancel may have been read while prompt
    10's work still ran (prompt 11 held behind it), so prompt 11 outliving it is reading A-10,
    not a proven CANCEL-07 (found on the plain agent with busy=queue)."""
    t = base().prompt(S, 10).cancel(S).prompt(S, 11).cancel(S).sync()
    t.accepted(10).user_message(S).running(S).idle(S, "cancelled")
    t.accepted(11).user_message(S).running(S).agent_message(S).idle(S, "end_turn")
    report = check(t)
    assert failed_rules(report) == set() and warned_rules(report) == {"A-10.cancel"}
    assert failed_rules(check(t, CANCEL)) == {"A-10.cancel"}
    assert_clean(check(t, KEEP))


def test_a_permission_in_the_held_prompts_work_is_not_owed_cancelled() -> None:
    """The client need not answer a permission request of the held prompt's work with the
    cancelled outcome: whether the cancel reaches that work is undecided (A-10)."""
    t = _held_prompt().accepted(11).user_message(S).running(S).tool(S, "t1", "pending",
                                                                     title="Edit")
    t.permission(S, 60, "t1").requires_action(S).answer(60, "allow").running(S)
    t.tool(S, "t1", "completed").idle(S, "end_turn")
    report = check(t)
    assert failed_rules(report) == set()
    assert "CANCEL-04" not in warned_rules(report)
    assert "CANCEL-04" in failed_rules(check(t, CANCEL))


# --- pattern 2: accepted, then cancelled before any work was reported -----------------------

def test_an_instant_cancel_needs_no_running() -> None:
    t = base().prompt(S, 10).cancel(S).sync().accepted(10).user_message(S)
    t.idle(S, "cancelled")
    assert_clean(check(t))
    assert_clean(check(t, DEFAULT.parse(["A-09=strict"])))


def test_an_idle_with_another_reason_and_no_running_still_breaks_state_01() -> None:
    t = base().prompt(S, 10).accepted(10).user_message(S).idle(S, "end_turn")
    assert failed_rules(check(t)) == {"STATE-01"}


# --- pattern 3: our own rules never fail what the text allows -------------------------------

def test_a_repeated_stop_reason_only_warns() -> None:
    t = turn_start(base(), 10).idle(S, "end_turn").idle(S, "end_turn")
    assert warned_rules(check(t)) == {"ACPM-ONE-STOP"} and failed_rules(check(t)) == set()


# --- pattern 4: silence where a warning is due ------------------------------------------------

def test_resuming_after_an_answer_sent_after_the_cancel_is_a_probable_violation() -> None:
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Edit")
    t.permission(S, 100, "t1").requires_action(S).cancel(S).answer(100, "cancelled")
    t.running(S).agent_message(S).idle(S, "end_turn")
    report = check(t)
    assert failed_rules(report) == set()
    assert warned_rules(report) == {"CANCEL-07"}
    warning = report["violations"][0]
    assert "acted on" in warning["message"] and "unless it stopped waiting" in warning["message"]
    assert {e["role"] for e in warning["evidence"]} == {
        "session/cancel", "client message sent after it", "the agent acting on it", "the idle"}


def test_the_same_with_a_sync_after_the_answer_is_a_failure() -> None:
    """What the fuzzer does to make a probable violation decisive."""
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Edit")
    t.permission(S, 100, "t1").requires_action(S).cancel(S).answer(100, "cancelled").sync()
    t.running(S).agent_message(S).idle(S, "end_turn")
    assert failed_rules(check(t)) == {"CANCEL-07"}


def test_ending_cancelled_after_the_answer_is_clean() -> None:
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Edit")
    t.permission(S, 100, "t1").requires_action(S).cancel(S).answer(100, "cancelled")
    t.tool(S, "t1", "cancelled").idle(S, "cancelled")
    assert_clean(check(t))


# --- a proof behind every failure --------------------------------------------------------------

def _evidence_cases() -> dict[str, tuple[Readings, TraceBuilder]]:
    """One trace per evidence-bearing check (by check name) that breaks it, with the readings
    under which it is judged."""
    strict = DEFAULT.parse(["A-04=idle-cancelled"])
    sdk = DEFAULT.parse(["SPEC=sdk-2.4.0"])

    def permission() -> TraceBuilder:
        return turn_start(base(), 10).tool(S, "t1", "pending", title="Edit") \
            .permission(S, 100, "t1").requires_action(S)

    def sdk_turn(t: TraceBuilder, rid: int, mid: str) -> TraceBuilder:
        return t.prompt(S, rid).accepted(rid, {"messageId": mid}).user_message(S, mid) \
            .running(S)

    return {
        "cancel_honoured": (DEFAULT, turn_start(base(), 10).cancel(S).sync()
                            .idle(S, "end_turn")),
        "cancel_probably_honoured": (DEFAULT, permission().cancel(S).answer(100, "cancelled")
                                     .running(S).agent_message(S).idle(S, "end_turn")),
        "tool_respects_answer": (DEFAULT, permission().answer(100, "reject").sync().running(S)
                                 .tool(S, "t1", "in_progress")),
        "cancelled_has_cause": (DEFAULT, turn_start(base(), 10).idle(S, "end_turn").cancel(S)
                                .sync().prompt(S, 11).accepted(11).user_message(S).running(S)
                                .idle(S, "cancelled")),
        "no_new_work_after_cancel": (DEFAULT, permission().answer(100, "allow").running(S)
                                     .cancel(S).sync().tool(S, "t2", "pending", title="Run")
                                     .permission(S, 101, "t2")),
        "idle_cancel_answered": (strict, turn_start(base(), 10).idle(S, "end_turn").cancel(S)
                                 .sync().prompt(S, 11).accepted(11)),
        # agent-initiated work begins before the cancel is read, which it then swallows
        "idle_cancel_not_swallowed": (strict, turn_start(base(), 10).idle(S, "end_turn")
                                      .cancel(S).running(S).sync().idle(S, "end_turn")),
        "held_prompt_cancelled": (sdk, sdk_turn(base(), 10, "u1").prompt(S, 11).cancel(S)
                                  .sync().idle(S, "cancelled").accepted(11, {"messageId": "u2"})
                                  .user_message(S, "u2").running(S).idle(S, "end_turn")),
        "receipt_names_a_new_message": (sdk, sdk_turn(sdk_turn(base(), 10, "u1")
                                                      .idle(S, "end_turn"), 11, "u1")),
        "rejected_prompt_not_inserted": (sdk, base().prompt(S, 10, "fix").rejected(10, -32800)
                                         .user_message_chunk(S, "u1", "fix")),
        "no_error_after_insertion": (sdk, base().prompt(S, 10, "fix")
                                     .user_message(S, "u1", "fix").running(S).rejected(10)
                                     .idle(S, "error")),
        "cancel_after_reopen_honoured": (
            DEFAULT, turn_start(base(), 10).rpc.request(
                "c2a", "session/resume", {"sessionId": S, "cwd": "/tmp/project",
                                          "mcpServers": []}, 20).rpc.result("a2c", 20, {})
            .cancel(S).sync().idle(S, "end_turn")),
        # the fuzzer's record: the model had released the turn's final response (#10)
        "cancel_after_done_honoured": (
            DEFAULT, turn_start(base(), 10).agent_message(S).cancel(S).turn_done(10).sync()
            .idle(S, "end_turn")),
        # cancel and prompt written together, the cancel read before the turn showed
        "cancelled_not_only_by_order": (
            DEFAULT.parse(["SPEC=v1"]), TraceBuilder().v1.handshake().v1.new_session(S)
            .cancel(S).prompt(S, 10).sync().v1.chunk(S).v1.ended(10, "cancelled")),
        "content_before_turn_end": (
            DEFAULT.parse(["SPEC=v1"]), TraceBuilder().v1.handshake().v1.new_session(S)
            .prompt(S, 10).v1.chunk(S).v1.ended(10, "end_turn").v1.chunk(S, "late")),
        "blocking_elicitations_withdrawn": (sdk, sdk_elicit_01_breaks()),
        "no_new_elicitation_after_cancel": (
            sdk.parse(["A-32=new-work"]), _elicit_turn().cancel(S).sync().elicitation(S, 50)),
        "content_before_cancelled_end": (
            DEFAULT.parse(["SPEC=v1"]), TraceBuilder().v1.handshake().v1.new_session(S)
            .prompt(S, 10).v1.chunk(S).cancel(S).v1.ended(10, "cancelled").v1.chunk(S, "late")),
        # the same id handed out twice: the proof is where it was handed out first
        "session_id_fresh": (DEFAULT, base().new_session(S)),
    }


EVIDENCE_CHECKS = {meta.name: meta for meta in CHECKS.values() if meta.evidence is not None}
# Checks whose proof is what the agent had provably read (the others cite their own records).
READ_PROOFS = {"cancel_honoured", "tool_respects_answer", "cancelled_has_cause",
               "no_new_work_after_cancel", "no_new_elicitation_after_cancel",
               "idle_cancel_answered", "idle_cancel_not_swallowed",
               "held_prompt_cancelled", "cancel_after_reopen_honoured",
               "cancel_after_done_honoured", "cancelled_not_only_by_order"}


def test_every_evidence_bearing_check_has_a_breaking_trace_here() -> None:
    assert set(_evidence_cases()) == set(EVIDENCE_CHECKS)
    assert set(EVIDENCE_CHECKS) > READ_PROOFS


@pytest.mark.parametrize("name", sorted(EVIDENCE_CHECKS))
def test_a_broken_evidence_check_reports_its_proof(name: str) -> None:
    """Guard and proof share their query: on a trace that breaks the check, the verdict is
    the check's own level with its evidence, never a failure quietly turned into a warning."""
    readings, t = _evidence_cases()[name]
    report = check(t, readings)
    meta = EVIDENCE_CHECKS[name]
    hit = next((v for v in report["violations"] if v["check"] == name), None)
    assert hit is not None, report["violations"]
    assert hit["level"] == meta.level(readings), hit
    assert "no response proves what the agent had read" not in hit["message"]
    assert hit.get("evidence"), hit
    assert all(isinstance(e["index"], int) and 0 <= e["index"] < len(t.records)
               for e in hit["evidence"])
    roles = [e["role"] for e in hit["evidence"]]
    if name in READ_PROOFS:
        assert "response proving it was read" in roles, roles


# --- a tool that starts while its permission request is unanswered ------------------------------

def test_a_tool_started_before_any_answer_is_a_permission_bypass() -> None:
    """No timing explains it: the client had sent nothing (a stale answer taken for this
    request, say). Issue: sloppy-client probes."""
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Edit").permission(S, 50, "t1")
    t.requires_action(S).running(S).tool(S, "t1", "in_progress")
    t.answer(50, "allow").tool(S, "t1", "completed").idle(S, "end_turn")
    report = check(t)
    assert failed_rules(report) == {"PERM-11"}
    hit = report["violations"][0]
    assert [e["role"] for e in hit["evidence"]] == ["permission request, unanswered",
                                                    "the tool update"]
    assert "the client had not answered it" in hit["message"]


def test_reading_a31_read_answer_judges_only_an_answer_the_agent_read() -> None:
    """v1's leniency is reading A-31 (decided ``read-answer`` by v1), not a revision test in
    PERM-11's guard: chosen under the seed, a tool started before any answer passes; the v1
    revision refuses the other value, quoting its sentence."""
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Edit").permission(S, 50, "t1")
    t.requires_action(S).running(S).tool(S, "t1", "in_progress")
    t.answer(50, "allow").tool(S, "t1", "completed").idle(S, "end_turn")
    assert "PERM-11" not in failed_rules(check(t, DEFAULT.parse(["A-31=read-answer"])))
    assert DEFAULT.parse(["SPEC=v1"])["A-31"] == "read-answer"
    with pytest.raises(ReadingError, match="SHOULD invoke the tool"):
        DEFAULT.parse(["SPEC=v1", "A-31=yes"])


def _late_allow_then_new_request() -> tuple[TraceBuilder, int]:
    """A turn cancelled while its request #50 waits, answered 'cancelled' and then, after the
    cancelled idle, allow (a sloppy client's late allow, whose index is returned); the next
    turn's tool t2 then asks with request #51, still open."""
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Edit").permission(S, 50, "t1")
    t.requires_action(S).cancel(S).tool(S, "t1", "cancelled").idle(S, "cancelled")
    t.answer(50, "cancelled")
    late = t.answer(50, "allow").log.last
    t.prompt(S, 11).accepted(11).user_message(S).running(S)
    t.tool(S, "t2", "pending", title="Edit").permission(S, 51, "t2").requires_action(S)
    return t, late


def test_the_proof_names_a_late_allow_sent_after_the_cancelled_outcome() -> None:
    """A turn cancelled while its request waits: the client answers it 'cancelled', then,
    after the cancelled idle, allow (a repeat, a sloppy client's late allow); the next
    turn's tool starts with its own request open. The proof names that late allow: an agent
    that kept it took it for the new request (the late-allow mutant, when the client's first
    answer to the old request was the cancelled outcome)."""
    t, late = _late_allow_then_new_request()
    t.running(S).tool(S, "t2", "in_progress")
    report = check(t)
    assert "PERM-11" in failed_rules(report), report["violations"]
    hit = next(v for v in report["violations"] if v["rule"] == "PERM-11")
    assert "the client's last allow before it" in hit["message"], hit["message"]
    assert {"index": late, "role": "an earlier allow, to another request"} in [
        {"index": e["index"], "role": e["role"]} for e in hit["evidence"]], hit["evidence"]


def test_the_proof_of_a_read_reject_also_names_the_late_allow() -> None:
    """As above, but the client rejects the new request and the agent provably reads that
    reject before the tool starts: the proof rests on the read reject, and still names the late
    allow an agent that kept it took for this request (one root cause, the whole proof)."""
    t, late = _late_allow_then_new_request()
    t.answer(51, "reject").sync().running(S).tool(S, "t2", "in_progress")
    report = check(t)
    hit = next(v for v in report["violations"] if v["rule"] == "PERM-11")
    assert "was answered 'reject'" in hit["message"], hit["message"]
    assert "the client's last allow before it" in hit["message"], hit["message"]
    roles = [(e["index"], e["role"]) for e in hit["evidence"]]
    assert (late, "an earlier allow, to another request") in roles, roles
    assert "response proving it was read" in [role for _, role in roles], roles


def test_a_tool_already_running_may_ask_again_and_keep_reporting() -> None:
    t = turn_start(base(), 10).tool(S, "t1", "in_progress", title="Run")
    t.permission(S, 50, "t1").requires_action(S).tool(S, "t1", "in_progress")
    t.answer(50, "allow").running(S).tool(S, "t1", "completed").idle(S, "end_turn")
    assert_clean(check(t))


def test_a_withdrawn_request_does_not_hold_its_tool_back() -> None:
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Edit").permission(S, 50, "t1")
    t.requires_action(S).cancel_request("a2c", 50).running(S).tool(S, "t1", "in_progress")
    t.answer_error(50).tool(S, "t1", "completed").idle(S, "end_turn")
    assert "PERM-11" not in failed_rules(check(t))


# --- reading A-28: the work of a rejected prompt (codex-acp, a withdrawn prompt) ------------------

def _rejected_then_cancelled(receipt: bool = False) -> TraceBuilder:
    """What codex-acp 2.6.0 sent: a prompt withdrawn with $/cancel_request and rejected with
    -32800, a cancel the agent provably read, then `running` and `idle(cancelled)`: the
    prompt's pre-insertion work, reported after the cancel was read."""
    t = base().prompt(S, 10).accepted(10, {"messageId": "u1"} if receipt else None)
    t.user_message(S, "u1").running(S).idle(S, "end_turn").prompt(S, 11)
    t.cancel_request("c2a", 11).rejected(11, -32800).cancel(S).sync()
    return t.running(S).idle(S, "cancelled")


def test_a_rejected_prompt_s_work_may_end_cancelled_by_a_later_cancel() -> None:
    assert_clean(check(_rejected_then_cancelled()))
    assert_clean(check(_rejected_then_cancelled(receipt=True),
                       DEFAULT.parse(["SPEC=sdk-2.4.0"])))


@pytest.mark.parametrize("held", [True, False], ids=["held-prompt", "prompt-being-started"])
def test_a_prompt_rejected_after_the_cancel_may_own_the_work_that_ends(held: bool) -> None:
    """codex-acp 2.6.0, seen in a run of 2026-12-03: a cancel read while a prompt was held
    (or being started), that prompt rejected; a later prompt withdrawn and rejected -32800,
    then work that ends `end_turn`. That work may be the later prompt's (A-28: its
    pre-insertion work outlives its rejection), which the earlier cancel does not reach: no
    proof for A-10.cancel or CANCEL-07 (the codex run carried the later prompt's text in the
    user message, which is SDK-PROMPT-03's to judge)."""
    first = 11 if held else 10
    t = turn_start(base(), 10).prompt(S, 11) if held else base().prompt(S, 10)
    t.cancel(S).sync()
    if held:
        t.idle(S, "cancelled")
    t.rejected(first, -32800)
    t.prompt(S, 12).cancel_request("c2a", 12).rejected(12, -32800)
    t.running(S).user_message(S).agent_message(S).idle(S, "end_turn")
    for readings in (DEFAULT, CANCEL):
        assert_clean(check(t, readings))
    # with no later prompt the work can only be the first one's: the cancel binds it
    t = turn_start(base(), 10).prompt(S, 11) if held else base().prompt(S, 10)
    t.cancel(S).sync()
    if held:
        t.idle(S, "cancelled")
    t.rejected(first, -32800).running(S).agent_message(S).idle(S, "end_turn")
    assert failed_rules(check(t, CANCEL)) == {"A-10.cancel" if held else "CANCEL-07"}


def test_under_a_28_none_that_work_is_new_and_the_cancel_stale() -> None:
    strict = DEFAULT.parse(["A-28=none"])
    assert failed_rules(check(_rejected_then_cancelled(), strict)) == {"CANCEL-11"}
    with pytest.raises(ValueError, match="A-28"):
        DEFAULT.parse(["SPEC=sdk-2.4.0", "A-28=none"])


def test_an_idle_ends_what_a_rejected_prompt_started() -> None:
    """After the idle, a cancel read while quiet is stale again for the next work."""
    t = turn_start(base(), 10).idle(S, "end_turn").prompt(S, 11).rejected(11, -32602)
    t.idle(S).cancel(S).sync().running(S).idle(S, "cancelled")
    assert failed_rules(check(t)) == {"CANCEL-11"}


# --- what a client may stop a turn with besides session/cancel ----------------------------------

def test_a_withdrawn_prompt_s_work_may_end_cancelled() -> None:
    """cancellation.mdx: the receiver of $/cancel_request MAY cancel the request's activity
    (codex-acp ends such a turn `cancelled` with no session/cancel)."""
    t = base().prompt(S, 10).running(S).cancel_request("c2a", 10).rejected(10, -32800)
    assert_clean(check(t.idle(S, "cancelled")))
    # a request already answered has no activity left to cancel
    t = turn_start(base(), 10).cancel_request("c2a", 10).idle(S, "cancelled")
    assert failed_rules(check(t)) == {"CANCEL-11"}


@pytest.mark.parametrize("spec", ["seed", "sdk-2.4.0"])
def test_a_prompt_withdrawn_behind_earlier_work_may_see_its_own_work_end_cancelled(
        spec: str) -> None:
    """codex-acp, found live: a prompt withdrawn while earlier work ran; that work ends, the
    withdrawn prompt's own work starts and ends `cancelled`. The idle that ended the earlier
    work did not end what the withdrawal may cancel (cancellation.mdx: its activity), whether
    the prompt was then rejected, answered, or still open."""
    readings = DEFAULT.parse([f"SPEC={spec}"])

    def withdrawn_behind_work() -> TraceBuilder:
        t = base().prompt(S, 10, "a").accepted(10, {"messageId": "u1"}).running(S)
        t.user_message_chunk(S, "u1", "a")
        return t.prompt(S, 11, "b").cancel_request("c2a", 11)

    rejected = withdrawn_behind_work().idle(S, "end_turn").running(S).rejected(11, -32800)
    assert failed_rules(check(rejected.idle(S, "cancelled"), readings)) == set()
    answered = withdrawn_behind_work().accepted(11, {"messageId": "u2"}).idle(S, "end_turn")
    answered.running(S).user_message_chunk(S, "u2", "b").idle(S, "cancelled")
    assert failed_rules(check(answered, readings)) == set()
    open_ = withdrawn_behind_work().idle(S, "end_turn").running(S).idle(S, "cancelled")
    assert failed_rules(check(open_, readings)) == {"CANCEL-14"}  # its answer is still owed
    # once that work ended, the withdrawal explains nothing more
    answered.running(S).idle(S, "cancelled")
    assert failed_rules(check(answered, readings)) == {"CANCEL-11"}


def test_a_refused_permission_may_stop_the_turn_unless_reading_a29_says_no() -> None:
    """sdk-2.4.0: cancelled is also for 'an interaction the agent offers, such as a
    permission option that tells the agent to stop' (it decides A-29=may); the seed's "the
    Client cancels active work" and v1's "the Client cancels the turn" allow that reading
    too, so it is the default there, and A-29=no is the strict one (only session/cancel)."""
    def refused(receipt: bool) -> TraceBuilder:
        t = base().prompt(S, 10).accepted(10, {"messageId": "u1"} if receipt else None)
        t.user_message(S, "u1").running(S).tool(S, "t1", "pending", title="Edit")
        t.permission(S, 50, "t1").requires_action(S).answer(50, "reject").sync()
        return t.running(S).tool(S, "t1", "failed").idle(S, "cancelled")

    assert_clean(check(refused(True), DEFAULT.parse(["SPEC=sdk-2.4.0"])))
    assert_clean(check(refused(False)))
    assert failed_rules(check(refused(False), DEFAULT.parse(["A-29=no"]))) == {"CANCEL-11"}
    with pytest.raises(ReadingError, match="A-29=may"):
        DEFAULT.parse(["SPEC=sdk-2.4.0", "A-29=no"])
    # an allowed permission stops nothing: cancelled still needs a cancel
    t = base().prompt(S, 10).accepted(10).user_message(S).running(S)
    t.tool(S, "t1", "pending", title="Edit").permission(S, 50, "t1").requires_action(S)
    t.answer(50, "allow").sync().running(S).idle(S, "cancelled")
    assert failed_rules(check(t)) == {"CANCEL-11"}


def test_a_rejected_prompt_inserted_later_fails_in_the_newer_revision() -> None:
    t = base().prompt(S, 10, "fix [t1]").rejected(10, -32800)
    t.user_message_chunk(S, "u1", "fix [t1]")
    sdk = DEFAULT.parse(["SPEC=sdk-2.4.0"])
    report = check(t, sdk)
    assert failed_rules(report) == {"SDK-PROMPT-03"}
    assert [e["role"] for e in report["violations"][0]["evidence"]] == [
        "the prompt", "its error response", "the user message"]
    # the same text on a prompt still open: whose message it is cannot be told
    t2 = base().prompt(S, 10, "fix").rejected(10, -32800).prompt(S, 11, "fix")
    t2.user_message_chunk(S, "u1", "fix")
    assert "SDK-PROMPT-03" not in failed_rules(check(t2, sdk))
