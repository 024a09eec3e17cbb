"""``acp-model fuzz --jobs N``: examples in parallel, one agent process per worker.

A real agent spends most of an example waiting on itself (a model round trip, a process that
does real work), so N workers fuzz N agent processes at once: each is an ``acp-model fuzz``
child with its own seed, scripted model and agent, all sharing one example database (a failure
one worker stored is replayed by the others), and their reports are merged into one
(``report/merge.py``). The revision is decided once, by the parent's probe, so every worker
judges by the same text. Ctrl-C reaches the workers; each writes what it found and the merge
still happens.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from acp_model.cli.common import EXIT_INTERRUPTED, EXIT_OK, PROGRESS, exit_code

if TYPE_CHECKING:
    from acp_model.spec.revisions import Decision

# Options the parent handles itself; everything else is passed to every worker unchanged.
_OWN = {"--jobs": 1, "--report": 1, "--junit": 1, "--html": 1, "--out": 1, "--seed": 1,
        "--spec": 1, "--db": 1, "--progress-lines": 0, "--client-profile": 1,
        "--time-budget": 1}  # the workers get what the parent's probe left of it


def worker_args(words: list[str]) -> list[str]:
    """The command line minus what the parent decides per worker."""
    out, skip = [], 0
    for word in words:
        if skip:
            skip -= 1
            continue
        name = word.split("=", 1)[0]
        if name in _OWN:
            skip = _OWN[name] if "=" not in word else 0
            continue
        out.append(word)
    return out


class Worker:
    def __init__(self, n: int, argv: list[str], report: Path) -> None:
        self.n, self.report = n, report
        self.progress: dict[str, Any] = {}
        self.phase = "start-up"
        self.tail: list[str] = []
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env={**os.environ, "COLUMNS": "200"})
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            if line.startswith(PROGRESS):
                with contextlib.suppress(ValueError):
                    self.progress = json.loads(line[len(PROGRESS):])
            elif line.startswith("phase: "):
                self.phase = line[len("phase: "):]
            else:
                self.tail = [*self.tail[-30:], line]


def _table(workers: list[Worker], started: float) -> Table:
    table = Table(title=f"{len(workers)} workers, {time.monotonic() - started:.0f} s")
    for col in ("worker", "phase", "examples", "actions", "failures"):
        table.add_column(col)
    for w in workers:
        p = w.progress
        table.add_row(str(w.n), w.phase, str(p.get("examples", 0)), str(p.get("actions", 0)),
                      ", ".join(p.get("failures", [])) or "-")
    total = sum(int(w.progress.get("actions", 0)) for w in workers)
    table.caption = f"{total} actions, {total / max(time.monotonic() - started, 1e-9):.1f}/s"
    return table


def run_jobs(args: argparse.Namespace, words: list[str], spec: str | None,
             console: Console, decision: Decision | None = None) -> int:
    """Run ``args.jobs`` workers and merge their reports; returns the exit code. ``decision``:
    how ``--spec auto`` chose ``spec`` before the workers started (the merged report states
    it, not the ``--spec`` the workers were given)."""
    from acp_model.fuzzing.orchestrator import Outputs, RunEnd
    from acp_model.report.merge import MergeError

    workers = _launch(args, words, spec, console)
    interrupted = _watch(workers, console)
    reports, names = _collect(workers, console)
    if not reports:
        return exit_code(RunEnd.VOID)
    try:
        merged = _merged(reports, names, args.jobs, decision)
    except MergeError as exc:
        console.print(f"[red]error:[/] {exc}")
        return exit_code(RunEnd.VOID)
    Outputs(report=_path(args.report), junit=_path(args.junit), html=_path(args.html)).write(
        merged, html=lambda: _merged_page(merged))
    _show(console, merged, args.jobs)
    if merged["verdict"] == "fail":
        return exit_code(RunEnd.FAILED)
    if interrupted or any(w.proc.returncode == EXIT_INTERRUPTED for w in workers):
        return exit_code(RunEnd.INTERRUPTED)
    judged = all(w.proc.returncode == EXIT_OK for w in workers)
    return exit_code(RunEnd.PASSED if judged else RunEnd.VOID)


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _launch(args: argparse.Namespace, words: list[str], spec: str | None,
            console: Console) -> list[Worker]:
    """Start the workers: the parent's command line minus what it decides per worker (seed,
    report, out folder), one shared example database, the agent's command last."""
    from acp_model.report.text import show

    tmp = Path(tempfile.mkdtemp(prefix="acp-model-jobs-"))
    db = args.db or [str(tmp / "db")]
    words = words[words.index("fuzz") + 1:] if "fuzz" in words else words
    # the agent's command (after ``--``) is passed on untouched, and last
    cut = words.index("--") if "--" in words else len(words)
    options, agent = words[:cut], words[cut:]
    base = [sys.executable, "-m", "acp_model", "fuzz", *worker_args(options), "--time-budget",
            f"{args.time_budget:g}", "--progress-lines", *[x for d in db for x in ("--db", d)]]
    if spec is not None:
        base += ["--spec", spec]
    if getattr(args, "client_profile", None):
        base += ["--client-profile", args.client_profile]  # drawn once by the parent
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(2), "big")
    workers = []
    for n in range(args.jobs):
        argv = [*base, "--seed", str(seed + n), "--report", str(tmp / f"worker-{n}.json")]
        if args.out:
            argv += ["--out", str(Path(args.out) / f"worker-{n}")]
        argv += agent
        workers.append(Worker(n, argv, tmp / f"worker-{n}.json"))
    show(console, f"{args.jobs} workers, seeds {seed}..{seed + args.jobs - 1}, shared "
         f"example database {', '.join(db)}", indent="")
    return workers


def _watch(workers: list[Worker], console: Console) -> bool:
    """The workers' live table until all have exited; whether Ctrl-C came meanwhile."""
    started = time.monotonic()
    try:
        with Live(_table(workers, started), console=console, refresh_per_second=2,
                  transient=not console.is_terminal) as live:
            while any(w.proc.poll() is None for w in workers):
                time.sleep(0.5)
                live.update(_table(workers, started))
    except KeyboardInterrupt:
        for w in workers:  # the workers got it too (same process group): let them write
            w.proc.wait()
        return True
    finally:
        for w in workers:
            w.reader.join(5)
    return False


def _collect(workers: list[Worker], console: Console) -> tuple[list[dict[str, Any]], list[str]]:
    """The reports the workers wrote, and their names; a worker without one is shown with the
    last lines it printed."""
    reports, names = [], []
    for w in workers:
        try:
            reports.append(json.loads(w.report.read_text(encoding="utf-8")))
            names.append(f"worker {w.n}")
        except (OSError, ValueError):
            console.print(f"[red]worker {w.n} wrote no report[/] (exit {w.proc.returncode}); "
                          "its last lines:\n" + "\n".join(w.tail[-10:]))
    return reports, names


def _merged(reports: list[dict[str, Any]], names: list[str], jobs: int,
            decision: Decision | None) -> dict[str, Any]:
    """One report of the workers': one agent run by ``jobs`` processes."""
    from acp_model.report.merge import merge_reports

    merged = merge_reports(reports, names)
    merged["command"] = "fuzz"
    merged["source"] = reports[0].get("source") or merged["source"]  # one agent, N processes
    if decision is not None:
        merged["spec"] = decision.to_json()
    summary = merged["summary"]
    summary["jobs"] = jobs
    seconds = summary.get("seconds_longest") or 0
    summary["actions_per_second"] = round(summary.get("actions", 0) / seconds, 1) \
        if seconds else 0.0
    return merged


def _merged_page(merged: dict[str, Any]) -> str:
    from acp_model.fuzzing.artifacts import merged_html

    return merged_html(merged)


def _show(console: Console, merged: dict[str, Any], jobs: int) -> None:
    from acp_model.report.reach import reach_line
    from acp_model.report.text import counterexample_line, render, show

    s = merged["summary"]
    console.print(f"{jobs} workers: {s.get('examples', 0)} examples, "
                  f"{s.get('actions', 0)} client actions in "
                  f"{s.get('seconds_longest') or 0} s ({s['actions_per_second']} actions/s)")
    if merged.get("reach"):
        show(console, reach_line(merged["reach"]), indent="")
    for note in merged["notes"]:  # why a worker stopped early, an agent it could not restart
        show(console, f"note: {note}", indent="")
    render(merged, console)
    for ce in merged.get("counterexamples", []):
        show(console, counterexample_line(ce, f"(found by {ce.get('worker')})"), indent="",
             markup=True)
