"""A v2 agent that never answers session/prompt (the plainest PROMPT-04 failure).

It answers initialize and session/new, and every other request with -32601; prompts and
notifications get nothing at all. ``--slow S``: wait S seconds before each answer instead (a
slow starter whose answers all come, late), and then answer prompts with ``{}``.
"""

import json
import sys
import time

slow = float(sys.argv[sys.argv.index("--slow") + 1]) if "--slow" in sys.argv else None
sessions = 0


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
    if slow is not None and method in ("initialize", "session/prompt"):
        time.sleep(slow)
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": 2, "capabilities": {},
            "info": {"name": "mute-prompts", "version": "1"}}})
    elif method == "session/new":
        sessions += 1
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": f"mute-{sessions}"}})
    elif method == "session/prompt":
        if slow is not None:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": rid,
              "error": {"code": -32601, "message": "Method not found"}})
