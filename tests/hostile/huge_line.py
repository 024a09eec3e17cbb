"""One 50 MB line without a newline for a long time, then a newline and a valid message."""

import os
import time

os.write(1, b'{"jsonrpc":"2.0","method":"big","params":{"pad":"')
block = b"y" * (1024 * 1024)
for _ in range(50):
    os.write(1, block)
os.write(1, b'"}}\n{"jsonrpc":"2.0","method":"after"}\n')
while True:
    time.sleep(1)
