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


def _allowed_tool_v1() -> TraceBuilder:
    """v1: a turn whose tool's permission the client is asked for."""
    t = TraceBuilder().v1.handshake(agent_caps={"loadSession": True}).v1.new_session(S)
    return t.prompt(S, 10).v1.tool_call(S, "t1").v1.permission(S, 50, "t1")


def test_an_allow_after_the_client_cancelled_grants_nothing_tool_12_watches() -> None:
    """The fuzz client's negative input 'cancel, then allow' (gemini-cli, opencode v1): the
    allow came after the client's own cancel, which v1 forbids the client; the agent that
    ends the tool without running it broke no SHOULD."""
    t = _allowed_tool_v1().cancel(S).answer(50, "allow").sync().tool(S, "t1", "completed")
    report = check(t.v1.ended(10, "cancelled"), V1)
    assert "TOOL-12" not in {v["rule"] for v in report["violations"]}, report["violations"]
    control = _allowed_tool_v1().answer(50, "allow").sync().tool(S, "t1", "completed")
    assert "TOOL-12" in {v["rule"] for v in check(control.v1.ended(10), V1)["violations"]}


def test_an_allow_after_the_work_ended_cancelled_grants_nothing_either() -> None:
    """zed-codex-acp v1: the allow came after the prompt was answered cancelled."""
    t = _allowed_tool_v1().cancel(S).sync().v1.ended(10, "cancelled")
    t = t.answer(50, "allow").sync().tool(S, "t1", "completed")
    assert "TOOL-12" not in {v["rule"] for v in check(t, V1)["violations"]}


def test_a_completed_status_in_a_loads_replay_is_no_proof_for_tool_12() -> None:
    """An allowed tool's status a reopen's replayed history carries says nothing about it
    now (zed-codex-acp v1: the completed statuses of a session/load's replay)."""
    t = _allowed_tool_v1().answer(50, "allow").sync().v1.ended(10)
    t = t.rpc.request("c2a", "session/load", LOAD, 20).tool(S, "t1", "completed")
    t = t.rpc.result("a2c", 20, {})
    assert "TOOL-12" not in {v["rule"] for v in check(t, V1)["violations"]}
