"""A failure names the client message it answers or is judged against (issue 49, the s9
reader's rows 1, 5, 6, 7, 11), and a finding on a session whose id the agent handed out again
is charged to SESS-01, its root cause (one root cause, one failure)."""

from __future__ import annotations

from typing import Any

from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, base, check

V1 = DEFAULT.parse(["SPEC=v1"])
NOTE = {"jsonrpc": "2.0", "method": "_x/note", "params": {}}
REJECTED = {"jsonrpc": "2.0", "id": None,
            "error": {"code": -32600, "message": "JSON-RPC batches are not supported"}}


def _only(report: dict[str, Any], rule: str) -> dict[str, Any]:
    (v,) = [v for v in report["violations"] if v["rule"] == rule]
    return v


def _v1() -> TraceBuilder:
    t = TraceBuilder()
    return t.v1.handshake().v1.new_session(S)


def test_an_answered_notification_batch_names_the_batch() -> None:
    t = base().rpc.c2a([NOTE])
    batch = len(t.records) - 1
    v = _only(check(t.rpc.a2c(REJECTED)), "RPC-09")
    assert f"(#{batch})" in v["message"]


def test_a_session_id_handed_out_again_cites_where_it_was_handed_out_first() -> None:
    t = base()
    first = len(t.records) - 1  # the response of session/new that made S
    v = _only(check(t.new_session(S)), "SESS-01")
    assert v["level"] == "fail"
    assert v["evidence"] == [{"index": first, "role": "the same session id handed out before"}]
    assert f"handed out before, at #{first}" in v["message"]


def test_an_unanswered_withdrawn_prompt_names_the_withdrawal_and_the_proof_it_was_read() -> None:
    t = _v1().prompt(S, 5).cancel_request("c2a", 5)
    withdrawal = len(t.records) - 1
    t.sync()
    sync, answer = len(t.records) - 2, len(t.records) - 1
    v = _only(check(t, V1), "CANCEL-14")
    assert v["level"] == "fail"
    assert (f"withdrawn by $/cancel_request #{withdrawal} (read: the agent answered #{sync}, "
            f"sent after it, at #{answer})") in v["message"]


def test_a_rejudged_liveness_finding_says_the_deadline_the_run_waited() -> None:
    """The counterexample said "within the 5 s deadline", the re-judged issue "before the end
    of the trace": both now say what the run's client waited (the reader's item 7)."""
    from acp_model.oracle.offline import check_records

    t = _v1().prompt(S, 5).cancel_request("c2a", 5).sync()
    report = check_records(t.records, readings=V1, deadline=5.0, open_at_end=True)
    (v,) = [v for v in report["open_at_end"] if v["rule"] == "CANCEL-14"]
    assert v["message"].endswith("within the 5 s deadline")


def test_a_cancel_sent_before_the_prompt_is_not_called_in_flight() -> None:
    """CANCEL-09's proof named an interrupt's cancel, written just before its prompt, as "in
    flight" when the turn ended (the reader's item 7)."""
    t = _v1()
    interrupt = len(t.records)
    t.cancel(S).prompt(S, 5)
    prompt = len(t.records) - 1
    t.v1.ended(5, "cancelled").update(S, {"sessionUpdate": "agent_message_chunk",
                                          "content": {"type": "text", "text": "late"}})
    v = _only(check(t, V1), "CANCEL-09")
    assert "in flight" not in v["message"]
    assert (f"session/cancel #{interrupt} (sent before the turn's prompt #{prompt}"
            in v["message"])


# --- one root: SESS-01 ----------------------------------------------------------------------


def _cancel_ignored(t: TraceBuilder) -> TraceBuilder:
    """A prompt whose cancel the agent provably read, answered end_turn: CANCEL-07."""
    return t.prompt(S, 5).cancel(S).sync().v1.ended(5, "end_turn")


def test_a_cancel_ignored_on_a_session_handed_out_twice_is_sess_01_s_warning() -> None:
    """gptme handed its one session's id to every session/new ("Resumed session"); the later
    CANCEL-07 and CANCEL-14 on it were filed as failures of their own (s9 rows 7, 8)."""
    assert _only(check(_cancel_ignored(_v1()), V1), "CANCEL-07")["level"] == "fail"
    t = _v1().v1.new_session(S)
    again = len(t.records) - 1
    report = check(_cancel_ignored(t), V1)
    assert _only(report, "SESS-01")["level"] == "fail"
    v = _only(report, "CANCEL-07")
    assert v["level"] == "warn"
    assert f"id again at #{again}" in v["message"] and "SESS-01" in v["message"]
    assert {"index": again, "role": "the session id handed out again (SESS-01)"} \
        in v["evidence"]


def test_a_withdrawn_prompt_left_unanswered_on_a_reissued_session_is_sess_01_s_warning(
        ) -> None:
    t = _v1().v1.new_session(S).prompt(S, 5).cancel_request("c2a", 5).sync()
    report = check(t, V1)
    assert _only(report, "SESS-01")["level"] == "fail"
    v = _only(report, "CANCEL-14")
    assert v["level"] == "warn" and "SESS-01" in v["message"]


def test_a_session_handed_out_again_after_the_finding_leaves_it_a_failure() -> None:
    """Only a reissue before the finding's point is its root: one after it cannot be."""
    report = check(_cancel_ignored(_v1()).v1.new_session(S), V1)
    assert _only(report, "SESS-01")["level"] == "fail"
    assert _only(report, "CANCEL-07")["level"] == "fail"
