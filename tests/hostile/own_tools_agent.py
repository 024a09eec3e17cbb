"""A small v1 ACP agent whose tools have names and schemas of its own (stdlib only).

It stands for an agent acp-model has no profile for: each prompt goes to an OpenAI chat
completions model (``OPENAI_BASE_URL``, streamed) offering ``exec_cmd {cmdline}``,
``put_file {target, body, options: {mode}}`` and a read-only ``peek {target}``. Before it runs
a tool that changes things it asks the client's permission (``session/request_permission``);
a rejected or cancelled permission fails the call. A ``session/cancel`` hangs up the model
request, stops a running ``exec_cmd`` (its process is killed), and the turn ends with
``cancelled``. With ``--keep-tools-on-cancel`` a cancel leaves a running command alone and the
turn waits for it (claude-agent-acp#680's shape: a cancel during a blocking tool does not end
the prompt). ``--on-cancel wait``: a cancel leaves the model request open and the turn ends
(``cancelled``) once its stream ends; ``--on-cancel hang``: the same, but the cancelled turn is
never answered. ``--loadable``: it advertises ``loadSession`` and answers a ``session/load``
of one of its sessions at once with a fresh session object, leaving a running turn in the old
one, where later cancels no longer reach it (zed-industries/codex-acp#186's shape).
``--persist``: it also advertises ``loadSession`` and keeps each session (its folder and the
texts of its finished turns) in ``.own-tools-sessions.json`` in its working directory; a
later process of it loads a session it finds there, replaying its history. Without it, a
session lives only as long as its process.
``--lose-mid-stream-cancel`` plants a race that only a slow model opens: a cancel read once
the model's response has started but before any of its content came is noted on the stream
and acted on at its next text; a tool call that comes next does not look at the note, so the
tool is asked for and the turn ends ``end_turn`` (CANCEL-07). Only a model that pauses
between the start of its answer and a tool call leaves time for a cancel to land there.
``--finish-after-final MS``: once its model's final response (no tool call) has ended, the
turn takes MS milliseconds to finish and a cancel read then is ignored: the turn's real end
(``end_turn``) answers it (issue 49: nothing was left to abort, CANCEL-07's warning).
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from typing import Any

TOOLS = [
    {"type": "function", "function": {
        "name": "exec_cmd", "description": "Run a program line in the project.",
        "parameters": {"type": "object", "required": ["cmdline"], "properties": {
            "cmdline": {"type": "string", "description": "what to run"},
            "timeout_s": {"type": "integer", "minimum": 1, "maximum": 60}}}}},
    {"type": "function", "function": {
        "name": "put_file", "description": "Store a text under a name in the project.",
        "parameters": {"type": "object", "required": ["target", "body", "options"],
                       "properties": {
                           "target": {"type": "string"}, "body": {"type": "string"},
                           "options": {"type": "object", "required": ["mode"], "properties": {
                               "mode": {"type": "string", "enum": ["create", "overwrite"]}}}}}}},
    {"type": "function", "function": {
        "name": "peek", "description": "Show what a file holds (read-only).",
        "parameters": {"type": "object", "required": ["target"],
                       "properties": {"target": {"type": "string"}}}}},
]
CHANGING = {"exec_cmd": "execute", "put_file": "edit"}
ON_CANCEL = sys.argv[sys.argv.index("--on-cancel") + 1] if "--on-cancel" in sys.argv \
    else "hangup"
LOADABLE = "--loadable" in sys.argv
PERSIST = "--persist" in sys.argv
STORE = os.path.join(os.getcwd(), ".own-tools-sessions.json")
store_lock = threading.Lock()


def stored() -> dict[str, Any]:
    try:
        with open(STORE, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def store(sid: str, session: dict[str, Any]) -> None:
    """The session as a later process finds it (written whole, then renamed into place)."""
    if not PERSIST:
        return
    with store_lock:
        data = stored()
        data[sid] = {"cwd": session["cwd"], "history": session["history"]}
        with open(STORE + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(STORE + ".tmp", STORE)

out_lock = threading.Lock()
pending: dict[Any, dict[str, Any]] = {}  # our request id -> {"event", "answer"}
ids = itertools.count(1)


LOSE_MID_STREAM_CANCEL = "--lose-mid-stream-cancel" in sys.argv  # a planted bug
FINISH_MS = int(sys.argv[sys.argv.index("--finish-after-final") + 1]) \
    if "--finish-after-final" in sys.argv else -1  # -1: a cancel is never ignored


class Turn:
    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.sock: socket.socket | None = None
        self.awaiting_content = False  # the model's response started, none of it read yet
        self.stream_cancel = threading.Event()  # a cancel noted on the stream (the bug)
        self.final = False  # the model's final response has ended (--finish-after-final)

    def cancel(self) -> None:
        if FINISH_MS >= 0 and self.final:
            return  # nothing left to abort: the turn's end answers it
        if LOSE_MID_STREAM_CANCEL and self.awaiting_content:
            self.stream_cancel.set()  # acted on at the stream's next text, if one comes
            return
        self.cancelled.set()
        if self.sock is not None and ON_CANCEL == "hangup":
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)


sessions: dict[str, dict[str, Any]] = {}  # sid -> {"cwd", "turns": set[Turn]}


def send(msg: dict[str, Any]) -> None:
    with out_lock:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
        sys.stdout.flush()


def update(sid: str, body: dict[str, Any]) -> None:
    send({"method": "session/update", "params": {"sessionId": sid, "update": body}})


def ask(method: str, params: dict[str, Any]) -> Any:
    rid = f"agent-{next(ids)}"
    slot: dict[str, Any] = {"event": threading.Event(), "answer": None}
    pending[rid] = slot
    send({"id": rid, "method": method, "params": params})
    slot["event"].wait()
    return slot["answer"]


def model_step(turn: Turn, messages: list[dict[str, Any]], sid: str
               ) -> tuple[str, list[dict[str, Any]], str]:
    """One streamed model request: (text, tool calls, finish reason)."""
    base = urllib.parse.urlparse(os.environ["OPENAI_BASE_URL"])
    conn = http.client.HTTPConnection(base.hostname or "127.0.0.1", base.port or 80, timeout=120)
    body = json.dumps({"model": "own", "stream": True, "messages": messages, "tools": TOOLS})
    conn.connect()
    turn.sock = conn.sock
    if turn.cancelled.is_set():
        conn.close()
        return "", [], "cancelled"
    text, calls, finish = "", {}, "stop"
    try:
        conn.request("POST", base.path.rstrip("/") + "/chat/completions", body,
                     {"Content-Type": "application/json", "Authorization": "Bearer x"})
        resp = conn.getresponse()
        if resp.status != 200:
            resp.read()
            return "", [], f"http{resp.status}"
        turn.stream_cancel.clear()  # a note belongs to the stream it was made on
        turn.awaiting_content = True
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choice = json.loads(line[6:])["choices"][0]
            delta = choice.get("delta") or {}
            if delta.get("content") or delta.get("tool_calls"):
                turn.awaiting_content = False
            if delta.get("content") and turn.stream_cancel.is_set():
                turn.cancel()
                return text, [], "cancelled"
            if delta.get("content"):
                text += delta["content"]
                if not turn.cancelled.is_set():
                    update(sid, {"sessionUpdate": "agent_message_chunk",
                                 "content": {"type": "text", "text": delta["content"]}})
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(tc["index"], {"id": tc.get("id"), "name": "",
                                                      "arguments": ""})
                fn = tc.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    except (OSError, http.client.HTTPException, ValueError):
        return text, [], "cancelled" if turn.cancelled.is_set() else "broken"
    finally:
        conn.close()
        turn.sock = None
        turn.awaiting_content = False
    return text, [calls[k] for k in sorted(calls)], finish


KEEP_TOOLS_ON_CANCEL = "--keep-tools-on-cancel" in sys.argv  # the planted bug


def run_command(line: str, cwd: str, turn: Turn) -> str:
    """Run ``line``; a cancel of the turn kills it (unless the planted bug keeps it)."""
    proc = subprocess.Popen(["sh", "-c", line], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    while True:
        try:
            return f"exit {proc.wait(timeout=0.05)}"
        except subprocess.TimeoutExpired:
            if turn.cancelled.is_set() and not KEEP_TOOLS_ON_CANCEL:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, 9)
                proc.wait()
                return "cancelled"


def run_tool(name: str, args: dict[str, Any], cwd: str, turn: Turn) -> str:
    if name == "exec_cmd":
        return run_command(str(args.get("cmdline", "")), cwd, turn)
    if name == "put_file":
        path = os.path.join(cwd, str(args.get("target", "out.txt")))
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(str(args.get("body", "")))
        return "stored"
    if name == "peek":
        return "(nothing)"
    return f"no tool {name}"


def prompt(rid: Any, params: dict[str, Any], turn: Turn) -> None:
    sid = params["sessionId"]
    session = sessions[sid]
    text = " ".join(b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict))
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    stop = "end_turn"
    answered = ""
    try:
        for _ in range(8):
            said, calls, finish = model_step(turn, messages, sid)
            answered += said
            if turn.cancelled.is_set():
                stop = "cancelled"
                break
            if finish == "length":
                stop = "max_tokens"
                break
            if not calls:
                if finish.startswith("http") or finish == "broken":
                    continue  # a failed request: ask again
                if FINISH_MS >= 0:
                    turn.final = True
                    time.sleep(FINISH_MS / 1000)  # writing the turn up
                break
            messages.append({"role": "assistant", "content": said or None, "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]})
            for call in calls:
                result = handle_call(turn, sid, session["cwd"], call)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
            if turn.cancelled.is_set():
                stop = "cancelled"
                break
        session["history"] += [["user", text], ["agent", answered]]
        store(sid, session)
    finally:
        session["turns"].discard(turn)
    if turn.cancelled.is_set():  # a cancel read while the turn was being stored ends it too
        stop = "cancelled"
    if stop == "cancelled" and ON_CANCEL == "hang":
        return  # the cancelled turn is never answered
    send({"id": rid, "result": {"stopReason": stop}})


def handle_call(turn: Turn, sid: str, cwd: str, call: dict[str, Any]) -> str:
    name, tid = call["name"], call["id"]
    try:
        args = json.loads(call["arguments"] or "{}")
    except ValueError:
        args = {}
    if turn.cancelled.is_set():
        return "cancelled"
    kind = CHANGING.get(name, "read")
    update(sid, {"sessionUpdate": "tool_call", "toolCallId": tid, "title": name,
                 "kind": kind, "status": "pending", "rawInput": args})
    if name in CHANGING:
        answer = ask("session/request_permission", {
            "sessionId": sid,
            "toolCall": {"toolCallId": tid, "title": name, "kind": kind, "rawInput": args},
            "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]})
        outcome = (answer or {}).get("outcome") or {}
        if turn.cancelled.is_set() or outcome.get("outcome") != "selected" \
                or outcome.get("optionId") != "allow":
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid,
                         "status": "failed"})
            return "not allowed"
    update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid,
                 "status": "in_progress"})
    try:
        result = run_tool(name, args, cwd, turn)
        status = "failed" if result == "cancelled" else "completed"
    except (OSError, subprocess.SubprocessError) as exc:
        result, status = f"error: {exc}", "failed"
    update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": status,
                 "content": [{"type": "content", "content": {"type": "text", "text": result}}]})
    return result


def load(rid: Any, sid: str) -> None:
    """``session/load`` of a session this process or an earlier one stored: its history
    replayed, then the answer."""
    found = sessions.get(sid) or stored().get(sid)
    if found is None:
        send({"id": rid, "error": {"code": -32602, "message": f"no session {sid}"}})
        return
    if sid not in sessions:  # (a session of this process stays the object its turns are in)
        sessions[sid] = {"cwd": found["cwd"], "turns": set(), "history": list(found["history"])}
    for role, text in found["history"]:
        if text:
            update(sid, {"sessionUpdate": f"{role}_message_chunk",
                         "content": {"type": "text", "text": text}})
    send({"id": rid, "result": {}})


def main() -> None:
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            send({"id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        if not isinstance(msg, dict):
            send({"id": None, "error": {"code": -32600, "message": "Invalid Request"}})
            continue
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method is None and rid in pending:  # an answer to our request
            slot = pending.pop(rid)
            slot["answer"] = msg.get("result")
            slot["event"].set()
        elif method == "initialize":
            send({"id": rid, "result": {"protocolVersion": 1, "authMethods": [],
                                        "agentInfo": {"name": "own-tools", "version": "1"},
                                        "agentCapabilities": {
                                            "loadSession": LOADABLE or PERSIST}}})
        elif method == "session/load" and LOADABLE and params.get("sessionId") in sessions:
            sid = params["sessionId"]  # a fresh object: a running turn stays in the old one
            sessions[sid] = {**sessions[sid], "turns": set()}
            send({"id": rid, "result": {}})
        elif method == "session/load" and PERSIST:
            load(rid, str(params.get("sessionId")))
        elif method == "session/new":
            sid = f"own-{os.getpid()}-{next(ids)}" if PERSIST else f"own-{next(ids)}"
            sessions[sid] = {"cwd": params.get("cwd") or os.getcwd(), "turns": set(),
                             "history": []}
            store(sid, sessions[sid])
            send({"id": rid, "result": {"sessionId": sid}})
        elif method == "session/prompt" and params.get("sessionId") in sessions:
            # registered before the next message is read: a cancel right behind the prompt
            # reaches its turn (a turn registered by its thread could miss it, CANCEL-07)
            turn = Turn()
            sessions[params["sessionId"]]["turns"].add(turn)
            threading.Thread(target=prompt, args=(rid, params, turn), daemon=True).start()
        elif method == "session/cancel":
            for turn in list(sessions.get(params.get("sessionId"), {}).get("turns", ())):
                turn.cancel()
        elif rid is not None and method is not None:
            code = -32602 if method == "session/prompt" else -32601
            send({"id": rid, "error": {"code": code, "message": f"cannot {method}"}})


if __name__ == "__main__":
    main()
