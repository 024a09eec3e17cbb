"""Closes its stdout early but keeps running (and keeps reading stdin)."""

import os
import sys
import time

os.write(1, b'{"jsonrpc":"2.0","method":"hello"}\n')
os.close(1)
sys.stdin.readline()
time.sleep(60)
