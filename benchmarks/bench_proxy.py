"""What ``acp-model proxy`` costs on the wire (``python benchmarks/bench_proxy.py``).

* **Latency**: an editor writes ACP messages at a fixed rate (1,000 and 10,000 per second) to
  an agent that echoes every byte back (``cat``); each message carries its send time, and the
  round trip is measured direct and through the proxy. A round trip crosses the proxy twice
  (editor -> agent, agent -> editor), so the added latency per message is half the added round
  trip; p50 and p99 are printed for both. Target (issue 51): p99 added per message < 0.5 ms at
  1,000/s.
* **Throughput**: an agent writes 256 MiB of ndjson as fast as it can; MB/s read by the editor
  direct and through the proxy, from the first byte to the end of the agent's output (the time
  to the first byte, the proxy's start-up, is its own figure). ``--pairs`` runs each take the
  two back to back, so both sides of a pair share the machine's load; the figure is the ratio
  through/direct of the median pair. Target: at least half of direct.
* **CPU** per message forwarded in the latency runs: forwarding as the proxy accounts it (the
  relay's thread, which moves both directions and feeds the judge); the proxy process as the
  scheduler accounts it (all its threads, ``/proc/PID/task/*/schedstat``, from the first timed
  message to the last, start-up excluded), and the judge process likewise; and the whole process
  tree's user + system time (start-ups, the agent and both ends included). CPU time, unlike the
  latency, means something on a loaded machine.

Every message is judged by the oracle in the proxy's judge process (these are not valid ACP
traffic, so the judge has violations to report, which it does once per rule): the figures
include it, and show that it stays off the forwarding path. A missed target prints where the
CPU of the run went (forwarding, judging, the rest of the process tree) and the machine's load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import resource
import signal
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


def _task_cpu(pid: int) -> int:
    """Nanoseconds on a CPU of every thread of ``pid`` so far (the scheduler's own account,
    ``/proc/PID/task/*/schedstat``: exact, unlike the clock ticks of ``/proc/PID/stat``)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(task.read_text().split()[0])
    return total


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(stat.parent.name))
    return kids


def steady_cpu(pid: int) -> dict[str, int]:
    """CPU nanoseconds so far of the proxy process (``pid``: all its threads), its judge and
    the agent; read before and after the timed messages, the difference is what forwarding
    them cost each process, without the start-ups (Linux only: empty elsewhere)."""
    if not Path(f"/proc/{pid}/task").is_dir():
        return {}
    cpu = {"proxy": _task_cpu(pid), "judge": 0, "agent": 0}
    for kid in _children(pid):
        try:
            judge = b"acp_model.proxy.judge" in Path(f"/proc/{kid}/cmdline").read_bytes()
        except OSError:
            continue
        cpu["judge" if judge else "agent"] += _task_cpu(kid)
    return cpu


def settled(pid: int, limit: float = 30.0) -> dict[str, int]:
    """:func:`steady_cpu` once the judge has stopped working (its CPU did not grow for 50 ms:
    its start-up, or the batches it was still judging, are over), or after ``limit`` s."""
    last, deadline = steady_cpu(pid), time.monotonic() + limit
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = steady_cpu(pid)
        if now.get("judge") == last.get("judge"):
            return now
        last = now
    return last


def round_trips(argv: list[str], rate: int, count: int
                ) -> tuple[list[float], float, dict[str, float]]:
    """Round-trip times (ms) of ``count`` messages sent at ``rate``/s; the CPU seconds the
    spawned process tree used (all of it: start-ups too); and the CPU seconds each process of
    the proxy spent on the timed messages alone (:func:`steady_cpu`)."""
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
    cpu0 = settled(proc.pid)  # the judge's start-up is not the messages' cost
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
    cpu1 = settled(proc.pid)
    steady = {k: (cpu1[k] - cpu0.get(k, 0)) / 1e9 for k in cpu1}
    proc.stdin.close()
    proc.wait(60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rtts, cpu, steady


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


def _ping_pong(proc: subprocess.Popen[bytes], count: int) -> None:
    """``count`` messages, each sent once the last came back, at most 1,000 a second."""
    assert proc.stdin is not None and proc.stdout is not None
    for n in range(count):
        proc.stdin.write(_message(n, 0))
        got = b""
        while not got.endswith(b"\n"):
            got += os.read(proc.stdout.fileno(), 1 << 16)
        time.sleep(0.001)


def _proxied(argv: list[str], warm: bool = True) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([*argv, *PROXY, "--", "cat"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    if warm:
        _ping_pong(proc, 1)
    return proc


def _finish(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    proc.stdout.read()
    proc.wait(120)


def instructions(count: int) -> float:
    """User-mode instructions of the proxy process per message crossing (callgrind: exact and
    independent of the machine's load; the kernel's share is not in it): a session of
    ``count`` round trips less an empty one, the judge and the agent not counted."""
    totals = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (0, count):
            out = Path(tmp) / f"callgrind.{n}"
            proc = _proxied(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"],
                            warm=False)
            _ping_pong(proc, n)
            _finish(proc)
            totals.append(next(int(line.split()[1]) for line in out.read_text().splitlines()
                               if line.startswith(("summary:", "totals:"))))
    return (totals[1] - totals[0]) / (2 * count)


def system_calls(count: int) -> dict[str, float]:
    """System calls of the proxy process (all its threads) per message crossing, counted by
    ``strace -c`` attached once the session is up."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "strace"
        proc = _proxied([])
        settled(proc.pid)
        tracer = subprocess.Popen(["strace", "-f", "-c", "-o", str(out), "-p", str(proc.pid)],
                                  stderr=subprocess.PIPE, text=True)
        assert tracer.stderr is not None
        while "attached" not in tracer.stderr.readline():  # the tracer is in place
            pass
        _ping_pong(proc, count)
        tracer.send_signal(signal.SIGINT)
        tracer.wait(60)
        _finish(proc)
        calls = {}
        for line in out.read_text().splitlines():
            cells = line.split()
            if len(cells) >= 5 and cells[3].isdigit() and cells[-1] != "total":
                calls[cells[-1]] = int(cells[3]) / (2 * count)
    return dict(sorted(calls.items(), key=lambda kv: -kv[1]))


def counts(count: int) -> int:
    """``--counts``: what a message costs the proxy process, in figures the load does not
    move; for paired before/after runs (run with ``PYTHONPATH`` at the other checkout)."""
    print(f"{count} round trips, ping-pong, at most 1,000/s; per message crossing:")
    calls = system_calls(count)
    print(f"system calls {sum(calls.values()):.2f}: "
          + ", ".join(f"{name} {n:.2f}" for name, n in calls.items() if n >= 0.01))
    print(f"user-mode instructions (callgrind) {instructions(count):,.0f}")
    return 0


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
    p.add_argument("--pairs", type=int, default=3,
                   help="throughput runs, each direct then through the proxy (default 3)")
    p.add_argument("--counts", type=int, metavar="N",
                   help="print only the instructions and system calls per message crossing "
                        "of N round trips (callgrind and strace; nothing recorded)")
    args = p.parse_args()
    if args.counts:
        return counts(args.counts)
    sys.setswitchinterval(0.0002)  # the reader thread must get the GIL as soon as bytes arrive
    print("rate/s  path    messages  p50 ms  p99 ms  added/msg p50  added/msg p99  "
          "forwarding CPU/msg  proxy CPU/msg  judge CPU/msg  tree CPU/msg")
    rows: list[list[object]] = []
    figures = []
    misses: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        for rate in (1_000, 10_000):
            count = int(rate * args.seconds)
            direct, _, _ = round_trips(["cat"], rate, count)
            proxied, cpu, steady = round_trips([*PROXY, "--report", str(report), "--", "cat"],
                                               rate, count)
            own = proxied_cpu(report)
            per = 1e6 / (2 * count)  # µs per message crossing (each message crosses twice)
            fwd, tree = own["forwarding"] * per, cpu * per
            proxy_cpu = steady.get("proxy", math.nan) * per
            judge = steady.get("judge", own["judge"]) * per
            d50, d99 = _pct(direct, 0.5), _pct(direct, 0.99)
            p50, p99 = _pct(proxied, 0.5), _pct(proxied, 0.99)
            added50, added99 = (p50 - d50) / 2, (p99 - d99) / 2
            print(f"{rate:6}  direct  {len(direct):8}  {d50:6.3f}  {d99:6.3f}")
            print(f"{rate:6}  proxy   {len(proxied):8}  {p50:6.3f}  {p99:6.3f}  "
                  f"{added50:13.3f}  {added99:13.3f}  {fwd:15.1f} µs  {proxy_cpu:10.1f} µs  "
                  f"{judge:10.1f} µs  {tree:9.1f} µs")
            rows.append([f"{rate:,}/s", round(added50, 3), round(added99, 3), round(fwd, 1),
                         round(proxy_cpu, 1), round(judge, 1), round(tree, 1)])
            if rate == 1_000:
                met = added99 < LATENCY_TARGET
                figures += [
                    figure("added latency per message at 1,000/s, p99", round(added99, 3),
                           "ms", target=f"< {LATENCY_TARGET} ms", met=met),
                    figure("forwarding CPU per message at 1,000/s", round(fwd, 1), "µs"),
                    figure("proxy process CPU per message at 1,000/s", round(proxy_cpu, 1),
                           "µs")]
                if not met:
                    misses.append(_where(f"latency at {rate:,}/s", fwd, proxy_cpu, judge, tree))
        runs = []
        for _ in range(args.pairs):  # back to back: the two sides of a pair share the load
            direct_mbs, direct_start = throughput(FLOOD, args.mib)
            proxy_mbs, proxy_start = throughput(
                [*PROXY, "--report", str(report), "--", *FLOOD], args.mib)
            own = proxied_cpu(report)
            runs.append((proxy_mbs / direct_mbs, direct_mbs, proxy_mbs, proxy_start, own))
            print(f"throughput, {args.mib} MiB from the agent: direct {direct_mbs:.0f} MB/s, "
                  f"through the proxy {proxy_mbs:.0f} MB/s, {proxy_mbs / direct_mbs:.2f} of "
                  f"direct (first byte after {direct_start:.2f} s direct, {proxy_start:.2f} s "
                  f"through the proxy); forwarding CPU {own['forwarding']:.2f} s, judging "
                  f"{own['judge']:.2f} s")
    ratio, direct_mbs, proxy_mbs, proxy_start, own = sorted(runs, key=lambda r: r[0])[
        len(runs) // 2]  # the median pair
    met = ratio >= 0.5
    figures += [figure("throughput through the proxy, of direct (median pair)",
                       round(ratio, 2), "", target=">= 0.5", met=met),
                figure("throughput through the proxy", round(proxy_mbs), "MB/s"),
                figure("throughput direct (no proxy)", round(direct_mbs), "MB/s"),
                figure("time to the first byte through the proxy (start-up)",
                       round(proxy_start, 2), "s")]
    if not met:
        mib = args.mib * (1 << 20) / 1e6
        misses.append(f"throughput: forwarding took {own['forwarding']:.2f} s of CPU for "
                      f"{mib:.0f} MB ({mib / max(own['forwarding'], 1e-9):.0f} MB per CPU "
                      f"second), judging {own['judge']:.2f} s; load {os.getloadavg()[0]:.2f}")
    notes = _notes(misses)
    record("proxy", "Proxy", figures,
           table={"columns": ["rate", "added per message, p50 (ms)",
                              "added per message, p99 (ms)", "forwarding CPU per message (µs)",
                              "proxy process CPU per message (µs)",
                              "judge CPU per message (µs)", "process tree CPU per message (µs)"],
                  "rows": rows},
           parameters={"seconds": args.seconds, "mib": args.mib, "pairs": args.pairs},
           notes="\n".join(notes))
    return 0


def _notes(misses: list[str]) -> list[str]:
    """The result file's notes, printed too: each missed target, and a loaded machine."""
    notes = [f"Target missed, {m}" for m in misses]
    if (load := os.getloadavg()[0]) > (os.cpu_count() or 1):
        notes.append(f"Taken on a loaded machine (load {load:.1f} on {os.cpu_count()} cores): "
                     "the latencies and MB/s are the load's as much as the proxy's; the CPU "
                     "per message holds better, and --counts (instructions and system calls "
                     "per message crossing) is not moved by it.")
    for note in notes:
        print(note)
    return notes


def _where(what: str, fwd: float, proxy_cpu: float, judge: float, tree: float) -> str:
    """Where the CPU of a latency run went, per message crossing (the proxy's profile)."""
    return (f"{what}: per message crossing, forwarding {fwd:.1f} µs (the proxy process "
            f"{proxy_cpu:.1f} µs), judging {judge:.1f} µs, the rest of the process tree "
            f"(start-ups, the agent, the editor's pipe) {tree - proxy_cpu - judge:.1f} µs; "
            f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
