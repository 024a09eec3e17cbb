"""What ``acp-model proxy`` costs on the wire (``python benchmarks/bench_proxy.py``).

* **Latency**: an editor writes ACP messages at a fixed rate (1,000 and 10,000 per second) to
  an agent that echoes every byte back (``cat``); each message carries its send time, and the
  round trip is measured direct and through the proxy. A round trip crosses the proxy twice
  (editor -> agent, agent -> editor), so the added latency per message is half the added round
  trip; p50 and p99 are printed for both. Target (issue 51): p99 added per message < 0.5 ms at
  1,000/s.
* **Throughput**: an agent writes 256 MiB of ndjson as fast as it can; MB/s read by the editor
  direct and through the proxy, from the first byte to the end of the agent's output (the time
  to the first byte, the proxy's start-up, is its own figure). Target: at least half of direct.
* **CPU** per message forwarded in the latency runs, from the proxy's report: forwarding (the
  relay's thread, which moves both directions and feeds the judge) and judging (the judge
  process, after its start-up); and the whole process tree's user + system time (start-ups,
  the agent and both ends included).

Every message is judged by the oracle in the proxy's judge process (these are not valid ACP
traffic, so the judge has violations to report, which it does once per rule): the figures
include it, and show that it stays off the forwarding path. A missed target prints where the
CPU of the run went (forwarding, judging, the rest of the process tree) and the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results import figure, record  # noqa: E402

PROXY = [sys.executable, "-m", "acp_model", "proxy", "--quiet"]
LATENCY_TARGET = 0.5  # ms added per message at p99, 1,000 messages/s
FLOOD = [sys.executable, str(ROOT / "tests" / "proxy" / "byte_agent.py"), "--flood"]


def _message(n: int, sent_ns: int) -> bytes:
    return (b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
            b'{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text",'
            b'"text":"' + f"{n} {sent_ns}".encode() + b'"}}}}\n')


def round_trips(argv: list[str], rate: int, count: int) -> tuple[list[float], float]:
    """Round-trip times (ms) of ``count`` messages sent at ``rate``/s; and the CPU seconds the
    spawned process tree used (all of it: start-ups too)."""
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


def throughput(argv: list[str], mib: int) -> tuple[float, float]:
    """MB/s the editor reads while the agent floods ``mib`` MiB, from the first byte to the
    end of the output; and the seconds to the first byte (start-up)."""
    proc = subprocess.Popen([*argv, str(mib)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    fd = proc.stdout.fileno()
    started = time.perf_counter()
    total = len(os.read(fd, 1 << 20))
    first = time.perf_counter()
    while chunk := os.read(fd, 1 << 20):
        total += len(chunk)
    seconds = time.perf_counter() - first
    proc.wait(120)
    return total / seconds / 1e6, first - started


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000)[int(q * 1000) - 1]


def proxied_cpu(report: Path) -> dict[str, float]:
    """The proxy's own accounting: forwarding and judging CPU seconds (``proxy.cpu_seconds``)."""
    return json.loads(report.read_text())["proxy"]["cpu_seconds"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0, help="per latency run (default 5)")
    p.add_argument("--mib", type=int, default=256, help="flood size (default 256)")
    args = p.parse_args()
    sys.setswitchinterval(0.0002)  # the reader thread must get the GIL as soon as bytes arrive
    print("rate/s  path    messages  p50 ms  p99 ms  added/msg p50  added/msg p99  "
          "forwarding CPU/msg  judging CPU/msg  tree CPU/msg")
    rows: list[list[object]] = []
    figures = []
    misses: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        for rate in (1_000, 10_000):
            count = int(rate * args.seconds)
            direct, _ = round_trips(["cat"], rate, count)
            proxied, cpu = round_trips([*PROXY, "--report", str(report), "--", "cat"], rate,
                                       count)
            own = proxied_cpu(report)
            crossings = 2 * count  # each message crosses the proxy twice
            fwd, judge, tree = (own["forwarding"] / crossings * 1e6,
                                own["judge"] / crossings * 1e6, cpu / crossings * 1e6)
            d50, d99 = _pct(direct, 0.5), _pct(direct, 0.99)
            p50, p99 = _pct(proxied, 0.5), _pct(proxied, 0.99)
            added50, added99 = (p50 - d50) / 2, (p99 - d99) / 2
            print(f"{rate:6}  direct  {len(direct):8}  {d50:6.3f}  {d99:6.3f}")
            print(f"{rate:6}  proxy   {len(proxied):8}  {p50:6.3f}  {p99:6.3f}  "
                  f"{added50:13.3f}  {added99:13.3f}  {fwd:15.1f} µs  {judge:12.1f} µs  "
                  f"{tree:9.1f} µs")
            rows.append([f"{rate:,}/s", round(added50, 3), round(added99, 3), round(fwd, 1),
                         round(judge, 1), round(tree, 1)])
            if rate == 1_000:
                met = added99 < LATENCY_TARGET
                figures.append(figure("added latency per message at 1,000/s, p99",
                                      round(added99, 3), "ms", target=f"< {LATENCY_TARGET} ms",
                                      met=met))
                figures.append(figure("forwarding CPU per message at 1,000/s", round(fwd, 1),
                                      "µs"))
                if not met:
                    misses.append(_where(f"latency at {rate:,}/s", fwd, judge, tree))
        direct_mbs, direct_start = throughput(FLOOD, args.mib)
        proxy_mbs, proxy_start = throughput([*PROXY, "--report", str(report), "--", *FLOOD],
                                            args.mib)
        own = proxied_cpu(report)
    print(f"throughput, {args.mib} MiB from the agent: direct {direct_mbs:.0f} MB/s, "
          f"through the proxy {proxy_mbs:.0f} MB/s (first byte after {direct_start:.2f} s "
          f"direct, {proxy_start:.2f} s through the proxy); forwarding CPU "
          f"{own['forwarding']:.2f} s, judging {own['judge']:.2f} s")
    met = proxy_mbs >= direct_mbs / 2
    figures += [figure("throughput through the proxy", round(proxy_mbs), "MB/s",
                       target=f">= half of direct ({direct_mbs / 2:.0f} MB/s)", met=met),
                figure("throughput direct (no proxy)", round(direct_mbs), "MB/s"),
                figure("time to the first byte through the proxy (start-up)",
                       round(proxy_start, 2), "s")]
    if not met:
        mib = args.mib * (1 << 20) / 1e6
        misses.append(f"throughput: forwarding took {own['forwarding']:.2f} s of CPU for "
                      f"{mib:.0f} MB ({mib / max(own['forwarding'], 1e-9):.0f} MB per CPU "
                      f"second), judging {own['judge']:.2f} s; load {os.getloadavg()[0]:.2f}")
    for miss in misses:
        print(f"target missed, {miss}")
    record("proxy", "Proxy", figures,
           table={"columns": ["rate", "added per message, p50 (ms)",
                              "added per message, p99 (ms)", "forwarding CPU per message (µs)",
                              "judging CPU per message (µs)", "process tree CPU per message (µs)"],
                  "rows": rows},
           parameters={"seconds": args.seconds, "mib": args.mib},
           notes="\n".join(f"Target missed, {m}" for m in misses))
    return 0


def _where(what: str, fwd: float, judge: float, tree: float) -> str:
    """Where the CPU of a latency run went, per message crossing (the proxy's profile)."""
    return (f"{what}: per message crossing, forwarding {fwd:.1f} µs, judging {judge:.1f} µs, "
            f"the rest of the process tree (start-ups, the agent, the editor's pipe) "
            f"{tree - fwd - judge:.1f} µs; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
