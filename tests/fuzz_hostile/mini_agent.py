"""A tiny correct ACP v2 agent that turns hostile on its 2nd prompt (``--mode``).

``--tag X`` is ignored: tests use it to find their own processes. Modes: crash, hang,
flood (100 MB of lines), hugeline (one 50 MB line), badutf8, nonjson,
closestdout, exitidle (exits after finishing its 2nd turn, owing nothing), closestdin (the
same, but closes stdin, says so on stderr and exits 0.5 s later), exitunread (exits
with code 0 on reading its 2nd prompt: owed, but not provably read),
ignoreterm (correct, but ignores SIGTERM and stdin EOF), grandchild (correct, but
leaves a SIGTERM-ignoring grandchild behind), refuseinit (answers initialize with an error,
as an agent without its API key does), strictinit (answers an initialize whose capabilities
lack ``fs`` with -32602 Invalid params, as one release in issue 50 did with v1's defaulted
``clientCapabilities``; correct with them), lateworker (correct, but once sent ``_mini/arm`` it
starts work of its own on the newest session at the next request it does not know, e.g. the
fuzzer's sync, or at the one after ``params.skip`` more, and ends it only when that session
is cancelled), untitledtool (correct, but every turn reports a tool call whose first update
has no title: a TOOL-02 warning), nobatch (correct, but reads batches and never answers
them, as the Python SDK does), none (correct).
"""

import json
import os
import signal
import subprocess
import sys
import time

MODE = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else "none"
prompts = 0
sessions = 0
armed = False
skip = 0  # lateworker: unknown requests to let pass before the work begins
working = None  # lateworker: the session whose work only a cancel ends
history = {}  # session -> the message updates of its turns (a resume from the start replays them)


def send(msg):
    os.write(1, (json.dumps(msg) + "\n").encode())


def update(sid, upd):
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": sid, "update": upd}})


def turn(rid, sid):
    send({"jsonrpc": "2.0", "id": rid, "result": {}})
    said = {"sessionUpdate": "user_message", "messageId": f"u{rid}",
            "content": [{"type": "text", "text": "hi"}]}
    answer = {"sessionUpdate": "agent_message", "messageId": f"a{rid}",
              "content": [{"type": "text", "text": "done"}]}
    history.setdefault(sid, []).extend([said, answer])
    update(sid, said)
    update(sid, {"sessionUpdate": "state_update", "state": "running"})
    if MODE == "untitledtool":
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": f"t{rid}",
                     "status": "completed"})
    update(sid, answer)
    update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


def turn_hostile():
    if MODE == "crash":
        os._exit(5)
    if MODE == "exitunread":  # ends cleanly on reading a prompt: nothing proves it read it
        os._exit(0)
    if MODE == "hang":
        while True:
            time.sleep(1)
    if MODE == "flood":
        line = b'{"jsonrpc":"2.0","method":"session/update","params":{"pad":"' + b"x" * 960 \
            + b'"}}\n'
        for _ in range(100):
            os.write(1, line * 1024)
        while True:
            time.sleep(1)
    if MODE == "hugeline":
        os.write(1, b'{"jsonrpc":"2.0","method":"big","params":{"pad":"' + b"y" * (50 << 20)
                 + b'"}}\n')
    if MODE == "badutf8":
        os.write(1, b'{"jsonrpc":"2.0","method":"x","params":{"t":"caf\xe9"}}\n')
    if MODE == "nonjson":
        os.write(1, b"thinking...\n")
    if MODE == "closestdout":
        os.close(1)
        while True:
            time.sleep(1)


if MODE == "ignoreterm":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if MODE == "grandchild":
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
    tag = sys.argv[sys.argv.index("--tag") + 1] if "--tag" in sys.argv else "x"
    subprocess.Popen([sys.executable, "-c", code, tag], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)

def handle(msg):
    """One JSON-RPC object; returns its immediate response (None: none, or sent by the turn)."""
    global prompts, sessions, armed, skip, working
    if not isinstance(msg, dict) or "method" not in msg:
        return None
    method, rid = msg["method"], msg.get("id")
    params = msg.get("params") or {}
    if MODE == "lateworker" and method == "_mini/arm":
        armed, skip = True, int(params.get("skip", 0))
    if MODE == "lateworker" and method == "session/cancel" and working is not None \
            and params.get("sessionId") == working:
        update(working, {"sessionUpdate": "state_update", "state": "idle",
                         "stopReason": "cancelled"})
        working = None
    if rid is None:
        return None  # notifications: cancel is a no-op, turns end at once
    if method == "initialize" and MODE == "refuseinit":
        return {"jsonrpc": "2.0", "id": rid,
                "error": {"code": -32603, "message": "no API key configured"}}
    if method == "initialize" and MODE == "strictinit" \
            and "fs" not in (msg.get("params") or {}).get("capabilities", {}):
        return {"jsonrpc": "2.0", "id": rid,
                "error": {"code": -32602, "message": "Invalid params",
                          "data": {"capabilities.fs": "required"}}}
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": 2, "capabilities": {"session": {}},
            "info": {"name": "mini", "version": "1"}}}
    if method == "session/new":
        sessions += 1
        return {"jsonrpc": "2.0", "id": rid, "result": {"sessionId": f"s{sessions}"}}
    if method == "session/prompt":
        if not (isinstance(params, dict) and "prompt" in params
                and params.get("sessionId") in {f"s{n}" for n in range(1, sessions + 1)}):
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Invalid"}}
        prompts += 1
        if prompts == 2:
            turn_hostile()
        turn(rid, params["sessionId"])
        if prompts == 2 and MODE == "exitidle":
            os._exit(0)
        if prompts == 2 and MODE == "closestdin":  # as an exiting runtime may: stdin first
            os.close(0)
            os.write(2, b"stdin closed\n")
            time.sleep(0.5)
            os._exit(0)
        return None
    if method in ("session/resume", "session/close"):  # the rest of what `session: {}` offers
        if method == "session/resume" and params.get("replayFrom"):  # the whole conversation
            for upd in history.get(params.get("sessionId"), []):
                update(params["sessionId"], upd)
        return {"jsonrpc": "2.0", "id": rid, "result": {}}
    if method == "session/list":
        return {"jsonrpc": "2.0", "id": rid, "result": {"sessions": []}}
    if armed and sessions and skip:
        skip -= 1
    elif armed and sessions:  # work of its own, begun as it reads this request
        armed, working = False, f"s{sessions}"
        update(working, {"sessionUpdate": "state_update", "state": "running"})
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Not found"}}


for raw in sys.stdin:
    try:
        msg = json.loads(raw)
    except ValueError:
        send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
        continue
    if isinstance(msg, list):  # a batch: one array with the responses it owes, if any
        if MODE == "nobatch":
            continue
        if not msg:
            send({"jsonrpc": "2.0", "id": None,
                  "error": {"code": -32600, "message": "Empty batch"}})
            continue
        replies = [r for r in map(handle, msg) if r is not None]
        if replies:
            send(replies)
        continue
    reply = handle(msg)
    if reply is not None:
        send(reply)

if MODE == "ignoreterm":
    while True:  # stdin closed: keep running until SIGKILL
        time.sleep(1)
