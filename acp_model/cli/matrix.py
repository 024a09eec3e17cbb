"""``acp-model matrix``: fuzz every profiled agent under each protocol it speaks, one table.

Each row (an agent under one protocol) is an ``acp-model fuzz`` child process, as ``fuzz
--jobs`` runs its workers: its own scripted model, agent and ``--out`` folder (report.json,
counterexamples, replay files), ``--jobs`` of them at once. A profile that cannot run offline
is a row with its reason and is never started; a run that judged nothing (the agent did not
start) is a row with the error. The rows become ``matrix.json`` and one self-contained
``matrix.html`` (``report/matrix.py``, ``report/matrix_html.py``); ``--compare`` says what
changed since an earlier matrix, ``--docs`` writes the agents page from a matrix.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from acp_model.argtypes import int_at_least, positive_float
from acp_model.cli.common import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, UsageError
from acp_model.fuzzing.budget import MATRIX_GROWTH
from acp_model.llm.apis import ADAPTERS
from acp_model.report.matrix import Cell, RowStatus, Target, row_from_report, row_without_run
from acp_model.spec.revisions import AUTO

TARGET = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)(?:@(?P<protocols>v?[12](?:,v?[12])*))?="
                    r"(?P<command>.+)$", re.S)
EPILOG = """Rows: every profile (`acp-model agents`) under each protocol it speaks, or the
NAMES given, or only the --target command lines. An unavailable profile (it cannot run
offline) and one not installed are rows saying so; neither is started.
more examples:
  acp-model matrix qwen-code --budget 60 --out m2 --compare matrix/matrix.json
  acp-model matrix --out m --target ref="python -m acp_model.agents.reference"
  acp-model matrix --from m2/matrix.json --compare matrix/matrix.json
  acp-model matrix --from matrix/matrix.json --docs docs/agents.md
  acp-model matrix --row codex-acp@v1 --out rows/codex-acp-v1 --previous old/matrix.json
  acp-model matrix --merge rows/*/ --out site --previous old/matrix.json
  acp-model matrix --rejudge matrix --docs docs/agents.md
  acp-model matrix --rejudge matrix --reading A-11=sent --out strict --docs strict.md
example: acp-model matrix --budget 120 --jobs 2 --out matrix
exit codes: 0 no failure, 1 a failure in some row, 2 usage error, 130 interrupted."""


def parse_target(text: str) -> list[Target]:
    """``NAME[@v1,v2]=COMMAND``: an agent command line as rows (default protocol v2)."""
    m = TARGET.match(text)
    if m is None:
        raise UsageError(f"--target {text!r}: expected NAME=COMMAND or NAME@v1=COMMAND")
    try:
        command = tuple(shlex.split(m["command"]))
    except ValueError as exc:
        raise UsageError(f"--target {text!r}: {exc}") from None
    if not command:
        raise UsageError(f"--target {text!r}: the command is empty")
    protocols = [int(p.removeprefix("v")) for p in (m["protocols"] or "2").split(",")]
    return [Target(m["name"], p, command=command) for p in dict.fromkeys(protocols)]


def _profile_rows(names: list[str]) -> tuple[list[Target], list[dict[str, Any]]]:
    """Targets to fuzz, and the rows of profiles that will not be started."""
    from acp_model.profiles import PROFILES, ProfileError, get

    try:
        chosen = [get(n) for n in names] if names else list(PROFILES.values())
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    from acp_model.spec.families import families

    known = {f.id for f in families()}
    runs, rows = [], []
    for p in chosen:
        unknown = sorted(set(p.never_by_design) - known)
        if unknown:
            raise UsageError(f"profile {p.name}: never_by_design names {', '.join(unknown)}, "
                             f"not a rule family (one of {', '.join(sorted(known))})")
        for protocol in p.protocols:
            target = Target(p.name, protocol, title=p.title, version=p.version,
                            package=p.package, model_api=p.model_api,
                            by_design=tuple(p.never_by_design.items()))
            if p.unavailable:
                rows.append(row_without_run(target, RowStatus.UNAVAILABLE, p.unavailable,
                                            p.unavailable_short))
            elif not p.installed():
                rows.append(row_without_run(target, RowStatus.NOT_INSTALLED,
                                            f"run `acp-model agents install {p.name}`"))
            else:
                runs.append(target)
    return runs, rows


MINIMIZE_GATE = ".minimize.lock"  # the rows' --minimize-alone gate, in the matrix's --out


def _folder(target: Target) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{target.agent}-v{target.protocol}")


def _spec_for(spec: str, protocol: int) -> str | None:
    """The revision a row is judged by: ``auto`` (the probe decides, offered this protocol),
    or the named one when it is of this protocol (None: the row is left out)."""
    from acp_model.spec.revisions import AUTO, get

    if spec == AUTO:
        return AUTO
    return spec if get(spec).protocol == protocol else None


def _fuzz_argv(args: argparse.Namespace, target: Target, spec: str, folder: Path,
               seed: int) -> list[str]:
    argv = [sys.executable, "-m", "acp_model", "fuzz", "--progress-lines",
            "--time-budget", str(args.budget), "--max-examples", "100000",
            "--protocol", f"v{target.protocol}", "--spec", spec, "--seed", str(seed),
            "--replay-runs", str(args.replay_runs),
            "--minimize-budget", str(args.minimize_budget or min(60.0, args.budget)),
            "--minimize-growth", str(MATRIX_GROWTH),
            *(["--minimize-trials", str(args.minimize_trials)]
              if getattr(args, "minimize_trials", None) else []),
            # rows fuzz --jobs at a time, but minimize one at a time with nothing else running
            "--minimize-alone", str(folder.parent / MINIMIZE_GATE),
            "--out", str(folder), "--report", str(folder / "report.json")]
    if getattr(args, "coverage", False):  # the agent's own ACP layer, measured per row
        argv.append("--coverage")
        if target.command:  # a profile names its layer; a command line's is given here
            argv += [f"--coverage-scope={g}" for g in args.coverage_scope or ()]
    if not target.command:  # a profile
        return [*argv, "--agent", target.agent]
    if target.model_api:
        argv += ["--model", target.model_api]
    return [*argv, "--", *target.command]


def _progress(workers: dict[str, Any], waiting: list[Target], done: dict[str, str],
              started: float) -> Table:
    table = Table(title=f"acp-model matrix: {len(done)} done, {len(workers)} running, "
                        f"{len(waiting)} waiting, {time.monotonic() - started:.0f} s")
    for col in ("row", "phase", "examples", "actions", "failures"):
        table.add_column(col)
    for key, verdict in done.items():
        table.add_row(key, verdict, "", "", "")
    for key, w in workers.items():
        p = w.progress
        table.add_row(key, w.phase, str(p.get("examples", 0)), str(p.get("actions", 0)),
                      ", ".join(p.get("failures", [])) or "-")
    for t in waiting:
        table.add_row(t.key, "waiting", "", "", "")
    return table


def run_rows(args: argparse.Namespace, targets: list[Target], out: Path, console: Console
             ) -> tuple[list[dict[str, Any]], bool]:
    """Fuzz each target in a child process, ``--jobs`` at once; returns the rows and whether
    the run was interrupted (Ctrl-C reaches the children, which still write their reports)."""
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(2), "big")
    runs = _Runs(args, targets, out, seed, console)
    interrupted = False
    try:
        with Live(runs.progress(), console=console, refresh_per_second=2,
                  transient=not console.is_terminal) as live:
            while runs.waiting or runs.running:
                while runs.waiting and len(runs.running) < args.jobs:
                    runs.start(runs.waiting.pop(0))
                time.sleep(0.5)
                runs.harvest()
                live.update(runs.progress())
    except KeyboardInterrupt:
        interrupted = True  # the children got it too (same process group): let them write
        runs.interrupted()
    (out / MINIMIZE_GATE).unlink(missing_ok=True)  # no run is left to hold it
    order = [t.key for t in targets]
    return [runs.rows[k] for k in order if k in runs.rows], interrupted


class _Runs:
    """The matrix's child runs: waiting, running (by target key), done (their outcome), each
    one's folder, and the rows their reports gave."""

    def __init__(self, args: argparse.Namespace, targets: list[Target], out: Path, seed: int,
                 console: Console) -> None:
        self.args, self.targets, self.out, self.seed = args, targets, out, seed
        self.console = console
        self.waiting = list(targets)
        self.running: dict[str, Any] = {}
        self.done: dict[str, str] = {}
        self.rows: dict[str, dict[str, Any]] = {}
        self.folders: dict[str, Path] = {}
        self.started = time.monotonic()

    def progress(self) -> Any:
        return _progress(self.running, self.waiting, self.done, self.started)

    def start(self, target: Target) -> None:
        """A child fuzz run for ``target``, in a folder cleared of any earlier run's files."""
        from acp_model.cli.jobs import Worker

        spec = _spec_for(self.args.spec, target.protocol)
        folder = (self.out / _folder(target)).resolve()
        shutil.rmtree(folder, ignore_errors=True)  # no file of an earlier run
        folder.mkdir(parents=True)
        self.folders[target.key] = folder
        assert spec is not None
        argv = _fuzz_argv(self.args, target, spec, folder, self.seed)
        self.running[target.key] = Worker(len(self.folders), argv, folder / "report.json")
        if not self.console.is_terminal:
            self.console.print(f"{target.key}: started")

    def harvest(self) -> None:
        """The rows of the children that ended."""
        for key, w in list(self.running.items()):
            if w.proc.poll() is not None:
                w.reader.join(5)
                del self.running[key]
                self.finish(key, w)
                if not self.console.is_terminal:
                    self.console.print(f"{key}: {self.done[key]}")

    def interrupted(self) -> None:
        """After a Ctrl-C: the running children's reports, and an error row for the rest."""
        for key, w in self.running.items():
            w.proc.wait()
            w.reader.join(5)
            self.finish(key, w)
        for t in self.waiting:
            self.rows[t.key] = row_without_run(t, RowStatus.ERROR, "not run: interrupted")

    def finish(self, key: str, w: Any) -> None:
        """The row of the child run for ``key``, from its report (an error row without)."""
        target = next(t for t in self.targets if t.key == key)
        try:
            report = json.loads(w.report.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            tail = " | ".join(line.strip() for line in w.tail[-6:] if line.strip())
            self.rows[key] = row_without_run(target, RowStatus.ERROR,
                                             f"the fuzz run wrote no report (exit "
                                             f"{w.proc.returncode}): {tail}")
            self.done[key] = "error"
            return
        row = self.rows[key] = row_from_report(target, report, self.out, w.report,
                                               self.folders[key])
        row["exit"] = w.proc.returncode
        self.done[key] = row["status"] if row["status"] != RowStatus.RAN \
            else str(report.get("verdict"))


MODES = ("row", "merge", "rejudge", "from_file")


def cmd_matrix(args: argparse.Namespace, console: Console) -> int:
    from acp_model.report.matrix import MatrixError, compare, load

    _check_modes(args)
    interrupted = False
    try:
        previous = load(args.previous) if args.previous else None
        old = load(args.compare) if args.compare else None
        if args.from_file:
            doc = load(args.from_file)
            out = Path(args.from_file).resolve().parent
        elif args.row:
            return _one_row(args, console, previous)
        elif args.merge:
            doc, out = _merge(args, previous)
        elif args.rejudge:
            doc, out = _rejudge(args, console)
        else:
            doc, out, interrupted = _run(args, console)
    except MatrixError as exc:
        raise UsageError(str(exc)) from None
    if old is not None:
        doc["compare"] = {"against": str(args.compare), "changes": compare(old, doc)}
    if not args.from_file:
        _publish(doc, out, previous)
        console.print(f"wrote {out / 'matrix.json'}, {out / 'matrix.html'} and "
                      f"{out / 'badges'}/")
    elif args.html:
        _write_html(doc, Path(args.html))
        console.print(f"wrote {args.html}")
    _print_table(doc, console)
    if doc.get("compare"):
        _print_changes(doc["compare"]["changes"], console)
    if args.docs:
        _write_docs(args, doc, out, console)
    if any(c.get("status") == Cell.FAIL for r in doc["rows"]
           for c in (r.get("cells") or {}).values()):
        return EXIT_FAIL
    return EXIT_INTERRUPTED if interrupted else EXIT_OK


def _check_modes(args: argparse.Namespace) -> None:
    """One of --row, --merge, --rejudge, --from (or none: a run), with what goes with it."""
    chosen = [m for m in MODES if getattr(args, m)]
    if len(chosen) > 1:
        raise UsageError(" and ".join(f"--{m.replace('_file', '')}" for m in chosen)
                         + " do different things: give one")
    mode = chosen[0] if chosen else None
    if mode in ("from_file", "merge", "rejudge", "row") and (args.names or args.target):
        raise UsageError(f"--{mode.replace('_file', '')} takes no agent names or --target")
    if args.html and mode != "from_file":
        raise UsageError("--html goes with --from (a run writes DIR/matrix.html itself)")
    if args.reading and mode != "rejudge":
        raise UsageError("--reading goes with --rejudge (a recorded run judged under it)")
    if args.compact and not (mode == "rejudge" and args.out):
        raise UsageError("--compact goes with --rejudge RUN --out DIR (a compacted copy)")
    if mode in ("row", "merge") and not args.out:
        raise UsageError(f"--{mode} needs --out DIR")
    if mode == "rejudge" and (args.reading or args.spec != AUTO) and not args.out:
        raise UsageError("--rejudge under another reading or --spec writes a new matrix: "
                         "give --out DIR (the recorded run stays as it is)")


def _publish(doc: dict[str, Any], out: Path, previous: dict[str, Any] | None) -> None:
    """Everything a matrix folder holds: its history (with --previous), an issue body per
    failure, a badge per agent, matrix.json and matrix.html."""
    from acp_model.matrix.bugs import write_issues
    from acp_model.matrix.history import history
    from acp_model.report.badge import write_badges

    if previous is not None:
        doc["history"] = history(previous, doc)
    write_issues(doc, out)
    write_badges(doc, out)
    _write(doc, out)


def _write_docs(args: argparse.Namespace, doc: dict[str, Any], out: Path,
                console: Console) -> None:
    """The agents page (and each reviewed true bug's report), or, for a re-judging under
    another reading or revision, the page of what it would change."""
    from acp_model.report.matrix_docs import render_docs, render_rejudged

    docs = Path(args.docs)
    notes = Path(args.notes) if args.notes else docs.parent / "agent-notes"
    docs.parent.mkdir(parents=True, exist_ok=True)
    if args.rejudge and (args.reading or args.spec != AUTO):
        docs.write_text(render_rejudged(doc, base=out, docs=docs), encoding="utf-8")
        console.print(f"wrote {docs}")
        return
    from acp_model.matrix.bugs import ReviewError, load_reviews, write_reviewed

    try:
        reviews = load_reviews(notes / "reviewed.toml")
        read_warnings = load_reviews(notes / "reviewed.toml", "warning")
    except ReviewError as exc:
        raise UsageError(str(exc)) from None
    kept = write_reviewed(doc, out, reviews, notes / "bugs")
    docs.write_text(render_docs(doc, base=out, docs=docs, notes=notes, reviews=reviews,
                                reports=kept, warning_reviews=read_warnings),
                    encoding="utf-8")
    console.print(f"wrote {docs}" + (f" and {len(kept)} report(s) in {notes / 'bugs'}"
                                     if kept else ""))


def _targets(args: argparse.Namespace) -> tuple[list[Target], list[dict[str, Any]]]:
    """The rows to fuzz (profiles named or all, and --target command lines) and the rows of
    profiles that will not be started."""
    from acp_model.fuzzing.frontend import agent_problem

    targets: list[Target] = []
    for text in args.target or []:
        for t in parse_target(text):
            problem = agent_problem(list(t.command))
            if problem is not None:
                raise UsageError(f"--target {t.agent}: {problem}")
            targets.append(t if args.model is None else Target(
                t.agent, t.protocol, command=t.command, model_api=args.model))
    fixed: list[dict[str, Any]] = []
    if args.names or not args.target:
        runs, fixed = _profile_rows(list(args.names))
        targets = runs + targets
    keys = [t.key for t in targets]
    if len(set(keys)) != len(keys):
        twice = sorted({k for k in keys if keys.count(k) > 1})
        raise UsageError(f"two rows named alike: {', '.join(twice)}")
    return [t for t in targets if _spec_for(args.spec, t.protocol) is not None], fixed


def _settings(args: argparse.Namespace, interrupted: bool = False) -> dict[str, Any]:
    from acp_model.matrix.rows import now

    settings = {"budget": args.budget, "jobs": args.jobs, "spec": args.spec,
                "seed": args.seed, "replay_runs": args.replay_runs, "created": now(),
                "interrupted": interrupted}
    if getattr(args, "coverage", False):  # (absent otherwise: older matrices have none)
        settings["coverage"] = True
    return settings


def _time_words(args: argparse.Namespace, runs: int) -> str:
    """What the run's wall-clock is made of, stated before it starts: the fuzzing, then up
    to the per-failure bounds (minimizing, then the replays) of each failure, one at a time
    (a user who reads only "15 runs of 120 s" expects minutes where a slow agent's failures
    take an hour)."""
    from acp_model.fuzzing.budget import failure_budget

    fuzzing = -(-runs // max(1, args.jobs)) * args.budget
    minimize, replays = failure_budget(args.minimize_budget or min(60.0, args.budget),
                                       MATRIX_GROWTH)
    return (f"about {fuzzing / 60:.0f} min of fuzzing; then each failure found is minimized "
            f"and replayed one at a time: up to {minimize:g} s and {replays:g} s each "
            "(a fast agent's failure ends at its fixpoint well before)")


def _run(args: argparse.Namespace, console: Console) -> tuple[dict[str, Any], Path, bool]:
    from acp_model.report.matrix import document

    if not args.out:
        raise UsageError("--out DIR is needed to run a matrix (each run keeps its files "
                         "there); --from FILE reads one instead")
    targets, fixed = _targets(args)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    console.print(f"{len(targets)} run(s) of {args.budget:g} s, {args.jobs} at a time"
                  + (f"; {len(fixed)} row(s) not started" if fixed else ""))
    console.print(_time_words(args, len(targets)))
    rows, interrupted = run_rows(args, targets, out, console)
    settings = _settings(args, interrupted)
    for row in rows:
        row["created"] = settings["created"]
    return document([*rows, *fixed], settings), out, interrupted


ROW = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)@v?(?P<protocol>[12])(?:=(?P<command>.+))?$", re.S)


def row_target(text: str) -> tuple[Target | None, dict[str, Any] | None]:
    """``NAME@vN`` (a profile under one protocol) or ``NAME@vN=COMMAND`` (a command line):
    the target to fuzz, or the row of a profile that is not to be started (unavailable)."""
    from acp_model.profiles import ProfileError, get

    m = ROW.match(text)
    if m is None:
        raise UsageError(f"--row {text!r}: expected NAME@v1 (a profile) or NAME@v1=COMMAND")
    if m["command"] is not None:
        (target,) = parse_target(f"{m['name']}@v{m['protocol']}={m['command']}")
        return target, None
    try:
        profile = get(m["name"])
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    protocol = int(m["protocol"])
    if protocol not in profile.protocols:
        raise UsageError(f"--row {text}: {profile.name} speaks ACP "
                         + ", ".join(f"v{v}" for v in profile.protocols))
    target = Target(profile.name, protocol, title=profile.title, version=profile.version,
                    package=profile.package, model_api=profile.model_api,
                    by_design=tuple(profile.never_by_design.items()))
    if profile.unavailable:
        return None, row_without_run(target, RowStatus.UNAVAILABLE, profile.unavailable,
                                     profile.unavailable_short)
    return target, None


def _one_row(args: argparse.Namespace, console: Console,
             previous: dict[str, Any] | None) -> int:
    """``--row``: one row as a job: reused from the previous matrix when nothing changed,
    else installed (a profile) and fuzzed; ``DIR/row.json`` either way."""
    from acp_model.matrix.rows import reusable, reused, write_row
    from acp_model.report.matrix import document

    target, fixed = row_target(args.row)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    settings = _settings(args)
    interrupted = False
    old = None if args.force or target is None else reusable(previous, target, settings)
    if fixed is not None:
        row = {**fixed, "created": settings["created"]}
    elif old is not None:
        assert previous is not None
        row = reused(old, previous)
        console.print(f"{row['key']}: reused from the previous matrix (same version "
                      f"{row.get('version')}, acp-model {row.get('acp_model')}, ran "
                      f"{row.get('created')}); --force runs it again")
    else:
        assert target is not None
        if _spec_for(args.spec, target.protocol) is None:
            raise UsageError(f"--row {args.row}: --spec {args.spec} judges another protocol")
        _install(target, console)
        rows, interrupted = run_rows(args, [target], out, console)
        row = {**rows[0], "created": settings["created"]}
    write_row(out, row, {**settings, "interrupted": interrupted})
    console.print(f"wrote {out / 'row.json'}")
    doc = document([row], settings)
    _print_table(doc, console)
    if any(c.get("status") == Cell.FAIL for c in (row.get("cells") or {}).values()):
        return EXIT_FAIL
    return EXIT_INTERRUPTED if interrupted else EXIT_OK


def _install(target: Target, console: Console) -> None:
    """A profile's agent, installed from its lockfiles if it is not yet."""
    if target.command:
        return
    from acp_model.profiles import ProfileError, get

    profile = get(target.agent)
    if profile.installed():
        return
    console.print(f"{profile.name}: installing {profile.package}@{profile.version} ...")
    try:
        profile.install()
    except ProfileError as exc:
        raise UsageError(str(exc)) from None


def _merge(args: argparse.Namespace, previous: dict[str, Any] | None
           ) -> tuple[dict[str, Any], Path]:
    from acp_model.matrix.rows import merge

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    base = Path(args.previous).resolve().parent if args.previous else None
    return merge([Path(d) for d in args.merge], out, previous, base), out


def _rejudge(args: argparse.Namespace, console: Console) -> tuple[dict[str, Any], Path]:
    """``--rejudge RUN``: the recorded run judged by the current code (in place, or in a
    copy at --out, --compact for a repository), or under --reading/--spec into --out (with
    what that changes against today's verdicts)."""
    from acp_model.matrix.keep import compact_run
    from acp_model.matrix.rejudge import RejudgeError, rejudge
    from acp_model.matrix.rows import copy_run
    from acp_model.report.matrix import load

    run = Path(args.rejudge)
    source = run / "matrix.json" if run.is_dir() else run
    doc = load(source)
    base = source.resolve().parent
    out = Path(args.out).resolve() if args.out else base
    if out != base:  # judged where it is kept: a compacted copy is what its pages show
        out.mkdir(parents=True, exist_ok=True)
        for row in doc["rows"]:
            (compact_run if args.compact else copy_run)(row, base, out)
    spec = None if args.spec == AUTO else args.spec
    try:
        new = rejudge(doc, out, list(args.reading or []), spec, rewrite=True)
    except RejudgeError as exc:
        raise UsageError(str(exc)) from None
    what = ", ".join([*(args.reading or []), *([f"spec {spec}"] if spec else [])])
    console.print(f"re-judged {source} with acp-model {new['judged_by']['version']}"
                  + (f" under {what}" if what else ""))
    return new, out


def _write(doc: dict[str, Any], out: Path) -> None:
    from acp_model.report.document import write_json

    write_json(doc, out / "matrix.json")
    _write_html(doc, out / "matrix.html")


def _write_html(doc: dict[str, Any], path: Path) -> None:
    from acp_model.report.matrix_html import render_matrix

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_matrix(doc), encoding="utf-8")


SHORT = {"fail": "[bold red]FAIL[/]", "warn": "[yellow]warn[/]", "pass": "[green]pass[/]",
         "not exercised": "[dim]none[/]", "not applicable": "[dim]n/a[/]"}
BY_DESIGN = "[dim]n/a (design)[/]"  # not applicable: the agent never does it, by design


def _short(cell: dict[str, Any]) -> str:
    return BY_DESIGN if cell.get("by_design") else SHORT.get(cell["status"], cell["status"])


def _print_table(doc: dict[str, Any], console: Console) -> None:
    """The matrix in the terminal: a cell's verdict (``none``: its rules never ran) and the
    failing rules; the page has the counts and the links."""
    fams = doc.get("families") or []
    if console.width < 40 + 11 * len(fams):
        _print_lines(doc, console)
        return
    table = Table(title="conformance matrix (none: not exercised; n/a (design): the agent "
                        "never does it, by design)", show_lines=False)
    table.add_column("agent", no_wrap=True)
    table.add_column("version", no_wrap=True)
    table.add_column("ACP", no_wrap=True)
    for f in fams:
        table.add_column(f["title"], overflow="fold")
    for row in doc["rows"]:
        cells = row.get("cells") or {}
        if row["status"] != RowStatus.RAN:
            table.add_row(row["agent"], row.get("version") or "", f"v{row['protocol']}",
                          f"[dim]{escape(row['status'])}: {escape(str(row.get('reason')))}[/]")
            continue
        table.add_row(row["agent"], row.get("version") or "", f"v{row['protocol']}", *(
            _short(c)
            + (f" {', '.join(x['rule'] for x in c['failures'])}" if c["failures"] else "")
            for c in (cells.get(f["id"], {"status": "-", "failures": []}) for f in fams)))
    console.print(table)


def _print_lines(doc: dict[str, Any], console: Console) -> None:
    """The matrix on a narrow terminal: a line per row, the families that are not a pass."""
    titles = {f["id"]: f["title"] for f in doc.get("families") or []}
    console.print("[bold]conformance matrix[/] (the families not named passed)")
    for row in doc["rows"]:
        head = f"{row['agent']} {row.get('version') or ''} v{row['protocol']}"
        if row["status"] != RowStatus.RAN:
            console.print(f"{escape(head)}: [dim]{escape(row['status'])}: "
                          f"{escape(str(row.get('reason')))}[/]")
            continue
        parts = []
        for fam, c in (row.get("cells") or {}).items():
            if c.get("by_design"):
                parts.append(f"{BY_DESIGN} {escape(titles.get(fam, fam))}")
                continue
            if c["status"] in (Cell.PASS, Cell.NOT_APPLICABLE):
                continue
            rules = [x["rule"] for x in (c.get("failures") or c.get("warnings") or [])]
            label = "[dim]not exercised[/]" if c["status"] == Cell.NOT_EXERCISED \
                else SHORT[c["status"]]
            parts.append(f"{label} {escape(titles.get(fam, fam))}"
                         + (f" ({', '.join(rules)})" if rules else ""))
        console.print(f"{escape(head)}: " + ("; ".join(parts) or SHORT[Cell.PASS]))


def _print_changes(changes: list[dict[str, Any]], console: Console) -> None:
    if not changes:
        console.print("no change against the earlier matrix")
        return
    table = Table(title="changes against the earlier matrix")
    for col in ("row", "family", "change", "rule", "detail"):
        table.add_column(col)
    for c in changes:
        detail = c.get("detail") or ""
        table.add_row(c["row"], c.get("family_title") or "", c["change"], c.get("rule") or "",
                      escape(detail if len(detail) <= 100 else detail[:99] + "…"))
    console.print(table)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "matrix", help="fuzz every profiled agent under each protocol: one conformance table",
        description="Fuzz each profiled agent (or the NAMES given, or --target command lines) "
        "under each protocol it speaks, for a budget per row, and write matrix.json and a "
        "self-contained matrix.html: rows agent/version/protocol, columns rule families, "
        "each failure linked to its counterexample and replay file.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _run_options(p)
    _job_options(p.add_argument_group("one row as a job, and the merge of rows"))
    _reading_options(p.add_argument_group("a recorded matrix"))
    p.set_defaults(func=cmd_matrix)


def _run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NAME", help="profiles to fuzz (default: all)")
    p.add_argument("--budget", type=positive_float, default=120.0, metavar="SECONDS",
                   help="fuzzing time per row (default 120)")
    p.add_argument("--jobs", type=int_at_least(1), default=1, metavar="N",
                   help="rows fuzzed at once, each in its own process (default 1)")
    p.add_argument("--out", metavar="DIR", help="where matrix.json, matrix.html and each "
                   "row's run (report.json, counterexamples, replay files) are written")
    p.add_argument("--target", action="append", metavar="NAME[@v1,v2]=COMMAND",
                   help="an agent command line as a row (repeatable; protocol v2 unless "
                        "given)")
    p.add_argument("--model", choices=tuple(ADAPTERS), help="put the scripted model behind the "
                   "--target agents (the API they call)")
    p.add_argument("--spec", default="auto", choices=("auto", "seed", "sdk-2.4.0", "v1"),
                   help="the revision that judges: auto (a probe decides, per row; default), "
                        "or a named one (only the rows of its protocol; with --rejudge, the "
                        "rows of its protocol judged again under it)")
    p.add_argument("--seed", type=int, help="seed of every row's run")
    p.add_argument("--replay-runs", type=int_at_least(1), default=3,
                   help="fresh-process replays of each counterexample (default 3)")
    p.add_argument("--minimize-budget", type=positive_float, metavar="S",
                   help="the outer bound in seconds of each failure's minimizing, grown up "
                        f"to {MATRIX_GROWTH:g} S on a slow agent (acp-model fuzz "
                        "--minimize-budget; default: the budget, at most 60)")
    p.add_argument("--minimize-trials", type=int_at_least(1), metavar="N",
                   help="each failure's minimizing budget in trials (acp-model fuzz "
                        "--minimize-trials; default: what its program's length needs)")
    p.add_argument("--coverage", action="store_true",
                   help="measure each row's agent's own coverage of its ACP layer (acp-model "
                        "fuzz --coverage): the grid's coverage column")
    p.add_argument("--coverage-scope", action="append", metavar="GLOB[#MODULE]",
                   help="the ACP layer of the --target agents (repeatable; a profile names "
                        "its own; default: the automatic scope)")


def _job_options(g: Any) -> None:
    g.add_argument("--row", metavar="NAME@vN[=COMMAND]",
                   help="run exactly one row (a profile under one protocol, installed if it "
                        "is not, or a command line) and write DIR/row.json for --merge: a job "
                        "of a workflow that fans the rows out")
    g.add_argument("--merge", nargs="+", metavar="DIR",
                   help="one matrix (matrix.json, matrix.html, badges, --docs) of the rows "
                        "that --row wrote into these folders; their run folders are copied "
                        "into --out")
    g.add_argument("--previous", metavar="OLD.json",
                   help="the previous matrix: --row reuses its row when agent version, "
                        "acp-model version, budget and spec are the same; --merge takes the "
                        "files of reused rows from its folder; the page keeps its history per "
                        "agent and adds this run")
    g.add_argument("--force", action="store_true",
                   help="with --row: run it even when the previous matrix's row could be reused")


def _reading_options(g: Any) -> None:
    g.add_argument("--rejudge", metavar="RUN",
                   help="judge a recorded matrix run (its folder or matrix.json) again with "
                        "the current code: every failure's and warning's transcript is checked "
                        "again, and matrix.json, matrix.html (and --docs) rewritten; with "
                        "--reading or --spec, into --out, beside today's verdicts")
    g.add_argument("--compact", action="store_true",
                   help="with --rejudge and --out: copy only what the pages and re-judging "
                        "read, each transcript cut to its proof beyond 192 KB (a run kept in "
                        "a repository)")
    g.add_argument("--reading", action="append", metavar="NAME=VALUE",
                   help="with --rejudge: judge under this reading of an ambiguity "
                        "(repeatable; `acp-model rules --help` lists them)")
    g.add_argument("--compare", metavar="OLD.json", help="say what changed since this matrix "
                   "(printed, and in the page)")
    g.add_argument("--from", dest="from_file", metavar="NEW.json",
                   help="read a matrix instead of running one (with --compare, --docs, --html)")
    g.add_argument("--html", metavar="PATH.html", help="with --from: write the page here")
    g.add_argument("--docs", metavar="PATH.md", help="write the agents page (Markdown) from "
                   "the matrix")
    g.add_argument("--notes", metavar="DIR", help="per-agent notes included in --docs "
                   "(DIR/<agent>.md; default: agent-notes/ beside the docs page)")
