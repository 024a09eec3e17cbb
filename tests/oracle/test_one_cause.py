"""A peer stuck on one request leaves everything sent after it unanswered: one cause, one
verdict, on the request it got stuck on. A peer that ignores one method but answers the rest
is judged per request, as before."""

from __future__ import annotations

from typing import Any

from tests.helpers import S, base, check


def _failures(report: dict[str, Any]) -> list[tuple[str, int]]:
    return [(v["rule"], v["index"]) for v in report["violations"] if v["level"] == "fail"]


def test_requests_after_the_one_the_agent_got_stuck_on_are_the_same_failure() -> None:
    t = base().prompt(S, 2)
    stuck = t.log.last
    t.rpc.request("c2a", "_acp_model/sync", {}, 3)
    t.rpc.request("c2a", "session/new", {"cwd": "/tmp/project", "mcpServers": []}, 4)
    assert _failures(check(t)) == [("PROMPT-04", stuck)]


def test_an_answer_written_after_the_next_request_still_counts_as_before_it() -> None:
    """The agent answered prompt 2 and then got stuck on prompt 3, which the client had
    already sent when the answer arrived: the later session/new is still prompt 3's cause."""
    t = base().prompt(S, 2).prompt(S, 3)
    stuck = t.log.last
    t.accepted(2).rpc.request("c2a", "session/new", {"cwd": "/tmp/project", "mcpServers": []}, 4)
    found = _failures(check(t))
    assert ("PROMPT-04", stuck) in found and not any(r == "ACPM-ANSWER" for r, _ in found)


def test_an_agent_that_answers_later_requests_is_judged_per_request() -> None:
    """It ignores prompts but answers the sync after one: the next unanswered sync is a
    second cause."""
    t = base().prompt(S, 2)
    prompt = t.log.last
    t.sync(3).rpc.request("c2a", "_acp_model/sync", {}, 4)
    sync = t.log.last
    assert sorted(_failures(check(t))) == sorted([("PROMPT-04", prompt), ("ACPM-ANSWER", sync)])
