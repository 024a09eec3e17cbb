"""How long the test tiers take (``python benchmarks/bench_tests.py [--tier fast live ...]``).

Runs each chosen tier the way the Makefile does (two xdist workers, ``--dist worksteal``) and
records its wall time, pytest's own time and its counts into ``benchmarks/results/tests.json``,
one entry per tier (a later run of a tier replaces its entry; the others stay). Each entry
states the machine, the date, the commit and the load average when it started: on a shared
machine a figure is only as good as that load. Tiers: ``fast`` (tests/unit + tests/oracle, what
``make test-fast`` runs), ``live``, ``external``, ``sweep`` (the whole rule sweep over
tests/oracle, serial) and ``all`` (every tier in one session, what ``make test`` runs).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "tests.json"
FAST = ["-m", "not slow and not external"]
XDIST = ["-n", "2", "--dist", "worksteal"]
TIERS: dict[str, list[str]] = {
    "fast": [*XDIST, *FAST, "tests/unit", "tests/oracle"],
    "live": [*XDIST, "tests/live"],
    "external": [*XDIST, "tests/external"],
    "sweep": ["-p", "no:xdist", *FAST, "--rule-sweep=all",
              "--rule-sweep-report=.rule-sweep.json", "tests/oracle"],
    "all": [*XDIST],
}
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed)")
PYTEST_TIME = re.compile(r" in ([\d.]+)s")


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        model = next((line.split(":", 1)[1].strip()
                      for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), "")
    return {"cpus": os.cpu_count(), "cpu": model or platform.processor(),
            "python": platform.python_version(), "system": platform.platform()}


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                         capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return out.stdout.strip() + ("+dirty" if dirty else "")


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tier", nargs="+", choices=sorted(TIERS), default=["fast"])
    parser.add_argument("--note", default="", help="what else ran on the machine, say so")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    if RESULTS.exists():
        results = json.loads(RESULTS.read_text())
    results.setdefault("tiers", {})
    for name in args.tier:
        print(f"running tier {name} ...", flush=True)
        entry = run_tier(name)
        entry.update(date=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                     commit=commit(), machine=machine(), note=args.note)
        results["tiers"][name] = entry
        print(f"  {name}: {entry['wall_s']} s wall, pytest {entry['pytest_s']} s, "
              f"{entry['counts']}, exit {entry['exit_code']}, load {entry['loadavg_at_start']}")
    results["target"] = {"make test pytest on 2 cores": "<= 360 s",
                         "make test-fast pytest": "< 60 s"}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
