"""Exploration time and graph size for 1, 2 and 3 sessions (plain script, prints a table).

    .venv/bin/python benchmarks/bench_explore.py          # default rows
    .venv/bin/python benchmarks/bench_explore.py --full   # plus the larger bounds

Rows that take under 2 s are run ``--repeat`` times (after one warm-up run) and print the
median, so one noisy run on a shared machine does not decide the figure.

Targets: 1 session < 2 s (issue 40), 2 sessions < 30 s with the default bounds. Each target
is printed with whether it is met; a missed one is followed by what each step of the search
costs (timed unprofiled on a sample of its configurations) and the top of a profile of that
run (``--profile-top``), which say where the rest of the time goes. Two and three sessions
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


def step_costs(bounds: Bounds, readings: Any, every: int = 10) -> str:
    """What each step of the search costs per call, unprofiled (cProfile inflates the many
    small functions it is made of), timed again on every ``every``-th configuration the
    exploration expanded, and that cost times the calls the whole run makes (states or
    transitions). Sampled configurations sit warm in the cache, so the sum runs below the
    run's own CPU time; the shares are the figure."""
    from acp_model.explorer import search as s
    from acp_model.explorer.alphabet import actions, make_event
    from acp_model.explorer.config import SingleRanks, _info, single_key

    if bounds.sessions != 1:
        return "(one session only)"
    sample: list[Any] = []
    expand = s._Search._expand

    def sampled(self: Any, u: int, cfg: Any) -> None:
        if u % every == 0:
            sample.append(cfg)
        expand(self, u, cfg)

    s._Search._expand = sampled  # type: ignore[method-assign]
    try:
        t0 = time.process_time()
        exp = explore(bounds=bounds, readings=readings)
        cpu = time.process_time() - t0
    finally:
        s._Search._expand = expand  # type: ignore[method-assign]
    search = s._Search(exp.table, exp.model_cls, bounds, exp.readings, 1 << 40, exp.compact)
    states = [(c, SingleRanks.of(c, search.indices)) for c in sample]
    tried = [(c, b, a) for c, b in states for a in actions(c, bounds, b.any_unread)
             if a.session is not None and (c.models[0].state, a.event) in exp.table.transitions]
    made = [(c, b, a, *make_event(c, a)) for c, b, a in tried]
    verdicts = [search._judge(c, 0, a, ev, f) for c, b, a, ev, f in made]
    allowed = [(c, b, a, ev, f, j) for (c, b, a, ev, f), j in zip(made, verdicts, strict=True)
               if j[0]]
    after = [(search._successor(c, 0, a, ev, f, j[0], j[1][0])[0], b)
             for c, b, a, ev, f, j in allowed]
    keys = [(single_key(n, search.snap, search.indices, b),) for n, b in after]
    index = {k: i for i, k in enumerate(keys)}
    per_state, per_edge = exp.nodes, len(exp.edges)
    per_try = len(tried) / max(len(sample), 1) * exp.nodes

    def clock(name: str, step: Any, items: list[Any], calls: float) -> tuple[str, float, float]:
        t = time.process_time()
        for item in items:
            step(*item)
        each = (time.process_time() - t) / max(len(items), 1)
        return name, each * 1e6, each * calls

    rows = [
        clock("ranks of a state (SingleRanks.of)",
              lambda c, b: SingleRanks.of(c, search.indices), states, per_state),
        clock("alphabet of a state (actions)",
              lambda c, b: actions(c, bounds, b.any_unread), states, per_state),
        clock("a new node's info (label, obligations)",
              lambda c, b: _info(c, exp.readings), states, per_state),
        clock("payload (make_event)", lambda c, b, a: make_event(c, a), tried, per_try),
        clock("checks (_judge: the model's guards)",
              lambda c, b, a, ev, f: search._judge(c, 0, a, ev, f), made, per_try),
        clock("successor (copy, actions, compaction)",
              lambda c, b, a, ev, f, j: search._successor(c, 0, a, ev, f, j[0], j[1][0]),
              allowed, per_edge),
        clock("key of the successor (single_key)",
              lambda n, b: single_key(n, search.snap, search.indices, b), after, per_edge),
        clock("lookup of the key", lambda k: index.get(k), [(k,) for k in keys], per_edge),
    ]
    lines = [f"{exp.nodes} states, {per_edge} transitions, {len(exp.refusals)} refusals; the "
             f"run: {cpu:.2f} s CPU (process_time); {len(sample)} configurations sampled",
             f"{'step':42} {'us a call':>9} {'s a run':>8} {'share':>6}"]
    total = sum(r[2] for r in rows)
    lines += [f"{n:42} {us:9.2f} {sec:8.2f} {sec / total:6.1%}" for n, us, sec in rows]
    lines.append(f"{'sum of the steps':42} {'':9} {total:8.2f}")
    return "\n".join(lines)


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
              f"{'cpu s':>6} {'props s':>8}  props  bounds / readings")
    print(header)
    print("-" * len(header))
    table: list[list[Any]] = []
    figures: list[dict[str, Any]] = []
    missed: list[tuple[str, Bounds, Any]] = []
    explore(bounds=Bounds.default(1), readings=DEFAULT)  # warm-up: imports, compiled table
    for name, bounds, readings in rows(args.full):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            exp = explore(bounds=bounds, readings=readings)
            cpu = time.process_time() - c0  # beside the wall time: a loaded machine stretches it
        except ExplorationTooLarge:  # a row past the cap is a figure too, not a crash
            print(f"{name:24} {'> cap':>8} {'':>12} {'':>9} {time.perf_counter() - t0:>10.2f} "
                  f"{'':>6} {'':>8}  {'':5}  {bounds.describe()}: past the explorer's state cap",
                  flush=True)
            table.append([name, "past the cap", "", "", "", "", bounds.describe()])
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
              f"{exp.seconds:>10.2f} {cpu:>6.2f} {t_props:>8.2f}  {marks:5}  {bounds.describe()}; "
              f"readings {changed}", flush=True)
        table.append([name, exp.nodes, len(exp.edges), round(exp.seconds, 2), round(cpu, 2), marks,
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
        profiles[name] = step_costs(bounds, readings) + "\n\n" \
            + profile_top(bounds, readings, args.profile_top)
        print(f"\nwhere the time of {name!r} goes (each step unprofiled, then cProfile, top "
              f"{args.profile_top} by own time):\n{profiles[name]}")
    record("explore", "Exploration", figures,
           table={"columns": ["run", "states", "transitions", "explore s", "cpu s", "properties",
                              "bounds / readings"], "rows": table},
           parameters={"full": args.full, "repeat": args.repeat},
           notes="properties: a lower-case letter holds, an upper-case one fails"
           + "".join(f"\n\nWhere the time of {k!r} goes (each step unprofiled, then cProfile, "
                     "top by own time):\n\n"
                     f"```text\n{v}\n```" for k, v in profiles.items()))


if __name__ == "__main__":
    main()
