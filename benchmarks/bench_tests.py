"""How long the test tiers take (``python -m benchmarks.bench_tests [--tier fast live ...]``).

Runs each chosen tier the way the Makefile does (``--dist worksteal``; two xdist workers for
the computing fast tier, four where agents are waited on, as ``make test`` runs) and
records its wall time, pytest's own time and its counts into ``benchmarks/results/tests.json``,
one row per tier (a later run of a tier replaces its row; the others stay). Each row states
the date, the commit and the load average when it started: on a shared
machine a figure is only as good as that load. Tiers: ``fast`` (tests/unit + tests/oracle, what
``make test-fast`` runs), ``live``, ``external``, ``sweep`` (the whole rule sweep over
tests/oracle, serial) and ``all`` (every tier in one session, what ``make test`` runs).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import results

ROOT = Path(__file__).resolve().parents[1]
RESULTS = results.RESULTS / "tests.json"
FAST = ["-m", "not slow and not external"]
XDIST = ["-n", "2", "--dist", "worksteal"]  # make test-fast
XDIST_WAITING = ["-n", "4", "--dist", "worksteal"]  # make test
TIERS: dict[str, list[str]] = {
    "fast": [*XDIST, *FAST, "tests/unit", "tests/oracle"],
    "live": [*XDIST_WAITING, "tests/live"],
    "external": [*XDIST_WAITING, "tests/external"],
    "sweep": ["-p", "no:xdist", *FAST, "--rule-sweep=all",
              "--rule-sweep-report=.rule-sweep.json", "tests/oracle"],
    "all": [*XDIST_WAITING],
}
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed)")
PYTEST_TIME = re.compile(r" in ([\d.]+)s")


def run_tier(name: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TIERS[name]]
    load = os.getloadavg()
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    tail = [line for line in proc.stdout.splitlines() if line.strip()][-1:] or [""]
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
              for n, kind in SUMMARY.findall(tail[0])}
    seconds = PYTEST_TIME.search(tail[0])
    entry: dict[str, Any] = {
        "command": "pytest " + " ".join(argv[3:]),
        "exit_code": proc.returncode,
        "wall_s": round(wall, 1),
        "pytest_s": float(seconds.group(1)) if seconds else None,
        "counts": counts,
        "loadavg_at_start": [round(x, 2) for x in load],
    }
    if name == "sweep" and (ROOT / ".rule-sweep.json").exists():
        sweep = json.loads((ROOT / ".rule-sweep.json").read_text())
        entry["tests_per_rule"] = {r: len(t) for r, t in sweep["tests_per_rule"].items()}
        entry["rules_without_a_test"] = sweep["without_a_test"]
        entry["reruns"] = sweep["reruns"]
    return entry


TARGETS = {"fast": 60.0, "all": 360.0}  # seconds of pytest (issue 42)
COLUMNS = ["tier", "pytest s", "wall s", "counts", "exit", "load at start", "commit", "date"]


def _row(name: str, entry: dict[str, Any], note: str) -> list[Any]:
    counts = ", ".join(f"{n} {k}" for k, n in sorted(entry["counts"].items()))
    load = " ".join(str(x) for x in entry["loadavg_at_start"])
    return [name, entry["pytest_s"], entry["wall_s"], counts, entry["exit_code"],
            load + (f" ({note})" if note else ""), results.commit(),
            dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tier", nargs="+", choices=sorted(TIERS), default=["fast"])
    parser.add_argument("--note", default="", help="what else ran on the machine, say so")
    args = parser.parse_args(argv)
    rows: dict[str, list[Any]] = {}
    if RESULTS.exists():  # a later run of a tier replaces its row; the others stay
        old = json.loads(RESULTS.read_text(encoding="utf-8"))
        rows = {row[0]: row for row in old.get("table", {}).get("rows", [])}
    extra: dict[str, Any] = {}
    for name in args.tier:
        print(f"running tier {name} ...", flush=True)
        entry = run_tier(name)
        rows[name] = _row(name, entry, args.note)
        extra.update({k: entry[k] for k in ("tests_per_rule", "rules_without_a_test")
                      if k in entry})
        print(f"  {name}: {entry['wall_s']} s wall, pytest {entry['pytest_s']} s, "
              f"{entry['counts']}, exit {entry['exit_code']}, load {entry['loadavg_at_start']}")
    figures = [results.figure(f"{tier} tier, pytest", rows[tier][1], "s",
                              target=f"< {limit:g} s",
                              met=rows[tier][1] is not None and rows[tier][1] < limit)
               for tier, limit in TARGETS.items() if tier in rows]
    notes = ""
    if extra.get("rules_without_a_test") is not None:
        notes = (f"Rule sweep: {len(extra.get('tests_per_rule', {}))} rules swept, rules no "
                 f"test needed: {', '.join(extra['rules_without_a_test']) or 'none'}.")
    workers = {t: int(TIERS[t][1]) for t in rows if TIERS[t][0] == "-n"}
    results.record("tests", "The test suite's tiers", figures,
                   table={"columns": COLUMNS, "rows": [rows[t] for t in TIERS if t in rows]},
                   parameters={"workers": workers, "dist": "worksteal"}, notes=notes,
                   command="python benchmarks/bench_tests.py --tier " + " ".join(args.tier))
    return 0


if __name__ == "__main__":
    sys.exit(main())
