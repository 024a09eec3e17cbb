"""Well-behaved peer: answers every request with {"echo": params}; `exit` makes it quit."""

import json
import sys

for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "exit":
        sys.exit(7)
    if msg.get("method") == "ask":  # make a request of our own, then echo the answer
        print(json.dumps({"jsonrpc": "2.0", "id": "q1", "method": "question", "params": {}}))
        sys.stdout.flush()
        answer = json.loads(sys.stdin.readline())
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": answer}), flush=True)
        continue
    if "id" in msg and "method" in msg:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {"echo": msg.get("params")}}
        print(json.dumps(reply), flush=True)
