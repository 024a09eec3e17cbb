"""Fuzzer figures (``python benchmarks/bench_fuzz.py [--seeds N] [--mutants a,b]``).

1. Client actions per second against the reference agent in ``fast`` timing.
2. For every bug mutant of the zoo and several seeds: seconds to the first failure naming the
   mutant's rule and seconds to the minimal counterexample (median and max over seeds), plus
   whether a fresh-process replay reproduced it. Generation stops once the mutant's rule is
   found; the counterexample is then shrunk by delta debugging in fresh agent processes. A
   mutant that breaks another rule first (a prompt left unanswered after a cancel is CANCEL-14
   before it is PROMPT-04) is fuzzed on with that rule masked, up to 6 rounds, as the fuzzer
   does by default.
3. With ``--guidance N`` (instead of 1 and 2): what coverage guidance (``target()`` on the
   distinct model transitions an example fires) buys: the reference agent fuzzed for N examples
   per seed with and without it; model transitions and rules exercised at the end, and the
   examples it took to reach 90% of the run's final transitions. Budgets are examples, not
   seconds, so the comparison does not depend on how loaded the machine is.
Targets: >= 100 actions/s; each mutant found in median <= 5 s and max <= 60 s.
Run with a short deadline (default 1 s) because the mutants answer at once.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.agents.mutants import MUTANTS
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.editors import custom
from acp_model.fuzzing.run import run_fuzz
from benchmarks.results import figure, record

AGENT = [sys.executable, "-m", "acp_model.agents.reference", "--timing", "fast"]


def throughput(seconds: float, seed: int) -> tuple[float, int, int]:
    cfg = FuzzConfig(AGENT, max_examples=10_000, steps=30, seed=seed, time_budget=seconds,
                     deadline=2.0)
    start = time.monotonic()
    result = run_fuzz(cfg)
    elapsed = time.monotonic() - start
    assert not result.recorder.found, "the reference agent must pass"
    return result.recorder.actions / elapsed, result.recorder.actions, result.recorder.examples


def guidance(examples: int, seed: int, guided: bool) -> tuple[int, int, int]:
    """(transitions, rules, examples to 90% of the final transitions) of one run."""
    cfg = FuzzConfig(AGENT, max_examples=examples, steps=30, seed=seed, time_budget=None,
                     deadline=2.0, max_rounds=1, guided=guided)
    samples = run_fuzz(cfg).recorder.coverage
    final = samples[-1]["transitions"]
    reach = next(s["examples"] for s in samples if s["transitions"] >= 0.9 * final)
    return final, samples[-1]["rules"], reach


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per mutant run")
    parser.add_argument("--deadline", type=float, default=1.0)
    parser.add_argument("--throughput-seconds", type=float, default=20.0)
    parser.add_argument("--mutants", help="comma-separated subset (default: every bug mutant)")
    parser.add_argument("--spec", default="auto",
                        help="revision for every run (default auto: a probe prompt decides, "
                             "about 0.15 s before fuzzing, counted in the time to failure)")
    parser.add_argument("--guidance", type=int, default=0, metavar="N",
                        help="only compare N examples per seed with and without coverage "
                             "guidance (0: the throughput and mutant figures instead)")
    args = parser.parse_args()

    if args.guidance:
        print(f"coverage guidance, {args.guidance} examples per run "
              "(transitions / rules at the end; examples to 90% of the final transitions):")
        grows: list[list[object]] = []
        for seed in range(1, args.seeds + 1):
            on = guidance(args.guidance, seed, True)
            off = guidance(args.guidance, seed, False)
            print(f"  seed {seed}: guided {on[0]} / {on[1]} (90% at {on[2]}), "
                  f"unguided {off[0]} / {off[1]} (90% at {off[2]})", flush=True)
            grows.append([seed, *on, *off])
        record("fuzz-guidance", "Coverage guidance", [
            figure("transitions at the end, guided (mean)",
                   round(statistics.mean(r[1] for r in grows), 1)),  # type: ignore[misc]
            figure("transitions at the end, unguided (mean)",
                   round(statistics.mean(r[4] for r in grows), 1)),  # type: ignore[misc]
        ], table={"columns": ["seed", "guided: transitions", "rules", "examples to 90%",
                              "unguided: transitions", "rules", "examples to 90%"],
                  "rows": grows},
           parameters={"examples": args.guidance, "seeds": args.seeds})
        return

    rate, actions, examples = throughput(args.throughput_seconds, seed=1)
    print(f"reference agent (fast): {rate:.0f} client actions/s "
          f"({actions} actions, {examples} examples in {args.throughput_seconds:g} s)\n")

    chosen = list(MUTANTS)  # every mutant is a planted bug (correct variants are designs)
    if args.mutants:
        wanted = set(args.mutants.split(","))
        chosen = [m for m in chosen if m.name in wanted]
    print(f"{'mutant':30} {'rule':10} {'first: median':>13} {'max':>6} "
          f"{'minimal: median':>15} {'max':>6} {'found':>6} {'repro':>6}")
    firsts_all = []
    table: list[list[object]] = []
    for m in chosen:
        firsts, minimals, found, repro = [], [], 0, 0
        for seed in range(1, args.seeds + 1):
            cfg = FuzzConfig([*AGENT, "--mutant", m.name], seed=seed, deadline=args.deadline,
                             time_budget=args.budget, max_rounds=6, replay_runs=1,
                             shrink_budget=10.0, stop_on=frozenset({m.rule}),
                             spec=args.spec,  # auto: sdk-2.4.0 mutants judged by theirs
                             client=custom(m.client_capabilities)
                             if m.client_capabilities else None)  # what the trigger needs
            result = run_fuzz(cfg)
            hit = result.recorder.sighted(m.rule)  # a SHOULD's: its warning's sighting
            if hit is None:
                firsts.append(float("inf"))
                minimals.append(float("inf"))
                continue
            found += 1
            repro += hit.reproduced
            firsts.append(hit.first_seen)
            minimals.append(hit.minimal_at)
        firsts_all.extend(firsts)
        print(f"{m.name:30} {m.rule:10} {statistics.median(firsts):13.2f} {max(firsts):6.1f} "
              f"{statistics.median(minimals):15.2f} {max(minimals):6.1f} "
              f"{found:>3}/{args.seeds} {repro:>3}/{found}", flush=True)
        table.append([m.name, m.rule, round(statistics.median(firsts), 2),
                      round(max(firsts), 1), round(statistics.median(minimals), 2),
                      round(max(minimals), 1), f"{found}/{args.seeds}", f"{repro}/{found}"])
    median_first, max_first = statistics.median(firsts_all), max(firsts_all)
    print(f"\nall runs: median first failure {median_first:.2f} s, max {max_first:.1f} s")
    found_all = sum(1 for t in firsts_all if t != float("inf"))
    record("fuzz", "Fuzzing", [
        figure("client actions/s against the reference agent (fast timing)", round(rate),
               target=">= 100", met=rate >= 100),
        figure("mutants' runs that found the planted rule", f"{found_all}/{len(firsts_all)}"),
        figure("time to the first failure, median over runs", round(median_first, 2), "s",
               target="<= 5 s", met=median_first <= 5),
        figure("time to the first failure, longest run", round(max_first, 1), "s",
               target="<= 60 s", met=max_first <= 60),
    ], table={"columns": ["mutant", "rule", "first failure: median s", "max s",
                          "minimal counterexample: median s", "max s", "found", "reproduced"],
              "rows": table},
       parameters={"seeds": args.seeds, "budget": args.budget, "deadline": args.deadline,
                   "throughput_seconds": args.throughput_seconds, "spec": args.spec,
                   "mutants": len(chosen)})


if __name__ == "__main__":
    main()
