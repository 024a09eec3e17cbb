"""A session-scoped elicitation/create is a user-action wait of its session: what the machine
reads of it beyond the breaking and keeping traces of tests/oracle/audit_cases.py."""

from __future__ import annotations

from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, assert_clean, base, check, failed_rules, turn_start, warned_rules
from tests.oracle.audit_cases import ELICITATION, SDK, _elicit_turn, sdk_elicit_01_breaks


def test_the_seed_reads_an_elicitation_as_other_user_action() -> None:
    """The seed's §5 says "a permission response or other user action": STATE-05 there too."""
    t = turn_start(base(client_caps=ELICITATION), 10).elicitation(S, 50).agent_message(S)
    t.elicitation_answer(50, "accept").running(S).idle(S, "end_turn")
    assert warned_rules(check(t)) == {"STATE-05"}


def test_a_request_scoped_elicitation_changes_no_session_state() -> None:
    """"request-scoped elicitations do not themselves change session state": no wait."""
    t = _elicit_turn()
    t.rpc.request("a2c", "elicitation/create", {
        "requestId": 10, "mode": "form", "message": "Token?",
        "requestedSchema": {"type": "object", "properties": {"token": {"type": "string"}}}}, 50)
    t.agent_message(S).rpc.result("c2a", 50, {"action": "decline"})
    t.agent_message(S).idle(S, "end_turn")
    assert_clean(check(t, SDK))


def test_a_cancel_owes_an_elicitation_no_cancelled_answer() -> None:
    """CANCEL-04 is the permission request's: after a cancel the client may still accept a
    pending elicitation, and the agent's withdrawing it first keeps SDK-ELICIT-01."""
    t = _elicit_turn().elicitation(S, 50).requires_action(S).cancel(S)
    t.elicitation_answer(50, "accept").idle(S, "cancelled")
    assert_clean(check(t, SDK))


def test_an_unanswered_elicitation_is_the_client_s_every_request_obligation() -> None:
    t = _elicit_turn().elicitation(S, 50).requires_action(S)
    report = check(t, SDK)
    assert {v["rule"] for v in report["violations"]} >= {"ACPM-ANSWER"}
    assert "PERM-12" not in {v["rule"] for v in report["violations"]}


def test_a_pending_elicitation_of_cancelled_work_is_a_warning_with_its_records() -> None:
    report = check(sdk_elicit_01_breaks(), SDK)
    [hit] = [v for v in report["violations"] if v["rule"] == "SDK-ELICIT-01"]
    assert hit["level"] == "warn" and report["verdict"] == "pass"
    assert [e["role"] for e in hit["evidence"]] == ["elicitation/create", "the cancelled idle"]
    # the seed's text has no such sentence
    assert "SDK-ELICIT-01" not in {v["rule"] for v in check(sdk_elicit_01_breaks(),
                                                            DEFAULT)["violations"]}


def test_work_that_ran_on_after_the_block_owes_no_withdrawal() -> None:
    """Running reported after the elicitation's answer-less block, then cancelled: the agent
    said the work went on, so the idle is not the blocked work's (only requires_action ->
    idle(cancelled) is judged)."""
    t = _elicit_turn().elicitation(S, 50).requires_action(S).running(S).agent_message(S)
    t.cancel(S).idle(S, "cancelled").elicitation_answer(50, "cancel")
    assert "SDK-ELICIT-01" not in warned_rules(check(t, SDK))
    assert failed_rules(check(t, SDK)) == set()


# --- an elicitation after the cancel was provably read (CANCEL-05) ----------------------

NEW_WORK = SDK.parse(["A-32=new-work"])


def _elicit_after_read_cancel() -> TraceBuilder:
    """The agent reads the cancel (the sync's response proves it), then asks the user."""
    t = _elicit_turn().cancel(S).sync().elicitation(S, 50).requires_action(S)
    return t.elicitation_answer(50, "decline").idle(S, "cancelled")


def test_an_elicitation_after_a_read_cancel_is_accepted_by_default() -> None:
    """The text names model requests and tool calls; its elicitation sentence is about pending
    ones, and a scope alone ties none to the cancelled work: A-32=accept judges nothing."""
    assert SDK["A-32"] == "accept"
    assert_clean(check(_elicit_after_read_cancel(), SDK))


def test_under_new_work_an_elicitation_after_a_read_cancel_breaks_cancel_05() -> None:
    report = check(_elicit_after_read_cancel(), NEW_WORK)
    [hit] = [v for v in report["violations"] if v["rule"] == "CANCEL-05"]
    assert hit["check"] == "no_new_elicitation_after_cancel"
    assert hit["level"] == "warn"  # CANCEL-05 is a SHOULD: the reading adds no strength
    roles = [e["role"] for e in hit["evidence"]]
    assert roles[0] == "session/cancel" and roles[-1] == "elicitation/create"
    assert "response proving it was read" in roles
    assert {v["rule"] for v in report["violations"]} == {"CANCEL-05"}


def test_an_elicitation_before_the_cancel_was_read_passes_under_both_readings() -> None:
    """The elicitation and the cancel crossed: nothing proves the agent had read the cancel
    when it asked, so neither reading judges it."""
    t = _elicit_turn().cancel(S).elicitation(S, 50).requires_action(S).sync()
    t.elicitation_answer(50, "decline").idle(S, "cancelled")
    assert_clean(check(t, SDK))
    assert_clean(check(t, NEW_WORK))
