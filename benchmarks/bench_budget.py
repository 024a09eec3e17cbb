"""Does ``--time-budget`` bound the whole run? Wall time against budget + slack, worst case.

Run: ``python benchmarks/bench_budget.py [--budget 15] [--seeds 1] [--only NAME,..]
[--shard K/N] [--profiles NAME,..] [--lock PATH] [--fresh]``

Each agent is fuzzed by ``acp-model fuzz --time-budget B`` in a process of its own (one at a
time: the figure is a wall time), as a user would run it: the clock starts before the
``acp-model`` executable is spawned and stops when it has exited, so the interpreter's start,
the probe, generation, minimizing, replays, closing the agents and writing the report all
count. The wall time is compared with the budget plus the slack the design states
(``acp_model.fuzzing.budget.slack``: the larger of 10 % and 10 s).

The agents: the reference agent, every mutant of the zoo (``acp_model.agents.mutants``, each
under the revision it is a mutant of), three hostile agents (one that never answers a prompt,
one that never answers anything, one that ignores SIGTERM) and the real agents of
``--profiles`` that are installed (``acp-model agents install NAME``). Printed: one row per
run (budget, slack, wall time, within or over) and the worst case overall. Rows are merged
into ``benchmarks/results/budget.json`` as they come (a row replaces the previous one of the
same agent and seed), so the set can be run in parts (``--only``, ``--shard``);
``--fresh`` starts the file over. ``--lock PATH`` holds ``flock PATH`` (a shared machine's
lock) for one run at a time, never the whole benchmark. Exit 1 when a run ended past its
bound.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.progress import (  # noqa: E402
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table  # noqa: E402

from acp_model.agents.mutants import MUTANTS  # noqa: E402
from acp_model.fuzzing.budget import slack  # noqa: E402
from benchmarks import results  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "budget.json"
REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]
HOSTILE = ROOT / "tests" / "hostile"
HOSTILE_AGENTS = {  # name -> (script, what makes it hard on a budget)
    "mute_prompts": ("mute_prompts.py", "never answers a prompt"),
    "hang": ("hang.py", "never answers anything, not even initialize"),
    "ignore_sigterm": ("ignore_sigterm.py", "ignores SIGTERM and EOF: only SIGKILL ends it"),
}
REAL_AGENTS = ("claude-agent-acp", "codex-acp", "qwen-code", "opencode")
KILL_FACTOR = 3  # a run still alive at this many times its bound is killed (and counted over)


@dataclass(frozen=True)
class Target:
    """One agent to fuzz: its name in the results and the fuzz command's words for it."""

    name: str
    kind: str  # reference, mutant, hostile, real
    words: tuple[str, ...]


def zoo() -> list[Target]:
    """The reference agent, every mutant and the hostile agents."""
    out = [Target("reference", "reference", ("--", *REFERENCE))]
    for m in MUTANTS:
        spec = m.revisions[0]
        out.append(Target(m.name, "mutant",
                          ("--spec", spec, "--", *REFERENCE, "--mutant", m.name, "--spec", spec)))
    for name, (script, _why) in HOSTILE_AGENTS.items():
        out.append(Target(name, "hostile", ("--", sys.executable, str(HOSTILE / script))))
    return out


def real(names: list[str], console: Console) -> list[Target]:
    """The profiles among ``names`` that are installed here (the others are named and left)."""
    from acp_model.profiles import ProfileError, get

    out = []
    for name in names:
        try:
            installed = get(name).installed()
        except ProfileError as exc:
            console.print(f"[yellow]{name}: {exc}: left out[/]")
            continue
        if not installed:
            console.print(f"[yellow]{name}: not installed (acp-model agents install {name}): "
                          "left out[/]")
            continue
        out.append(Target(f"profile:{name}", "real", ("--agent", name)))
    return out


def choose(targets: list[Target], only: str | None, shard: str | None) -> list[Target]:
    """``--only`` names (a profile by its name or ``profile:NAME``), then shard ``K/N`` of it."""
    if only:
        wanted = {w.strip() for w in only.split(",") if w.strip()}
        targets = [t for t in targets if t.name in wanted or t.name.removeprefix("profile:")
                   in wanted]
    if shard:
        k, n = (int(x) for x in shard.split("/"))
        if not 1 <= k <= n:
            raise SystemExit(f"--shard {shard}: K must be between 1 and N")
        targets = targets[k - 1::n]
    return targets


def command() -> list[str]:
    """The ``acp-model`` executable beside this interpreter (what a user runs), or ``-m``."""
    exe = Path(sys.executable).with_name("acp-model")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "acp_model"]


def wall_time(argv: list[str], limit: float) -> tuple[float, int | None, str]:
    """Spawn ``argv``, wait for its exit; its wall time, exit code (None: killed at ``limit``)
    and the end of its error output."""
    with tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT,
                                start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
        wall = time.monotonic() - started
        err.seek(0)
        tail = err.read().strip().splitlines()[-1:] or [""]
    return wall, code, tail[0][:200]


def one(target: Target, budget: float, seed: int, commit: str) -> dict[str, Any]:
    """Fuzz ``target`` once with ``--time-budget budget``: its row (measured at ``commit``)."""
    bound = budget + slack(budget)
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        argv = [*command(), "fuzz", "--time-budget", f"{budget:g}", "--seed", str(seed),
                "--report", str(report), "--out", str(Path(tmp) / "out"), *target.words]
        wall, code, tail = wall_time(argv, KILL_FACTOR * bound)
        doc = json.loads(report.read_text()) if report.exists() else {}
    failures = doc.get("counterexamples", [])
    return {"agent": target.name, "kind": target.kind, "seed": seed, "commit": commit,
            "budget": budget, "slack": slack(budget), "bound": bound, "wall": round(wall, 2),
            "within": wall <= bound, "exit": code,
            "verdict": doc.get("verdict") or ("killed" if code is None else "no report"),
            "error": "" if doc else tail,
            "phases": doc.get("summary", {}).get("phases", {}),
            "failures": sorted({c["rule"] for c in failures}),
            "minimize_cut": sorted({c["rule"] for c in failures if c.get("minimize_cut")})}


def merged(rows: list[dict[str, Any]], path: Path, fresh: bool) -> list[dict[str, Any]]:
    """``rows`` after the rows of ``path`` not run again (none with ``fresh``)."""
    if fresh or not path.exists():
        return rows
    done = {(r["agent"], r["seed"]) for r in rows}
    old = json.loads(path.read_text()).get("runs", [])
    for r in old:  # rows written before these fields were
        r.setdefault("kind", "")
        r.setdefault("slack", r["bound"] - r["budget"])
        r.setdefault("error", "")
    return [r for r in old if (r["agent"], r["seed"]) not in done] + rows


def worst(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The run that came closest to (or went furthest past) its bound."""
    return max(rows, key=lambda r: r["wall"] / r["bound"])


def write(rows: list[dict[str, Any]], path: Path, argv: list[str]) -> None:
    """The results file in the common format (benchmarks/results.py), every run's row after."""
    w = worst(rows)
    over = sum(not r["within"] for r in rows)
    head = results.stamp(
        "budget", "The time budget bounds the whole run", [
            results.figure("worst wall time / (budget + slack)", round(w["wall"] / w["bound"], 3),
                           f"x ({w['agent']}: {w['wall']:.1f} s of {w['bound']:g} s)",
                           target="at most 1", met=not over),
            results.figure("worst wall time past the budget", round(w["wall"] - w["budget"], 2),
                           "s", target=f"at most the slack, {w['slack']:g} s",
                           met=w["wall"] - w["budget"] <= w["slack"]),
            results.figure("runs over budget + slack", over, f"of {len(rows)}",
                           target="0", met=not over)],
        table={"columns": ["agent", "kind", "seed", "budget s", "slack s", "wall s", "within",
                           "verdict"],
               "rows": [[r["agent"], r["kind"], r["seed"], r["budget"], r["slack"], r["wall"],
                         r["within"],
                         r["verdict"]] for r in rows]},
        command=" ".join(["python", "benchmarks/bench_budget.py", *argv]))
    # the results file itself is written between runs: only a row measured on changed code
    # makes the figures "with uncommitted changes"
    head["dirty"] = any(r["commit"].endswith("+dirty") for r in rows)
    doc = {**head, "parameters": {"budgets s": sorted({r["budget"] for r in rows}),
                                  "seeds": sorted({r["seed"] for r in rows})},
           "slack": "max(10% of the budget, 10 s)",
           "worst": {k: w[k] for k in ("agent", "seed", "budget", "slack", "wall")}
           | {"ratio": round(w["wall"] / w["bound"], 3)},
           "over_bound": over, "runs": rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")


def line(row: dict[str, Any]) -> str:
    """One run as a printed line."""
    phases = ", ".join(f"{k} {v:.1f}" for k, v in row["phases"].items())
    mark = "[green]within[/]" if row["within"] else "[bold red]OVER[/]"
    extra = f"  [dim]{row['error']}[/]" if row["error"] else ""
    return (f"{row['agent']:34} seed {row['seed']}  budget {row['budget']:g} s + slack "
            f"{row['slack']:g} s  wall {row['wall']:6.1f} s  {mark}  {row['verdict']:7}  "
            f"{phases}{extra}")


def table(rows: list[dict[str, Any]]) -> Table:
    out = Table(title="--time-budget: wall time from spawn to exit")
    for col in ("agent", "seed", "budget s", "slack s", "wall s", "within", "verdict"):
        out.add_column(col, justify="right" if col.endswith(" s") or col == "seed" else "left")
    for r in rows:
        out.add_row(r["agent"], str(r["seed"]), f"{r['budget']:g}", f"{r['slack']:g}",
                    f"{r['wall']:.1f}", "yes" if r["within"] else "[bold red]NO[/]",
                    r["verdict"])
    return out


def run(chosen: list[Target], budget: float, seeds: list[int], lock: str | None,
        out: Path, fresh: bool, argv: list[str], console: Console) -> list[dict[str, Any]]:
    """Every target at every seed, one at a time; the file is rewritten after each run."""
    rows: list[dict[str, Any]] = []
    commit = results.commit()  # before this run writes the results file (which would dirty it)
    jobs = [(t, s) for s in seeds for t in chosen]
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("", total=len(jobs))
        for target, seed in jobs:
            progress.update(task, description=f"{target.name} (seed {seed}): waiting for the "
                            "lock" if lock else f"{target.name} (seed {seed})")
            with results.locked(lock):
                progress.update(task, description=f"{target.name} (seed {seed}): fuzzing, "
                                f"{budget:g} s budget")
                row = one(target, budget, seed, commit)
            rows.append(row)
            progress.console.print(line(row), highlight=False, soft_wrap=True)
            write(merged(rows, out, fresh), out, argv)
            progress.advance(task)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=float, default=15.0, help="--time-budget of each run "
                   "(default 15 s)")
    p.add_argument("--seeds", default="1", help="comma-separated seeds (default 1)")
    p.add_argument("--only", help="comma-separated agent names (a mutant's, reference, a "
                   "hostile agent's, a profile's)")
    p.add_argument("--shard", metavar="K/N", help="run every N-th agent from the K-th")
    p.add_argument("--profiles", default=",".join(REAL_AGENTS),
                   help="comma-separated real agent profiles, those installed are run "
                   f"(default {','.join(REAL_AGENTS)}; '' for none)")
    p.add_argument("--lock", help="hold flock LOCK for each run (a shared machine's lock)")
    p.add_argument("--fresh", action="store_true", help="start the results file over")
    p.add_argument("--json", default=str(RESULTS))
    args = p.parse_args(argv)
    console = Console()
    profiles = [x.strip() for x in args.profiles.split(",") if x.strip()]
    chosen = choose(zoo() + real(profiles, console), args.only, args.shard)
    if not chosen:
        console.print("no agent chosen")
        return 2
    out = Path(args.json)
    # the file gathers parts (--only, --shard): it names the command of the whole set
    whole = ["--budget", f"{args.budget:g}", *(["--seeds", args.seeds] if args.seeds != "1"
                                               else [])]
    rows = run(chosen, args.budget, [int(s) for s in args.seeds.split(",")], args.lock, out,
               args.fresh, whole, console)
    every = json.loads(out.read_text())["runs"]  # this run's rows and the file's others
    console.print(table(rows))
    w = worst(every)
    over = [r["agent"] for r in every if not r["within"]]
    console.print(
        f"worst case: {w['agent']} (seed {w['seed']}): {w['wall']:.1f} s for a {w['budget']:g} s "
        f"budget + {w['slack']:g} s slack ({w['wall'] / w['bound']:.2f} of the bound, "
        f"{w['wall'] - w['budget']:+.1f} s past the budget); {len(over)} of {len(every)} run(s) "
        "in the file over the bound" + (f": {', '.join(over)}" if over else ""),
        highlight=False, soft_wrap=True)
    console.print(f"-> {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 1 if any(not r["within"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
