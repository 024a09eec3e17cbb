"""The rules the audit of the texts added (docs/audit.md): each trace that breaks one is
reported under that rule alone, at the level the revision's text gives it, and each trace that
keeps it is clean."""

from __future__ import annotations

from typing import Any

import pytest

from acp_model.spec.readings import Readings
from acp_model.spec.rules import BLOCKING, RULES
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, base, check, failed_rules, turn_start
from tests.oracle.audit_cases import BOTH, SDK, V1, Build, _sdk_turn


@pytest.mark.parametrize(("rule_id", "readings", "breaks", "keeps"), BOTH,
                         ids=[f"{r}-{b.__name__}" for r, _, b, _ in BOTH])
def test_a_trace_breaks_the_rule_and_another_keeps_it(
        rule_id: str, readings: Readings, breaks: Build, keeps: Build) -> None:
    report = check(breaks(), readings)
    hits = [v for v in report["violations"] if v["rule"] == rule_id]
    assert hits, report["violations"]
    others = [v for v in report["violations"] if v["rule"] != rule_id]
    assert others == [], others
    strength = RULES[rule_id].strength_under(readings)
    assert {v["level"] for v in hits} <= {"fail" if strength in BLOCKING else "warn", "warn"}
    kept = check(keeps(), readings)
    assert kept["violations"] == [], kept["violations"]


# --- INIT-11: what a bare -32602 proves ---------------------------------------------------------

def test_a_bare_invalid_params_for_baseline_content_is_a_warning_a_named_one_fails() -> None:
    """-32602 for a valid text prompt of a quiet session is probable refusal (the agent may
    have found something else invalid): a warning; an error naming the content fails; while
    the session works, -32602 may be about the timing: nothing."""
    from tests.oracle.audit_cases import _refused

    for link in (False, True):
        report = check(_refused("bad request", link=link))
        assert [(v["rule"], v["level"]) for v in report["violations"]] == [("INIT-11", "warn")]
    named = check(_refused("resource_link blocks are not supported", -32603, link=True))
    assert failed_rules(named) == {"INIT-11"}
    busy = turn_start(base(), 10).prompt(S, 11).rpc.error("a2c", 11, -32602, "bad request")
    assert "INIT-11" not in {v["rule"] for v in check(busy.idle(S, "end_turn"))["violations"]}


# --- INIT-10: v2's baseline session methods ------------------------------------------------------

@pytest.mark.parametrize("method", ["session/resume", "session/close", "session/list"])
def test_a_v2_agent_with_session_implements_resume_close_and_list(method: str) -> None:
    params = {"sessionId": S} if method == "session/close" else \
        {"sessionId": S, "cwd": "/tmp/project"} if method == "session/resume" else {}
    t = base().rpc.request("c2a", method, params, 20).rpc.error("a2c", 20, -32601)
    assert failed_rules(check(t)) == {"INIT-10"}
    v1 = TraceBuilder().v1.handshake(agent_caps={"sessionCapabilities": {
        "resume": {}, "close": {}, "list": {}}}).v1.new_session(S)
    v1.rpc.request("c2a", method, params, 20).rpc.error("a2c", 20, -32601)
    assert "INIT-10" not in failed_rules(check(v1, V1))  # v1: a capability, not the baseline


# --- TOOL-19: a terminal's and a command's cwd -------------------------------------------------

def test_a_terminal_or_command_cwd_is_absolute() -> None:
    def terminal(cwd: str) -> TraceBuilder:
        t = turn_start(base(), 10)
        t.update(S, {"sessionUpdate": "terminal_update", "terminalId": "x", "cwd": cwd,
                     "command": "ls"})
        return t.idle(S, "end_turn")

    def command(cwd: str) -> TraceBuilder:
        t = turn_start(base(), 10)
        t.rpc.request("a2c", "session/request_permission", {
            "sessionId": S, "title": "Run ls?", "subject": {"type": "command", "command": "ls",
                                                            "cwd": cwd},
            "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}, 50)
        return t.requires_action(S).answer(50, "allow").running(S).idle(S, "end_turn")

    for build in (terminal, command):
        assert failed_rules(check(build("project"))) == {"TOOL-19"}
        assert check(build("/tmp/project"))["violations"] == []


# --- sdk-2.4.0's background terminals and their cancel controls ----------------------------------

def _terminal(t: TraceBuilder, exit_status: Any = None, **more: Any) -> TraceBuilder:
    upd: dict[str, Any] = {"sessionUpdate": "terminal_update", "terminalId": "x", **more}
    if exit_status is not None:
        upd["exitStatus"] = exit_status
    return t.update(S, upd)


def _snapshot(t: TraceBuilder, *terminals: str) -> TraceBuilder:
    return t.update(S, {"sessionUpdate": "state_update", "state": "idle",
                        "stopReason": "end_turn",
                        "background": [{"type": "terminal", "terminalId": x}
                                       for x in terminals]})


def test_background_terminals_are_announced_and_exit_before_they_leave() -> None:
    unannounced = _snapshot(_sdk_turn(), "x")
    assert failed_rules(check(unannounced, SDK)) == {"SDK-BG-02"}
    early = _snapshot(_snapshot(_terminal(_sdk_turn(), command="sleep 9"), "x"))
    assert failed_rules(check(early, SDK)) == {"SDK-BG-03"}
    kept = _snapshot(_terminal(_snapshot(_terminal(_sdk_turn(), command="sleep 9"), "x"),
                               {"exitCode": 0}))
    assert check(kept, SDK)["violations"] == []


def test_an_exited_terminal_stops_advertising_cancel_and_is_cancelled_only_while_it_does() -> None:
    t = _terminal(_sdk_turn(), command="sleep 9", capabilities={"cancel": {}})
    t.rpc.request("c2a", "terminal/cancel", {"sessionId": S, "terminalId": "x"}, 40)
    t.rpc.result("a2c", 40, {})
    exited = _terminal(t, {"exitCode": 1}).idle(S, "end_turn")
    assert [(v["rule"], v["level"]) for v in check(exited, SDK)["violations"]] == [
        ("SDK-TOOL-01", "warn")]
    t2 = _terminal(_sdk_turn(), command="sleep 9")
    t2.rpc.request("c2a", "terminal/cancel", {"sessionId": S, "terminalId": "x"}, 40)
    t2.rpc.error("a2c", 40, -32602)
    assert failed_rules(check(t2.idle(S, "end_turn"), SDK)) == {"SDK-TOOL-02"}


# --- ENUM-02: authentication method and MCP transport types --------------------------------------

def test_an_invented_auth_method_or_mcp_transport_type_is_enum_02() -> None:
    from tests.oracle.audit_cases import _new_session, handshake

    oauth = handshake(authMethods=[{"methodId": "o", "name": "OAuth", "type": "oauth"}])
    assert failed_rules(check(oauth)) == {"ENUM-02"}
    custom = handshake(authMethods=[{"methodId": "o", "name": "OAuth", "type": "_oauth"}])
    assert check(custom)["violations"] == []
    socket = _new_session(handshake(), mcpServers=[{"type": "websocket", "name": "w"}])
    assert "ENUM-02" in failed_rules(check(socket))


# --- INIT-13, SESS-16: the client's other calls --------------------------------------------------

def test_a_login_with_a_method_not_listed_and_a_v1_resume_not_advertised() -> None:
    from tests.oracle.audit_cases import LOGIN, _login

    assert failed_rules(check(_login([LOGIN], "ok", "other"))) == {"INIT-13"}
    logout = _login([], "ok")
    logout.rpc.request("c2a", "auth/logout", {}, 31).rpc.result("a2c", 31, {})
    assert [v["rule"] for v in check(logout)["violations"]] == ["INIT-13", "INIT-13"]
    for method in ("session/resume", "session/close"):
        t = TraceBuilder().v1.handshake().v1.new_session(S)
        t.rpc.request("c2a", method, {"sessionId": S, "cwd": "/tmp/project"}
                      if method == "session/resume" else {"sessionId": S}, 20)
        assert failed_rules(check(t.rpc.result("a2c", 20, {}), V1)) == {"SESS-16"}


def test_closing_a_session_twice_may_succeed_or_answer_resource_not_found() -> None:
    def twice(code: int | None) -> TraceBuilder:
        t = base().rpc.request("c2a", "session/close", {"sessionId": S}, 60)
        t.rpc.result("a2c", 60, {}).rpc.request("c2a", "session/close", {"sessionId": S}, 61)
        return t.rpc.result("a2c", 61, {}) if code is None else t.rpc.error("a2c", 61, code)

    assert [v["rule"] for v in check(twice(-32603), SDK)["violations"]] == ["SDK-CLOSE-04"]
    for code in (None, -32002):
        assert check(twice(code), SDK)["violations"] == []


def test_a_finding_about_an_answer_names_the_request_it_answers() -> None:
    """An answer is judged by its request's kind (the row's ``answer_reads``): each finding
    names the request answered as related evidence (SDK-CLOSE-04's close, SDK-TOOL-03's
    cancel, as the handler of the cancel's answer did by hand before)."""
    t = base().rpc.request("c2a", "session/close", {"sessionId": S}, 60)
    t.rpc.result("a2c", 60, {}).rpc.request("c2a", "session/close", {"sessionId": S}, 61)
    (hit,) = check(t.rpc.error("a2c", 61, -32603), SDK)["violations"]
    assert (hit["rule"], hit["related"]) == ("SDK-CLOSE-04", [hit["index"] - 1])
    hits = check(_cancel_after(True, None), SDK)["violations"]
    (tool,) = [v for v in hits if v["rule"] == "SDK-TOOL-03"]
    assert tool["related"] == [tool["index"] - 1]


def test_the_fuzzer_closes_a_v1_session_only_when_the_agent_advertised_close() -> None:
    from acp_model.model.messages import closes_sessions

    assert not closes_sessions({"agentCapabilities": {}}, "v1")
    assert closes_sessions({"agentCapabilities": {"sessionCapabilities": {"close": {}}}}, "v1")
    assert closes_sessions({"capabilities": {"session": {}}}, "seed")
    assert not closes_sessions({"capabilities": {}}, "sdk-2.4.0")


# --- SESS-07: the entire conversation, as the trace shows it ------------------------------------

def _v1_session() -> TraceBuilder:
    return TraceBuilder().v1.handshake(agent_caps={"loadSession": True}).v1.new_session(S)


def _load(t: TraceBuilder, rid: int, *replayed: str, answered: bool = True) -> TraceBuilder:
    t.rpc.request("c2a", "session/load", {"sessionId": S, "cwd": "/tmp/project",
                                          "mcpServers": []}, rid)
    for text in replayed:
        t.v1.chunk(S, text, "user_message_chunk")
    return t.rpc.result("a2c", rid, {}) if answered else t


def test_the_missing_message_is_named_with_its_prompt_and_judged_when_the_client_moves_on() -> None:
    t = _v1_session().prompt(S, 10, "first [acpm:t1]").v1.ended(10)
    t.prompt(S, 11, "second [acpm:t2]").v1.ended(11)
    _load(t, 20, "first [acpm:t1]")
    t.prompt(S, 12, "third").v1.ended(12)
    [found] = [v for v in check(t, V1)["violations"] if v["rule"] == "SESS-07"]
    assert found["level"] == "fail" and found["index"] == 10  # the load's response
    assert "'second [acpm:t2]'" in found["message"] and "#6" in found["message"]


def test_what_is_not_owed_a_cancelled_or_refused_turn_one_still_running_a_refused_load() -> None:
    for reason in ("cancelled", "refusal"):
        t = _v1_session().prompt(S, 10, "fix")
        if reason == "cancelled":
            t.cancel(S)
        t.v1.ended(10, reason)
        assert check(_load(t, 20), V1)["violations"] == []
    running = _v1_session().prompt(S, 10, "fix")
    _load(running, 20).v1.ended(10)
    assert "SESS-07" not in {v["rule"] for v in check(running, V1)["violations"]}
    refused = _load(_v1_session().prompt(S, 10, "fix").v1.ended(10), 20, answered=False)
    assert check(refused.rpc.error("a2c", 20, -32002), V1)["violations"] == []


def test_a_replay_after_the_response_is_the_order_rules_not_a_missing_message() -> None:
    t = _load(_v1_session().prompt(S, 10, "fix").v1.ended(10), 20)
    t.v1.chunk(S, "fix", "user_message_chunk")  # the earlier prompt's text: provably history
    assert {(v["rule"], v["level"]) for v in check(t, V1)["violations"]} == {
        ("V1-LOAD-01", "fail")}


def test_a_second_load_owes_the_conversation_again_and_a_compaction_resets_it() -> None:
    t = _load(_v1_session().prompt(S, 10, "fix").v1.ended(10), 20, "fix")
    assert failed_rules(check(_load(t, 21), V1)) == {"SESS-07"}
    compacted = _v1_session().prompt(S, 10, "fix")
    compacted.update(S, {"sessionUpdate": "compaction_update", "compactionId": "c",
                         "status": "completed"})
    compacted.v1.ended(10).prompt(S, 11, "next").v1.ended(11)
    assert failed_rules(check(_load(compacted, 20, "next"), V1)) == set()


def test_v2_history_after_the_resume_response_warns() -> None:
    from tests.oracle.audit_cases import _v2_turn_then_resume

    t = _v2_turn_then_resume({"type": "start"}, "fix the tests").user_message(S, "r9", "fix")
    assert [(v["rule"], v["level"]) for v in check(t)["violations"]] == [("SESS-07", "warn")]
    refused = base().prompt(S, 10, "no").accepted(10).user_message(S, "u1", "no").running(S)
    refused.idle(S, "refusal").rpc.request("c2a", "session/resume", {
        "sessionId": S, "cwd": "/tmp/project", "replayFrom": {"type": "start"}}, 20)
    assert check(refused.rpc.result("a2c", 20, {}))["violations"] == []


def test_a_notice_after_the_load_response_is_no_replay_and_hides_no_missing_message() -> None:
    """codex-acp writes a notice (an agent chunk without an id) on every start: new content,
    not the replay going on, so the missing user message is still judged."""
    t = _load(_v1_session().prompt(S, 10, "fix").v1.ended(10), 20)
    t.update(S, {"sessionUpdate": "agent_message_chunk",
                 "content": {"type": "text", "text": "Model: gpt-5"}})
    assert failed_rules(check(t, V1)) == {"SESS-07"}


def test_a_receipt_naming_an_earlier_message_is_receipt_03_alone() -> None:
    """One cause, one verdict: a receipt reusing the id of an earlier turn's message is not
    also a receipt held back until that turn's end."""
    t = _sdk_turn().idle(S, "end_turn").prompt(S, 11).user_message(S, "u2").running(S)
    t.accepted(11, {"messageId": "u1"}).idle(S, "end_turn")
    report = check(t, SDK)
    assert "SDK-RECEIPT-04" not in {v["rule"] for v in report["violations"]}
    assert "SDK-RECEIPT-03" in failed_rules(report)


# --- SDK-TOOL-03: a cancel of what had ended when the client sent it is refused ------------------

def _cancel_after(ended: bool, answer: int | None, *, terminal: bool = False) -> TraceBuilder:
    """A tool call (a terminal) that still advertises cancel; the client cancels it after
    the agent reported it ended (``ended``) or while it runs; the agent answers with a result
    (``answer`` None) or that error."""
    cancel = {"cancel": {}}
    t = _sdk_turn()
    if terminal:
        t.update(S, {"sessionUpdate": "terminal_update", "terminalId": "term_1",
                     "command": "cargo test", "capabilities": cancel})
        if ended:
            t.update(S, {"sessionUpdate": "terminal_update", "terminalId": "term_1",
                         "exitStatus": {"exitCode": 0}})
        method, params = "terminal/cancel", {"sessionId": S, "terminalId": "term_1"}
    else:
        t.tool(S, "t1", "in_progress", title="Run", kind="execute", capabilities=cancel)
        if ended:
            t.tool(S, "t1", "completed")
        method, params = "tool_call/cancel", {"sessionId": S, "toolCallId": "t1"}
    t.rpc.request("c2a", method, params, 40)
    t = t.rpc.result("a2c", 40, {}) if answer is None else t.rpc.error("a2c", 40, answer)
    if not ended and terminal:
        t.update(S, {"sessionUpdate": "terminal_update", "terminalId": "term_1",
                     "exitStatus": {"exitCode": 130}, "capabilities": None})
    elif not ended:
        t.tool(S, "t1", "cancelled", capabilities=None)
    return t.idle(S, "end_turn")


@pytest.mark.parametrize("terminal", [False, True], ids=["tool_call", "terminal"])
def test_a_cancel_of_what_had_ended_is_refused_with_invalid_params(terminal: bool) -> None:
    # the agent kept advertising cancel after the end (SDK-TOOL-01), so the client may send it
    breaks = check(_cancel_after(True, None, terminal=terminal), SDK)["violations"]
    assert sorted(v["rule"] for v in breaks) == ["SDK-TOOL-01", "SDK-TOOL-03"], breaks
    hit = next(v for v in breaks if v["rule"] == "SDK-TOOL-03")
    assert hit["level"] == "warn" and RULES["SDK-TOOL-03"].strength == "SHOULD"
    assert ("exited" if terminal else "completed") in hit["message"]
    assert [v["rule"] for v in check(_cancel_after(True, -32602, terminal=terminal),
                                     SDK)["violations"]] == ["SDK-TOOL-01"]
    # a cancel sent while it ran is accepted, whatever the agent later reports
    assert check(_cancel_after(False, None, terminal=terminal), SDK)["violations"] == []


def test_a_cancel_the_client_should_not_have_sent_is_still_judged_by_its_answer() -> None:
    # the agent stopped advertising cancel at the end: the client breaks SDK-TOOL-02, and the
    # agent's result for a tool call it had reported final breaks SDK-TOOL-03
    t = _sdk_turn().tool(S, "t1", "in_progress", title="Run", capabilities={"cancel": {}})
    t.tool(S, "t1", "failed", capabilities=None)
    t.rpc.request("c2a", "tool_call/cancel", {"sessionId": S, "toolCallId": "t1"}, 40)
    found = check(t.rpc.result("a2c", 40, {}).idle(S, "end_turn"), SDK)["violations"]
    assert sorted(v["rule"] for v in found) == ["SDK-TOOL-02", "SDK-TOOL-03"], found


@pytest.mark.parametrize(("caps", "said"), [
    ({}, "did not advertise fs.readTextFile: an omitted capability is unsupported"),
    ({"fs": {"readTextFile": False}}, "declared fs.readTextFile false: the method is not "
                                      "available"),
])
def test_init_16_says_whether_the_capability_was_omitted_or_declared_false(
        caps: dict[str, Any], said: str) -> None:
    """opencode v1's INIT-16 (s15 review): the client declared fs.writeTextFile false, and the
    message said "an omitted capability"."""
    from tests.oracle.audit_cases import _v1_reads_a_file

    report = check(_v1_reads_a_file(caps), V1)
    hits = [v["message"] for v in report["violations"] if v["rule"] == "INIT-16"]
    assert hits and all(said in m for m in hits), hits
