"""Every catalogued MUST / MUST NOT rule has a trace that breaks it, and the checker names it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from acp_model.model.check import CHECKS
from acp_model.model.vocab import Level
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.spec.rules import BLOCKING, RULES
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, base, check, failed_rules, turn_start, warned_rules
from tests.oracle import audit_cases


def _finished(t: TraceBuilder, req_id: int = 10) -> TraceBuilder:
    return turn_start(t, req_id).idle(S, "end_turn")


def init_01() -> TraceBuilder:
    t = TraceBuilder()
    t.rpc.request("c2a", "session/new", {"cwd": "/tmp"}, 1)
    return t.rpc.result("a2c", 1, {"sessionId": S})


def v1_init_03() -> TraceBuilder:
    """An agent that names protocol version 2 and speaks v1 (the one INIT-03 failure: an
    omitted capabilities field is a warning, the schema defaults it)."""
    t = TraceBuilder().rpc.request("c2a", "initialize", {
        "protocolVersion": 2, "capabilities": {}, "info": {"name": "e", "version": "1"}}, 0)
    t.rpc.result("a2c", 0, {"protocolVersion": 2, "authMethods": [],
                            "agentCapabilities": {"loadSession": False, "promptCapabilities": {}},
                            "agentInfo": {"name": "a", "version": "1"}})
    return t.v1.new_session(S).prompt(S, 10).v1.ended(10)


def init_07() -> TraceBuilder:
    return TraceBuilder().initialize().initialized(capabilities={"session": True})


def init_09() -> TraceBuilder:
    t = TraceBuilder().initialize()
    return t.rpc.result("a2c", 0, {"protocolVersion": 2, "capabilities": {}})


def init_10() -> TraceBuilder:
    t = base()
    return t.prompt(S, 10).rejected(10, -32601)


def sess_01() -> TraceBuilder:
    return base().new_session(S)


def sess_02() -> TraceBuilder:
    return TraceBuilder().handshake().new_session(S, cwd="relative/dir")


def sess_12() -> TraceBuilder:
    return _finished(base()).agent_message("other-session")


def sess_13() -> TraceBuilder:
    return base().prompt("nope", 10)


def prompt_01() -> TraceBuilder:
    return TraceBuilder().prompt(S, 10)


def prompt_02() -> TraceBuilder:
    t = base(capabilities={"session": {}})
    return t.prompt(S, 10, blocks=[{"type": "image", "data": "AAAA", "mimeType": "image/png"}])


def prompt_04_twice() -> TraceBuilder:
    return _finished(base()).accepted(10)


def prompt_04_never() -> TraceBuilder:
    return base().prompt(S, 10)


def prompt_06() -> TraceBuilder:
    return base().prompt(S, 10).accepted(10).running(S).idle(S, "end_turn")


def state_01() -> TraceBuilder:
    return base().prompt(S, 10).accepted(10).user_message(S).idle(S, "end_turn")


def state_01_requires_action() -> TraceBuilder:
    return base().prompt(S, 10).accepted(10).user_message(S).requires_action(S)


def state_02() -> TraceBuilder:
    return turn_start(base(), 10).agent_message(S)


def state_03() -> TraceBuilder:
    return turn_start(base(), 10).idle(S, None)


def state_06() -> TraceBuilder:
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Tool")
    t.permission(S, 50, "t1").requires_action(S).answer(50, "allow")
    return t.tool(S, "t1", "in_progress").running(S).tool(S, "t1", "completed").idle(S, "end_turn")


def state_09() -> TraceBuilder:
    return turn_start(base(), 10).state(S, "paused").idle(S, "end_turn")


def one_stop() -> TraceBuilder:
    return _finished(base()).idle(S, "end_turn")


def stop_03() -> TraceBuilder:
    return turn_start(base(), 10).idle(S, "done")


def msg_01() -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}})
    return t.idle(S, "end_turn")


def tool_07() -> TraceBuilder:
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Tool")
    t.update(S, {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t1",
                 "content": {"type": "text", "text": "bare block"}})
    return t.idle(S, "end_turn")


def tool_14() -> TraceBuilder:
    return turn_start(base(), 10).tool(S, "t1", "frozen", title="T").idle(S, "end_turn")


def tool_15() -> TraceBuilder:
    return turn_start(base(), 10).tool(S, "t1", "pending", title="T", kind="compile") \
        .idle(S, "end_turn")


def tool_19() -> TraceBuilder:
    return turn_start(base(), 10).tool(S, "t1", "pending", title="T",
                                       locations=[{"path": "src/main.py"}]).idle(S, "end_turn")


def plan_04() -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "plan_update", "plan": {"type": "markdown2", "planId": "p"}})
    return t.idle(S, "end_turn")


def plan_04_missing_id() -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "plan_update", "plan": {"type": "items", "entries": []}})
    return t.idle(S, "end_turn")


def usage_02() -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "usage_update", "used": 5})
    return t.idle(S, "end_turn")


def usage_04_shape() -> TraceBuilder:
    return turn_start(base(), 10).usage(S, currency="usd").idle(S, "end_turn")


def plan_09() -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "plan_update", "plan": {
        "type": "items", "planId": "p",
        "entries": [{"content": "x", "priority": "urgent", "status": "pending"}]}})
    return t.idle(S, "end_turn")


def usage_04() -> TraceBuilder:
    return turn_start(base(), 10).usage(S, currency="XYZ").idle(S, "end_turn")


def enum_02() -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "agent_mesage_chunk", "messageId": "m",
                 "content": {"type": "text", "text": "typo"}})
    return t.idle(S, "end_turn")


def perm_02() -> TraceBuilder:
    t = turn_start(base(), 10)
    return t.rpc.request("a2c", "session/request_permission",
                         {"sessionId": S, "title": "Go?", "options": []}, 50)


def perm_07() -> TraceBuilder:
    t = turn_start(base(), 10)
    return t.rpc.request("a2c", "session/request_permission", {
        "sessionId": S, "title": "Go?",
        "options": [{"optionId": "o", "name": "Maybe", "kind": "maybe_once"}]}, 50)


def perm_11() -> TraceBuilder:
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Tool")
    t.permission(S, 50, "t1").requires_action(S).answer(50, "reject").sync()
    return t.running(S).tool(S, "t1", "in_progress").idle(S, "end_turn")


def perm_12_twice() -> TraceBuilder:
    t = turn_start(base(), 10).permission(S, 50).requires_action(S).answer(50, "allow")
    return t.answer(50, "allow")


def perm_12_never() -> TraceBuilder:
    return turn_start(base(), 10).permission(S, 50).requires_action(S)


def cancel_02() -> TraceBuilder:
    t = turn_start(base(), 10).cancel(S)
    return t.rpc.a2c({"jsonrpc": "2.0", "id": None, "result": None}).idle(S, "cancelled")


def cancel_04() -> TraceBuilder:
    t = turn_start(base(), 10).permission(S, 50).requires_action(S).cancel(S)
    return t.answer(50, "allow").idle(S, "cancelled")


def cancel_06() -> TraceBuilder:
    return turn_start(base(), 10).cancel(S).agent_message(S)


def cancel_07() -> TraceBuilder:
    return turn_start(base(), 10).cancel(S).sync().idle(S, "end_turn")


def cancel_09() -> TraceBuilder:
    t = turn_start(base(), 10).tool(S, "t1", "in_progress", title="Tool").cancel(S)
    return t.idle(S, "cancelled").tool(S, "t1", "completed")


def cancel_11() -> TraceBuilder:
    t = _finished(base()).cancel(S).sync()
    return turn_start(t, 11).idle(S, "cancelled")


def cancel_14() -> TraceBuilder:
    t = turn_start(base(), 10).permission(S, 50).requires_action(S)
    return t.cancel_request("a2c", 50).idle(S, "end_turn")


def rpc_01() -> TraceBuilder:
    return base().rpc.a2c({"jsonrpc": "2.0", "id": 999, "result": {}})


def rpc_01_version() -> TraceBuilder:
    return base().rpc.a2c({"jsonrpc": "1.0", "method": "session/update",
                           "params": {"sessionId": S,
                                      "update": {"sessionUpdate": "usage_update", "used": 1,
                                                 "size": 2}}})


def rpc_02() -> TraceBuilder:
    return base().rpc.raw("a2c", "\ufffd\ufffd", note="invalid-utf8")


def rpc_04() -> TraceBuilder:
    return base().rpc.raw("a2c", "Starting agent v1.2 ...")


def rpc_07() -> TraceBuilder:
    return base().rpc.a2c([])


def rpc_09() -> TraceBuilder:
    return base().rpc.a2c({"jsonrpc": "2.0", "id": None, "result": {}})


def acpm_answer() -> TraceBuilder:
    return base().rpc.request("c2a", "session/list", {}, 60)


def a01_forbid() -> TraceBuilder:
    return turn_start(base(), 10).prompt(S, 11)


def a03_diagram() -> TraceBuilder:
    return base().prompt(S, 10).user_message(S).accepted(10).running(S).idle(S, "end_turn")


def a04_idle_cancelled() -> TraceBuilder:
    return _finished(base()).cancel(S).sync().prompt(S, 11).accepted(11)


def a07_forbid() -> TraceBuilder:
    return base().running(S).idle(S, "end_turn")


def a10_cancel() -> TraceBuilder:
    """A prompt held behind running work outlives a cancel the agent provably read."""
    t = turn_start(base(), 10).prompt(S, 11).cancel(S).sync().idle(S, "cancelled")
    return t.accepted(11).user_message(S).running(S).idle(S, "end_turn")


def sess_10() -> TraceBuilder:
    t = turn_start(base(), 10).rpc.request("c2a", "session/close", {"sessionId": S}, 50)
    return t.sync().idle(S, "end_turn")


def acpm_schema() -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "agent_message_chunk", "messageId": "m",
                 "content": {"type": "text", "text": 5}})
    return t.idle(S, "end_turn")


# --- the sdk-2.4.0 revision ------------------------------------------------------------------

def _sdk_turn(t: TraceBuilder, rid: int, mid: str) -> TraceBuilder:
    return t.prompt(S, rid).accepted(rid, {"messageId": mid}).user_message(S, mid).running(S)


def sdk_receipt_01() -> TraceBuilder:
    return turn_start(base(), 10).idle(S, "end_turn")


def sdk_receipt_02() -> TraceBuilder:
    t = base().prompt(S, 10).accepted(10, {"messageId": "u-wrong"}).user_message(S, "u1")
    return t.running(S).idle(S, "end_turn")


def sdk_receipt_03() -> TraceBuilder:
    t = _sdk_turn(base(), 10, "u1").idle(S, "end_turn")
    return _sdk_turn(t, 11, "u1").idle(S, "end_turn")


def sdk_prompt_02() -> TraceBuilder:
    t = base().prompt(S, 10, "fix").user_message(S, "u1", "fix").running(S)
    return t.rejected(10).idle(S, "error")


def sdk_prompt_03() -> TraceBuilder:
    return base().prompt(S, 10, "fix").rejected(10, -32800).user_message_chunk(S, "u1", "fix")


def _close_during_work(*, idle_first: bool) -> TraceBuilder:
    """A turn running when the client closes its session: the cancelled work's last update
    and idle before the close response (or the response first)."""
    t = _sdk_turn(base(), 10, "u1").tool(S, "t1", "in_progress", title="Run", kind="execute")
    t.rpc.request("c2a", "session/close", {"sessionId": S}, 50)
    if not idle_first:
        t.rpc.result("a2c", 50, {})
    t.tool(S, "t1", "cancelled").idle(S, "cancelled")
    return t.rpc.result("a2c", 50, {}) if idle_first else t


def sdk_close_01() -> TraceBuilder:
    return _close_during_work(idle_first=False)


def _close_with_held_prompt(code: int) -> TraceBuilder:
    """A prompt held behind running work when the session is closed: the close keeps it from
    being inserted, so it is answered with an error."""
    t = _sdk_turn(base(), 10, "u1").prompt(S, 11, "next")
    t.rpc.request("c2a", "session/close", {"sessionId": S}, 50)
    t.idle(S, "cancelled").rpc.result("a2c", 50, {})
    return t.rejected(11, code)


def sdk_close_02() -> TraceBuilder:
    return _close_with_held_prompt(-32603)


def _closed(then: str) -> TraceBuilder:
    t = base().rpc.request("c2a", "session/close", {"sessionId": S}, 50).rpc.result("a2c", 50, {})
    if then == "resume":  # a resumed session is live again
        t.rpc.request("c2a", "session/resume", {"sessionId": S, "cwd": "/tmp/project",
                                             "mcpServers": []}, 51)
        t.idle(S).rpc.result("a2c", 51, {})
    if then in ("update", "resume"):
        t.agent_message(S, "a9", "still here")
    return t


def sdk_close_03() -> TraceBuilder:
    return _closed("update")


def test_a_close_in_the_order_sdk_2_4_0_gives_keeps_the_close_rules() -> None:
    """The final updates and the cancelled idle before the close response, a held prompt
    answered -32800, nothing after the response (until a resume): no violation. The seed and
    v1 do not state the order: the breaking traces pass there."""
    sdk = DEFAULT.parse(["SPEC=sdk-2.4.0"])
    for kept in (_close_during_work(idle_first=True), _close_with_held_prompt(-32800),
                 _closed("nothing"), _closed("resume")):
        assert check(kept, sdk)["violations"] == []
    early = check(sdk_close_01(), sdk)
    assert [v["rule"] for v in early["violations"]] == ["SDK-CLOSE-01"]  # one cause, once
    for broken in (sdk_close_01(), sdk_close_02(), sdk_close_03()):
        assert not {"SDK-CLOSE-01", "SDK-CLOSE-02", "SDK-CLOSE-03"} & failed_rules(
            check(broken))


def _bg(t: TraceBuilder, items: list[str] | None, reason: str | None = "end_turn"
        ) -> TraceBuilder:
    upd: dict[str, Any] = {"sessionUpdate": "state_update", "state": "idle",
                           "stopReason": reason}
    if items is not None:
        upd["background"] = [{"type": "tool_call", "toolCallId": i} for i in items]
    return t.update(S, upd)


def _watch() -> TraceBuilder:
    return _bg(_sdk_turn(base(), 10, "u1").tool(S, "w", "in_progress", title="Watch"), ["w"])


def sdk_bg_01() -> TraceBuilder:
    return _bg(_sdk_turn(_watch(), 11, "u2"), None)


def sdk_bg_02() -> TraceBuilder:
    return _bg(_sdk_turn(base(), 10, "u1"), ["ghost"])


def sdk_bg_03() -> TraceBuilder:
    return _bg(_sdk_turn(_watch(), 11, "u2"), [])


# --- v1: the turn is the prompt and its response -----------------------------------------------

def _v1() -> TraceBuilder:
    return TraceBuilder().v1.handshake().v1.new_session(S)


def v1_cancel_07_end_turn() -> TraceBuilder:
    return _v1().prompt(S, 10).v1.chunk(S).cancel(S).sync().v1.ended(10, "end_turn")


def v1_cancel_07_error() -> TraceBuilder:
    """'Agents MUST catch these errors and return the semantically meaningful cancelled'."""
    return _v1().prompt(S, 10).v1.chunk(S).cancel(S).sync().rejected(10, -32603)


def v1_cancel_09_content() -> TraceBuilder:
    return _v1().prompt(S, 10).v1.chunk(S).cancel(S).v1.ended(10, "cancelled").v1.chunk(S)


def v1_cancel_09_tool() -> TraceBuilder:
    return _v1().prompt(S, 10).v1.tool_call(S, "t1").cancel(S).v1.ended(10, "cancelled") \
        .tool(S, "t1", "completed")


def v1_prompt_04() -> TraceBuilder:
    return _v1().prompt(S, 10).v1.chunk(S)


def v1_a01_forbid() -> TraceBuilder:
    return _v1().prompt(S, 10).prompt(S, 11).v1.ended(10).v1.ended(11)


def v1_load_01() -> TraceBuilder:
    """The history of a prompt this connection sent, replayed after the load's answer: its
    user message carries that prompt's text (proof that it is history)."""
    t = TraceBuilder().v1.handshake(agent_caps={"loadSession": True}).v1.new_session(S)
    t = t.prompt(S, 10, "old").v1.chunk(S).v1.ended(10)
    t.rpc.request("c2a", "session/load", {"sessionId": S, "cwd": "/tmp/project",
                                          "mcpServers": []}, 20)
    return t.rpc.result("a2c", 20, {}).v1.chunk(S, "old", "user_message_chunk")


def test_a_user_message_after_the_load_answer_without_proof_is_a_warning() -> None:
    """A user message after the answer, of a session loaded from an earlier connection (so
    no prompt of this trace has its text): probably history, a warning."""
    t = TraceBuilder().v1.handshake(agent_caps={"loadSession": True}).rpc.request(
        "c2a", "session/load", {"sessionId": S, "cwd": "/tmp/project", "mcpServers": []}, 1)
    report = check(t.rpc.result("a2c", 1, {}).v1.chunk(S, "old", "user_message_chunk"),
                   DEFAULT.parse(["SPEC=v1"]))
    assert [(v["rule"], v["level"]) for v in report["violations"]] == [("V1-LOAD-01", "warn")]


def v1_resume_01() -> TraceBuilder:
    t = TraceBuilder().v1.handshake(agent_caps={"sessionCapabilities": {"resume": {}}})
    t.rpc.request("c2a", "session/resume", {"sessionId": S, "cwd": "/tmp/project"}, 1)
    return t.v1.chunk(S, "old", "user_message_chunk").rpc.result("a2c", 1, {})


def _resume_replay(user_id: str, agent_id: str) -> TraceBuilder:
    t = TraceBuilder().handshake(capabilities={"session": {"resume": {}}})
    t.rpc.request("c2a", "session/resume", {"sessionId": "old", "cwd": "/tmp/project",
                                            "mcpServers": [], "replayFrom": {"type": "start"}}, 1)
    t.user_message("old", user_id, "question").agent_message("old", agent_id, "answer")
    return t.rpc.result("a2c", 1, {})


def _resume(snapshot: bool) -> TraceBuilder:
    t = TraceBuilder().handshake(capabilities={"session": {"resume": {}}})
    t.rpc.request("c2a", "session/resume", {"sessionId": "old", "cwd": "/tmp/project",
                                            "mcpServers": []}, 1)
    if snapshot:
        t.idle("old")
    return t.rpc.result("a2c", 1, {})


def sdk_resume_01() -> TraceBuilder:
    return _resume(snapshot=False)


def test_a_resume_that_reports_the_state_first_keeps_sdk_resume_01() -> None:
    sdk = DEFAULT.parse(["SPEC=sdk-2.4.0"])
    assert check(_resume(snapshot=True), sdk)["violations"] == []
    refused = TraceBuilder().handshake(capabilities={"session": {"resume": {}}})
    refused.rpc.request("c2a", "session/resume", {"sessionId": "old", "cwd": "/tmp/project",
                                                  "mcpServers": []}, 1).rpc.error("a2c", 1, -32002)
    assert "SDK-RESUME-01" not in failed_rules(check(refused, sdk))
    assert check(_resume(snapshot=False))["violations"] == []  # the seed does not state it


def sess_08() -> TraceBuilder:
    return _resume_replay("m1", "m1")


def test_replayed_messages_with_their_own_ids_keep_sess_08() -> None:
    assert check(_resume_replay("m1", "m2"))["violations"] == []
    # the same reuse outside a replay stays ACPM-MSG-FAMILY's warning
    t = turn_start(base(), 10).agent_message(S, "u-reused").idle(S, "end_turn")
    t2 = turn_start(base(), 10)
    t2.user_message(S, "x1").agent_message(S, "x1").idle(S, "end_turn")
    report = check(t2)
    assert {v["rule"] for v in report["violations"]} == {"ACPM-MSG-FAMILY"}
    assert check(t)["verdict"] == "pass"


def init_18() -> TraceBuilder:
    """A schema-valid initialize refused as invalid params."""
    t = TraceBuilder().rpc.request("c2a", "initialize", {
        "protocolVersion": 2, "capabilities": {}, "info": {"name": "c", "version": "1"}}, 0)
    return t.rpc.error("a2c", 0, -32602, "Invalid params")


def sess_14() -> TraceBuilder:
    """A session the agent made, never closed, that a prompt is told is gone."""
    return base().prompt(S, 10).rpc.error("a2c", 10, -32002, f"Session {S} not found")


def v1_init_18() -> TraceBuilder:
    t = TraceBuilder().rpc.request("c2a", "initialize", {
        "protocolVersion": 1, "clientCapabilities": {},
        "clientInfo": {"name": "c", "version": "1"}}, 0)
    return t.rpc.error("a2c", 0, -32602, "Invalid params")


V1_CASES: dict[str, list[Callable[[], TraceBuilder]]] = {
    "CANCEL-07": [v1_cancel_07_end_turn, v1_cancel_07_error],
    "CANCEL-09": [v1_cancel_09_content, v1_cancel_09_tool], "PROMPT-04": [v1_prompt_04],
    "A-01.forbid": [v1_a01_forbid], "V1-LOAD-01": [v1_load_01],
    "V1-RESUME-01": [v1_resume_01], "INIT-03": [v1_init_03],
    **audit_cases.V1_BREAKS,  # the rules the audit of the texts added
}
V1_BY_READINGS = {"INIT-18": [v1_init_18]}  # v1 with nothing to detect it by: judged as v1


@pytest.mark.parametrize(("rule_id", "build"),
                         [(rid, b) for rid, builders in V1_CASES.items() for b in builders],
                         ids=lambda x: x if isinstance(x, str) else x.__name__)
def test_v1_trace_breaks_the_rule(rule_id: str, build: Callable[[], TraceBuilder]) -> None:
    """Judged as v1 without being told: the initialize response decides it."""
    report = check(build(), spec="auto")
    assert report["spec"]["revision"] == "v1", report["spec"]
    hits = {v["rule"]: v["level"] for v in report["violations"]}
    assert rule_id in hits, report["violations"]
    assert hits[rule_id] == ("warn" if rule_id in WARN_ONLY else "fail")
    if rule_id not in WARN_ONLY:
        assert set(failed_rules(report)) == {rule_id}, report["violations"]


@pytest.mark.parametrize(("rule_id", "build"),
                         [(rid, b) for rid, builders in V1_BY_READINGS.items() for b in builders],
                         ids=lambda x: x if isinstance(x, str) else x.__name__)
def test_v1_trace_judged_as_v1_breaks_the_rule(rule_id: str,
                                              build: Callable[[], TraceBuilder]) -> None:
    """A v1 trace whose agent never answered initialize with a version: told it is v1."""
    assert failed_rules(check(build(), DEFAULT.parse(["SPEC=v1"]))) == {rule_id}


def _warn_only() -> set[str]:
    """MUST rules whose every check is capped at a warning: what breaks them on the wire is
    probable, never proven (a replay out of place)."""
    by_rule: dict[str, list[Any]] = {}
    for meta in CHECKS.values():
        by_rule.setdefault(meta.rule, []).append(meta)
    return {rid for rid, metas in by_rule.items()
            if all(m.fixed == Level.WARN for m in metas)}


WARN_ONLY = _warn_only()

CASES: dict[str, list[Callable[[], TraceBuilder]]] = {
    "INIT-01": [init_01], "INIT-07": [init_07], "INIT-09": [init_09],
    "INIT-10": [init_10], "SESS-01": [sess_01], "SESS-02": [sess_02], "SESS-12": [sess_12],
    "SESS-13": [sess_13], "PROMPT-01": [prompt_01], "PROMPT-02": [prompt_02],
    "PROMPT-04": [prompt_04_twice, prompt_04_never], "PROMPT-06": [prompt_06],
    "STATE-01": [state_01, state_01_requires_action], "STATE-02": [state_02],
    "STATE-03": [state_03], "STATE-06": [state_06], "STATE-09": [state_09],
    "A-05.forbid": [one_stop], "STOP-03": [stop_03], "MSG-01": [msg_01], "TOOL-07": [tool_07],
    "TOOL-14": [tool_14], "TOOL-15": [tool_15], "TOOL-19": [tool_19],
    "PLAN-02": [plan_04_missing_id], "PLAN-04": [plan_04], "PLAN-09": [plan_09],
    "USAGE-02": [usage_02], "USAGE-04": [usage_04, usage_04_shape],
    "ENUM-02": [enum_02], "PERM-02": [perm_02], "PERM-07": [perm_07], "PERM-11": [perm_11],
    "PERM-12": [perm_12_twice, perm_12_never], "CANCEL-02": [cancel_02],
    "CANCEL-04": [cancel_04], "CANCEL-06": [cancel_06], "CANCEL-07": [cancel_07],
    "CANCEL-09": [cancel_09], "CANCEL-11": [cancel_11], "CANCEL-14": [cancel_14],
    "RPC-01": [rpc_01, rpc_01_version], "RPC-02": [rpc_02], "RPC-04": [rpc_04],
    "RPC-07": [rpc_07], "RPC-09": [rpc_09], "ACPM-ANSWER": [acpm_answer],
    "ACPM-SCHEMA": [acpm_schema], "A-01.forbid": [a01_forbid], "A-03.diagram": [a03_diagram],
    "A-04.idle-cancelled": [a04_idle_cancelled], "A-07.forbid": [a07_forbid],
    "SESS-10": [sess_10], "A-10.cancel": [a10_cancel], "SESS-08": [sess_08],
    "SDK-RECEIPT-01": [sdk_receipt_01], "SDK-RECEIPT-02": [sdk_receipt_02],
    "SDK-RECEIPT-03": [sdk_receipt_03], "SDK-PROMPT-02": [sdk_prompt_02],
    "SDK-PROMPT-03": [sdk_prompt_03], "SDK-RESUME-01": [sdk_resume_01],
    "SDK-BG-01": [sdk_bg_01], "SDK-BG-02": [sdk_bg_02], "SDK-BG-03": [sdk_bg_03],
    "SDK-CLOSE-01": [sdk_close_01], "SDK-CLOSE-02": [sdk_close_02],
    "SDK-CLOSE-03": [sdk_close_03], "INIT-18": [init_18], "SESS-14": [sess_14],
    **audit_cases.BREAKS,  # the rules the audit of the texts added
}


def _readings(rule_id: str) -> Readings:
    """A rule a strict reading adds is judged under that reading (``A-01.forbid``), a rule
    of one revision only in that revision."""
    reading, dot, value = rule_id.partition(".")
    revision = RULES[rule_id].revisions[0]
    base_readings = DEFAULT.parse([f"SPEC={revision}"])
    return base_readings.parse([f"{reading}={value}"]) if dot and reading.startswith("A-") \
        else base_readings


def test_every_blocking_rule_has_a_violating_trace() -> None:
    blocking = {rid for rid, r in RULES.items() if r.strength in BLOCKING and not r.fuzz_only
                and r.kind != "definition" and not r.unobservable}
    blocking -= WARN_ONLY  # judged by test_v1_trace_breaks_the_rule, as warnings
    blocking -= set(V1_CASES) - set(CASES)  # only a v1 trace breaks them (INIT-03)
    assert blocking == set(CASES), (
        f"missing: {sorted(blocking - set(CASES))}, extra: {sorted(set(CASES) - blocking)}")
    assert {r for r in WARN_ONLY if RULES[r].strength in BLOCKING} <= set(V1_CASES) | {
        rid for rid, *_ in audit_cases.BOTH}  # (a warning-only v2 rule: SESS-06)


@pytest.mark.parametrize(("rule_id", "build"),
                         [(rid, b) for rid, builders in CASES.items() for b in builders],
                         ids=lambda x: x if isinstance(x, str) else x.__name__)
def test_trace_breaks_the_rule(rule_id: str, build: Callable[[], TraceBuilder]) -> None:
    report = check(build(), _readings(rule_id))
    reported = RULES[rule_id].judged_via or (rule_id,)
    assert set(reported) & failed_rules(report), report["violations"]
    assert report["verdict"] == "fail"
    rules = {r["id"]: r for r in report["rules"]}
    assert any(rules[r]["status"] == "violated" for r in reported)
    hits = [v for v in report["violations"] if v["rule"] in reported]
    assert all(v["message"] and v["strength"] in BLOCKING for v in hits)


# --- rules the text states at SHOULD strength: a trace that breaks each (a warning) and one
# that keeps it ----------------------------------------------------------------------------

SDK = DEFAULT.parse(["SPEC=sdk-2.4.0"])
V1 = DEFAULT.parse(["SPEC=v1"])


def _compaction(t: TraceBuilder) -> TraceBuilder:
    t = turn_start(t, 10)
    t.update(S, {"sessionUpdate": "compaction_update", "compactionId": "c1",
                 "status": "in_progress"})
    return t.idle(S, "end_turn")


def enum_revision_breaks() -> TraceBuilder:
    """The seed judges an update kind only sdk-2.4.0 defines: a variant of that revision."""
    return _compaction(base())


def enum_revision_keeps() -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "_vendor_compaction", "compactionId": "c1"})
    return t.idle(S, "end_turn")


def _v1_turn(t: TraceBuilder) -> TraceBuilder:
    return t.rpc.request("c2a", "session/prompt", {
        "sessionId": S, "prompt": [{"type": "text", "text": "go"}]}, 10)


def v1_tool_breaks() -> TraceBuilder:
    t = _v1_turn(TraceBuilder().v1.handshake().v1.new_session(S))
    t.update(S, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
    return t.v1.ended(10)


def v1_tool_keeps() -> TraceBuilder:
    t = _v1_turn(TraceBuilder().v1.handshake().v1.new_session(S)).v1.tool_call(S, "t1")
    t.update(S, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
    return t.v1.ended(10)


def custom_answered_breaks() -> TraceBuilder:
    return base().rpc.request("c2a", "_acp_model/sync", {}, 50).rpc.result("a2c", 50, None)


def custom_answered_keeps() -> TraceBuilder:
    # an extension the agent advertises in its capabilities' _meta may answer with a result
    t = TraceBuilder().handshake(capabilities={"session": {},
                                               "_meta": {"zed.dev": {"workspace": True}}})
    t.new_session(S).rpc.request("c2a", "_acp_model/sync", {}, 50)
    t.rpc.error("a2c", 50, -32601, "Method not found")
    return t.rpc.request("c2a", "_zed.dev/workspace/buffers", {}, 51).rpc.result("a2c", 51, {})


def custom_answered_breaks_v1() -> TraceBuilder:
    t = TraceBuilder().v1.handshake().v1.new_session(S)
    return t.rpc.request("c2a", "_acp_model/sync", {}, 50).rpc.result("a2c", 50, None)


def custom_answered_keeps_v1() -> TraceBuilder:
    t = TraceBuilder().v1.handshake().v1.new_session(S)
    return t.rpc.request("c2a", "_acp_model/sync", {}, 50).rpc.error("a2c", 50, -32601)


# rule -> (readings, the trace that breaks it, the trace that keeps it)
SHOULD_CASES: dict[str, list[tuple[Readings, Callable[[], TraceBuilder],
                                   Callable[[], TraceBuilder]]]] = {
    "ACPM-ENUM-REVISION": [(DEFAULT, enum_revision_breaks, enum_revision_keeps)],
    "V1-TOOL-01": [(V1, v1_tool_breaks, v1_tool_keeps)],
    "ENUM-12": [(DEFAULT, custom_answered_breaks, custom_answered_keeps),
                (V1, custom_answered_breaks_v1, custom_answered_keeps_v1)],
}


@pytest.mark.parametrize(("rule_id", "readings", "breaks", "keeps"),
                         [(rid, *case) for rid, cases in SHOULD_CASES.items() for case in cases],
                         ids=lambda x: x if isinstance(x, str) else getattr(x, "__name__", ""))
def test_should_rule_warns_on_a_trace_that_breaks_it_only(
        rule_id: str, readings: Readings, breaks: Callable[[], TraceBuilder],
        keeps: Callable[[], TraceBuilder]) -> None:
    report = check(breaks(), readings)
    hits = [v for v in report["violations"] if v["rule"] == rule_id]
    assert [v["level"] for v in hits] == ["warn"], report["violations"]
    assert RULES[rule_id].strength_under(readings) == "SHOULD"
    assert not failed_rules(report), report["violations"]
    kept = check(keeps(), readings)
    assert kept["violations"] == [], kept["violations"]


def test_a_variant_no_revision_defines_is_still_enum_02() -> None:
    assert "ENUM-02" in failed_rules(check(enum_02()))
    # and a kind the later revision defines is no ENUM-02 failure under the seed, nor a
    # finding at all under the revision that defines it
    assert "ENUM-02" not in failed_rules(check(enum_revision_breaks()))
    sdk = check(_compaction(base()), SDK)
    assert "ACPM-ENUM-REVISION" not in {v["rule"] for v in sdk["violations"]}


def test_a_session_announced_before_its_session_new_response_warns_sess_12() -> None:
    """An update for the new session while its session/new is unanswered (copilot, mistral-
    vibe): no text of v1 or the seed orders the two, so it is no failure, but a client cannot
    tell yet that it is its new session: a warning (issue 50; sdk-2.4.0 allows it: "Updates
    may arrive before or after this response"). With no session/new open, an unknown id is
    still SESS-12's failure."""
    t = TraceBuilder().v1.handshake()
    t.rpc.request("c2a", "session/new", {"cwd": "/tmp/project", "mcpServers": []}, 1)
    t.update("s-new", {"sessionUpdate": "available_commands_update", "availableCommands": []})
    t.rpc.result("a2c", 1, {"sessionId": "s-new"})
    report = check(t, spec="auto")
    assert "SESS-12" not in failed_rules(report) and "SESS-12" in warned_rules(report)
    sdk = TraceBuilder().handshake()
    sdk.rpc.request("c2a", "session/new", {"cwd": "/tmp/project", "mcpServers": []}, 1)
    sdk.idle("s-new").rpc.result("a2c", 1, {"sessionId": "s-new"})
    assert check(sdk, DEFAULT.parse(["SPEC=sdk-2.4.0"]))["violations"] == []
    t.update("s-other", {"sessionUpdate": "available_commands_update", "availableCommands": []})
    assert "SESS-12" in failed_rules(check(t, spec="auto"))


def test_v1_an_error_for_a_prompt_that_showed_nothing_after_a_read_cancel_is_a_warning() -> None:
    """v1: an error answering a prompt whose turn showed no content, after the agent read a
    cancel, may be the prompt's own refusal (kimi-cli refused an image its model lacked) or an
    abort error it should have caught: nothing on the wire tells, so CANCEL-07 warns. Once the
    turn showed content, the error ends an ongoing turn: CANCEL-07 fails."""
    quiet = _v1().prompt(S, 10).cancel(S).sync().rejected(10, -32603)
    report = check(quiet, spec="auto")
    assert "CANCEL-07" not in failed_rules(report)
    assert "CANCEL-07" in warned_rules(report)
    assert "CANCEL-07" in failed_rules(check(v1_cancel_07_error(), spec="auto"))


def test_new_content_between_a_v1_resume_and_its_response_is_not_replayed_history() -> None:
    """codex-acp writes a notice (an agent message chunk without an id) each time it starts a
    session or a turn, on resume too: new content, no earlier message of the conversation, so
    V1-RESUME-01 says nothing. An agent chunk reusing a message id the session used before is
    history, and warns."""
    def resumed(*chunks: tuple[str, str | None]) -> TraceBuilder:
        t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 5)
        t.update(S, {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                     "content": {"type": "text", "text": "answer"}}).v1.ended(5)
        t.rpc.request("c2a", "session/resume", {"sessionId": S, "cwd": "/tmp/project"}, 6)
        for text, mid in chunks:
            t.update(S, {"sessionUpdate": "agent_message_chunk", "content": {
                "type": "text", "text": text}, **({"messageId": mid} if mid else {})})
        return t.rpc.result("a2c", 6, {})

    def resume_warnings(t: TraceBuilder) -> list[str]:
        return [v["message"] for v in check(t, V1)["violations"] if v["rule"] == "V1-RESUME-01"]

    assert resume_warnings(resumed(("Warning: model metadata not found", None))) == []
    assert resume_warnings(resumed(("something new", "m2"))) == []
    replayed = resume_warnings(resumed(("answer", "m1")))
    assert len(replayed) == 1 and "messageId 'm1' names a message the session sent before" \
        in replayed[0], replayed
