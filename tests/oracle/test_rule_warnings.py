"""Every SHOULD rule a trace can break warns under its own ID (the failures' twin is
test_rule_violations.py). Found by the rule sweep (tests/rule_sweep.py): without these, no
test failed with the rule's check switched off."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, base, check, failed_rules, turn_start, warned_rules


def acpm_msg_family() -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "agent_message", "messageId": "m1",
                 "content": [{"type": "text", "text": "ok"}]})
    t.update(S, {"sessionUpdate": "agent_thought", "messageId": "m1",
                 "content": [{"type": "text", "text": "hmm"}]})
    return t.idle(S, "end_turn")


def tool_01() -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "call_9",
                 "content": {"type": "content", "content": {"type": "text", "text": "x"}}})
    return t.idle(S, "end_turn")


def tool_02() -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                 "kind": "read", "status": "pending"})
    t.update(S, {"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                 "status": "completed"})
    return t.idle(S, "end_turn")


def prompt_05() -> TraceBuilder:
    t = base().prompt(S, 10).accepted(10, {"stopReason": "end_turn"})
    return t.user_message(S).running(S).idle(S, "end_turn")


def init_05() -> TraceBuilder:
    t = TraceBuilder().initialize().initialized(version=3)
    return t.new_session(S)


def rpc_10() -> TraceBuilder:
    t = TraceBuilder().handshake()
    t.rpc.c2a([{"jsonrpc": "2.0", "id": 5, "method": "session/new",
                "params": {"cwd": "/tmp/project", "mcpServers": []}}])
    return t.rpc.a2c([{"jsonrpc": "2.0", "id": 5, "result": {"sessionId": S}}])


WARN_CASES: dict[str, Callable[[], TraceBuilder]] = {
    "ACPM-MSG-FAMILY": acpm_msg_family, "TOOL-01": tool_01, "TOOL-02": tool_02,
    "PROMPT-05": prompt_05, "INIT-05": init_05, "RPC-10": rpc_10,
}


def v1_turn_01() -> TraceBuilder:
    t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10).v1.chunk(S, "reply")
    return t.v1.ended(10, "end_turn").v1.chunk(S, "the reply's tail")


# rules of v1 only, judged under v1
V1_WARN_CASES: dict[str, Callable[[], TraceBuilder]] = {"V1-TURN-01": v1_turn_01}


@pytest.mark.parametrize("rule_id", sorted(V1_WARN_CASES))
def test_v1_trace_warns_under_the_rule(rule_id: str) -> None:
    report = check(V1_WARN_CASES[rule_id](), DEFAULT.parse(["SPEC=v1"]))
    assert warned_rules(report) == {rule_id}, report["violations"]
    assert failed_rules(report) == set()


@pytest.mark.parametrize("rule_id", sorted(WARN_CASES))
def test_trace_warns_under_the_rule(rule_id: str) -> None:
    report = check(WARN_CASES[rule_id]())
    assert rule_id in warned_rules(report), report["violations"]
    assert rule_id not in failed_rules(report)
    hits = [v for v in report["violations"] if v["rule"] == rule_id]
    assert all(v["message"] and v["strength"] in ("SHOULD", "SHOULD NOT") for v in hits)
