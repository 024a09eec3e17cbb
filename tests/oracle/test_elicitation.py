"""A session-scoped elicitation/create is a user-action wait of its session: what the machine
reads of it beyond the breaking and keeping traces of tests/oracle/audit_cases.py."""

from __future__ import annotations

from acp_model.spec.readings import DEFAULT
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
