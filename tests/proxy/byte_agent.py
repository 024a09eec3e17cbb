"""An "agent" for the proxy tests that is only bytes: it writes the file ``--out`` to stdout
(in the chunks ``--chunk`` gives), copies what it reads on stdin to ``--got``, and exits with
``--exit`` once stdin closes (``--hang``: never; ``--flood N``: N MiB of lines instead)."""

import argparse
import os
import signal
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--out")
p.add_argument("--got")
p.add_argument("--chunk", type=int, default=7)
p.add_argument("--exit", type=int, default=0)
p.add_argument("--flood", type=int, default=0)
p.add_argument("--hang", action="store_true")
p.add_argument("--kill-self", action="store_true")
p.add_argument("--tag", default="")
args = p.parse_args()
if args.hang:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if args.flood:
    line = b'{"jsonrpc":"2.0","method":"_flood","params":{"pad":"' + b"x" * 1000 + b'"}}\n'
    block = line * 1024  # about 1 MiB
    for _ in range(args.flood):
        os.write(1, block)
elif args.out:
    with open(args.out, "rb") as fh:
        data = fh.read()
    for i in range(0, len(data), args.chunk):
        os.write(1, data[i:i + args.chunk])
got = open(args.got, "wb") if args.got else None  # noqa: SIM115 - closed below
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    if got is not None:
        got.write(chunk)
        got.flush()
if got is not None:
    got.close()
while args.hang:
    time.sleep(1)
if args.kill_self:
    os.kill(os.getpid(), signal.SIGKILL)
sys.exit(args.exit)
