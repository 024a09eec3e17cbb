"""Starts a grandchild that ignores SIGTERM and outlives us, reports its pid, exits at once."""

import json
import subprocess
import sys

code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"
child = subprocess.Popen([sys.executable, "-c", code])  # inherits our stdio pipes
print(json.dumps({"jsonrpc": "2.0", "method": "grandchild", "params": {"pid": child.pid}}))
sys.stdout.flush()
