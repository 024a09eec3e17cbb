"""A small v1 ACP agent that uses what its client advertises (stdlib only).

For each prompt it calls the client's methods its ``clientCapabilities`` allow: it writes a file
in the session's folder (``fs/write_text_file``), reads it back and reads a missing one and one
outside the folder (``fs/read_text_file``), runs ``printf`` in a terminal and waits for it,
reads its output and releases it (``terminal/*``). It says what each answer was in one
``agent_message_chunk`` (a JSON text) and ends the turn. A method the client did not advertise
is never called. A ``session/cancel`` during a turn makes it end ``cancelled``, without its
message; one while the session is idle is ignored.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
from typing import Any

out_lock = threading.RLock()  # also makes a turn's end and a cancel exclusive
pending: dict[Any, dict[str, Any]] = {}
ids = itertools.count(1)
caps: dict[str, Any] = {}
sessions: dict[str, str] = {}  # sid -> cwd
turns: dict[str, threading.Event] = {}  # sid -> the running turn's cancel flag


def send(msg: dict[str, Any]) -> None:
    with out_lock:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
        sys.stdout.flush()


def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request to the client; its whole response (``result`` or ``error``)."""
    rid = f"svc-{next(ids)}"
    slot: dict[str, Any] = {"event": threading.Event(), "answer": None}
    pending[rid] = slot
    send({"id": rid, "method": method, "params": params})
    slot["event"].wait(30)
    return slot["answer"] or {"error": "no answer"}


def use_client(sid: str) -> dict[str, Any]:
    cwd, said = sessions[sid], {}
    fs = caps.get("fs") or {}
    path = os.path.join(cwd, "acpm-scratch", "services.txt")
    if fs.get("writeTextFile"):
        said["write"] = ask("fs/write_text_file", {"sessionId": sid, "path": path,
                                                   "content": "one\ntwo\nthree\n"})
    if fs.get("readTextFile"):
        said["read"] = ask("fs/read_text_file", {"sessionId": sid, "path": path, "line": 2,
                                                 "limit": 1})
        said["missing"] = ask("fs/read_text_file", {"sessionId": sid,
                                                    "path": os.path.join(cwd, "nope.txt")})
        said["outside"] = ask("fs/read_text_file", {"sessionId": sid, "path": "/etc/hostname"})
    if caps.get("terminal") is True:
        made = ask("terminal/create", {"sessionId": sid, "command": "printf",
                                       "args": ["out-%s", "ok"], "outputByteLimit": 100})
        tid = (made.get("result") or {}).get("terminalId")
        said["create"] = made
        said["exit"] = ask("terminal/wait_for_exit", {"sessionId": sid, "terminalId": tid})
        said["output"] = ask("terminal/output", {"sessionId": sid, "terminalId": tid})
        said["release"] = ask("terminal/release", {"sessionId": sid, "terminalId": tid})
        said["after_release"] = ask("terminal/output", {"sessionId": sid, "terminalId": tid})
    return said


def prompt(rid: Any, params: dict[str, Any], cancelled: threading.Event) -> None:
    sid = params["sessionId"]
    said = use_client(sid)
    with out_lock:  # a cancel read from here on finds the session idle
        turns.pop(sid, None)
        if cancelled.is_set():
            send({"id": rid, "result": {"stopReason": "cancelled"}})
            return
        send({"method": "session/update", "params": {"sessionId": sid, "update": {
            "sessionUpdate": "agent_message_chunk", "content": {
                "type": "text", "text": json.dumps({"capabilities": caps, "said": said})}}}})
        send({"id": rid, "result": {"stopReason": "end_turn"}})


def handle(msg: dict[str, Any]) -> None:
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method is None:  # a response to one of ours
        slot = pending.pop(rid, None)
        if slot is not None:
            slot["answer"] = msg
            slot["event"].set()
        return
    if method == "initialize":
        caps.update(params.get("clientCapabilities") or {})
        send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {},
                                    "authMethods": [],
                                    "agentInfo": {"name": "services-agent", "version": "1"}}})
    elif method == "session/new":
        sid = f"svc-session-{len(sessions) + 1}"
        sessions[sid] = params.get("cwd") or os.getcwd()
        send({"id": rid, "result": {"sessionId": sid}})
    elif method == "session/prompt":
        flag = threading.Event()
        with out_lock:
            turns[params["sessionId"]] = flag
        threading.Thread(target=prompt, args=(rid, params, flag), daemon=True).start()
    elif method == "session/cancel":
        with out_lock:
            flag = turns.get(params.get("sessionId"))
            if flag is not None:
                flag.set()
    elif rid is None:
        return
    else:
        send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})


def main() -> None:
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        for one in msg if isinstance(msg, list) else [msg]:
            if isinstance(one, dict):
                handle(one)


if __name__ == "__main__":
    main()
