"""What ``acp-model proxy`` costs on the wire (``python benchmarks/bench_proxy.py``).

* **Latency**: an editor writes ACP messages at a fixed rate (1,000 and 10,000 per second) to
  an agent that echoes every byte back (``cat``); each message carries its send time, and the
  round trip is measured direct and through the proxy. A round trip crosses the proxy twice
  (editor -> agent, agent -> editor), so the added latency per message is half the added round
  trip; p50 and p99 are printed for both. Target: p99 added per message < 1 ms at 1,000/s.
* **Throughput**: an agent writes 256 MiB of ndjson as fast as it can; MB/s read by the editor
  direct and through the proxy. Target >= 50 MB/s.
* **CPU**: the proxy's user + system time (forwarding and judging, all threads) per message
  forwarded in the latency runs.

Every message is judged by the oracle on the proxy's judge thread (these are not valid ACP
traffic, so the judge has violations to report, which it does once per rule): the figures
include it, and show that it stays off the forwarding path.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results import figure, record  # noqa: E402

PROXY = [sys.executable, "-m", "acp_model", "proxy", "--quiet"]
FLOOD = [sys.executable, str(ROOT / "tests" / "proxy" / "byte_agent.py"), "--flood"]


def _message(n: int, sent_ns: int) -> bytes:
    return (b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
            b'{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text",'
            b'"text":"' + f"{n} {sent_ns}".encode() + b'"}}}}\n')


def round_trips(argv: list[str], rate: int, count: int) -> tuple[list[float], float]:
    """Round-trip times (ms) of ``count`` messages sent at ``rate``/s; and the CPU seconds the
    spawned process tree used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    rtts: list[float] = []

    def read() -> None:
        buf = b""
        fd = proc.stdout.fileno()  # type: ignore[union-attr]
        while len(rtts) < count:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            now = time.perf_counter_ns()
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                sent = int(line.rsplit(b" ", 1)[1].split(b'"', 1)[0])
                rtts.append((now - sent) / 1e6)

    # Warm up: the proxy (a Python process) must be up and forwarding before the clock runs.
    proc.stdin.write(_message(-1, time.perf_counter_ns()))
    warm = b""
    while not warm.endswith(b"\n"):
        warm += os.read(proc.stdout.fileno(), 1 << 16)
    reader = threading.Thread(target=read)
    reader.start()
    interval = 1.0 / rate
    start = time.perf_counter()
    for n in range(count):
        due = start + n * interval
        # Sleep, never spin: a spinning sender holds the GIL the reader thread needs, and the
        # round trips would measure this process rather than the pipe.
        if (left := due - time.perf_counter()) > 0:
            time.sleep(left)
        proc.stdin.write(_message(n, time.perf_counter_ns()))
    reader.join(60)
    proc.stdin.close()
    proc.wait(60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rtts, cpu


def throughput(argv: list[str], mib: int) -> float:
    """MB/s the editor reads while the agent floods ``mib`` MiB."""
    proc = subprocess.Popen([*argv, str(mib)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    fd = proc.stdout.fileno()
    total = 0
    start = time.perf_counter()
    while chunk := os.read(fd, 1 << 20):
        total += len(chunk)
    seconds = time.perf_counter() - start
    proc.wait(60)
    return total / seconds / 1e6


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000)[int(q * 1000) - 1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0, help="per latency run (default 5)")
    p.add_argument("--mib", type=int, default=256, help="flood size (default 256)")
    args = p.parse_args()
    sys.setswitchinterval(0.0002)  # the reader thread must get the GIL as soon as bytes arrive
    print("rate/s  path    messages  p50 ms  p99 ms  added/msg p50  added/msg p99  "
          "proxy CPU/msg")
    rows: list[list[object]] = []
    figures = []
    for rate in (1_000, 10_000):
        count = int(rate * args.seconds)
        direct, _ = round_trips(["cat"], rate, count)
        proxied, cpu = round_trips([*PROXY, "--", "cat"], rate, count)
        d50, d99 = _pct(direct, 0.5), _pct(direct, 0.99)
        p50, p99 = _pct(proxied, 0.5), _pct(proxied, 0.99)
        print(f"{rate:6}  direct  {len(direct):8}  {d50:6.3f}  {d99:6.3f}")
        print(f"{rate:6}  proxy   {len(proxied):8}  {p50:6.3f}  {p99:6.3f}  "
              f"{(p50 - d50) / 2:13.3f}  {(p99 - d99) / 2:13.3f}  "
              f"{cpu / (2 * count) * 1e6:10.1f} µs")
        added99 = (p99 - d99) / 2
        rows.append([f"{rate:,}/s", round((p50 - d50) / 2, 3), round(added99, 3),
                     round(cpu / (2 * count) * 1e6, 1)])
        if rate == 1_000:
            figures.append(figure("added latency per message at 1,000/s, p99", round(added99, 3),
                                  "ms", target="< 1 ms", met=added99 < 1.0))
    direct_mbs = throughput(FLOOD, args.mib)
    proxy_mbs = throughput([*PROXY, "--", *FLOOD], args.mib)
    print(f"throughput, {args.mib} MiB from the agent: direct {direct_mbs:.0f} MB/s, "
          f"through the proxy {proxy_mbs:.0f} MB/s")
    figures += [figure("throughput through the proxy", round(proxy_mbs), "MB/s",
                       target=">= 50 MB/s", met=proxy_mbs >= 50),
                figure("throughput direct (no proxy)", round(direct_mbs), "MB/s")]
    record("proxy", "Proxy", figures,
           table={"columns": ["rate", "added per message, p50 (ms)",
                              "added per message, p99 (ms)", "proxy CPU per message (µs)"],
                  "rows": rows},
           parameters={"seconds": args.seconds, "mib": args.mib})
    return 0


if __name__ == "__main__":
    sys.exit(main())
