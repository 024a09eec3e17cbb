"""A v1-only agent: the reference agent, offered protocolVersion 1 whatever the client asks.

It answers ``initialize`` with protocolVersion 1 (as an agent that knows only v1 does when
offered 2) and then speaks v1; its other arguments go to the reference agent.
"""

import json
import subprocess
import sys

agent = subprocess.Popen([sys.executable, "-m", "acp_model.agents.reference", *sys.argv[1:]],
                         stdin=subprocess.PIPE)
assert agent.stdin is not None
for line in sys.stdin.buffer:
    try:
        msg = json.loads(line)
    except ValueError:
        msg = None
    if isinstance(msg, dict) and msg.get("method") == "initialize" \
            and isinstance(msg.get("params"), dict):
        msg["params"]["protocolVersion"] = 1
        line = (json.dumps(msg) + "\n").encode()
    agent.stdin.write(line)
    agent.stdin.flush()
agent.stdin.close()
sys.exit(agent.wait())
