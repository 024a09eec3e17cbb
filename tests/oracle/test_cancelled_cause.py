"""CANCEL-11 under v1 (issue 49 item 4): its source is a definition ("cancelled: The Client
cancels the turn"), so a failure must prove that no client action could have cancelled the
turn: no cancel, no close, no reopen, and no cancel the agent may have read together with the
turn's prompt (an editor's "stop and send" writes the two at once, and the text does not
order how an agent handles messages it read together)."""

from __future__ import annotations

from acp_model.spec.readings import DEFAULT
from acp_model.spec.rules import RULES, strength_shown
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, check, failed_rules, warned_rules

V1 = DEFAULT.parse(["SPEC=v1"])
LOAD = {"sessionId": S, "cwd": "/tmp/project", "mcpServers": []}


def _idle_session() -> TraceBuilder:
    return TraceBuilder().v1.handshake(agent_caps={"loadSession": True}).v1.new_session(S)


def test_a_cancel_written_with_the_prompt_is_only_a_warning_that_names_the_shape() -> None:
    """copilot 1.0.102 (review 2, failure 4): cancel and prompt in one write, the cancel read
    before the turn showed, the whole reply streamed, then `cancelled`. Before, the read
    proof made the cancel stale and CANCEL-11 failed; the agent may have taken the prompt up
    first and the cancel then, so it is probable, not proven."""
    t = _idle_session().cancel(S).prompt(S, 10).sync().v1.chunk(S, "the whole reply")
    report = check(t.v1.ended(10, "cancelled"), V1)
    assert "CANCEL-11" not in failed_rules(report), report["violations"]
    warning = next(v for v in report["violations"] if v["rule"] == "CANCEL-11")
    assert warning["level"] == "warn"
    assert "written together" in warning["message"], warning["message"]
    assert [e["role"] for e in warning["evidence"]][:2] == [
        "session/cancel", "the prompt, sent before the cancel was provably read"]


def test_a_cancel_read_before_the_prompt_was_sent_is_proof() -> None:
    """codex-acp (review 2, failure 2): the cancel was read (a sync answered) before the
    prompt was even sent: nothing the client did can have cancelled the turn."""
    t = _idle_session().cancel(S).sync().prompt(S, 10).v1.chunk(S)
    report = check(t.v1.ended(10, "cancelled"), V1)
    assert failed_rules(report) == {"CANCEL-11"}, report["violations"]
    v = next(v for v in report["violations"] if v["rule"] == "CANCEL-11")
    assert "before the prompt #" in v["message"] and "no reopen" in v["message"], v["message"]
    assert "the prompt of this work" in [e["role"] for e in v["evidence"]]


def test_a_turn_without_content_after_a_joint_cancel_is_clean() -> None:
    """The agent took the prompt up, then the cancel, and aborted before any output: the
    ordinary end of a "stop and send" that also stops the new prompt."""
    t = _idle_session().cancel(S).prompt(S, 10).sync().v1.ended(10, "cancelled")
    assert check(t, V1)["violations"] == []


def test_a_reopen_while_the_turn_ran_is_a_cause() -> None:
    """A session/load of the working session may stop the turn of the session it replaces:
    `cancelled` then has a cause the client gave."""
    t = _idle_session().prompt(S, 10).v1.chunk(S)
    t.rpc.request("c2a", "session/load", LOAD, 20).rpc.result("a2c", 20, {})
    assert check(t.v1.ended(10, "cancelled"), V1)["violations"] == []
    control = _idle_session().prompt(S, 10).v1.chunk(S).v1.ended(10, "cancelled")
    report = check(control, V1)
    assert failed_rules(report) == {"CANCEL-11"}
    assert "no reopen of the session" in report["violations"][0]["message"]


def test_the_rule_says_it_rests_on_a_definition() -> None:
    """Every header prints the strength the text gives: a definition, enforced as MUST."""
    assert RULES["CANCEL-11"].from_definition
    assert strength_shown("CANCEL-11", "MUST") == "MUST: a definition, enforced as MUST"
    assert strength_shown("CANCEL-07", "MUST") == "MUST"
    assert "CANCEL-11" in warned_rules(check(
        _idle_session().cancel(S).prompt(S, 10).sync().v1.chunk(S).v1.ended(10, "cancelled"),
        V1))


def test_a_cancel_read_together_with_two_prompts_may_end_both() -> None:
    """copilot 1.0.102 (the s4 matrix run): a cancel and two prompts of one session written
    within a millisecond, no proof the cancel was read before either was sent; the agent
    answered the first `cancelled`, streamed, and answered the second `cancelled` too.
    Before, the first cancelled end used the cancel up and CANCEL-11 failed the second; the
    agent may have taken both prompts up before it handled the cancel, so the second is as
    probable as the first: a warning naming the shape."""
    t = _idle_session().cancel(S).prompt(S, 10).prompt(S, 11).sync()
    t = t.v1.ended(10, "cancelled").v1.chunk(S, "the second turn's reply")
    report = check(t.v1.ended(11, "cancelled"), V1)
    assert "CANCEL-11" not in failed_rules(report), report["violations"]
    warning = next(v for v in report["violations"] if v["rule"] == "CANCEL-11")
    assert warning["level"] == "warn" and "written together" in warning["message"]


def test_a_cancel_read_before_the_second_prompt_does_not_reach_it() -> None:
    """The same, with the cancel provably read (a sync answered) before the second prompt
    was sent: the first prompt's cancelled end may be the cancel's, the second's has no
    cause the client gave."""
    t = _idle_session().cancel(S).prompt(S, 10).sync().prompt(S, 11)
    t = t.v1.ended(10, "cancelled").v1.chunk(S, "the second turn's reply")
    report = check(t.v1.ended(11, "cancelled"), V1)
    assert "CANCEL-11" in failed_rules(report), report["violations"]


def test_a_cancelled_end_with_no_cause_names_the_withdrawal_of_the_previous_work() -> None:
    """codex-acp 2.6.0 (the s10 reader's C5): prompt id=5 withdrawn ($/cancel_request),
    answered `cancelled`, its turn then streamed on; the next prompt was answered
    `cancelled` with no cause of its own. The proof named only the last answer; it now
    names the earlier withdrawal, that work's cancelled end and the content after it, which
    is where a maintainer finds the bug (the verdict rests on this work's window alone)."""
    t = _idle_session().prompt(S, 5).cancel_request("c2a", 5).v1.ended(5, "cancelled")
    t = t.v1.chunk(S, "the withdrawn turn runs on").prompt(S, 7).v1.ended(7, "cancelled")
    report = check(t, V1)
    assert failed_rules(report) == {"CANCEL-11"}, report["violations"]
    v = next(v for v in report["violations"] if v["rule"] == "CANCEL-11")
    assert [e["role"] for e in v["evidence"]] == [
        "the previous work's prompt", "$/cancel_request of the previous work",
        "the previous work's cancelled end", "the previous work's content after its end",
        "the prompt of this work", "the idle"]
    prompt, withdrawal, end, content, this, idle = (e["index"] for e in v["evidence"])
    assert prompt < withdrawal < end < content < this < idle == v["index"]
    assert (f"before it, the session's previous work (prompt #{prompt}) ended `cancelled` at "
            f"#{end}, after $/cancel_request #{withdrawal}, and its content still came at "
            f"#{content}, before this work's prompt #{this} was sent") in v["message"]
    # a work that ended normally in between: the withdrawal is no longer the previous work's
    t = _idle_session().prompt(S, 5).cancel_request("c2a", 5).v1.ended(5, "cancelled")
    t = t.prompt(S, 6).v1.chunk(S).v1.ended(6, "end_turn").prompt(S, 7).v1.ended(7, "cancelled")
    v = next(v for v in check(t, V1)["violations"] if v["rule"] == "CANCEL-11")
    assert [e["role"] for e in v["evidence"]] == ["the idle"], v["evidence"]
