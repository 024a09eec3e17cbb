"""How short and how reproducible the counterexamples are, over the whole mutant zoo.

Run: ``python benchmarks/bench_shrink.py [--seeds 1] [--jobs 2] [--replays 5] [--json out.json]``

For every mutant of the zoo (``acp_model/agents/mutants.py``), in ``fast`` timing, one fuzz run
(the zoo campaign's bug case: ``fuzz/acp_zoo_campaign.py``) until its rule is found, then the
counterexample is minimized by fresh-process replays and replayed ``--replays`` times more.
Printed: per mutant the client actions of its counterexample and how often it reproduced;
then the median and the largest counterexample, how many are at most 10 actions, the overall
reproduction rate, and every counterexample over 10 actions or reproduced less than half the
time (what a reader of the report must be told about).
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
from benchmarks.results import figure, record
from fuzz.acp_zoo_campaign import Case

LIMIT = 10  # actions a reader can follow


def one(name: str, rule: str, seed: int, replays: int) -> dict[str, Any]:
    """Fuzz one mutant until its rule shows; the counterexample's size and reproduction."""
    from acp_model.fuzzing.run import run_fuzz

    case = Case(name, "bug", rule, "fast", seed, 10_000, 30, 60.0, 1.5)
    cfg = dataclasses.replace(case.config(), replay_runs=replays)
    started = time.monotonic()
    result = run_fuzz(cfg)
    hit = result.recorder.found.get(rule)
    out: dict[str, Any] = {"mutant": name, "rule": rule, "seed": seed,
                           "seconds": round(time.monotonic() - started, 1), "found": hit
                           is not None}
    if hit is not None:
        out.update(actions=len(hit.actions), reproduced=hit.reproduced, replays=hit.replays)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1", help="comma-separated seeds (default 1)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--replays", type=int, default=5)
    p.add_argument("--only", help="comma-separated mutant names")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    wanted = set(args.only.split(",")) if args.only else None
    cases = [(m.name, m.rule, s) for s in seeds for m in MUTANTS
             if wanted is None or m.name in wanted]
    rows: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(one, n, r, s, args.replays) for n, r, s in cases]
        for future in as_completed(futures):
            row = future.result()
            rows.append(row)
            print(f"  {row['mutant']:36} {row['rule']:14} "
                  + (f"{row['actions']:4} actions, reproduced {row['reproduced']}/"
                     f"{row['replays']}" if row["found"] else "NOT FOUND")
                  + f"  ({row['seconds']} s)", flush=True)
    found = [r for r in rows if r["found"]]
    sizes = sorted(r["actions"] for r in found)
    reproduced = sum(r["reproduced"] for r in found)
    replayed = sum(r["replays"] for r in found)
    print()
    print(f"mutants: {len(rows)}, found: {len(found)}")
    if sizes:
        print(f"counterexample actions: median {statistics.median(sizes):g}, max {sizes[-1]}, "
              f"at most {LIMIT}: {sum(1 for s in sizes if s <= LIMIT)}/{len(sizes)}")
        print(f"reproduction: {reproduced}/{replayed} replays "
              f"({100 * reproduced / max(replayed, 1):.0f}%), "
              f"every counterexample at least once: "
              f"{sum(1 for r in found if r['reproduced'] > 0)}/{len(found)}")
    for r in sorted(found, key=lambda r: -r["actions"]):
        if r["actions"] > LIMIT or 2 * r["reproduced"] < r["replays"]:
            print(f"  to explain: {r['mutant']} ({r['rule']}): {r['actions']} actions, "
                  f"reproduced {r['reproduced']}/{r['replays']}")
    if sizes:
        record("shrink", "Counterexamples", [
            figure("mutants found under their rule", f"{len(found)}/{len(rows)}"),
            figure("client actions per counterexample, median",
                   statistics.median(sizes)),
            figure("client actions per counterexample, max", sizes[-1]),
            figure(f"counterexamples of at most {LIMIT} actions",
                   f"{sum(1 for s in sizes if s <= LIMIT)}/{len(sizes)}"),
            figure("fresh-process replays that reproduce",
                   f"{reproduced}/{replayed} ({100 * reproduced / max(replayed, 1):.0f}%)"),
        ], table={"columns": ["mutant", "rule", "seed", "actions", "reproduced", "seconds"],
                  "rows": [[r["mutant"], r["rule"], r["seed"], r.get("actions", "not found"),
                            f"{r.get('reproduced', 0)}/{r.get('replays', 0)}", r["seconds"]]
                           for r in sorted(rows, key=lambda r: (r["mutant"], r["seed"]))]},
           parameters={"seeds": seeds, "jobs": args.jobs, "replays": args.replays,
                       "only": args.only})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
