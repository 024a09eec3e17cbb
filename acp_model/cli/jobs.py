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

from acp_model.cli.common import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, PROGRESS

if TYPE_CHECKING:
    from acp_model.spec.revisions import Decision

# Options the parent handles itself; everything else is passed to every worker unchanged.
_OWN = {"--jobs": 1, "--report": 1, "--junit": 1, "--html": 1, "--out": 1, "--seed": 1,
        "--spec": 1, "--db": 1, "--progress-lines": 0,
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


def run_jobs(args: argparse.Namespace, words: list[str], spec: str | None,  # noqa: C901, PLR0915
             console: Console, decision: Decision | None = None) -> int:
    """Run ``args.jobs`` workers and merge their reports; returns the exit code. ``decision``:
    how ``--spec auto`` chose ``spec`` before the workers started (the merged report states
    it, not the ``--spec`` the workers were given)."""
    from acp_model.report.document import write_json
    from acp_model.report.junit import write_junit
    from acp_model.report.merge import MergeError, merge_reports
    from acp_model.report.reach import reach_line
    from acp_model.report.text import counterexample_line, render, show

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
    started = time.monotonic()
    interrupted = False
    try:
        with Live(_table(workers, started), console=console, refresh_per_second=2,
                  transient=not console.is_terminal) as live:
            while any(w.proc.poll() is None for w in workers):
                time.sleep(0.5)
                live.update(_table(workers, started))
    except KeyboardInterrupt:
        interrupted = True  # the workers got it too (same process group): let them write
        for w in workers:
            w.proc.wait()
    for w in workers:
        w.reader.join(5)
    reports, names = [], []
    for w in workers:
        try:
            reports.append(json.loads(w.report.read_text(encoding="utf-8")))
            names.append(f"worker {w.n}")
        except (OSError, ValueError):
            console.print(f"[red]worker {w.n} wrote no report[/] (exit {w.proc.returncode}); "
                          "its last lines:\n" + "\n".join(w.tail[-10:]))
    if not reports:
        return EXIT_USAGE
    try:
        merged = merge_reports(reports, names)
    except MergeError as exc:
        console.print(f"[red]error:[/] {exc}")
        return EXIT_USAGE
    merged["command"] = "fuzz"
    merged["source"] = reports[0].get("source") or merged["source"]  # one agent, N processes
    if decision is not None:
        merged["spec"] = decision.to_json()
    merged["summary"]["jobs"] = args.jobs
    seconds = merged["summary"].get("seconds_longest") or 0
    merged["summary"]["actions_per_second"] = round(
        merged["summary"].get("actions", 0) / seconds, 1) if seconds else 0.0
    if args.report:
        write_json(merged, args.report)
    if args.junit:
        write_junit(merged, args.junit)
    if args.html:
        from acp_model.fuzzing.artifacts import merged_html
        from acp_model.report.html import write_html

        write_html(merged_html(merged), args.html)
    s = merged["summary"]
    console.print(f"{args.jobs} workers: {s.get('examples', 0)} examples, "
                  f"{s.get('actions', 0)} client actions in {seconds} s "
                  f"({s['actions_per_second']} actions/s)")
    if merged.get("reach"):
        show(console, reach_line(merged["reach"]), indent="")
    for note in merged["notes"]:  # why a worker stopped early, an agent it could not restart
        show(console, f"note: {note}", indent="")
    render(merged, console)
    for ce in merged.get("counterexamples", []):
        show(console, counterexample_line(ce, f"(found by {ce.get('worker')})"), indent="",
             markup=True)
    if merged["verdict"] == "fail":
        return EXIT_FAIL
    if interrupted or any(w.proc.returncode == EXIT_INTERRUPTED for w in workers):
        return EXIT_INTERRUPTED
    return EXIT_OK if all(w.proc.returncode == EXIT_OK for w in workers) else EXIT_USAGE
