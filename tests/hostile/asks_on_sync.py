"""A v1 agent that asks for permission just as the client looks (stdlib only).

A prompt starts a turn that shows one chunk and then waits; ``session/cancel`` ends it
``cancelled``. On the second ``_acp_model/sync`` after a cancel it first writes a
``session/request_permission`` for the session, then answers the sync: the request lands
while the client's last look is in flight (opencode 1.0.152 and claude-agent-acp 0.23.1 gave
such a request during the fuzzer's drain, issue 49), and the client still owes it its answer.
"""

import json
import sys
import threading

out = threading.Lock()
turns: dict[str, list] = {}  # sid -> [prompt id, answered?]
syncs_since_cancel = 0
asked = 0


def send(msg: dict) -> None:
    with out:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
        sys.stdout.flush()


def update(sid: str, text: str) -> None:
    send({"method": "session/update", "params": {"sessionId": sid, "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if not isinstance(msg, dict):
        continue
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method is None:
        continue  # an answer to our permission request
    if method == "initialize":
        send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {},
                                    "authMethods": []}})
    elif method == "session/new":
        sid = f"asks-{len(turns) + 1}"
        turns[sid] = []
        send({"id": rid, "result": {"sessionId": sid}})
    elif method == "session/prompt":
        sid = params.get("sessionId")
        turns[sid] = [rid]
        update(sid, "working")
    elif method == "session/cancel":
        sid = params.get("sessionId")
        syncs_since_cancel = 0
        if turns.get(sid):
            send({"id": turns[sid].pop(), "result": {"stopReason": "cancelled"}})
    elif method == "_acp_model/sync":
        syncs_since_cancel += 1
        if syncs_since_cancel == 2:
            asked += 1
            sid = next(iter(turns))
            send({"id": f"perm-{asked}", "method": "session/request_permission", "params": {
                "sessionId": sid,
                "toolCall": {"toolCallId": f"late-{asked}", "title": "Run tests",
                             "kind": "execute", "status": "pending"},
                "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"},
                            {"optionId": "no", "name": "Reject", "kind": "reject_once"}]}})
        send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})
    elif rid is not None:
        send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})
