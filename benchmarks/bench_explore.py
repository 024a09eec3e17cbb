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
    exploration expanded (the best of three passes), and that cost times the calls the whole
    run makes (states, events tried or transitions). Sampled configurations sit warm in the
    cache, so the sum runs below the run's own CPU time; the shares are the figure.

    The steps fall in two groups: the model's own work (payloads, guards, actions, the
    compaction query), which any search that runs the model pays on every event, and the
    explorer's bookkeeping around it (copies, keys, lookups, per-state alphabet and labels).
    The first group alone, set against the target, says whether cutting the second can reach
    it."""
    from acp_model.explorer import search as s
    from acp_model.explorer.alphabet import actions, make_event
    from acp_model.explorer.config import (
        SingleRanks,
        _edge_breaks,
        _info,
        _observe,
        single_key,
        single_key_keyed,
    )

    if bounds.sessions != 1:
        return "(one session only)"
    exp, cpu, sample = _sampled(bounds, readings, every)
    search = s._Search(exp.table, exp.model_cls, bounds, exp.readings, 1 << 40, exp.compact)
    engine = search.engines[0]
    states = [(c, SingleRanks.of(c, search.indices)) for c in sample]
    tried = [(c, b, a) for c, b in states for a in actions(c, bounds, b.any_unread)
             if a.session is not None and (c.models[0].state, a.event) in exp.table.transitions]
    made = [(c, b, a, *make_event(c, a)) for c, b, a in tried]
    verdicts = [search._judge(c, 0, a, ev, f) for c, b, a, ev, f in made]
    allowed = [(c, b, a, ev, f, j) for (c, b, a, ev, f), j in zip(made, verdicts, strict=True)
               if j[0]]

    def copied(c: Any, a: Any, f: int) -> Any:  # what _successor does before the actions
        new = c.derive(0, search.copiers[(c.models[0].state, a.event)])
        new.ctx.frontier = f
        return new

    def fresh() -> list[tuple[Any, str, Any]]:  # actions write: each pass needs new copies
        return [(copied(c, a, f).models[0], a.event, ev) for c, b, a, ev, f, j in allowed]

    applied = fresh()
    for m, event, ev in applied:
        engine.apply(m, event, ev)
    # the compaction query is asked only of a shared book whose horizon moved (_successor)
    asked = sum(1 for (m, _, _), (c, _, a, *_) in zip(applied, allowed, strict=True)
                if not search.book_copied[(c.models[0].state, a.event)]
                and c.compacted[0] != m.horizon())
    after = [(search._successor(c, 0, a, ev, f, j[0], j[1][0])[0], b)
             for c, b, a, ev, f, j in allowed]
    keys = [(single_key(n, search.snap, search.indices, b),) for n, b in after]
    index = {k: i for i, k in enumerate(keys)}
    per_state, per_edge = exp.nodes, len(exp.edges)
    per_try = len(tried) / max(len(sample), 1) * exp.nodes

    model_steps: list[Step] = [
        ("payload of the event (make_event)", lambda c, b, a: make_event(c, a), tried,
         per_try),
        ("guards (TableEngine.allowed)",
         lambda c, b, a, ev, f: engine.allowed(c.models[0], a.event, ev), made, per_try),
        ("actions (TableEngine.apply)", engine.apply, fresh, per_edge),
        ("compaction query (compacts)", lambda m, e, ev: m.compacts(), applied,
         per_edge * asked / max(len(applied), 1)),
    ]
    book_steps: list[Step] = [
        ("ranks of a new node (SingleRanks.ranked)",  # from those its key made
         lambda c, b: SingleRanks.ranked(c, b.held, b.rank), states, per_state),
        ("alphabet of a state (actions)",
         lambda c, b: actions(c, bounds, b.any_unread), states, per_state),
        ("a new node's info (label, obligations)",
         lambda c, b: _info(c, exp.readings), states, per_state),
        ("verdict bookkeeping (_judge less guards)",
         lambda c, b, a, ev, f: search._judge(c, 0, a, ev, f), made, per_try),
        ("copy on write (Config.derive)",
         lambda c, b, a, ev, f, j: copied(c, a, f), allowed, per_edge),
        ("observer and edge properties",
         lambda c, b, a, ev, f, j: (_observe(c.obs[0], c.models[0].state, a, ev.idx),
                                    _edge_breaks(c.obs[0], c.models[0].state, a, f,
                                                 j[1][0])), allowed, per_edge),
        # the indices held, their ranks (the parent's when they still hold) and the snapshot
        ("key: indices, ranks, snapshot (generated)",
         lambda n, b: single_key_keyed(n, search.keyed, b), after, per_edge),
        ("lookup of the key", lambda k: index.get(k), [(k,) for k in keys], per_edge),
        ("the edge record", lambda c, b, a, ev, f, j: s.Edge(0, 0, a, "", 1, j[1]),
         allowed, per_edge),
    ]
    model, books = _clocked(model_steps, book_steps)
    # timed whole (the guards inside): the guards taken out
    books[3] = _less(books[3], [model[1]], per_try)
    head = (f"{exp.nodes} states, {per_edge} transitions, {len(exp.refusals)} refusals; the "
            f"run: {cpu:.2f} s CPU (process_time); {len(sample)} configurations sampled")
    return _table(head, model, books, exp)


def _sampled(bounds: Bounds, readings: Any, every: int) -> tuple[Any, float, list[Any]]:
    """One exploration, its CPU time and every ``every``-th configuration it expanded."""
    from acp_model.explorer import search as s

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
    return exp, cpu, sample


def _table(head: str, model: list[tuple[str, float, float]],
           books: list[tuple[str, float, float]], exp: Any) -> str:
    """The step table: the model's own work, the explorer's bookkeeping, what it implies."""
    per_edge = len(exp.edges)
    total = sum(r[2] for r in model + books)
    own = sum(r[2] for r in model)
    lines = [head, f"{'step':52} {'us a call':>9} {'s a run':>8} {'share':>6}"]
    for title, rows_ in (("the model's own work", model), ("the explorer's bookkeeping", books)):
        lines.append(f"-- {title}: {sum(r[2] for r in rows_):.2f} s")
        lines += [f"{n:52} {us:9.2f} {sec:8.2f} {sec / total:6.1%}" for n, us, sec in rows_]
    lines.append(f"{'sum of the steps':52} {'':9} {total:8.2f}")
    lines.append(f"the model's own work alone: {own:.2f} s, {own / per_edge * 1e6:.1f} us a "
                 f"transition; a 2 s run allows {2 / per_edge * 1e6:.1f} us a transition "
                 "for everything")
    block = bisimulation(exp)
    classes, moves = len(set(block)), len({(block[e.src], e.action.label) for e in exp.edges})
    lines.append(f"classes of states no verdict tells apart under these bounds (bisimulation "
                 f"over the graph): {classes} of {exp.nodes} states, {moves} of {per_edge} "
                 "transitions")
    return "\n".join(lines)


Step = tuple[str, Any, Any, float]  # name, the step, its items (or what makes them), calls a run


def _clocked(*groups: list[Step], passes: int = 3) -> list[list[tuple[str, float, float]]]:
    """Each step's best time over ``passes`` passes, the steps taking turns within a pass (on
    a loaded machine a step timed alone may meet a quiet or a busy moment; taking turns gives
    each the same chances): per group, ``(name, us a call, s a run)``."""
    steps = [st for g in groups for st in g]
    best = [float("inf")] * len(steps)
    counts = [1] * len(steps)
    for _ in range(passes):
        for i, (_, step, items, _) in enumerate(steps):
            batch = items() if callable(items) else items
            t = time.process_time()
            for item in batch:
                step(*item)
            best[i] = min(best[i], time.process_time() - t)
            counts[i] = len(batch) or 1
    rows = [(name, b / n * 1e6, b / n * calls)
            for (name, _, _, calls), b, n in zip(steps, best, counts, strict=True)]
    out, at = [], 0
    for g in groups:
        out.append(rows[at:at + len(g)])
        at += len(g)
    return out


def _less(row: tuple[str, float, float], parts: list[tuple[str, float, float]],
          calls: float) -> tuple[str, float, float]:
    """``row`` (timed whole) less the ``parts`` timed on their own (per call, same calls)."""
    sec = max(row[2] - sum(p[2] for p in parts), 0.0)
    return row[0], sec / calls * 1e6 if calls else 0.0, sec


def bisimulation(exp: Any) -> list[int]:
    """Per state, its class in the coarsest partition of the graph that keeps everything a
    verdict reads: control states, obligations, the observers (which of their cancels are
    read), the refusals,
    every edge's action, readings, warnings and broken properties, and the classes it leads
    to (a bisimulation, by refining signatures until no class splits). Its size bounds how
    far a coarser exact key could shrink this search under these bounds (it may merge states
    that only the bounds make alike)."""
    return joint_bisimulation(exp)[0]


def joint_bisimulation(*exps: Any, stutter: frozenset[str] = frozenset()) -> list[list[int]]:
    """:func:`bisimulation` over the disjoint union of one-session explorations of the same
    bounds and readings: per exploration, per state, its class (two explorations that judge
    alike have their initial states, 0, in one class). An edge of an event in ``stutter``
    that leads back into its own class is left out (the explorer offers ``sync`` only while an
    index the key holds is unread: a coarser key that drops a dead index drops the ``sync``
    that only read it, which leads to a state no verdict tells from its source)."""
    nodes = [(x, u) for x, exp in enumerate(exps) for u in range(exp.nodes)]
    at = {node: n for n, node in enumerate(nodes)}
    out: list[list[tuple[Any, ...]]] = [[] for _ in nodes]
    refused: list[list[tuple[Any, ...]]] = [[] for _ in nodes]
    for x, exp in enumerate(exps):
        for e in exp.edges:
            out[at[x, e.src]].append((e.action.label, e.allowed, e.warns, e.breaks, e.src_state,
                                      at[x, e.dst], e.action.event in stutter))
        for r in exp.refusals:
            refused[at[x, r.src]].append((r.action.label, r.rules))
    ids: dict[Any, int] = {}
    block = []
    for x, u in nodes:
        inf = exps[x].info[u]
        block.append(ids.setdefault((inf["states"], inf["label"],
                                     tuple(map(tuple, inf["obligations"])),
                                     tuple(_observed(k) for k in exps[x].keys[u]),
                                     tuple(sorted(refused[at[x, u]], key=repr))), len(ids)))
    while True:
        ids = {}
        new = [ids.setdefault((block[n], tuple(sorted(
            (*e[:5], block[e[5]]) for e in out[n] if not (e[6] and block[e[5]] == block[n])))),
            len(ids)) for n in range(len(nodes))]
        if len(ids) == len(set(block)):
            break
        block = new
    return [[new[at[x, u]] for u in range(exp.nodes)] for x, exp in enumerate(exps)]


def _observed(session_key: tuple[Any, ...]) -> tuple[Any, ...]:
    """The observer's part of a session's key as the edge properties read it: which of the
    work's cancels are read (a read index ranks below zero, by its order among the indices
    the key holds, which a coarser key holds fewer of), and whether the client stopped
    anything."""
    _, ranks, cancelled = session_key
    return tuple(r < 0 for r in ranks), cancelled


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
