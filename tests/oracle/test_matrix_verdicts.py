"""Verdicts a hand read of the real-agent matrix (issue 38) found false or filed under the wrong
rule, each replayed as a trace: what the agent did right is not a failure any more, and where
it really breaks the rule the failure stands, once, under that rule."""

from __future__ import annotations

from typing import Any

from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, check

V1 = DEFAULT.parse(["SPEC=v1"])


def _fails(report: dict[str, Any]) -> list[str]:
    return [v["rule"] for v in report["violations"] if v["level"] == "fail"]


def _v1_withdrawn_prompt() -> TraceBuilder:
    """zed-codex-acp's run: an interrupt (cancel, then a prompt), $/cancel_request for that
    prompt, another cancel and a sync."""
    t = TraceBuilder()
    t.handshake_v1().new_session_v1(S)
    t.cancel(S).prompt(S, 5).cancel_request("c2a", 5).cancel(S)
    return t


def _null_error(t: TraceBuilder, data: Any = None) -> TraceBuilder:
    error: dict[str, Any] = {"code": -32601, "message": "Method not found"}
    if data is not None:
        error["data"] = data
    return t.a2c({"jsonrpc": "2.0", "id": None, "error": error})


def test_an_id_null_error_naming_cancel_request_is_one_rpc09_not_a_cancel02() -> None:
    """codex-acp answers the $/cancel_request notification it does not know with -32601 and
    id null, its error data naming the method: an answered notification (RPC-09), once; the
    session/cancel sent after it was not answered (CANCEL-02 blamed the last notification)."""
    t = _null_error(_v1_withdrawn_prompt(), "$/cancel_request").ended(5, "cancelled").sync()
    report = check(t, V1)
    assert _fails(report) == ["RPC-09"], report["violations"]
    (v,) = report["violations"]
    assert "$/cancel_request" in v["message"]


def test_an_id_null_error_that_may_answer_either_notification_is_rpc09() -> None:
    """Without data it may answer the cancel or the $/cancel_request: not provably a cancel's
    answer, but provably an answered notification."""
    t = _null_error(_v1_withdrawn_prompt()).ended(5, "cancelled").sync()
    assert _fails(check(t, V1)) == ["RPC-09"]


def test_an_agent_that_answers_session_cancel_still_fails_cancel02_once() -> None:
    """Only cancels were sent (or the error names session/cancel): CANCEL-02, not RPC-09 too."""
    t = TraceBuilder().handshake_v1().new_session_v1(S)
    t.prompt(S, 5).cancel(S)
    _null_error(t).ended(5, "cancelled").sync()
    assert _fails(check(t, V1)) == ["CANCEL-02"]
    named = _null_error(_v1_withdrawn_prompt(), {"method": "session/cancel"})
    assert _fails(check(named.ended(5, "cancelled").sync(), V1)) == ["CANCEL-02"]
