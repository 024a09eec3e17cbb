"""A valid batch rejected as a whole (real agents do: "JSON-RPC batches are not supported") is
one cause and one verdict, under the rule it breaks: ACPM-BATCH, a SHOULD of the batch rules."""

from __future__ import annotations

from typing import Any

from tests.helpers import base, check

REJECTED = {"jsonrpc": "2.0", "id": None,
            "error": {"code": -32600, "message": "JSON-RPC batches are not supported"}}
NOTE = {"jsonrpc": "2.0", "method": "_x/note", "params": {}}


def _rules(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(v["rule"], v["level"]) for v in report["violations"]]


def test_a_batch_with_a_request_rejected_whole_is_one_warning() -> None:
    t = base().rpc.c2a([{"jsonrpc": "2.0", "id": 77, "method": "_x/sync", "params": {}}, NOTE])
    report = check(t.rpc.a2c(REJECTED))
    assert _rules(report) == [("ACPM-BATCH", "warn")]  # no ACPM-ANSWER for request 77
    assert "1 request(s) and 1 notification(s)" in report["violations"][0]["message"]
    assert report["verdict"] == "pass"


def test_a_notification_batch_answered_at_all_fails_rpc_09() -> None:
    """A batch of notifications only gets no response (transports.mdx: 'MUST NOT reply to a
    Notification, including a Notification within a batch'); an error for the whole batch is
    such a reply (issue 49: it was ACPM-BATCH's warning). Mixed batches stay ACPM-BATCH's."""
    report = check(base().rpc.c2a([NOTE]).rpc.a2c(REJECTED))
    assert _rules(report) == [("RPC-09", "fail")]
    assert "batch of 1 notification(s) and no request" in report["violations"][0]["message"]


def test_a_response_with_no_id_member_is_not_called_id_null() -> None:
    """zed-codex-acp's answer to `$/cancel_request` had no `id` at all (review 2, item 6)."""
    bare = {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found",
                                        "data": "$/cancel_request"}}
    report = check(base().rpc.c2a(NOTE).rpc.a2c(bare))
    assert _rules(report) == [("RPC-09", "fail")]
    message = report["violations"][0]["message"]
    assert "no id member" in message and "id null" not in message


def test_a_batch_answered_per_request_is_clean() -> None:
    t = base().rpc.c2a([{"jsonrpc": "2.0", "id": 77, "method": "_x/sync", "params": {}}, NOTE])
    t.rpc.a2c([{"jsonrpc": "2.0", "id": 77, "error": {"code": -32601, "message": "no"}}])
    assert _rules(check(t)) == []


def test_an_id_null_error_with_no_batch_and_nothing_unreadable_answers_a_notification() -> None:
    report = check(base().rpc.c2a(NOTE).rpc.a2c(REJECTED))
    assert _rules(report) == [("RPC-09", "fail")]


def test_a_batch_left_unanswered_is_one_warning_under_the_batch_rules() -> None:
    """An agent that ignores batches leaves every request in them unanswered: the batch rules
    give that a SHOULD ("a Response object SHOULD exist for each Request object"), one
    verdict for the batch, not a MUST failure per request."""
    t = base().rpc.c2a([{"jsonrpc": "2.0", "id": 77, "method": "_x/sync", "params": {}},
                        {"jsonrpc": "2.0", "id": 78, "method": "_x/sync", "params": {}}, NOTE])
    report = check(t)
    assert _rules(report) == [("ACPM-BATCH", "warn")]
    assert "of the batch #" in report["violations"][0]["message"]
    assert report["verdict"] == "pass"


def test_a_lone_request_left_unanswered_still_fails() -> None:
    report = check(base().rpc.c2a({"jsonrpc": "2.0", "id": 77, "method": "_x/sync", "params": {}}))
    assert _rules(report) == [("ACPM-ANSWER", "fail")]
