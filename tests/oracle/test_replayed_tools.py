"""A tool status a reopen's replayed history carries proves nothing about the tool now
(PERM-11): zed-codex-acp 0.16.0 replayed a working session's tools as completed, one whose
permission the client had answered cancelled, and was wrongly failed for running it."""

from __future__ import annotations

from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, check, failed_rules

V1 = DEFAULT.parse(["SPEC=v1"])
LOAD = {"sessionId": S, "cwd": "/tmp/project", "mcpServers": []}


def _rejected_tool() -> TraceBuilder:
    """v1: a turn whose tool's permission the client rejected, the answer read."""
    t = TraceBuilder().v1.handshake(agent_caps={"loadSession": True}).v1.new_session(S)
    t.prompt(S, 10).v1.tool_call(S, "t1").v1.permission(S, 50, "t1")
    return t.answer(50, "reject").sync()


def test_a_completed_status_in_a_loads_replay_is_no_proof_the_tool_ran() -> None:
    t = _rejected_tool().rpc.request("c2a", "session/load", LOAD, 20)
    t.tool(S, "t1", "completed").rpc.result("a2c", 20, {})
    assert "PERM-11" not in failed_rules(check(t.v1.ended(10), V1))


def test_the_same_status_outside_a_replay_is_the_tool_running_against_the_answer() -> None:
    t = _rejected_tool().tool(S, "t1", "completed")
    assert "PERM-11" in failed_rules(check(t.v1.ended(10), V1))
