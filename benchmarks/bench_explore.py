"""Exploration time and graph size for 1, 2 and 3 sessions (plain script, prints a table).

    .venv/bin/python benchmarks/bench_explore.py          # default rows
    .venv/bin/python benchmarks/bench_explore.py --full   # plus the larger bounds

Rows that take under 2 s are run ``--repeat`` times (after one warm-up run) and print the
median, so one noisy run on a shared machine does not decide the figure.

Targets: 1 session < 2 s (issue 40), 2 sessions < 30 s with the default bounds. Each target
is printed with whether it is met; a missed one is followed by the top of a profile of that
run (``--profile-top``), which says where the rest of the time goes. Two and three sessions
use the lean alphabet, three also strict readings; the table prints the bounds and readings
each row used.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.explorer import Bounds, ExplorationTooLarge, check_properties, explore
from acp_model.spec.readings import DEFAULT
from benchmarks.results import figure, record

TARGETS = {"1 session, defaults": 2.0, "2 sessions, defaults": 30.0}
STRICT = DEFAULT.parse(["A-03=diagram", "A-07=forbid"])


def rows(full: bool) -> list[tuple[str, Bounds, object]]:
    out = [
        ("1 session, defaults", Bounds.default(1), DEFAULT),
        ("2 sessions, defaults", Bounds.default(2), DEFAULT),
        ("3 sessions, defaults", Bounds.default(3), STRICT),
    ]
    if full:
        out += [
            ("1 session, 2 prompts", Bounds.default(1, max_prompts=2), DEFAULT),
            ("1 session, 1 tool call", Bounds.default(1, max_tools=1), DEFAULT),
            ("2 sessions, full alphabet", Bounds.default(2, lean=False), DEFAULT),
        ]
    return out


def profile_top(bounds: Bounds, readings: Any, top: int) -> str:
    """The ``top`` functions by own time in one profiled exploration (profiling slows the run
    itself: the shares, not the seconds, are the figure)."""
    prof = cProfile.Profile()
    prof.runcall(explore, bounds=bounds, readings=readings)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime").print_stats(top)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(line for line in lines[start:] if line.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also the larger bounds")
    parser.add_argument("--repeat", type=int, default=5,
                        help="runs of each row that takes under 2 s; the median is printed "
                             "(default: 5)")
    parser.add_argument("--profile-top", type=int, default=15,
                        help="functions of the profile printed for a missed target (default: "
                             "15; 0: none)")
    args = parser.parse_args()
    header = (f"{'run':24} {'states':>8} {'transitions':>12} {'refused':>9} {'explore s':>10} "
              f"{'props s':>8}  props  bounds / readings")
    print(header)
    print("-" * len(header))
    table: list[list[Any]] = []
    figures: list[dict[str, Any]] = []
    missed: list[tuple[str, Bounds, Any]] = []
    explore(bounds=Bounds.default(1), readings=DEFAULT)  # warm-up: imports, compiled table
    for name, bounds, readings in rows(args.full):
        t0 = time.perf_counter()
        try:
            exp = explore(bounds=bounds, readings=readings)
        except ExplorationTooLarge:  # a row past the cap is a figure too, not a crash
            print(f"{name:24} {'> cap':>8} {'':>12} {'':>9} {time.perf_counter() - t0:>10.2f} "
                  f"{'':>8}  {'':5}  {bounds.describe()}: past the explorer's state cap",
                  flush=True)
            table.append([name, "past the cap", "", "", "", bounds.describe()])
            continue
        if exp.seconds < 2:
            times = [exp.seconds] + [explore(bounds=bounds, readings=readings).seconds
                                     for _ in range(max(args.repeat, 1) - 1)]
            exp.seconds = statistics.median(times)
        t0 = time.perf_counter()
        props = check_properties(exp, limit=1)
        t_props = time.perf_counter() - t0
        marks = "".join(p.id if p.holds else p.id.upper() for p in props)
        changed = ", ".join(f"{k}={v}" for k, v in readings.changed().items()) or "defaults"
        print(f"{name:24} {exp.nodes:>8} {len(exp.edges):>12} {len(exp.refusals):>9} "
              f"{exp.seconds:>10.2f} {t_props:>8.2f}  {marks:5}  {bounds.describe()}; "
              f"readings {changed}", flush=True)
        table.append([name, exp.nodes, len(exp.edges), round(exp.seconds, 2), marks,
                      f"{bounds.describe()}; readings {changed}"])
        target = TARGETS.get(name)
        if target is not None:
            figures.append(figure(f"{name}: exploration", round(exp.seconds, 2), "s",
                                  target=f"< {target:g} s", met=exp.seconds < target))
            if exp.seconds >= target:
                missed.append((name, bounds, readings))
    print("props: lower-case letter = property holds, upper-case = fails")
    print()
    for f in figures:
        print(f"target {f['name']}: {f['value']:.2f} s, target {f['target']}: "
              f"{'met' if f['met'] else 'MISSED'}")
    profiles = {}
    for name, bounds, readings in missed if args.profile_top > 0 else []:
        profiles[name] = profile_top(bounds, readings, args.profile_top)
        print(f"\nwhere the time of {name!r} goes (cProfile, top {args.profile_top} by own "
              f"time):\n{profiles[name]}")
    record("explore", "Exploration", figures,
           table={"columns": ["run", "states", "transitions", "explore s", "properties",
                              "bounds / readings"], "rows": table},
           parameters={"full": args.full, "repeat": args.repeat},
           notes="properties: a lower-case letter holds, an upper-case one fails"
           + "".join(f"\n\nWhere the time of {k!r} goes (cProfile, top by own time):\n\n"
                     f"```text\n{v}\n```" for k, v in profiles.items()))


if __name__ == "__main__":
    main()
