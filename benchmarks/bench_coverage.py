"""Does coverage guidance reach more of an agent's ACP layer? Each agent fuzzed with
``--coverage`` for ``--seconds``, guided (``target()`` on new agent lines, new transitions and
rules, distinct transitions) and unguided, for each seed; the lines of its ACP layer reached
``--marks`` seconds into the run (read off the run's own curve: one run per seed and mode).

Run: ``python benchmarks/bench_coverage.py [--seconds 300] [--marks 60 300] [--seeds 1 2 3]
[--lock PATH] [AGENT ...]`` (install the agents first: ``make agents-all``). Writes
``benchmarks/results/coverage.json``. Failures found are neither minimized nor replayed (the
time is generation's), so both modes spend the same budget on reaching code.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.fuzzing.backend import backend, profile_config
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.run import run_fuzz
from acp_model.profiles import get
from benchmarks.results import figure, locked, record

AGENTS = ("claude-agent-acp", "gemini-cli", "kimi-cli", "mistral-vibe")  # two Node, two Python


def fuzz(name: str, seconds: float, seed: int, guided: bool, lock: str | None
         ) -> dict[str, Any]:
    """One run: its curve of agent lines over time, examples, rounds and how it ended."""
    profile = get(name)
    protocol = 1 if 1 in profile.protocols else profile.protocols[0]
    cfg = profile_config(FuzzConfig(["true"], seed=seed, time_budget=seconds, spec="auto",
                                    protocol=protocol, max_examples=100_000, replay_runs=1,
                                    minimize_budget=1.0, coverage=True, guided=guided,
                                    reproduce_only=frozenset()), profile, protocol)
    with locked(lock), backend(cfg, profile) as running:
        result = run_fuzz(running)
    cov = result.agent_coverage
    assert cov is not None
    lines, _ = cov.totals()
    files = {f.path: (f.reached, f.lines) for f in cov.files if f.counted}
    return {"samples": cov.samples, "total": lines["total"], "reached": lines["reached"],
            "files": files,
            "examples": result.recorder.examples, "seconds": round(result.seconds, 1),
            "notes": [n for n in result.notes if "round" in n or "budget" in n],
            "failures": sorted(result.recorder.found), "runtimes": cov.runtimes}


def unreached(runs: list[dict[str, Any]], root: str) -> str:
    """The layer's files with the most lines no run reached (where the rest of the layer is:
    code no generated program calls)."""
    reached: dict[str, set[int]] = {}
    lines: dict[str, set[int]] = {}
    for run in runs:
        for path, (hit, all_) in run["files"].items():
            reached.setdefault(path, set()).update(hit)
            lines[path] = all_
    left = sorted(((len(lines[p] - reached[p]), p) for p in lines), reverse=True)[:5]
    return ", ".join(f"{Path(p).relative_to(root) if p.startswith(root) else p} {n}"
                     for n, p in left if n)


def at(samples: list[dict[str, Any]], mark: float) -> int:
    """Lines reached ``mark`` seconds into the run (the last sample before it)."""
    return max((s["lines"] for s in samples if s["seconds"] <= mark), default=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agents", nargs="*", default=list(AGENTS))
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--marks", type=float, nargs="+", default=[60.0, 300.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--lock", help="hold this flock for each run (a shared machine)")
    args = parser.parse_args()
    marks = [m for m in args.marks if m <= args.seconds]
    rows: list[list[Any]] = []
    means: dict[tuple[str, bool, float], float] = {}
    why: list[str] = []
    done: list[str] = []
    for name in args.agents:
        runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
        for seed in args.seeds:
            for guided in (True, False):
                run = fuzz(name, args.seconds, seed, guided, args.lock)
                runs[guided].append(run)
                row = [name, "+".join(run["runtimes"]), seed,
                       "guided" if guided else "unguided",
                       *(at(run["samples"], m) for m in marks), run["total"],
                       run["examples"], run["seconds"], "; ".join(run["notes"])]
                rows.append(row)
                print(" | ".join(str(c) for c in row), flush=True)
        for guided in (True, False):
            for m in marks:
                means[(name, guided, m)] = statistics.mean(at(r["samples"], m)
                                                           for r in runs[guided])
        last = marks[-1]
        if means[(name, True, last)] <= means[(name, False, last)]:
            curve = lambda rs, t: round(statistics.mean(at(r["samples"], t) for r in rs))  # noqa: E731
            points = [t for t in (5, 15, 30, 60, 120, 300) if t <= args.seconds]
            why.append(f"{name}: guided {means[(name, True, last)]:.0f} vs unguided "
                       f"{means[(name, False, last)]:.0f} lines at {last:g} s; mean curve "
                       "(s: guided/unguided) "
                       + ", ".join(f"{t}: {curve(runs[True], t)}/{curve(runs[False], t)}"
                                   for t in points)
                       + f"; examples {statistics.mean(r['examples'] for r in runs[True]):.0f}"
                       f"/{statistics.mean(r['examples'] for r in runs[False]):.0f}; lines "
                       "no run reached, by file: "
                       + unreached(runs[True] + runs[False], str(get(name).install_dir())))
        done.append(name)
        write(args, done, marks, rows, means, why)  # each agent's rows as soon as it is done


def write(args: argparse.Namespace, agents: list[str], marks: list[float],
          rows: list[list[Any]], means: dict[tuple[str, bool, float], float],
          why: list[str]) -> None:
    last = marks[-1]
    wins = sum(means[(n, True, last)] > means[(n, False, last)] for n in agents)
    want = min(3, len(args.agents))
    figures = [figure(f"agents where guided reaches more lines than unguided at {last:g} s "
                      "(mean over seeds)", f"{wins}/{len(agents)}",
                      target=f">= {want} of {len(args.agents)}",
                      met=wins >= want if len(agents) == len(args.agents) else None)]
    for name in agents:
        for m in marks:
            figures.append(figure(f"{name}: lines at {m:g} s, guided / unguided (mean)",
                                  f"{means[(name, True, m)]:.1f} / {means[(name, False, m)]:.1f}"))
    notes = ("Lines of each agent's ACP layer (its profile's [coverage] layer) reached, read "
             "off one run's curve at each mark. Each run measures its agent with --coverage; "
             "guided runs score every example with target() (new agent lines, new model "
             "transitions and rules, distinct transitions), unguided ones do not; both run "
             "rounds of 20 examples until the time budget is spent.")
    if len(agents) < len(args.agents):
        notes += f" Partial: {len(agents)} of {len(args.agents)} agents measured so far."
    if why:
        notes += " Where guidance did not win: " + " ".join(why)
    record("coverage", "Coverage guidance on real agents (their ACP layer)", figures,
           table={"columns": ["agent", "runtime", "seed", "mode", *(f"lines at {m:g} s"
                                                                     for m in marks),
                              "layer lines", "examples", "run (s)", "how it ended"],
                  "rows": rows},
           parameters={"seconds": args.seconds, "marks": marks, "seeds": args.seeds},
           notes=notes)


if __name__ == "__main__":
    main()
