"""What holding the agent's wall clock costs (``python benchmarks/bench_clock.py``).

A held replay runs the agent under libfaketime reading its clock offset from a file on every
wall-clock read (``acp_model/fuzzing/clock.py``: ``FAKETIME_NO_CACHE=1``, so a move applies
at once). Measured here, each on the real clock and under the replay's settings (the offset
file, monotonic clocks left real), with libfaketime's own 1-second cache beside them for
comparison:

* ns per ``Date.now()`` in node and per ``time.time()`` in Python (a tight loop);
* ns per ``performance.now()`` in node (monotonic: it must stay as cheap);
* a node agent's start-up: ``node gemini.js --version`` of the installed gemini-cli (the whole
  bundle loaded, its stats and clock reads under libfaketime), median of ``--runs``; skipped
  when gemini-cli is not installed (``acp-model agents install gemini-cli``).

Figures go to ``benchmarks/results/clock.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.fuzzing.clock import SETTINGS, library
from benchmarks.results import figure, locked, record

LOOP = 200_000
NODE = f"""
let x = 0, t = process.hrtime.bigint();
for (let i = 0; i < {LOOP}; i++) x += Date.now();
const wall = Number(process.hrtime.bigint() - t) / {LOOP};
t = process.hrtime.bigint();
for (let i = 0; i < {LOOP}; i++) x += performance.now();
const mono = Number(process.hrtime.bigint() - t) / {LOOP};
console.log(wall.toFixed(1), mono.toFixed(1));
"""
PYTHON = f"""
import time
t = time.perf_counter_ns()
for _ in range({LOOP}):
    time.time()
print(round((time.perf_counter_ns() - t) / {LOOP}, 1))
"""
GEMINI = Path.home() / ".cache/acp-model/agents/gemini-cli-0.61.0/node_modules/@google/" \
    "gemini-cli/bundle/gemini.js"


def _envs(offset_file: Path) -> dict[str, dict[str, str]]:
    lib = library()
    assert lib is not None, "libfaketime is not installed (tests/services/setup.sh)"
    held = {**os.environ, "LD_PRELOAD": str(lib), "FAKETIME_TIMESTAMP_FILE": str(offset_file),
            **SETTINGS}
    cached = {k: v for k, v in held.items() if k != "FAKETIME_NO_CACHE"}
    return {"real clock": dict(os.environ), "held (no cache)": held,
            "libfaketime cache 1 s": {**cached, "FAKETIME_CACHE_DURATION": "1"}}


def _run(argv: list[str], env: dict[str, str]) -> str:
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=True,
                          timeout=120).stdout.strip()


def _startup(env: dict[str, str], runs: int) -> float:
    took = []
    for _ in range(runs):
        started = time.perf_counter()
        _run(["node", str(GEMINI), "--version"], env)
        took.append(time.perf_counter() - started)
    return statistics.median(took)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="start-ups per setting")
    parser.add_argument("--lock", help="hold flock LOCK while measuring")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, locked(args.lock):
        offset = Path(tmp) / "offset"
        offset.write_text("-3600.5\n", encoding="ascii")
        for name, env in _envs(offset).items():
            wall, mono = (float(x) for x in _run(["node", "-e", NODE], env).split())
            py = float(_run([sys.executable, "-c", PYTHON], env))
            start = _startup(env, args.runs) if GEMINI.is_file() else None
            rows.append([name, wall, mono, py, None if start is None else round(start, 3)])
            print(f"{name:24} Date.now {wall:7.1f} ns  performance.now {mono:6.1f} ns  "
                  f"time.time {py:7.1f} ns  gemini --version "
                  + ("-" if start is None else f"{start:.3f} s"))
    real, held = rows[0], rows[1]
    figures = [figure("Date.now under the held clock", held[1], "ns"),
               figure("Date.now on the real clock", real[1], "ns"),
               figure("performance.now under the held clock", held[2], "ns")]
    if real[4] is not None and held[4] is not None:
        figures.append(figure("gemini-cli start-up added by the held clock",
                              round(held[4] - real[4], 3), "s"))
    path = record("clock", "What holding the agent's wall clock costs", figures,
                  table={"columns": ["setting", "Date.now ns", "performance.now ns",
                                     "time.time ns", "gemini --version s"], "rows": rows},
                  parameters={"loop": LOOP, "runs": args.runs})
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
