"""Runs an agent and copies every byte it receives on stdin to ``argv[1]`` (the proxy tests
compare what the agent received with and without the proxy)."""

import os
import subprocess
import sys
import threading

record = open(sys.argv[1], "wb")  # noqa: SIM115 - open for the agent's lifetime
child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, bufsize=0)


def pump() -> None:
    while chunk := os.read(0, 65536):
        record.write(chunk)
        record.flush()
        child.stdin.write(chunk)
    child.stdin.close()


threading.Thread(target=pump, daemon=True).start()
sys.exit(child.wait())
