"""Writes 100 MB of JSON lines to stdout as fast as it can, then hangs."""

import os
import time

line = b'{"jsonrpc":"2.0","method":"session/update","params":{"pad":"' + b"x" * 960 + b'"}}\n'
chunk = line * 1024  # ~1 MB
for _ in range(100):
    os.write(1, chunk)
while True:
    time.sleep(1)
