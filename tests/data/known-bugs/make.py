"""The wire of each published bug of ``benchmarks/known_bugs.toml``, as its report describes it
(``python tests/data/known-bugs/make.py`` writes one ``<owner>__<repo>__<number>.jsonl`` per
entry; ``tests/oracle/test_known_bug_traces.py`` checks that each fails under its rule).

Each trace is the report's own sequence, with its session ids and texts where the report gives
them. Where the report's client never sent a request after its ``session/cancel`` (nothing
then proves the agent read the cancel before it answered, which the text makes the condition
of its MUST), the trace adds the one thing a client needs for that proof: a request the agent
answers between the cancel and the prompt's answer (``READ_PROOF``), as the fuzzer's
verification of the entry did. ``BARE`` names those entries; the test checks what the
report's bare wire gives without it (a legal race by the text).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from acp_model.trace.builder import TraceBuilder  # noqa: E402

V1_CLIENT = {"protocolVersion": 1,
             "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True},
                                    "terminal": False},
             "clientInfo": {"name": "editor", "version": "1.0.0"}}
READ_PROOF = "_editor/ping"  # a request of the client's own; an agent answers it -32601


def _start(agent: str, version: str, sid: str, *, load: bool = False) -> TraceBuilder:
    """initialize (v1) and session/new, as an editor sends them."""
    t = TraceBuilder()
    t.rpc.request("c2a", "initialize", V1_CLIENT, 0)
    t.rpc.result("a2c", 0, {"protocolVersion": 1, "authMethods": [],
                            "agentCapabilities": {"loadSession": load,
                                                  "promptCapabilities": {}},
                            "agentInfo": {"name": agent, "version": version}})
    t.rpc.request("c2a", "session/new", {"cwd": "/home/user/project", "mcpServers": []}, 1)
    return t.rpc.result("a2c", 1, {"sessionId": sid})


def _prompt(t: TraceBuilder, sid: str, rid: int, text: str) -> TraceBuilder:
    return t.rpc.request("c2a", "session/prompt",
                         {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}, rid)


def _tool(t: TraceBuilder, sid: str, tid: str, title: str, status: str,
          kind: str = "execute", *, first: bool = False) -> TraceBuilder:
    upd: dict[str, Any] = {"sessionUpdate": "tool_call" if first else "tool_call_update",
                           "toolCallId": tid, "status": status}
    if first:
        upd.update(title=title, kind=kind)
    return t.update(sid, upd)


def _proof(t: TraceBuilder, rid: int, *, bare: bool) -> TraceBuilder:
    if bare:
        return t
    t.rpc.request("c2a", READ_PROOF, {}, rid)
    return t.rpc.error("a2c", rid, -32601, "Method not found")


def _load(t: TraceBuilder, sid: str, rid: int, text: str) -> TraceBuilder:
    """session/load of the working session: it replays the running prompt, then answers."""
    t.rpc.request("c2a", "session/load", {"sessionId": sid, "cwd": "/home/user/project",
                                          "mcpServers": []}, rid)
    t.v1.chunk(sid, text, "user_message_chunk")
    return t.rpc.result("a2c", rid, {})


def claude_442(bare: bool = False) -> TraceBuilder:
    """A prompt, then at once a cancel (C-c C-c in agent-shell), before Claude Code replays the
    user message: the result is taken for a background task's and the prompt hangs forever."""
    sid = "ba806dac-1f1f-46ae-9968-13e7e2bd7160"
    t = _start("@zed-industries/claude-agent-acp", "0.22.2", sid)
    t.update(sid, {"sessionUpdate": "available_commands_update", "availableCommands": []})
    _prompt(t, sid, 2, "hello")
    return t.cancel(sid)  # and nothing more: session/prompt #2 is never answered


def _load_then_cancel(agent: str, version: str, sid: str, bare: bool) -> TraceBuilder:
    """session/new, a prompt running `sleep 20`, session/load of that session, session/cancel:
    the prompt is not interrupted; it answers end_turn once the command ran out."""
    text = "Run `sleep 20` in the shell, then say done."
    t = _start(agent, version, sid, load=True)
    _prompt(t, sid, 2, text)
    _tool(t, sid, "call_sleep", "sleep 20", "pending", first=True)
    _tool(t, sid, "call_sleep", "sleep 20", "in_progress")
    _load(t, sid, 3, text)
    t.cancel(sid)
    _proof(t, 4, bare=bare)
    _tool(t, sid, "call_sleep", "sleep 20", "completed")
    t.v1.chunk(sid, "done")
    return t.v1.ended(2, "end_turn")


def claude_415(bare: bool = False) -> TraceBuilder:
    return _load_then_cancel("@zed-industries/claude-agent-acp", "0.22.0",
                             "2f0c6b57-6e0e-4d1c-9e3c-6c1c2f3e0415", bare)


def codex_186(bare: bool = False) -> TraceBuilder:
    return _load_then_cancel("codex-acp", "0.9.5", "019a6f2e-codex-0186", bare)


def claude_551(bare: bool = False) -> TraceBuilder:
    """A turn running `sleep 30`, cancelled: the cancel, a usage_update, the prompt answered
    cancelled. The next prompt is answered with a second stop reason, the cancelled turn's,
    at once (the report's "any cancelled prompt turn ... will always send a second stop reason
    when it's prompted again"; under v1 a turn has one answer, so it is the next prompt's)."""
    sid = "9cbea40d-85a1-4b71-8fc9-584be559bbbf"
    t = _start("@agentclientprotocol/claude-agent-acp", "0.29.2", sid)
    _prompt(t, sid, 2, "I'm testing something. Just run a foreground sleep 30 task, then say "
                       "'all done!'")
    t.v1.chunk(sid, "Running the sleep now.")
    _tool(t, sid, "toolu_sleep", "sleep 30", "pending", first=True)
    _tool(t, sid, "toolu_sleep", "sleep 30", "in_progress")
    t.cancel(sid)
    t.update(sid, {"sessionUpdate": "usage_update", "used": 24422, "size": 1000000,
                   "cost": {"amount": 0.15535875, "currency": "USD"}})
    t.v1.ended(2, "cancelled")
    _prompt(t, sid, 3, "say hi")
    return t.v1.ended(3, "cancelled")  # the cancelled turn's stop reason, again


def claude_680(bare: bool = False) -> TraceBuilder:
    """The model starts a command in the background (Bash run_in_background), then waits on
    it with TaskOutput(block: true) while it hangs; session/cancel never resolves the prompt,
    and a second cancel is a no-op."""
    sid = "4e8d0a8c-0680-4d5b-8a51-2f5c3c0e0680"
    t = _start("@agentclientprotocol/claude-agent-acp", "0.32.0", sid)
    _prompt(t, sid, 2, "Start the dev server in the background and wait for it.")
    _tool(t, sid, "toolu_bash", "npm run dev (background)", "pending", first=True)
    _tool(t, sid, "toolu_bash", "", "completed")
    _tool(t, sid, "toolu_wait", "TaskOutput (block)", "pending", kind="other", first=True)
    _tool(t, sid, "toolu_wait", "", "in_progress")
    t.cancel(sid)
    return t.cancel(sid)  # and session/prompt #2 is never answered


def qwen_7295(bare: bool = False) -> TraceBuilder:
    """A shell call waiting for its (Plan-mode) permission, session/cancel, the request
    answered cancelled as the client must: the prompt ends end_turn, not cancelled."""
    sid = "qwen-7295"
    t = _start("qwen-code", "0.15.10", sid)
    _prompt(t, sid, 2, "List the files, then run the tests.")
    _tool(t, sid, "run_shell_command-1", "npm test", "pending", first=True)
    t.rpc.request("a2c", "session/request_permission", {
        "sessionId": sid, "toolCall": {"toolCallId": "run_shell_command-1", "title": "npm test",
                                       "kind": "execute", "status": "pending"},
        "options": [{"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "cancel", "name": "Reject", "kind": "reject_once"}]}, 0)
    t.cancel(sid)
    _proof(t, 3, bare=bare)
    t.rpc.result("c2a", 0, {"outcome": {"outcome": "cancelled"}})
    _tool(t, sid, "run_shell_command-1", "", "failed")
    return t.v1.ended(2, "end_turn")


def copilot_4561(bare: bool = False) -> TraceBuilder:
    """A prompt whose turn is working, session/cancel: the turn stops 26 ms later, with no
    further update but Copilot's own notice, and the prompt is answered end_turn."""
    sid = "copilot-4561"
    t = _start("copilot", "1.0.80", sid)
    _prompt(t, sid, 2, "Refactor the build script.")
    t.v1.chunk(sid, "Looking at the build script")
    t.cancel(sid)
    _proof(t, 3, bare=bare)
    if not bare:
        t.v1.chunk(sid, "Info: Operation cancelled by user")
    return t.v1.ended(2, "end_turn")


def opencode_25899(bare: bool = False) -> TraceBuilder:
    """A prompt that starts a long-running tool (a 60 s shell loop), session/cancel once it
    runs: the prompt is answered end_turn with all-zero usage."""
    sid = "ses_25899"
    t = _start("opencode", "1.14.41", sid)
    _prompt(t, sid, 100, "Run a 60 second shell loop.")
    _tool(t, sid, "toolu_loop", "for i in $(seq 60); do sleep 1; done", "pending", first=True)
    _tool(t, sid, "toolu_loop", "", "in_progress")
    t.cancel(sid)
    _proof(t, 101, bare=bare)
    return t.rpc.result("a2c", 100, {"stopReason": "end_turn", "usage": {
        "totalTokens": 0, "inputTokens": 0, "outputTokens": 0}, "_meta": {}})


TRACES: dict[str, Callable[..., TraceBuilder]] = {
    "agentclientprotocol/claude-agent-acp#442": claude_442,
    "agentclientprotocol/claude-agent-acp#415": claude_415,
    "agentclientprotocol/claude-agent-acp#551": claude_551,
    "agentclientprotocol/claude-agent-acp#680": claude_680,
    "zed-industries/codex-acp#186": codex_186,
    "QwenLM/qwen-code#7295": qwen_7295,
    "github/copilot-cli#4561": copilot_4561,
    "anomalyco/opencode#25899": opencode_25899,
}
# Entries whose report's own wire holds no request answered after the cancel: the trace adds
# READ_PROOF (the report describes no such request; its absence leaves a legal race)
BARE = frozenset({"agentclientprotocol/claude-agent-acp#415", "zed-industries/codex-acp#186",
                  "QwenLM/qwen-code#7295", "github/copilot-cli#4561",
                  "anomalyco/opencode#25899"})


def path_of(bug_id: str) -> Path:
    return HERE / (bug_id.replace("/", "__").replace("#", "__") + ".jsonl")


def main() -> None:
    for bug_id, build in TRACES.items():
        build().log.write(path_of(bug_id))
        print(f"wrote {path_of(bug_id).relative_to(HERE.parents[2])}")


if __name__ == "__main__":
    main()
