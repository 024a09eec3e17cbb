"""The reference agent, slow to make its first session: its answer to the first session/new is
written ``--slow S`` seconds late, while everything else it writes goes on (kilo's first
session/new took 5.8 s, s13). Run: ``python slow_sessions.py --slow S [ARGS]``, ARGS going to
the reference agent."""

import json
import subprocess
import sys
import threading

args = sys.argv[1:]
at = args.index("--slow")
slow = float(args[at + 1])
del args[at:at + 2]
agent = subprocess.Popen([sys.executable, "-m", "acp_model.agents.reference", *args],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
first: list[object] = []  # the id of the first session/new, once it is asked
lock = threading.Lock()  # keeps each line whole on stdout


def write(line: str) -> None:
    with lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def parsed(line: str) -> object:
    """The message a line holds (None: not JSON)."""
    try:
        return json.loads(line)
    except ValueError:
        return None


def forward_input() -> None:
    assert agent.stdin is not None
    for line in sys.stdin:
        msg = parsed(line)
        if isinstance(msg, dict) and msg.get("method") == "session/new" and not first:
            first.append(msg.get("id"))
        agent.stdin.write(line)
        agent.stdin.flush()
    agent.stdin.close()


threading.Thread(target=forward_input, daemon=True).start()
assert agent.stdout is not None
for line in agent.stdout:
    msg = parsed(line)
    if isinstance(msg, dict) and "method" not in msg and first and msg.get("id") == first[0]:
        threading.Timer(slow, write, (line,)).start()
        continue
    write(line)
sys.exit(agent.wait())
