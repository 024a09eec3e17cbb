"""Ignores SIGTERM and stdin EOF: only SIGKILL stops it."""

import os
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.write(1, b'{"jsonrpc":"2.0","method":"ready"}\n')
while True:
    time.sleep(1)
