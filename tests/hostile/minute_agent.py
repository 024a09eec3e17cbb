"""A v1 agent that decides by its wall clock's minute, as gemini-cli does (it names a
session's recording file by the minute it was made): a prompt in the minute its session was
made is answered at once, one in a later minute never (PROMPT-04).

What crossed the wire is the same either way; only the agent's clock tells the two apart, so
a replay reproduces it only when it holds that clock (``acp_model/fuzzing/clock.py``).
"""

import json
import sys
import time

made: dict[str, int] = {}  # session id -> the minute its clock read when it was made


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
        continue
    method, rid = msg["method"], msg["id"]
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": 1, "agentCapabilities": {},
            "agentInfo": {"name": "minute-agent", "version": "1"}}})
    elif method == "session/new":
        sid = f"minute-{len(made) + 1}"
        made[sid] = int(time.time() // 60)
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": sid}})
    elif method == "session/prompt":
        if made.get(params.get("sessionId")) == int(time.time() // 60):
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    else:
        send({"jsonrpc": "2.0", "id": rid,
              "error": {"code": -32601, "message": "Method not found"}})
