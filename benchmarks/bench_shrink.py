"""How short and how reproducible the counterexamples are: the mutant zoo and real agents,
replayed free-running and held to their recorded boundary schedule.

Run: ``python benchmarks/bench_shrink.py [--racy | --only NAMES] [--agents NAMES]
[--seeds 1] [--jobs 2] [--replays 6] [--minimize-budget 60] [--budget 120] [--lock PATH]``

* Mutants (``acp_model/agents/mutants.py``; ``--racy``: those whose bug a race decides, the
  CANCEL-07, CANCEL-11 and A-10 ones), in ``fast`` timing: one fuzz run each (the zoo
  campaign's bug case, ``fuzz/acp_zoo_campaign.py``) until its rule is found, then the
  counterexample is minimized (``--minimize-budget`` seconds, to its fixpoint) and replayed
  ``--replays`` times held to its recorded schedule and as many times free-running.
* Real agents (``--agents codex-acp,opencode,mistral-vibe``, installed with ``acp-model agents
  install``; ``NAME:v1`` for a protocol): one fuzz run of ``--budget`` seconds each, then every
  failure as above. One at a time; ``--lock`` holds the shared machine's heavy lock per run.
  ``--reports PATH...`` reads real agents' rows from fuzz reports already written instead
  (``acp-model fuzz --agent NAME --report PATH`` runs, or a matrix folder), and
  ``--real-rows ROWS.json`` real agents' rows an earlier run wrote with ``--json``, and
  ``--mutant-rows ROWS.json`` the mutants' rows an earlier run wrote with ``--json`` (the
  mutants are then not run again: a matrix run just measured needs no second hold of a
  shared machine's lock for them).

Printed: per counterexample its client actions, the rates held and free, whether minimizing
reached its fixpoint (or the stage it stopped at); then the median and largest
counterexample, how many are at most 10 actions, the reproduction rates held and free, and
every counterexample over 10 actions or reproduced less than 5 times in 6 held (what a reader
of the report must be told about). Figures: ``benchmarks/results/shrink.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.agents.mutants import MUTANTS
from acp_model.fuzzing.budget import MATRIX_GROWTH
from benchmarks.reproduction import before_figures, rate
from benchmarks.results import figure, locked, record
from fuzz.acp_zoo_campaign import Case

LIMIT = 10  # actions a reader can follow
RACY_RULES = frozenset({"CANCEL-07", "CANCEL-11", "A-10.cancel"})  # a race decides them
REAL_AGENTS = ("codex-acp", "opencode", "mistral-vibe")
MUTANT_NAMES = frozenset(m.name for m in MUTANTS)


def _row(source: str, rule: str, found: Any, seconds: float) -> dict[str, Any]:
    """One counterexample's figures (``found``: a ``Found``, after its replays)."""
    m = found.minimize or {}
    return {"source": source, "rule": rule, "seconds": round(seconds, 1), "found": True,
            "actions": len(found.actions), "held": found.reproduced,
            "held_runs": found.replays, "free": found.free_reproduced,
            "free_runs": found.free_replays, "fixpoint": bool(m.get("fixpoint")),
            "stage": m.get("stage"), "minimize_s": m.get("seconds"),
            "trials": m.get("trials"), "trials_allowed": m.get("trials_allowed"),
            "cut_by": m.get("cut_by"), "standing": found.standing,
            # the profile of a miss: where a held replay that did not reproduce left its
            # recorded schedule, and what minimizing and measuring noted
            "miss": [n for n in found.notes if "schedule" in n or "reproduc" in n]
            if found.reproduced < found.replays or not found.replays else []}


def mutant(name: str, rule: str, seed: int, replays: int, minimize: float,
           lock: str | None, trials: int | None = None) -> list[dict[str, Any]]:
    """Fuzz one mutant until its rule shows; its counterexample's size and rates."""
    from acp_model.fuzzing.run import run_fuzz

    case = Case(name, "bug", rule, "fast", seed, 10_000, 30, 60.0, 1.5)
    cfg = dataclasses.replace(case.config(), replay_runs=replays, minimize_budget=minimize,
                              minimize_trials=trials)
    with locked(lock):  # the time waited for the lock is not the run's
        started = time.monotonic()
        result = run_fuzz(cfg)
    hit = result.recorder.found.get(rule)
    if hit is None:
        return [{"source": name, "rule": rule, "seconds": round(time.monotonic() - started, 1),
                 "found": False}]
    return [_row(name, rule, hit, time.monotonic() - started)]


def real_agent(spec: str, seed: int, replays: int, minimize: float, budget: float,
               lock: str | None, trials: int | None = None, growth: float = 1.0
               ) -> list[dict[str, Any]]:
    """Fuzz one real agent for ``budget`` seconds; every failure's size and rates."""
    from acp_model.fuzzing.backend import backend, profile_config
    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.fuzzing.run import run_fuzz
    from acp_model.profiles import get

    name, _, protocol = spec.partition(":")
    profile = get(name)
    version = int(protocol.removeprefix("v")) if protocol else profile.protocols[0]
    cfg = profile_config(FuzzConfig(["true"], seed=seed, time_budget=budget,
                                    max_examples=100_000, spec="auto", protocol=version,
                                    replay_runs=replays, minimize_budget=minimize,
                                    minimize_trials=trials, minimize_growth=growth),
                         profile, version)
    with locked(lock), backend(cfg, profile) as running:
        started = time.monotonic()
        result = run_fuzz(running)
    source = f"{name} v{version}"
    rows = [_row(source, f.rule, f, time.monotonic() - started)
            for f in result.recorder.found.values()]
    return rows or [{"source": source, "rule": "-", "found": False,
                     "seconds": round(time.monotonic() - started, 1)}]


def _from_reports(paths: list[str]) -> list[dict[str, Any]]:
    """Real agents' rows from fuzz reports already written (``benchmarks/reproduction.py``
    reads them the same way)."""
    from benchmarks.reproduction import reports, rows

    return [{"source": f"{r['agent'].strip()} ({r['run']})", "rule": r["rule"], "found": True,
             "seconds": "-", "actions": r["actions"], "held": r["held"],
             "held_runs": r["held_runs"], "free": r["free"], "free_runs": r["free_runs"],
             "fixpoint": r["fixpoint"], "stage": r["stage"], "minimize_s": r["minimize_s"],
             "trials": r["trials"], "trials_allowed": r.get("trials_allowed"),
             "cut_by": r.get("cut_by"), "standing": r["standing"]}
            for r in rows(reports(paths))]


def _line(row: dict[str, Any]) -> str:
    if not row["found"]:
        return f"  {row['source']:32} {row['rule']:14} NOT FOUND  ({row['seconds']} s)"
    return (f"  {row['source']:32} {row['rule']:14} {row['actions']:4} actions, held "
            f"{rate(row['held'], row['held_runs'])}, free "
            f"{rate(row['free'], row['free_runs'])}, "
            f"{_minimizing(row)} ({row['seconds']} s)")


def _minimizing(row: dict[str, Any]) -> str:
    """How far minimizing got, with its trials used of those allowed where the row says."""
    stage = "fixpoint" if row.get("fixpoint") else f"cut at {row.get('stage')}"
    if row.get("cut_by") and not row.get("fixpoint"):
        stage += f" by its {row['cut_by']}"
    if row.get("trials_allowed") is not None:
        stage += f", {row.get('trials')}/{row['trials_allowed']} trials"
    return stage


def _summary(rows: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    """Print the figures of ``rows`` (counterexamples found) and return them. A sighting on
    a shared agent process that no fresh process reproduced is reported as a warning, not a
    failure (``standing`` shared-only): it is counted apart, as ``reproduction.py`` does."""
    from benchmarks.reproduction import standing_apart

    found, shared = standing_apart([r for r in rows if r["found"]])
    if not found:
        return []
    sizes = sorted(r["actions"] for r in found)
    held = sum(r["held"] for r in found), sum(r["held_runs"] for r in found)
    free = sum(r["free"] for r in found), sum(r["free_runs"] for r in found)
    steady = sum(1 for r in found if r["held_runs"] and r["held"] >= 5 * r["held_runs"] / 6)
    fixpoint = sum(1 for r in found if r["fixpoint"])
    print(f"{label}: {len(found)} counterexamples; actions median "
          f"{statistics.median(sizes):g}, max {sizes[-1]}, at most {LIMIT}: "
          f"{sum(1 for s in sizes if s <= LIMIT)}/{len(sizes)}; minimized to the fixpoint "
          f"{fixpoint}/{len(found)}")
    print(f"  reproduced held to the recorded schedule {held[0]}/{held[1]} "
          f"({100 * held[0] / max(held[1], 1):.0f}%), free-running {free[0]}/{free[1]} "
          f"({100 * free[0] / max(free[1], 1):.0f}%); at least 5 in 6 held: "
          f"{steady}/{len(found)}")
    if shared:
        print(f"  shared-process sightings reported as warnings (not counted): {len(shared)}")
    for r in sorted(found, key=lambda r: -r["actions"]):
        if r["actions"] > LIMIT or not r["held_runs"] or 6 * r["held"] < 5 * r["held_runs"]:
            print(f"  to explain: {r['source']} ({r['rule']}): {r['actions']} actions, "
                  f"held {r['held']}/{r['held_runs']}, free {r['free']}/{r['free_runs']}")
            for note in r.get("miss") or []:
                print(f"    {note}")
    return [
        figure(f"{label}: counterexamples", len(found)),
        figure(f"{label}: client actions per counterexample, median",
               statistics.median(sizes)),
        figure(f"{label}: client actions per counterexample, max", sizes[-1]),
        figure(f"{label}: counterexamples of at most {LIMIT} actions",
               f"{sum(1 for s in sizes if s <= LIMIT)}/{len(sizes)}"),
        figure(f"{label}: minimized to the fixpoint", f"{fixpoint}/{len(found)}"),
        figure(f"{label}: replays that reproduce, held to the recorded schedule",
               f"{held[0]}/{held[1]} ({100 * held[0] / max(held[1], 1):.0f}%)"),
        figure(f"{label}: replays that reproduce, free-running",
               f"{free[0]}/{free[1]} ({100 * free[0] / max(free[1], 1):.0f}%)"),
        figure(f"{label}: counterexamples reproduced at least 5 in 6 held",
               f"{steady}/{len(found)}"),
        *([figure(f"{label}: shared-process sightings reported as warnings (not counted "
                  "above)", len(shared))] if shared else []),
    ]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1", help="comma-separated seeds (default 1)")
    p.add_argument("--jobs", type=int, default=2, help="mutant runs at once (default 2)")
    p.add_argument("--replays", type=int, default=6,
                   help="replays held, and as many free, of each counterexample (default 6)")
    p.add_argument("--minimize-budget", type=float, default=60.0,
                   help="each failure's outer bound in seconds (fuzz --minimize-budget)")
    p.add_argument("--minimize-trials", type=int,
                   help="each failure's minimizing budget in trials (default: fuzz's)")
    p.add_argument("--minimize-growth", type=float, default=1.0,
                   help="real agents: fuzz --minimize-growth (the matrix uses "
                        f"{MATRIX_GROWTH:g})")
    p.add_argument("--only", help="comma-separated mutant names")
    p.add_argument("--racy", action="store_true", help="the mutants a race decides")
    p.add_argument("--no-mutants", action="store_true", help="real agents only")
    p.add_argument("--agents", default="",
                   help="comma-separated real agents (NAME or NAME:v1), one at a time")
    p.add_argument("--budget", type=float, default=120.0, help="seconds per real agent run")
    p.add_argument("--reports", nargs="*", default=[], metavar="PATH",
                   help="real agents' fuzz reports (files, or folders holding them) to read")
    p.add_argument("--lock", help="hold flock LOCK for each run (a shared machine)")
    p.add_argument("--mutant-rows", metavar="ROWS.json",
                   help="the mutants' rows of an earlier run's --json, instead of running them")
    p.add_argument("--real-rows", metavar="ROWS.json", nargs="*", default=[],
                   help="real agents' rows of earlier runs' --json, added to those measured")
    p.add_argument("--json", help="also write the rows here")
    p.add_argument("--notes", default="",
                   help="what the figures were taken under (the machine's load, a lock)")
    p.add_argument("--before", metavar="OLD.json",
                   help="an earlier shrink.json: each figure gains the value it had there")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    wanted = set(args.only.split(",")) if args.only else None
    cases = [] if args.no_mutants else [
        (m.name, m.rule, s) for s in seeds for m in MUTANTS
        if (wanted is None or m.name in wanted) and (not args.racy or m.rule in RACY_RULES)]
    agents = [a for a in args.agents.split(",") if a]
    zoo: list[dict[str, Any]] = []
    if args.mutant_rows:
        zoo = [r for r in json.loads(Path(args.mutant_rows).read_text(encoding="utf-8"))
               if r["source"] in MUTANT_NAMES]
        cases = []
        for row in zoo:
            print(_line(row))
    if cases:
        print(f"mutants ({len(cases)} runs):")
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(mutant, n, r, s, args.replays, args.minimize_budget,
                                   args.lock, args.minimize_trials) for n, r, s in cases]
            for future in as_completed(futures):
                for row in future.result():
                    zoo.append(row)
                    print(_line(row), flush=True)
    real: list[dict[str, Any]] = [
        *_from_reports(args.reports),
        *(r for path in args.real_rows
          for r in json.loads(Path(path).read_text(encoding="utf-8"))
          if r["source"] not in MUTANT_NAMES)]
    for row in real:
        print(_line(row))
    for spec in agents:
        print(f"{spec}:")
        for row in real_agent(spec, seeds[0], args.replays, args.minimize_budget,
                              args.budget, args.lock, args.minimize_trials,
                              args.minimize_growth):
            real.append(row)
            print(_line(row), flush=True)
    print()
    figures = [*_summary(zoo, "mutants"), *_summary(real, "real agents")]
    if zoo:
        figures.insert(0, figure("mutants found under their rule",
                                 f"{sum(r['found'] for r in zoo)}/{len(zoo)}"))
    before_figures(figures, args.before)
    rows = sorted(zoo, key=lambda r: (r["source"], r["rule"])) + real
    columns = ["source", "rule", "actions", "held", "free", "minimizing", "seconds", "miss"]
    if figures:
        record("shrink", "Counterexamples", figures, table={"columns": columns, "rows": [
            [r["source"], r["rule"], r.get("actions", "not found"),
             rate(r.get("held", 0), r.get("held_runs", 0)),
             rate(r.get("free", 0), r.get("free_runs", 0)),
             _minimizing(r) if r["found"] else "-", r["seconds"],
             "; ".join(r.get("miss") or [])]
            for r in rows]},
            notes=args.notes,
            parameters={"seeds": seeds, "jobs": args.jobs, "replays": args.replays,
                        "minimize_budget": args.minimize_budget,
                        "minimize_trials": args.minimize_trials,
                        "minimize_growth": args.minimize_growth, "only": args.only,
                        "racy": args.racy, "agents": agents, "budget": args.budget,
                        "reports": args.reports, "mutant_rows": args.mutant_rows,
                        "real_rows": args.real_rows,
                        "before": args.before})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
