"""Do the profiles' tool hints still matter? Every runnable profiled agent fuzzed with its
``[tools] prefer`` hints and without them (``--no-tool-hints``), each run ending once a
permission request was reached or its budget is spent.

Run: ``python benchmarks/bench_tool_hints.py [--seconds 90] [--seed 5] [--lock PATH]
[AGENT ...]`` (install the agents first: ``make agents-all``). Writes
``benchmarks/results/tool-hints.json``: per agent, the permission requests each run reached,
when it first reached one, and whether the hintless run reaches them wherever the profiled run
does (the target). An agent without hints is run once: its profiled run is the hintless one.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.fuzzing.artifacts import fuzz_report
from acp_model.fuzzing.backend import backend, profile_config
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.run import run_fuzz
from acp_model.profiles import PROFILES, get
from benchmarks.results import figure, locked, record

PERMISSION = frozenset(f"{state}:permission_request"
                       for state in ("unreported", "running", "requires_action", "idle"))


def fuzz(name: str, seconds: float, seed: int, hints: bool, lock: str | None) -> dict[str, Any]:
    """One run of ``name`` that stops once a permission request was reached: what it
    reached, and when."""
    profile = get(name)
    protocol = profile.protocols[0]
    cfg = profile_config(FuzzConfig(["true"], seed=seed, time_budget=seconds,
                                    max_examples=100_000, spec="auto", protocol=protocol,
                                    replay_runs=1, minimize_budget=2.0,
                                    stop_when_reached=(PERMISSION,)), profile, protocol)
    cfg = dataclasses.replace(cfg, tool_hints=hints)
    with locked(lock):
        start = time.monotonic()
        with backend(cfg, profile) as running:
            result = run_fuzz(running)
        took = time.monotonic() - start
    report = fuzz_report(result)
    seen = report["coverage"]["first_seen"]
    firsts = [seen[k] for k in PERMISSION if k in seen]
    return {"permission_requests": report["reach"]["permission_requests"],
            "first_s": round(min(firsts), 1) if firsts else None,
            "examples": report["summary"]["examples"], "seconds": round(took, 1),
            "unusable": result.unusable}


def cell(run: dict[str, Any] | None) -> str:
    if run is None:
        return "(same run)"
    if run["unusable"]:
        return f"unusable: {run['unusable']}"[:80]
    if not run["permission_requests"]:
        return f"none in {run['seconds']:g} s ({run['examples']} examples)"
    return f"{run['permission_requests']} (first after {run['first_s']:g} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agents", nargs="*", help="profiles (default: every runnable, "
                        "installed one)")
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--lock", help="hold this flock for each run (a shared machine)")
    args = parser.parse_args()
    names = args.agents or sorted(n for n, p in PROFILES.items()
                                  if not p.unavailable and p.installed())
    rows, met = [], True
    for name in names:
        profile = get(name)
        hinted = fuzz(name, args.seconds, args.seed, True, args.lock) \
            if profile.prefer_tools else None
        plain = fuzz(name, args.seconds, args.seed, False, args.lock)
        reached_with = (hinted or plain)["permission_requests"] > 0
        ok = plain["permission_requests"] > 0 or not reached_with
        met = met and ok
        hints = ", ".join(profile.prefer_tools) or "none"
        rows.append([name, hints, cell(hinted), cell(plain),
                     "yes" if ok else "**no**"])
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
    record("tool-hints", "Tool hints are hints only", [
        figure("agents whose hintless run reaches permission requests wherever the profiled "
               "run does", f"{sum(r[4] == 'yes' for r in rows)}/{len(rows)}",
               target="all", met=met)],
        table={"columns": ["agent", "hints (prefer)", "permission requests, with hints",
                           "without hints", "reached wherever the profiled run is"],
               "rows": rows},
        parameters={"seconds": args.seconds, "seed": args.seed},
        notes="Each run stops at its first permission request (or its budget): the count "
              "is what one example reached by then. gptme has no row of its own beyond its "
              "runs: its model is given no tools to call (markdown tools), so neither run "
              "reaches a permission request (its profile's never_by_design).")


if __name__ == "__main__":
    main()
