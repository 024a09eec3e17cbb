"""Does ``--time-budget`` bound the whole run? Wall time against budget + slack, worst case.

Run: ``python benchmarks/bench_budget.py [--budget 30] [--seeds 1] [--all] [--profiles NAME,..]
[--json benchmarks/results/budget.json]``

Each agent is fuzzed by ``acp-model fuzz --time-budget B`` in a process of its own (one at a
time: the figure is a wall time), and the wall time of that whole process (interpreter start,
probe, generation, minimizing, replays, closing, writing) is compared with the budget and the
slack the design states (``acp_model.fuzzing.budget.slack``). The default agents are the
mutants whose bugs make waits run out (a cancel that never ends its work, prompts never
answered, a prompt hung during a permission request) and an agent that never answers prompts;
``--all`` adds the whole zoo, ``--profiles`` real agents installed with ``acp-model agents
install``. Printed: one row per run and the worst ratio of wall time to budget.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acp_model.agents.mutants import MUTANTS  # noqa: E402
from acp_model.fuzzing.budget import slack  # noqa: E402
from benchmarks import results  # noqa: E402

REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]
HANGING = ("cancel_no_idle", "never_idle", "prompt_never_answered", "busy_prompt_deadlock",
           "cancelled_prompt_unanswered", "stale_answer_resumes_tool")
MUTE = [sys.executable, str(ROOT / "tests" / "hostile" / "mute_prompts.py")]


def targets(everything: bool, profiles: list[str]) -> list[tuple[str, list[str]]]:
    names = [m.name for m in MUTANTS] if everything else list(HANGING)
    out = [("reference", ["--", *REFERENCE]), ("mute_prompts", ["--", *MUTE])]
    for name in names:
        spec = next(m.revisions[0] for m in MUTANTS if m.name == name)
        out.append((name, ["--spec", spec, "--", *REFERENCE, "--mutant", name,
                           "--spec", spec]))
    out += [(f"profile:{p}", ["--agent", p]) for p in profiles]
    return out


def one(name: str, words: list[str], budget: float, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "acp_model", "fuzz", "--time-budget", f"{budget:g}",
             "--seed", str(seed), "--report", str(report), "--out", str(Path(tmp) / "out"),
             *words], capture_output=True, text=True, cwd=ROOT)
        wall = time.monotonic() - started
        doc = json.loads(report.read_text()) if report.exists() else {}
    summary = doc.get("summary", {})
    return {"agent": name, "seed": seed, "commit": _commit(), "budget": budget,
            "wall": round(wall, 2),
            "bound": budget + slack(budget), "within": wall <= budget + slack(budget),
            "exit": proc.returncode, "verdict": doc.get("verdict"),
            "phases": summary.get("phases", {}),
            "failures": sorted({c["rule"] for c in doc.get("counterexamples", [])}),
            "minimize_cut": [c["rule"] for c in doc.get("counterexamples", [])
                             if c.get("minimize_cut")]}


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=ROOT, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=float, default=30.0)
    p.add_argument("--seeds", default="1", help="comma-separated seeds (default 1)")
    p.add_argument("--all", action="store_true", help="the whole mutant zoo")
    p.add_argument("--only", help="comma-separated agent names of the zoo set (profiles "
                   "named with --profiles always run)")
    p.add_argument("--profiles", default="", help="comma-separated installed agent profiles")
    p.add_argument("--fresh", action="store_true",
                   help="drop the rows of agents not run this time from --json")
    p.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "budget.json"))
    args = p.parse_args(argv)
    chosen = targets(args.all, [x for x in args.profiles.split(",") if x])
    if args.only:
        wanted = set(args.only.split(","))
        chosen = [t for t in chosen if t[0] in wanted or t[0].startswith("profile:")]
    rows = []
    print(f"{'agent':34} {'seed':>4} {'wall s':>7} {'bound s':>7}  verdict  phases")
    for seed in (int(s) for s in args.seeds.split(",")):
        for name, words in chosen:
            row = one(name, words, args.budget, seed)
            rows.append(row)
            phases = ", ".join(f"{k} {v:.1f}" for k, v in row["phases"].items())
            print(f"{name:34} {seed:>4} {row['wall']:>7.1f} {row['bound']:>7.1f}  "
                  f"{row['verdict'] or '-':7}  {phases}"
                  + ("" if row["within"] else "  OVER"), flush=True)
    out = Path(args.json)
    if out.exists() and not args.fresh:  # keep other agents' rows (e.g. the real agents')
        done = {(r["agent"], r["seed"]) for r in rows}
        old = json.loads(out.read_text()).get("runs", [])
        rows = [r for r in old if (r["agent"], r["seed"]) not in done] + rows
    worst = max(rows, key=lambda r: r["wall"] / r["budget"])
    over = sum(not r["within"] for r in rows)
    print(f"worst case: {worst['agent']} (seed {worst['seed']}): {worst['wall']:.1f} s for a "
          f"{worst['budget']:g} s budget (bound {worst['bound']:.1f} s, "
          f"{worst['wall'] / worst['budget']:.2f}x the budget); {over} of {len(rows)} run(s) "
          "over the bound")
    head = results.stamp(
        "budget", "The time budget bounds the whole run", [
            results.figure("worst wall time / budget", round(worst["wall"] / worst["budget"], 3),
                           "x", target="within budget + max(10%, 10 s)", met=not over),
            results.figure("runs over their bound", over, f"of {len(rows)}")],
        table={"columns": ["agent", "seed", "budget s", "wall s", "bound s", "within",
                           "verdict"],
               "rows": [[r["agent"], r["seed"], r["budget"], r["wall"], r["bound"],
                         r["within"], r["verdict"]] for r in rows]},
        command="python benchmarks/bench_budget.py")
    doc = {**head, "slack": "max(10% of the budget, 10 s)",
           "worst": {"agent": worst["agent"], "seed": worst["seed"], "wall": worst["wall"],
                     "budget": worst["budget"],
                     "ratio": round(worst["wall"] / worst["budget"], 3)},
           "over_bound": over, "runs": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"-> {args.json}")
    return 0 if not over else 1


if __name__ == "__main__":
    raise SystemExit(main())
