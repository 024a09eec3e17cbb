"""Prints a banner, invalid UTF-8, a non-JSON line, a NaN, then one valid message."""

import os
import time

os.write(1, b"Agent v1.0 starting...\n")
os.write(1, b'{"jsonrpc":"2.0","method":"x","params":{"t":"caf\xe9"}}\n')
os.write(1, b"{not json}\n")
os.write(1, b'{"jsonrpc":"2.0","method":"nan","params":NaN}\n')
os.write(1, b'{"jsonrpc":"2.0","method":"surrogate","params":{"s":"\\ud800"}}\n')
os.write(1, b'{"jsonrpc":"2.0","method":"ok"}\n')
time.sleep(30)
