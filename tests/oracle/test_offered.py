"""What an agent owes for what it offers (issue 50 items 3 and 5): a valid client is let in
(INIT-18), and a session it made stays usable until the client closes it (SESS-14)."""

from __future__ import annotations

from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, base, check, failed_rules, turn_start, warned_rules

V1 = DEFAULT.parse(["SPEC=v1"])
INVALID_PARAMS = -32602


def _refused_v1(params: dict) -> TraceBuilder:
    t = TraceBuilder().rpc.request("c2a", "initialize", params, 0)
    return t.rpc.error("a2c", 0, INVALID_PARAMS, "Invalid params")


def test_a_valid_client_refused_at_initialize_fails_init_11_with_its_proof() -> None:
    """The fuzzer's v1 initialize leaves clientCapabilities' fields to the schema's defaults;
    an agent that requires them (the release issue 50 could not start) breaks the text's
    'MUST respond with the chosen protocol version and the capabilities it supports'."""
    t = _refused_v1({"protocolVersion": 1, "clientCapabilities": {},
                     "clientInfo": {"name": "acp-model", "version": "1"}})
    report = check(t, V1)
    assert failed_rules(report) == {"INIT-18"}, report["violations"]
    message = report["violations"][0]["message"]
    assert "validates against the v1 schema" in message and "-32602" in message
    assert "clientCapabilities.fs" in message, message


def test_an_invalid_initialize_may_be_refused() -> None:
    t = _refused_v1({"protocolVersion": "one", "clientCapabilities": {}})
    assert "INIT-18" not in failed_rules(check(t, V1))


def test_an_error_that_does_not_call_the_request_invalid_is_no_verdict() -> None:
    """No API key, an internal failure, sdk-2.4.0's unsupported version: the environment's
    problem or the text's own answer, nothing about the request (the run is void, exit 2)."""
    params = {"protocolVersion": 2, "capabilities": {}, "info": {"name": "c", "version": "1"}}
    for code in (-32603, -32000, -32022):
        t = TraceBuilder().rpc.request("c2a", "initialize", params, 0)
        assert "INIT-18" not in failed_rules(check(t.rpc.error("a2c", 0, code, "no")))
    t = TraceBuilder().rpc.request("c2a", "initialize", params, 0)
    assert "INIT-18" in failed_rules(check(t.rpc.error("a2c", 0, INVALID_PARAMS, "bad")))


def _load(t: TraceBuilder, rid: int) -> TraceBuilder:
    return t.rpc.request("c2a", "session/load", {"sessionId": S, "cwd": "/tmp/project",
                                                 "mcpServers": []}, rid)


def _loadable() -> TraceBuilder:
    """v1, an agent that advertised session/load, and one session it made."""
    return TraceBuilder().v1.handshake(agent_caps={"loadSession": True}).v1.new_session(S)


def test_an_offered_method_failing_on_an_own_session_warns() -> None:
    t = _load(_loadable(), 20)
    report = check(t.rpc.error("a2c", 20, -32603, "Internal error"), V1)
    assert failed_rules(report) == set() and warned_rules(report) == {"SESS-14"}
    assert "failed with an internal error" in report["violations"][0]["message"]
    other = _load(_loadable(), 20)
    assert check(other.rpc.error("a2c", 20, -32002, "Resource not found"), V1)[
        "violations"] == []  # a load that finds nothing proves no loss


def test_a_prompt_told_its_own_session_is_gone_proves_the_loss() -> None:
    t = _load(_loadable(), 20)
    t.rpc.error("a2c", 20, -32603, "Internal error")
    t.prompt(S, 21).rpc.error("a2c", 21, -32002, f"Session not found: {S}")
    report = check(t, V1)
    assert failed_rules(report) == {"SESS-14"}, report["violations"]
    lost = next(v for v in report["violations"] if v["level"] == "fail")
    assert "never closed it, after session/load #" in lost["message"], lost["message"]


def test_a_session_the_client_closed_or_never_made_may_be_gone() -> None:
    closed = base().rpc.request("c2a", "session/close", {"sessionId": S}, 20)
    closed.rpc.result("a2c", 20, {}).prompt(S, 21).rpc.error("a2c", 21, -32002, "Session gone")
    assert "SESS-14" not in failed_rules(check(closed))
    unknown = base().prompt("s-invented", 21).rpc.error("a2c", 21, -32002, "Session not found")
    assert "SESS-14" not in failed_rules(check(unknown))
    file = turn_start(base(), 10).idle(S, "end_turn").prompt(S, 11)
    file.rpc.error("a2c", 11, -32002, "file:///tmp/gone.txt was not found")
    assert "SESS-14" not in failed_rules(check(file))  # not the session: a file it names


def test_a_permission_request_for_a_tool_never_announced_and_untitled_warns() -> None:
    """Issue 50 item 4: the client has nothing to show of what it is asked to allow."""
    v1 = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10).v1.chunk(S)
    v1.rpc.request("a2c", "session/request_permission", {
        "sessionId": S, "toolCall": {"toolCallId": "ghost"},
        "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]}, 50)
    report = check(v1.answer(50, "allow").v1.ended(10), V1)
    assert warned_rules(report) == {"V1-TOOL-01"} and failed_rules(report) == set()
    titled = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10).v1.chunk(S)
    titled.rpc.request("a2c", "session/request_permission", {
        "sessionId": S, "toolCall": {"toolCallId": "t9", "title": "Run the tests"},
        "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]}, 50)
    assert check(titled.answer(50, "allow").v1.ended(10), V1)["violations"] == []
    announced = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10)
    announced.v1.tool_call(S, "t1").v1.permission(S, 50, "t1")
    assert "V1-TOOL-01" not in warned_rules(check(announced.answer(50, "allow"), V1))
    v2 = turn_start(base(), 10).permission(S, 50, "ghost")
    assert "TOOL-02" in warned_rules(check(v2))
