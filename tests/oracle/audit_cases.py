"""Traces for the rules the audit of the texts added (docs/audit.md, issue 50 item 1): for each,
one that breaks it and one that keeps it. ``tests/oracle/test_rule_violations.py`` runs the
breaking ones of the MUST rules with the others of the catalogue (``BREAKS``), and its SHOULD
table takes ``SHOULD``; ``tests/oracle/test_audit_rules.py`` holds what each proves besides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_model.spec.readings import DEFAULT, Readings
from acp_model.trace.builder import CLIENT, DEFAULT_CAPS, TraceBuilder
from tests.helpers import S, base, turn_start

SEED = DEFAULT
SDK = DEFAULT.parse(["SPEC=sdk-2.4.0"])
V1 = DEFAULT.parse(["SPEC=v1"])
Build = Callable[[], TraceBuilder]
LOGIN = {"methodId": "login", "name": "Log in", "type": "agent"}
TERMINAL_LOGIN = {"methodId": "tui", "name": "Log in in a terminal", "type": "terminal",
                  "args": ["--login"]}


def handshake(client: Any = None, caps: Any = DEFAULT_CAPS, **result: Any) -> TraceBuilder:
    """A v2 initialize exchange with the client's capabilities and more of the result."""
    t = TraceBuilder().rpc.request("c2a", "initialize", {
        "protocolVersion": 2, "capabilities": client or {}, "info": dict(CLIENT)}, 0)
    return t.rpc.result("a2c", 0, {"protocolVersion": 2, "capabilities": caps,
                                   "info": {"name": "agent", "version": "1"}, **result})


def _sdk_turn() -> TraceBuilder:
    t = base().prompt(S, 10).accepted(10, {"messageId": "u1"}).user_message(S, "u1")
    return t.running(S)


# --- INIT-11: text and resource links need no capability -------------------------------------

def _refused(message: str, code: int = -32602, link: bool = False) -> TraceBuilder:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": "fix the tests"}]
    if link:
        blocks.append({"type": "resource_link", "uri": "file:///tmp/project/main.py",
                       "name": "main.py"})
    t = base(capabilities={"session": {}}).prompt(S, 10, blocks=blocks)
    return t.rpc.error("a2c", 10, code, message)


def init_11_breaks() -> TraceBuilder:
    return _refused("Unsupported content block type: text")


def init_11_keeps() -> TraceBuilder:
    return _refused("the model failed", -32603)


def init_11_v1_breaks() -> TraceBuilder:
    t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10)
    return t.rpc.error("a2c", 10, -32603, "resource_link content is not supported")


# --- INIT-12 / INIT-13: authentication as advertised ----------------------------------------

def _login(methods: list[Any], answer: str, method_id: str = "login") -> TraceBuilder:
    t = handshake(authMethods=methods).new_session(S)
    t.rpc.request("c2a", "auth/login", {"methodId": method_id}, 30)
    return t.rpc.error("a2c", 30, -32601, "Method not found") if answer == "missing" \
        else t.rpc.result("a2c", 30, {})


def init_12_breaks() -> TraceBuilder:
    return _login([LOGIN], "missing")


def init_12_keeps() -> TraceBuilder:
    return _login([LOGIN], "ok")


def init_13_breaks() -> TraceBuilder:
    return _login([], "ok")


def init_13_terminal_breaks() -> TraceBuilder:
    t = handshake({"auth": {"terminal": {}}}, authMethods=[TERMINAL_LOGIN]).new_session(S)
    return t.rpc.request("c2a", "auth/login", {"methodId": "tui"}, 30).rpc.result("a2c", 30, {})


def init_13_v1_breaks() -> TraceBuilder:
    t = TraceBuilder().rpc.request("c2a", "initialize", {
        "protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": True}},
        "clientInfo": dict(CLIENT)}, 0)
    t.rpc.result("a2c", 0, {"protocolVersion": 1, "agentCapabilities": {},
                            "authMethods": [{"id": "tui", "name": "TUI", "type": "terminal"}],
                            "agentInfo": {"name": "agent", "version": "1"}})
    return t.rpc.request("c2a", "authenticate", {"methodId": "tui"}, 1).rpc.result("a2c", 1, {})


# --- INIT-16: what the client did not advertise is unsupported -------------------------------

def init_16_breaks() -> TraceBuilder:
    return handshake(authMethods=[TERMINAL_LOGIN]).new_session(S)


def init_16_keeps() -> TraceBuilder:
    return handshake({"auth": {"terminal": {}}}, authMethods=[TERMINAL_LOGIN]).new_session(S)


def _v1_reads_a_file(client_caps: Any) -> TraceBuilder:
    t = TraceBuilder().v1.handshake(client_caps=client_caps).v1.new_session(S).prompt(S, 10)
    t.rpc.request("a2c", "fs/read_text_file", {"sessionId": S, "path": "/tmp/project/a.py"},
                  "fs-1")
    return t.rpc.result("c2a", "fs-1", {"content": "x = 1"}).v1.ended(10)


def init_16_v1_breaks() -> TraceBuilder:
    return _v1_reads_a_file({})


def init_16_v1_keeps() -> TraceBuilder:
    return _v1_reads_a_file({"fs": {"readTextFile": True}})


def _v1_terminal_login(client_caps: Any) -> TraceBuilder:
    t = TraceBuilder().rpc.request("c2a", "initialize", {
        "protocolVersion": 1, "clientCapabilities": client_caps,
        "clientInfo": dict(CLIENT)}, 0)
    return t.rpc.result("a2c", 0, {"protocolVersion": 1, "agentCapabilities": {},
                                   "authMethods": [{"id": "tui", "name": "Log in in a terminal",
                                                    "type": "terminal", "args": ["--login"]}],
                                   "agentInfo": {"name": "agent", "version": "1"}})


def init_16_v1_terminal_breaks() -> TraceBuilder:
    return _v1_terminal_login({"_meta": {"terminal_output": True}})


def init_16_v1_terminal_keeps() -> TraceBuilder:
    """Zed declares terminal login in ``_meta`` (the claude-agent-acp v1 row of the s5 matrix,
    played as Zed): listing terminal methods to it is what it asked for."""
    return _v1_terminal_login({"_meta": {"terminal_output": True, "terminal-auth": True}})


def _v1_boolean_option(client_caps: Any) -> TraceBuilder:
    t = TraceBuilder().v1.handshake(client_caps=client_caps)
    t.rpc.request("c2a", "session/new", {"cwd": "/tmp/project", "mcpServers": []}, 1)
    return t.rpc.result("a2c", 1, {"sessionId": S, "configOptions": [
        {"id": "brave", "name": "Brave mode", "type": "boolean", "currentValue": True}]})


def init_16_v1_boolean_breaks() -> TraceBuilder:
    return _v1_boolean_option({})


def init_16_v1_boolean_keeps() -> TraceBuilder:
    return _v1_boolean_option({"session": {"configOptions": {"boolean": {}}}})


# --- INIT-17: a terminal method's environment -------------------------------------------------

def _terminal_env(names: list[str]) -> TraceBuilder:
    method = {**TERMINAL_LOGIN, "env": [{"name": n, "value": str(i)} for i, n in enumerate(names)]}
    return handshake({"auth": {"terminal": {}}}, authMethods=[method]).new_session(S)


def init_17_breaks() -> TraceBuilder:
    return _terminal_env(["HOME", "HOME"])


def init_17_keeps() -> TraceBuilder:
    return _terminal_env(["HOME", "TERM"])


# --- SESS-03 / SESS-04 / SESS-16: the client sends what the agent advertised ------------------

def _new_session(t: TraceBuilder, **params: Any) -> TraceBuilder:
    t.rpc.request("c2a", "session/new", {"cwd": "/tmp/project", **params}, 1)
    return t.rpc.result("a2c", 1, {"sessionId": S})


def sess_03_breaks() -> TraceBuilder:
    return _new_session(handshake(), additionalDirectories=["/tmp/shared"])


def sess_03_keeps() -> TraceBuilder:
    caps = {"session": {"additionalDirectories": {}}}
    return _new_session(handshake(caps=caps), additionalDirectories=["/tmp/shared"])


HTTP_SERVER = {"type": "http", "name": "docs", "url": "https://example.com/mcp", "headers": []}


def sess_04_breaks() -> TraceBuilder:
    return _new_session(handshake(), mcpServers=[HTTP_SERVER])


def sess_04_keeps() -> TraceBuilder:
    return _new_session(handshake(caps={"session": {"mcp": {"http": {}}}}),
                        mcpServers=[HTTP_SERVER])


def _v1_load(agent_caps: Any) -> TraceBuilder:
    t = TraceBuilder().v1.handshake(agent_caps=agent_caps).v1.new_session(S)
    t.rpc.request("c2a", "session/load", {"sessionId": S, "cwd": "/tmp/project",
                                          "mcpServers": []}, 20)
    return t.rpc.result("a2c", 20, {})


def sess_16_breaks() -> TraceBuilder:
    return _v1_load({})


def sess_16_keeps() -> TraceBuilder:
    return _v1_load({"loadSession": True})


# --- SESS-06 / SESS-07: what a reopen replays ------------------------------------------------

def _v2_turn_then_resume(replay_from: Any, *replayed: str) -> TraceBuilder:
    """A turn whose user message says "fix the tests", then a resume (``replay_from``) whose
    replay gives back the user messages ``replayed``."""
    t = base().prompt(S, 10, "fix the tests").accepted(10).user_message(S, "u1", "fix the tests")
    t.running(S).agent_message(S, "a1", "done").idle(S, "end_turn")
    params: dict[str, Any] = {"sessionId": S, "cwd": "/tmp/project"}
    if replay_from is not None:
        params["replayFrom"] = replay_from
    t.rpc.request("c2a", "session/resume", params, 20)
    for n, text in enumerate(replayed):
        t.user_message(S, f"r{n}", text)
    t.agent_message(S, "r-agent", "done")
    return t.rpc.result("a2c", 20, {})


def sess_06_breaks() -> TraceBuilder:
    return _v2_turn_then_resume(None, "fix the tests")


def sess_06_keeps() -> TraceBuilder:
    t = _v2_turn_then_resume(None)
    return t


def sess_07_breaks() -> TraceBuilder:
    return _v2_turn_then_resume({"type": "start"})


def sess_07_keeps() -> TraceBuilder:
    return _v2_turn_then_resume({"type": "start"}, "fix   the\ntests")


def _v1_turn_then_load(*replayed: str, reason: str = "end_turn") -> TraceBuilder:
    t = TraceBuilder().v1.handshake(agent_caps={"loadSession": True}).v1.new_session(S)
    t.prompt(S, 10, "fix the tests").v1.chunk(S, "done").v1.ended(10, reason)
    t.rpc.request("c2a", "session/load", {"sessionId": S, "cwd": "/tmp/project",
                                          "mcpServers": []}, 20)
    for text in replayed:
        for part in (text[:4], text[4:]):  # split anywhere, as chunks may be
            t.v1.chunk(S, part, "user_message_chunk")
    t.v1.chunk(S, "done")
    return t.rpc.result("a2c", 20, {})


def sess_07_v1_breaks() -> TraceBuilder:
    return _v1_turn_then_load()


def sess_07_v1_keeps() -> TraceBuilder:
    return _v1_turn_then_load("fix the tests")


# --- PERM-14: distinct option ids ----------------------------------------------------------

def _permission(option_ids: tuple[str, str], sdk: bool = True) -> TraceBuilder:
    t = _sdk_turn() if sdk else turn_start(base(), 10)
    t.rpc.request("a2c", "session/request_permission", {
        "sessionId": S, "title": "Run it?",
        "options": [{"optionId": option_ids[0], "name": "Allow", "kind": "allow_once"},
                    {"optionId": option_ids[1], "name": "Reject", "kind": "reject_once"}]}, 50)
    return t.requires_action(S).answer(50, "reject").running(S).idle(S, "end_turn")


def perm_14_breaks() -> TraceBuilder:
    return _permission(("reject", "reject"))


def perm_14_keeps() -> TraceBuilder:
    return _permission(("allow", "reject"))


def perm_14_seed_breaks() -> TraceBuilder:
    return _permission(("reject", "reject"), sdk=False)


def perm_14_seed_keeps() -> TraceBuilder:
    return _permission(("allow", "reject"), sdk=False)


# --- TOOL-21: a diff's patch and its changes ------------------------------------------------

GOOD_PATCH = ("diff --git /tmp/project/a.py /tmp/project/a.py\n"
              "index 1111111..2222222 100644\n--- /tmp/project/a.py\n+++ /tmp/project/a.py\n"
              "@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n y = 3\n")


def _diff(text: str, changes: list[dict[str, Any]] | None = None) -> TraceBuilder:
    t = turn_start(base(), 10)
    diff = {"type": "diff", "changes": changes if changes is not None else [
        {"operation": "modify", "path": "/tmp/project/a.py"}],
        "patch": {"format": "git_patch", "text": text}}
    return t.tool(S, "t1", "completed", title="Edit a.py", kind="edit",
                  content=[diff]).idle(S, "end_turn")


def tool_21_breaks() -> TraceBuilder:
    return _diff(GOOD_PATCH.replace("/tmp/project/a.py /tmp/project/a.py", "a/a.py b/a.py")
                 .replace("--- /tmp/project", "--- a").replace("+++ /tmp/project", "+++ b"))


def tool_21_keeps() -> TraceBuilder:
    return _diff(GOOD_PATCH)


# --- sdk-2.4.0's own sentences ------------------------------------------------------------

def _sdk_session(result: dict[str, Any]) -> TraceBuilder:
    t = TraceBuilder().handshake()
    t.rpc.request("c2a", "session/new", {"cwd": "/tmp/project"}, 1)
    return t.rpc.result("a2c", 1, {"sessionId": S, **result})


MODE = {"configId": "mode", "name": "Mode", "type": "select", "category": "mode",
        "currentValue": "ask", "options": [{"value": "ask", "name": "Ask"},
                                           {"value": "code", "name": "Code"}]}


def sdk_config_01_breaks() -> TraceBuilder:
    return _sdk_session({"configOptions": [{**MODE, "currentValue": "plan"}]})


def sdk_config_01_keeps() -> TraceBuilder:
    return _sdk_session({"configOptions": [MODE]})


def _set_mode(answer: str) -> TraceBuilder:
    t = _sdk_session({"configOptions": [MODE]})
    t.rpc.request("c2a", "session/set_config_option", {
        "sessionId": S, "configId": "mode", "type": "id", "value": "code"}, 2)
    return t.rpc.error("a2c", 2, -32601, "Method not found") if answer == "missing" else \
        t.rpc.result("a2c", 2, {"configOptions": [{**MODE, "currentValue": "code"}]})


def sdk_config_02_breaks() -> TraceBuilder:
    return _set_mode("missing")


def sdk_config_02_keeps() -> TraceBuilder:
    return _set_mode("ok")


def _commands(*names: str) -> TraceBuilder:
    t = _sdk_turn()
    t.update(S, {"sessionUpdate": "available_commands_update", "availableCommands": [
        {"type": "command", "name": n, "description": "a command"} for n in names]})
    return t.idle(S, "end_turn")


def sdk_cmd_01_breaks() -> TraceBuilder:
    return _commands("create plan")


def sdk_cmd_01_keeps() -> TraceBuilder:
    return _commands("create_plan", "review")


def _resume_cwd(cwd: str) -> TraceBuilder:
    t = base().rpc.request("c2a", "session/resume", {"sessionId": S, "cwd": cwd}, 20)
    return t.idle(S).rpc.result("a2c", 20, {})


def sdk_resume_02_breaks() -> TraceBuilder:
    return _resume_cwd("/tmp/elsewhere")


def sdk_resume_02_keeps() -> TraceBuilder:
    return _resume_cwd("/tmp/project/")


def _cancel_tool(capabilities: Any) -> TraceBuilder:
    t = _sdk_turn().tool(S, "t1", "in_progress", title="Run", kind="execute",
                         capabilities=capabilities)
    t.rpc.request("c2a", "tool_call/cancel", {"sessionId": S, "toolCallId": "t1"}, 40)
    t.rpc.result("a2c", 40, {})
    return t.tool(S, "t1", "cancelled", capabilities=None).idle(S, "end_turn")


def sdk_tool_02_breaks() -> TraceBuilder:
    return _cancel_tool(None)


def sdk_tool_02_keeps() -> TraceBuilder:
    return _cancel_tool({"cancel": {}})


def _tool_ends(cleared: bool) -> TraceBuilder:
    t = _sdk_turn().tool(S, "t1", "in_progress", title="Run", kind="execute",
                         capabilities={"cancel": {}})
    ending: dict[str, Any] = {"capabilities": None} if cleared else {}
    return t.tool(S, "t1", "completed", **ending).idle(S, "end_turn")


def sdk_tool_01_breaks() -> TraceBuilder:
    return _tool_ends(cleared=False)


def sdk_tool_01_keeps() -> TraceBuilder:
    return _tool_ends(cleared=True)


def _error_idle(error: Any) -> TraceBuilder:
    t = _sdk_turn()
    upd: dict[str, Any] = {"sessionUpdate": "state_update", "state": "idle",
                           "stopReason": "error"}
    if error is not None:
        upd["error"] = error
    return t.update(S, upd)


def sdk_stop_01_breaks() -> TraceBuilder:
    return _error_idle(None)


def sdk_stop_01_keeps() -> TraceBuilder:
    return _error_idle({"code": -32603, "message": "the model failed"})


def _close_unknown(code: int | None) -> TraceBuilder:
    t = base().rpc.request("c2a", "session/close", {"sessionId": "s-gone"}, 60)
    return t.rpc.result("a2c", 60, {}) if code is None else t.rpc.error("a2c", 60, code)


def sdk_close_04_breaks() -> TraceBuilder:
    return _close_unknown(-32603)


def sdk_close_04_keeps() -> TraceBuilder:
    return _close_unknown(-32002)


def _custom_work(client: Any) -> TraceBuilder:
    t = handshake(client).new_session(S).prompt(S, 10).accepted(10, {"messageId": "u1"})
    return t.user_message(S, "u1").state(S, "_thinking").agent_message(S).idle(S, "end_turn")


def sdk_state_01_breaks() -> TraceBuilder:
    return _custom_work({})


def sdk_state_01_keeps() -> TraceBuilder:
    return _custom_work({"_meta": {"example.com/states": ["_thinking"]}})


# --- v1's own sentences -----------------------------------------------------------------------

def _v1_modes(modes: Any) -> TraceBuilder:
    t = TraceBuilder().v1.handshake()
    t.rpc.request("c2a", "session/new", {"cwd": "/tmp/project", "mcpServers": []}, 1)
    result: dict[str, Any] = {"sessionId": S, "configOptions": [{
        "id": "mode", "name": "Mode", "category": "mode", "type": "select",
        "currentValue": "ask", "options": [{"value": "ask", "name": "Ask"},
                                           {"value": "code", "name": "Code"}]}]}
    if modes is not None:
        result["modes"] = modes
    return t.rpc.result("a2c", 1, result)


def v1_config_01_breaks() -> TraceBuilder:
    return _v1_modes(None)


def v1_config_01_keeps() -> TraceBuilder:
    return _v1_modes({"currentModeId": "ask", "availableModes": [
        {"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]})


def v1_init_09_breaks() -> TraceBuilder:
    t = TraceBuilder().rpc.request("c2a", "initialize", {
        "protocolVersion": 1, "clientCapabilities": {}, "clientInfo": dict(CLIENT)}, 0)
    return t.rpc.result("a2c", 0, {"protocolVersion": 1, "agentCapabilities": {}})


def v1_init_09_keeps() -> TraceBuilder:
    return TraceBuilder().v1.handshake()


# --- more SHOULDs: a tool shown running, a patch, the root set, trace context -------------------

def _allowed_tool(*statuses: str) -> TraceBuilder:
    t = turn_start(base(), 10).tool(S, "t1", "pending", title="Edit", kind="edit")
    t.permission(S, 50, "t1").requires_action(S).answer(50, "allow").running(S)
    for status in statuses:
        t.tool(S, "t1", status)
    return t.idle(S, "end_turn")


def tool_12_breaks() -> TraceBuilder:
    return _allowed_tool("completed")


def tool_12_keeps() -> TraceBuilder:
    return _allowed_tool("in_progress", "completed")


def tool_22_breaks() -> TraceBuilder:
    t = turn_start(base(), 10)
    return t.tool(S, "t1", "completed", title="Edit", kind="edit", content=[{
        "type": "diff", "changes": [{"operation": "modify", "path": "/tmp/project/a.py",
                                     "fileType": "text"}]}]).idle(S, "end_turn")


def tool_22_keeps() -> TraceBuilder:
    t = turn_start(base(), 10)
    return t.tool(S, "t1", "completed", title="Edit", kind="edit", content=[{
        "type": "diff", "changes": [{"operation": "modify", "path": "/tmp/project/i.png",
                                     "fileType": "binary"}]}]).idle(S, "end_turn")


# --- TOOL-23: terminal output bytes are base64 (terminal_output_chunk, an output snapshot) ----

def _terminal_output(data: str) -> TraceBuilder:
    t = turn_start(base(), 10)
    t.update(S, {"sessionUpdate": "terminal_update", "terminalId": "term_1",
                 "command": "cargo test", "output": {"data": "cnVubmluZw0K"}})
    t.update(S, {"sessionUpdate": "terminal_output_chunk", "terminalId": "term_1",
                 "data": data})
    return t.idle(S, "end_turn")


def tool_23_breaks() -> TraceBuilder:
    return _terminal_output("passed\r\n")  # the bytes as text, not encoded


def tool_23_keeps() -> TraceBuilder:
    return _terminal_output("cGFzc2VkDQo")  # "passed\r\n", its = padding left out


def _v1_writes(path: str) -> TraceBuilder:
    t = TraceBuilder().v1.handshake(client_caps={"fs": {"writeTextFile": True}})
    t.v1.new_session(S).prompt(S, 10)
    t.rpc.request("a2c", "fs/write_text_file", {"sessionId": S, "path": path, "content": "x"},
                  "fs-1")
    return t.rpc.result("c2a", "fs-1", {}).v1.ended(10)


def sess_17_breaks() -> TraceBuilder:
    return _v1_writes("/etc/hosts")


def sess_17_keeps() -> TraceBuilder:
    return _v1_writes("/tmp/project/src/a.py")


def v1_init_02_breaks() -> TraceBuilder:
    t = TraceBuilder().rpc.request("c2a", "initialize", {"protocolVersion": 1,
                                                         "clientInfo": dict(CLIENT)}, 0)
    return t.rpc.result("a2c", 0, {"protocolVersion": 1, "agentCapabilities": {},
                                   "agentInfo": {"name": "agent", "version": "1"}})


def _traced(value: str) -> TraceBuilder:
    t = base()
    t.rpc.request("c2a", "session/prompt", {"sessionId": S, "prompt": [
        {"type": "text", "text": "hi"}], "_meta": {"traceparent": value}}, 10)
    return t.accepted(10).user_message(S).running(S).idle(S, "end_turn")


def enum_11_breaks() -> TraceBuilder:
    return _traced("trace-42")


def enum_11_keeps() -> TraceBuilder:
    return _traced("00-80e1afed08e019fc1110464cfa66635c-7a085853722dc6d2-01")


def _icon(src: str) -> TraceBuilder:
    t = _sdk_turn()
    t.update(S, {"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {
        "type": "resource_link", "uri": "file:///tmp/project/a.py", "name": "a.py",
        "icons": [{"src": src}]}})
    return t.idle(S, "end_turn")


def sdk_icon_01_breaks() -> TraceBuilder:
    return _icon("http://example.com/a.png")


def sdk_icon_01_keeps() -> TraceBuilder:
    return _icon("https://example.com/a.png")


def _mcp_env(*names: str) -> TraceBuilder:
    return _new_session(TraceBuilder().handshake(capabilities={
        "session": {"mcp": {"stdio": {}}}}), mcpServers=[{
            "type": "stdio", "name": "git", "command": "/usr/bin/git-mcp",
            "env": [{"name": n, "value": "1"} for n in names]}])


def sdk_mcp_01_breaks() -> TraceBuilder:
    return _mcp_env("A", "A")


def sdk_mcp_01_keeps() -> TraceBuilder:
    return _mcp_env("A", "B")


def _receipt(after_idle: bool) -> TraceBuilder:
    t = base().prompt(S, 10).user_message(S, "u1").running(S).agent_message(S)
    if not after_idle:
        t.accepted(10, {"messageId": "u1"})
    t.idle(S, "end_turn")
    return t.accepted(10, {"messageId": "u1"}) if after_idle else t


def sdk_receipt_04_breaks() -> TraceBuilder:
    return _receipt(after_idle=True)


def sdk_receipt_04_keeps() -> TraceBuilder:
    return _receipt(after_idle=False)


def _v1_set_mode(listed: bool) -> TraceBuilder:
    t = _v1_modes({"currentModeId": "ask", "availableModes": [
        {"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]})
    t.rpc.request("c2a", "session/set_config_option", {"sessionId": S, "configId": "mode",
                                                        "value": "code"}, 2)
    option = {"id": "mode", "name": "Mode", "category": "mode", "type": "select",
              "currentValue": "code", "options": [{"value": "ask", "name": "Ask"},
                                                  {"value": "code", "name": "Code"}]}
    return t.rpc.result("a2c", 2, {"configOptions": [option] if listed else []})


def v1_config_02_breaks() -> TraceBuilder:
    return _v1_set_mode(listed=False)


def v1_config_02_keeps() -> TraceBuilder:
    return _v1_set_mode(listed=True)


# --- V1-NOTICE-01: a notice only to a client that advertised session.notices ---------------

def _v1_notice(client_caps: Any) -> TraceBuilder:
    t = TraceBuilder().v1.handshake(client_caps=client_caps).v1.new_session(S).prompt(S, 10)
    t.update(S, {"sessionUpdate": "notice", "severity": "warning", "title": "Rate limited"})
    return t.v1.ended(10)


def v1_notice_01_breaks() -> TraceBuilder:
    return _v1_notice({})


def v1_notice_01_keeps() -> TraceBuilder:
    return _v1_notice({"session": {"notices": {}}})


# rule -> the traces that break it (judged under its first revision, as test_rule_violations'
# CASES are)
BREAKS: dict[str, list[Build]] = {
    "INIT-11": [init_11_breaks], "INIT-12": [init_12_breaks],
    "INIT-13": [init_13_breaks, init_13_terminal_breaks], "INIT-16": [init_16_breaks],
    "INIT-17": [init_17_breaks], "SESS-03": [sess_03_breaks], "SESS-04": [sess_04_breaks],
    "SESS-07": [sess_07_breaks], "SESS-16": [sess_16_breaks], "PERM-14": [perm_14_breaks],
    "TOOL-21": [tool_21_breaks], "TOOL-23": [tool_23_breaks],
    "SDK-RESUME-02": [sdk_resume_02_breaks],
    "SDK-CONFIG-01": [sdk_config_01_breaks], "SDK-CONFIG-02": [sdk_config_02_breaks],
    "SDK-CMD-01": [sdk_cmd_01_breaks], "SDK-TOOL-02": [sdk_tool_02_breaks],
    "SDK-STATE-01": [sdk_state_01_breaks], "SDK-ICON-01": [sdk_icon_01_breaks],
}

# v1 traces that break a rule (judged as v1 without being told)
V1_BREAKS: dict[str, list[Build]] = {
    "SESS-07": [sess_07_v1_breaks], "INIT-11": [init_11_v1_breaks],
    "INIT-13": [init_13_v1_breaks], "INIT-16": [init_16_v1_breaks, init_16_v1_boolean_breaks],
    "V1-CONFIG-02": [v1_config_02_breaks], "V1-NOTICE-01": [v1_notice_01_breaks],
}

# --- elicitations: a session-scoped one is a user-action wait (STATE-05/06, SDK-ELICIT-01) -------

ELICITATION = {"elicitation": {"form": {}}}


def _elicit_turn() -> TraceBuilder:
    """A turn of a client that offered form elicitation."""
    t = base(client_caps=ELICITATION).prompt(S, 10).accepted(10, {"messageId": "u1"})
    return t.user_message(S, "u1").running(S)


def elicit_state_05_breaks() -> TraceBuilder:
    """The agent writes on while its elicitation waits, as running, and never says so."""
    return _elicit_turn().elicitation(S, 50).agent_message(S) \
        .elicitation_answer(50, "accept").running(S).idle(S, "end_turn")


def elicit_state_05_keeps() -> TraceBuilder:
    return _elicit_turn().elicitation(S, 50).requires_action(S) \
        .elicitation_answer(50, "decline").running(S).agent_message(S).idle(S, "end_turn")


def elicit_state_06_breaks() -> TraceBuilder:
    """The tool the answered elicitation was tied to goes on while requires_action shows."""
    t = _elicit_turn().tool(S, "t1", "in_progress", title="Fetch")
    return t.elicitation(S, 50, "t1").requires_action(S).elicitation_answer(50, "accept") \
        .tool(S, "t1", "completed").idle(S, "end_turn")


def elicit_state_06_keeps() -> TraceBuilder:
    t = _elicit_turn().tool(S, "t1", "in_progress", title="Fetch")
    return t.elicitation(S, 50, "t1").requires_action(S).elicitation_answer(50, "cancel") \
        .running(S).tool(S, "t1", "completed").idle(S, "end_turn")


def sdk_elicit_01_breaks() -> TraceBuilder:
    """Work blocked on an elicitation ends cancelled with the elicitation still pending."""
    return _elicit_turn().elicitation(S, 50).requires_action(S).cancel(S) \
        .idle(S, "cancelled").elicitation_answer(50, "cancel")


def sdk_elicit_01_keeps() -> TraceBuilder:
    return _elicit_turn().elicitation(S, 50).requires_action(S).cancel(S) \
        .cancel_request("a2c", 50).idle(S, "cancelled").elicitation_answer(50, "cancel")


# (rule, readings, a trace that breaks it, one that keeps it) for every new rule, at the
# level its strength in that revision gives
BOTH: list[tuple[str, Readings, Build, Build]] = [
    ("INIT-11", SEED, init_11_breaks, init_11_keeps),
    ("INIT-12", SEED, init_12_breaks, init_12_keeps),
    ("INIT-13", SEED, init_13_breaks, init_12_keeps),
    ("INIT-16", SEED, init_16_breaks, init_16_keeps),
    ("INIT-16", V1, init_16_v1_breaks, init_16_v1_keeps),
    ("INIT-16", V1, init_16_v1_boolean_breaks, init_16_v1_boolean_keeps),
    ("INIT-16", V1, init_16_v1_terminal_breaks, init_16_v1_terminal_keeps),
    ("INIT-17", SEED, init_17_breaks, init_17_keeps),
    ("SESS-03", SEED, sess_03_breaks, sess_03_keeps),
    ("SESS-04", SEED, sess_04_breaks, sess_04_keeps),
    ("SESS-06", SEED, sess_06_breaks, sess_06_keeps),
    ("SESS-07", SEED, sess_07_breaks, sess_07_keeps),
    ("SESS-07", V1, sess_07_v1_breaks, sess_07_v1_keeps),
    ("SESS-16", V1, sess_16_breaks, sess_16_keeps),
    ("PERM-14", SDK, perm_14_breaks, perm_14_keeps),
    ("PERM-14", SEED, perm_14_seed_breaks, perm_14_seed_keeps),
    ("TOOL-21", SEED, tool_21_breaks, tool_21_keeps),
    ("SDK-RESUME-02", SDK, sdk_resume_02_breaks, sdk_resume_02_keeps),
    ("SDK-CONFIG-01", SDK, sdk_config_01_breaks, sdk_config_01_keeps),
    ("SDK-CONFIG-02", SDK, sdk_config_02_breaks, sdk_config_02_keeps),
    ("SDK-CMD-01", SDK, sdk_cmd_01_breaks, sdk_cmd_01_keeps),
    ("SDK-TOOL-01", SDK, sdk_tool_01_breaks, sdk_tool_01_keeps),
    ("SDK-TOOL-02", SDK, sdk_tool_02_breaks, sdk_tool_02_keeps),
    ("SDK-STOP-01", SDK, sdk_stop_01_breaks, sdk_stop_01_keeps),
    ("SDK-STATE-01", SDK, sdk_state_01_breaks, sdk_state_01_keeps),
    ("SDK-CLOSE-04", SDK, sdk_close_04_breaks, sdk_close_04_keeps),
    ("V1-CONFIG-01", V1, v1_config_01_breaks, v1_config_01_keeps),
    ("V1-CONFIG-02", V1, v1_config_02_breaks, v1_config_02_keeps),
    ("V1-NOTICE-01", V1, v1_notice_01_breaks, v1_notice_01_keeps),
    ("INIT-09", V1, v1_init_09_breaks, v1_init_09_keeps),
    ("INIT-02", V1, v1_init_02_breaks, v1_init_09_keeps),
    ("TOOL-12", SEED, tool_12_breaks, tool_12_keeps),
    ("TOOL-22", SEED, tool_22_breaks, tool_22_keeps),
    ("TOOL-23", SEED, tool_23_breaks, tool_23_keeps),
    ("SESS-17", V1, sess_17_breaks, sess_17_keeps),
    ("ENUM-11", SEED, enum_11_breaks, enum_11_keeps),
    ("SDK-ICON-01", SDK, sdk_icon_01_breaks, sdk_icon_01_keeps),
    ("SDK-MCP-01", SDK, sdk_mcp_01_breaks, sdk_mcp_01_keeps),
    ("SDK-RECEIPT-04", SDK, sdk_receipt_04_breaks, sdk_receipt_04_keeps),
    ("STATE-05", SDK, elicit_state_05_breaks, elicit_state_05_keeps),
    ("STATE-06", SDK, elicit_state_06_breaks, elicit_state_06_keeps),
    ("SDK-ELICIT-01", SDK, sdk_elicit_01_breaks, sdk_elicit_01_keeps),
]
