"""``acp-model fuzz`` and ``acp-model replay``."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shlex
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from acp_model.argtypes import float_at_least, int_at_least, positive_float, rule_ids
from acp_model.cli.common import (
    EXIT_FAIL,
    EXIT_INTERNAL,
    EXIT_OK,
    PROGRESS,
    UsageError,
    add_reading_option,
    exit_code,
    read_json,
    readings_of,
)
from acp_model.fuzzing.budget import MATRIX_GROWTH
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.frontend import SignalStop, agent_problem, hypothesis_home
from acp_model.fuzzing.recorder import Recorder
from acp_model.llm.apis import ADAPTERS

if TYPE_CHECKING:
    from acp_model.fuzzing.orchestrator import FuzzOutcome, Outputs

MODEL_APIS = tuple(ADAPTERS)  # one per adapter module of the scripted model
EPILOG = """exit codes: 0 no failure (warnings allowed), 1 failures found, 2 usage or environment
error (an agent command that cannot be executed, an agent that cannot be initialized for a
reason no rule covers, a store that went away), 3 internal error of the fuzzer, 130 interrupted
(Ctrl-C, SIGTERM) before any failure was found; the report is written in every case.
Everything after "--" is the agent's command line.
example: acp-model fuzz --max-examples 100 --out out -- python -m acp_model.agents.reference"""


def _agent_argv(args: argparse.Namespace) -> list[str]:
    argv = list(args.agent or [])
    if not argv:
        raise UsageError("give the agent command after '--', e.g. "
                         "acp-model fuzz -- python -m acp_model.agents.reference "
                         "(or name a profiled agent: --agent NAME)")
    problem = agent_problem(argv)
    if problem is not None:
        raise UsageError(problem)
    return argv


def _profile(name: str | None, version: str | None = None) -> Any:
    """The installed profile ``name`` (None: none asked for), at ``version`` (``VERSION`` or
    ``PACKAGE@VERSION``, see :mod:`acp_model.profiles.versions`) when given; a usage error
    otherwise."""
    if name is None:
        if version is not None:
            raise UsageError("--agent-version needs --agent NAME")
        return None
    from acp_model.profiles import ProfileError, get
    from acp_model.profiles.versions import at_version

    try:
        profile = get(name)
        if version is not None and version != f"{profile.package}@{profile.version}":
            profile = at_version(profile, version)
            if not profile.installed():
                raise ProfileError(f"agent {name} {version} is not installed: run `acp-model "
                                   f"agents install {name} --version {version}`")
        profile.argv()  # installed?
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    return profile


def _base_config(args: argparse.Namespace) -> tuple[FuzzConfig, Any]:
    """The run's configuration from the command line: a profiled agent (--agent) or the
    command after '--' (with --model, behind the scripted model)."""
    from acp_model.fuzzing.backend import profile_config

    profile = _profile(getattr(args, "profile_name", None), getattr(args, "agent_version", None))
    if profile is not None and args.agent:
        raise UsageError("give either --agent NAME or an agent command after '--', not both")
    argv = ["true"] if profile is not None else _agent_argv(args)
    cfg = FuzzConfig(
        argv=argv, max_examples=args.max_examples, steps=args.steps,
        seed=args.seed, time_budget=args.time_budget, deadline=args.deadline,
        readings=readings_of(args), isolate=args.isolate, validate=not args.no_validate,
        max_sessions=args.max_sessions, replay_runs=args.replay_runs,
        minimize_budget=args.minimize_budget, minimize_growth=args.minimize_growth,
        minimize_trials=args.minimize_trials,
        minimize_alone=args.minimize_alone,
        startup_deadline=args.startup_deadline,
        spec=args.spec, model_api=args.model, batches=not args.no_batches,
        protocol=_protocol(args, profile), stop_on=args.stop_on,
        tool_hints=not getattr(args, "no_tool_hints", False),
        model_timing=not getattr(args, "no_model_timing", False),
        coverage=bool(args.coverage or args.coverage_html),
        coverage_scope=tuple(args.coverage_scope or ()), coverage_html=args.coverage_html,
        client=_client(args))
    if profile is not None:
        if args.model is not None and args.model != profile.model_api:
            raise UsageError(f"--agent {profile.name} calls the {profile.model_api} API; "
                             f"--model {args.model} does not fit it")
        if cfg.protocol not in profile.protocols:
            raise UsageError(f"--agent {profile.name} speaks protocol "
                             f"{' and '.join(f'v{p}' for p in profile.protocols)}, not "
                             f"v{cfg.protocol}")
        cfg = profile_config(cfg, profile, cfg.protocol)
    return cfg, profile


def _client(args: argparse.Namespace) -> Any:
    """The editor the client plays: the capabilities given (``--client-capabilities``), or
    the preset named or drawn from the seed (``--client-profile``); a usage error for a bad
    name or capabilities that are not a JSON object."""
    from acp_model.fuzzing.editors import ClientProfileError, custom, named

    given = getattr(args, "client_capabilities", None)
    name = getattr(args, "client_profile", None)
    try:
        if given is not None:
            if name is not None:
                raise UsageError("give --client-profile or --client-capabilities, not both")
            return custom(given)
        return named(name or "random", args.seed)
    except ClientProfileError as exc:
        raise UsageError(str(exc)) from None


def _protocol(args: argparse.Namespace, profile: Any = None) -> int:
    """The protocol version the fuzzer offers: --protocol, else the one --spec names, else
    the profile's first (a v1-only agent is offered v1), else 2."""
    from acp_model.spec.revisions import AUTO, get

    spec_protocol = get(args.spec).protocol if args.spec not in (None, AUTO) else None
    if args.protocol is None:
        return spec_protocol or (profile.protocols[0] if profile is not None else 2)
    protocol = int(args.protocol.removeprefix("v"))
    if spec_protocol is not None and spec_protocol != protocol:
        raise UsageError(f"--protocol {args.protocol} contradicts --spec {args.spec} "
                         f"(a v{spec_protocol} revision)")
    return protocol


def _progress_table(rec: Recorder, rules_total: int, phase: str) -> Table:
    table = Table.grid(padding=(0, 2))
    failures = ", ".join(sorted(rec.found)) or "none"
    table.add_row("examples", str(rec.examples), "actions", str(rec.actions),
                  "actions/s", f"{rec.actions / max(rec.elapsed(), 1e-9):.0f}")
    table.add_row("rules exercised", f"{len(rec.exercised)}/{rules_total}", "restarts",
                  str(rec.restarts), "elapsed", f"{rec.elapsed():.1f} s")
    table.add_row("failures", failures, "warnings", str(len(rec.warnings)), "phase", phase)
    return table


class _Display:
    """The run's live table on a terminal (one line per phase in logs and pipes), and the
    JSON progress lines a ``--jobs`` worker prints for its parent."""

    def __init__(self, console: Console, progress_lines: bool) -> None:
        self.console, self.progress_lines = console, progress_lines
        self.plain = not console.is_terminal
        self.rec, self.phase_name = Recorder(), "start-up"
        self.live: Live | None = None

    def _table(self) -> Table:
        from acp_model.spec.rules import RULES

        return _progress_table(self.rec, len(RULES), self.phase_name)

    def _refresh(self) -> None:
        if self.live is not None:
            self.live.update(self._table())

    def progress(self, rec: Recorder) -> None:
        self.rec = rec
        if self.progress_lines:  # a --jobs worker: its parent shows the totals
            print(PROGRESS + json.dumps({"examples": rec.examples, "actions": rec.actions,
                                         "failures": sorted(rec.found)}), flush=True)
        self._refresh()

    def phase(self, name: str) -> None:
        self.phase_name = name
        if self.plain:
            self.console.print(f"phase: {name}")
        self._refresh()

    @contextlib.contextmanager
    def shown(self) -> Iterator[None]:
        with Live(self._table(), console=self.console, refresh_per_second=4,
                  transient=self.plain) as live:
            self.live = live
            try:
                yield
            finally:
                self.live = None


def cmd_fuzz(args: argparse.Namespace, console: Console) -> int:
    from acp_model.fuzzing.orchestrator import FuzzRun
    from acp_model.fuzzing.revision import SpecUndecidable
    from acp_model.fuzzing.run import FuzzerBug

    hypothesis_home()
    cfg, profile = _base_config(args)
    baseline = _baseline(args)  # a bad file is a usage error before anything runs
    if args.jobs > 1:
        if cfg.coverage:
            raise UsageError("--coverage measures one agent process tree: it is not merged "
                             "across --jobs workers yet (run without --jobs)")
        if baseline is not None:
            raise UsageError("--baseline is not applied to --jobs runs yet: judge the merged "
                             "report's failures in one run")
        return _jobs(args, cfg, profile, console)
    display = _Display(console, args.progress_lines)
    run = FuzzRun(_with_database(args, cfg), profile, on_progress=display.progress,
                  on_phase=display.phase)
    _announce(console, run.cfg, profile)
    # Installed before the probe: Ctrl-C or SIGTERM at any moment ends the run with its report.
    with SignalStop(run.stop).installed():
        try:
            with display.shown():
                result = run.fuzz()
        except SpecUndecidable as exc:
            raise UsageError(f"--spec {run.cfg.spec}: {exc}") from None
        except FuzzerBug as exc:
            if args.debug:
                traceback.print_exception(exc)
            console.print(f"[red]internal error of acp-model:[/] {exc} (run with --debug for "
                          "the traceback)")
            return EXIT_INTERNAL
        outcome = run.report(result, _outputs(args), baseline=baseline,
                             strict=args.baseline_strict)
    _show_outcome(console, args, outcome, run.budget)
    return exit_code(outcome.end)


def _with_database(args: argparse.Namespace, cfg: FuzzConfig) -> FuzzConfig:
    """``cfg`` with the example databases ``--db`` names, checked reachable (else a usage
    error)."""
    from acp_model.fuzzing.database import DatabaseError, check_reachable, locations

    try:
        directory, shared = locations(args.db or [])
        cfg = dataclasses.replace(cfg, database=directory, shared_databases=shared,
                                  database_readonly=args.db_readonly)
        check_reachable(cfg)
    except DatabaseError as exc:
        raise UsageError(str(exc)) from None
    return cfg


def _outputs(args: argparse.Namespace) -> Outputs:
    from acp_model.fuzzing.orchestrator import Outputs

    def path(value: str | None) -> Path | None:
        return Path(value) if value else None

    return Outputs(out=path(args.out), report=path(args.report), junit=path(args.junit),
                   sarif=path(args.sarif), html=path(args.html))


def _announce(console: Console, cfg: FuzzConfig, profile: Any) -> None:
    from acp_model.report.text import show
    from acp_model.spec.revisions import AUTO

    show(console, f"fuzzing: {profile.name + ' ' + profile.version if profile else ''}"
         f"{' ' if profile else ''}{shlex.join(cfg.argv)}", indent="")
    if cfg.model_api is not None:
        console.print(f"model: scripted, {cfg.model_api} API on a loopback server")
    if cfg.client is not None:
        show(console, f"client: {cfg.client.describe()}", indent="")
    if cfg.spec == AUTO:
        console.print("spec: auto (a probe prompt decides the revision)")


def _show_outcome(console: Console, args: argparse.Namespace, outcome: FuzzOutcome,
                  budget: Any) -> None:
    from acp_model.fuzzing.orchestrator import RunEnd
    from acp_model.report.reach import reach_line
    from acp_model.report.text import counterexample_line, render, show

    report, result, files = outcome.report, outcome.result, outcome.files
    s = report["summary"]
    show(console, f"{s['examples']} examples, {s['actions']} client actions in {s['seconds']} s "
         f"({s['actions_per_second']} actions/s), {s['restarts']} restart(s)", indent="")
    show(console, reach_line(report["reach"]), indent="")
    if result.agent_coverage is not None:
        show(console, result.agent_coverage.line(), indent="")
        if args.coverage_html:
            show(console, f"agent coverage, annotated: {Path(args.coverage_html) / 'index.html'}",
                 indent="")
    show(console, _phase_line(budget), indent="")
    if result.unusable:  # a rule failed there: the run says so, and only then stopped
        label = "stopped at start-up" if result.failed else "agent unusable"
        console.print(f"[red]{label}:[/] {escape(result.unusable)}")
    if result.problem:
        console.print(f"[red]error:[/] {escape(result.problem)}")
    for note in result.notes:  # wrapped, and never read as markup
        show(console, f"note: {note}", indent="")
    render(report, console)
    for ce in report["counterexamples"]:
        where = (f"-> {Path(ce['files']['counterexample.txt']).parent}" if ce["files"] else "")
        show(console, counterexample_line(ce, where), indent="", markup=True)
    if files and any(k.startswith("warn:") for k in files):
        show(console, f"warnings: the first sighting of each -> {Path(args.out) / 'warnings'}",
             indent="")
    if outcome.judgement is not None:
        _show_baseline(console, outcome.judgement)
    if outcome.end is RunEnd.INTERRUPTED:
        console.print("[yellow]interrupted: the report holds what was found so far[/]")


def _baseline(args: argparse.Namespace) -> Any:
    """The baseline file ``--baseline`` names (None: none); a usage error when unusable."""
    from acp_model.report.baseline import BaselineError, load

    if args.baseline is None:
        if args.baseline_strict:
            raise UsageError("--baseline-strict needs --baseline FILE")
        return None
    try:
        return load(args.baseline)
    except BaselineError as exc:
        raise UsageError(str(exc)) from None


def _show_baseline(console: Console, judgement: Any) -> None:
    from acp_model.report.text import show

    for a in judgement.accepted:
        show(console, f"baseline: {a['rule']} accepted" + (f" ({a['note']})" if a["note"]
                                                          else ""), indent="")
    for e in judgement.not_applying:
        show(console, f"baseline: the {e.rule} entry is for agent version "
             f"{e.agent_version}, not this one", indent="")
    for st in judgement.stale:
        show(console, f"[yellow]stale baseline entry:[/] {st['rule']}: {escape(st['why'])}",
             indent="", markup=True)
    if judgement.new:
        show(console, "[red]not in the baseline:[/] "
             + ", ".join(sorted({n['rule'] for n in judgement.new})), indent="", markup=True)


def _phase_line(budget: Any) -> str:
    """The time each phase took, and the bound the run was held to."""
    from acp_model.fuzzing.budget import slack

    took = ", ".join(f"{name} {sec:.1f} s" for name, sec in budget.seconds().items())
    bound = (f" (budget {budget.total:g} s + slack {slack(budget.total):g} s)"
             if budget.total else "")
    return f"time: {took or 'none'}{bound}"


def _jobs(args: argparse.Namespace, cfg: FuzzConfig, profile: Any, console: Console) -> int:
    """``--jobs N``: the revision decided once here, then N workers (cli/jobs.py)."""
    from acp_model.cli.jobs import run_jobs
    from acp_model.fuzzing.orchestrator import FuzzRun
    from acp_model.fuzzing.revision import SpecUndecidable
    from acp_model.report.text import show
    from acp_model.spec.revisions import AUTO

    spec, decision = cfg.spec, None
    run = FuzzRun(cfg, profile)  # its clock counts the probe: the workers get what it leaves
    if spec == AUTO:
        console.print("spec: auto (a probe prompt decides the revision for every worker)")
        try:
            decision = run.decide().decision
        except SpecUndecidable as exc:
            raise UsageError(f"--spec {cfg.spec}: {exc}") from None
        assert decision is not None
        show(console, f"spec: {decision.revision} ({decision.evidence})", indent="")
        spec = decision.revision
    args.time_budget = max(1.0, run.budget.remaining())
    if cfg.client is not None and args.client_capabilities is None:
        args.client_profile = cfg.client.name  # drawn once: every worker plays the same client
    return run_jobs(args, list(args.words), spec, console, decision)


def cmd_replay(args: argparse.Namespace, console: Console) -> int:
    from acp_model.fuzzing.actions import ActionError, from_json
    from acp_model.fuzzing.artifacts import REPLAY_FORMAT
    from acp_model.fuzzing.backend import backend
    from acp_model.fuzzing.editors import from_json as client_from_json
    from acp_model.spec.readings import DEFAULT

    path = Path(args.replay_file)
    doc = read_json(path, "replay file")
    if not isinstance(doc, dict) or doc.get("format") != REPLAY_FORMAT \
            or not isinstance(doc.get("actions"), list):
        raise UsageError(f"{path}: not an {REPLAY_FORMAT} file")
    try:
        actions = [from_json(a) for a in doc["actions"]]
    except (ActionError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: {exc}") from None
    try:
        readings = DEFAULT.parse(f"{k}={v}" for k, v in doc.get("readings", {}).items())
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from None
    try:
        readings = readings.parse([*([f"SPEC={args.spec}"] if args.spec else []),
                                   *(args.reading or [])])
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    profile = _profile(doc.get("profile"), doc.get("profile_package")) if not args.agent else None
    argv = list(args.agent or [])
    if not argv and profile is None:
        argv = list(doc.get("agent") or [])
        if not argv:
            raise UsageError("no agent command: give it after '--'")
    args.agent = argv
    cfg = FuzzConfig(argv=_agent_argv(args) if profile is None else ["true"],
                     readings=readings,
                     deadline=args.deadline or float(doc.get("deadline", 3.0)),
                     validate=bool(doc.get("validate", True)), model_api=doc.get("model_api"),
                     session_config=tuple((m, p) for m, p in doc.get("session_config") or []),
                     auth_method=doc.get("auth_method"), client=client_from_json(doc.get("client")))
    if profile is not None:  # the profiled agent the file was written for, set up as then
        cfg = replayed_profile(cfg, profile)
    schedule = None if args.free else _schedule_of(path, doc)
    with backend(cfg, profile) as running:
        return _replays(args, doc, running, actions, console, schedule)


def replayed_profile(cfg: FuzzConfig, profile: Any) -> FuzzConfig:
    """``cfg`` (a replay file's) for the profiled agent it was written for, set up for the
    protocol its revision speaks: a v1 row's session configuration is v1's (a v2 request on a
    v1 session was a write the recording did not have: the held replay left its schedule
    at once)."""
    from acp_model.fuzzing.backend import profile_config
    from acp_model.spec.revisions import REVISIONS

    rev = REVISIONS.get(cfg.readings.revision)
    protocol = rev.protocol if rev is not None else profile.protocols[0]
    return dataclasses.replace(profile_config(cfg, profile, protocol), deadline=cfg.deadline,
                               protocol=protocol)


def _schedule_of(path: Path, doc: dict[str, Any]) -> Any:
    """The boundary schedule the replay file names (beside it), None when it has none."""
    from acp_model.fuzzing.schedule import Schedule, ScheduleError

    name = doc.get("schedule")
    if not isinstance(name, str):
        return None
    where = path.parent / name
    try:
        return Schedule.from_json(read_json(where, "schedule file"))
    except ScheduleError as exc:
        raise UsageError(f"{where}: {exc} (--free replays without it)") from None


def _replays(args: argparse.Namespace, doc: dict[str, Any], cfg: FuzzConfig,
             actions: list[Any], console: Console, schedule: Any = None) -> int:
    from acp_model.fuzzing.clock import ClockChoice
    from acp_model.fuzzing.inconclusive import clock_evidence
    from acp_model.fuzzing.shrink import replay_once

    rule = doc.get("rule")
    hits = 0
    errors = []
    diverged = []
    unclocked: list[tuple[int, str]] = []  # each held run on the agent's real clock, and why
    shown = None  # the run the HTML page draws: the first that reproduced, else the last
    how = "under the recorded schedule" if schedule is not None else "free-running"
    clock = False  # the agent under a clock the replay sets, once the real clock mattered
    choice = ClockChoice()
    console.print(f"{args.runs} fresh-process replay(s) {how}"
                  + ("" if schedule is not None or args.free else
                     " (the replay file names no schedule)"))
    for n in range(args.runs):
        # the file's program recorded the schedule beside it: its events are expected
        outcome = replay_once(cfg, actions, rule, schedule=schedule, exact=True, clock=clock)
        hits += outcome.reproduced
        if outcome.held:
            clock = choice.weigh(clock_evidence(outcome, schedule))
        if shown is None or not shown.reproduced:
            shown = outcome
        if outcome.error:
            errors.append(outcome.error)
        if outcome.divergence:
            diverged.append(outcome.divergence)
        if outcome.unclocked:
            unclocked.append((n + 1, outcome.unclocked))
        seen = sorted({v.rule for v in outcome.violations})
        console.print(f"run {n + 1}: {'reproduced' if outcome.reproduced else 'not reproduced'}"
                      + (f" (failures: {', '.join(seen)})" if seen else "")
                      + ("; the agent's wall clock held" if outcome.clock_held else "")
                      + (f"; left its schedule: {escape(outcome.divergence)}"
                         if outcome.divergence and not outcome.reproduced else ""))
    if schedule is not None and not unclocked:
        how += " and clock"  # the agent's wall clock held too (fuzzing/clock.py)
    console.print(f"[bold]reproduced {hits}/{args.runs} {how}[/] ({rule})")
    for why in dict.fromkeys(why for _, why in unclocked):
        runs = ", ".join(str(n) for n, said in unclocked if said == why)
        console.print(f"note: the agent's wall clock was not held in run(s) {runs}: "
                      f"{escape(why)}")
    for err in sorted(set(errors)):
        console.print(f"note: {escape(err)}")
    if args.html and shown is not None:
        _replay_html(args, doc, cfg, shown, hits, sorted(set(errors)))
    return EXIT_FAIL if hits else EXIT_OK


def _replay_html(args: argparse.Namespace, doc: dict[str, Any], cfg: FuzzConfig,
                 shown: Any, hits: int, errors: list[str]) -> None:
    from acp_model import __version__
    from acp_model.fuzzing.unsent import program_lines
    from acp_model.report.html import Transcript, cases_from_violations, render_html, write_html

    violations = [v.to_json() for v in shown.violations]
    report = {
        "command": "replay", "version": __version__, "source": " ".join(cfg.argv),
        "verdict": "fail" if hits else "pass",
        "spec": {"revision": cfg.readings.revision, "requested": cfg.readings.revision,
                 "evidence": f"the replay file's revision ({args.replay_file})"},
        "readings_changed": cfg.readings.changed(),
        "summary": {"runs": args.runs, "reproduced": hits, "rule": doc.get("rule")},
        "notes": [("the run drawn below reproduced the failure" if shown.reproduced
                   else "the run drawn below did not reproduce the failure"), *errors],
    }
    cases = cases_from_violations(violations, shown.records)
    # what each action put on the wire in the replay drawn (fuzzing/unsent.py)
    steps = program_lines(doc["actions"], shown.records, list(range(len(shown.records))),
                          readings=doc.get("readings") if isinstance(doc.get("readings"), dict)
                          else None)
    for case in cases:
        case.steps = steps
        case.command = f"acp-model replay {args.replay_file} --runs {args.runs}"
    write_html(render_html(report, cases=cases, transcript=Transcript(
        shown.records, marks=cases[0].marks if cases else {},
        caption="one fresh-process replay")), args.html)


def register(sub: Any) -> None:
    _register_fuzz(sub)
    _register_replay(sub)


def _register_fuzz(sub: Any) -> None:
    p = sub.add_parser(
        "fuzz", help="fuzz a live agent process (Hypothesis stateful testing)",
        description="Drive an ACP agent (v2, or v1 when it answers protocolVersion 1) with "
        "randomly generated interleavings of prompts, cancels, permission answers and "
        "sessions, check every message against the model and the schema, and shrink each "
        "failure to a minimal replayable counterexample.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _generation_options(p.add_argument_group("generation and time"))
    _output_options(p.add_argument_group("reports and stores"))
    _agent_options(p)


def _generation_options(p: Any) -> None:
    p.add_argument("--max-examples", type=int_at_least(1), default=200,
                   help="examples Hypothesis generates (default 200)")
    p.add_argument("--steps", type=int_at_least(1), default=30,
                   help="client actions per example, at most (default 30)")
    p.add_argument("--seed", type=int, help="seed the generator (same seed: same programs)")
    p.add_argument("--time-budget", type=positive_float, default=300.0, metavar="S",
                   help="bound the search to S seconds (the probe and generation); each "
                        "failure then gets its own --minimize-budget, and closing and writing "
                        "fit in max(10%%, 10 s) more (default 300)")
    p.add_argument("--deadline", type=positive_float, default=3.0, metavar="S",
                   help="how long to wait for something the agent owes (a response, the idle "
                        "after a cancel) before it is a liveness failure (default 3)")
    p.add_argument("--startup-deadline", type=positive_float, default=30.0, metavar="S",
                   help="how long the agent may take to answer initialize (default 30)")
    p.add_argument("--max-sessions", type=int_at_least(1), default=3,
                   help="sessions per example, at most (default 3)")
    p.add_argument("--replay-runs", type=int_at_least(1), default=5,
                   help="fresh-process replays of each counterexample held to its recorded "
                        "schedule, and as many free-running (default 5)")
    p.add_argument("--minimize-trials", type=int_at_least(1), metavar="N",
                   help="each failure's own budget after the search, counted in trials: N "
                        "fresh-process replays to minimize its counterexample (to the "
                        "fixpoint: no action can go, no content be simpler); the report states "
                        "the trials used and allowed and how far each stage got (default: "
                        "what its program's length needs, 20 + 8 per action, at most 200)")
    p.add_argument("--minimize-budget", type=positive_float, default=60.0, metavar="S",
                   help="the outer bound of each failure's minimizing in seconds, and as "
                        "much for its replays: minimizing ends at its trials or at S seconds, "
                        "whichever comes first (default 60)")
    p.add_argument("--minimize-growth", type=float_at_least(1.0), default=1.0, metavar="X",
                   help="let each failure's --minimize-budget (and its replays' time) grow up "
                        "to X times when the agent's replays are slow: to what the trials its "
                        "program needs take at the agent's own trial time; the report states "
                        f"it (default 1: never; acp-model matrix uses {MATRIX_GROWTH:g})")
    p.add_argument("--minimize-alone", metavar="LOCK",
                   help="a lock file shared by runs side by side: each generates beside the "
                        "others but minimizes and replays its failures with none of them "
                        "running (a racy failure replays as it ran; a slow agent's trials are "
                        "not slowed); the waiting counts in no budget (acp-model matrix "
                        "gives its rows one)")
    p.add_argument("--stop-on", type=rule_ids, default=frozenset(), metavar="RULE[,RULE]",
                   help="stop generating once each of these rules has failed (then minimize "
                        "and replay as usual): a bisect or a known bug needs no full budget")
    p.add_argument("--isolate", action="store_true",
                   help="a fresh agent process per example (slower, no shared state)")
    p.add_argument("--coverage", action="store_true",
                   help="measure the agent's own coverage of its ACP layer (V8 for Node agents, "
                        "coverage.py for Python ones): lines and functions reached, in the "
                        "report (coverage_agent) and steering generation to new code")
    p.add_argument("--coverage-scope", action="append", metavar="GLOB[#MODULE]",
                   help="the agent's ACP layer for --coverage (repeatable): files by glob "
                        "(relative to a profiled agent's install folder, else to the current "
                        "one), #MODULE narrows a bundle to its modules by their bundler "
                        "markers; default: the profile's list, else every script outside "
                        "node_modules and every Python file importing the ACP SDK")
    p.add_argument("--coverage-html", metavar="DIR",
                   help="with --coverage (implied): write the agent's annotated source to "
                        "DIR/index.html, for its maintainer")
    p.add_argument("--no-validate", action="store_true", help="skip JSON schema validation")


def _output_options(p: Any) -> None:
    p.add_argument("--out", metavar="DIR", help="write transcript, counterexample, sequence "
                   "diagram and replay file of each failure under DIR/<rule>/")
    p.add_argument("--report", metavar="PATH.json", help="write the JSON report")
    p.add_argument("--db", action="append", metavar="DIR|redis://HOST:PORT/N",
                   help="Hypothesis example database: a directory, a Redis server shared by "
                        "every machine, or both (repeat the option); failures stored by any "
                        "run replay first. Keyed by agent command, readings and revision")
    p.add_argument("--db-readonly", action="store_true",
                   help="replay from the shared (Redis) stores but save nothing there")
    p.add_argument("--html", metavar="PATH.html", help="write a self-contained HTML report "
                   "(counterexamples with proofs and sequence diagrams, coverage over the run, "
                   "rules, transcript)")
    p.add_argument("--junit", metavar="PATH.xml", help="write a JUnit XML report (one test "
                   "case per rule)")
    p.add_argument("--sarif", metavar="PATH.sarif", help="write a SARIF 2.1.0 log (GitHub code "
                   "scanning): one result per failure and warning, with its counterexample; "
                   "with --out each points at its transcript line")


def _agent_options(p: Any) -> None:
    p.add_argument("--agent", dest="profile_name", metavar="NAME",
                   help="fuzz a profiled real agent (see `acp-model agents`) behind the "
                        "scripted model, instead of a command after '--'")
    p.add_argument("--agent-version", metavar="V|PACKAGE@V",
                   help="run that profiled agent at another release than its pin (installed "
                        "with `acp-model agents install NAME --version V`); PACKAGE@V for a "
                        "release published under an earlier package name")
    p.add_argument("--no-tool-hints", action="store_true",
                   help="ignore the profile's tool hints ([tools] prefer): the scripted model "
                        "picks the agent's tools from what each request offers, as for an "
                        "agent without a profile")
    p.add_argument("--no-model-timing", action="store_true",
                   help="the scripted model answers at once: no drawn time to first byte, "
                        "pace between chunks or pause before a tool call (faster examples; "
                        "races that need a slow model are then left to chance)")
    p.add_argument("--model", choices=MODEL_APIS, help="start the scripted model for an "
                   "agent given after '--' and point it there (the variables that API's "
                   "clients read: ANTHROPIC_BASE_URL, OPENAI_BASE_URL); prompts then carry "
                   "what the model does in their turn")
    p.add_argument("--jobs", type=int_at_least(1), default=1, metavar="N",
                   help="N workers fuzz N agent processes at once (seeds SEED..SEED+N-1, one "
                        "shared example database, one merged report)")
    p.add_argument("--progress-lines", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--protocol", choices=("v1", "v2"),
                   help="the ACP version the fuzzer offers in initialize (default: the one "
                        "--spec names, v2 under auto); an agent that answers 1 is judged "
                        "under the v1 revision")
    p.add_argument("--client-profile", metavar="NAME|random",
                   help="the editor the client plays in initialize and after: its capabilities "
                        "(file system, terminals, _meta flags), served as it serves them, and "
                        "its habits (e.g. a cancel before every prompt); one of "
                        f"{', '.join(sorted(_presets()))}; default random: drawn from the seed "
                        "per run, named in the report")
    p.add_argument("--client-capabilities", metavar="JSON|@FILE",
                   help="send exactly these client capabilities in initialize (what your "
                        "editor sends); file-system, terminal and elicitation capabilities "
                        "given are served inside the run's workspace")
    p.add_argument("--no-batches", action="store_true",
                   help="send no JSON-RPC batch probes (for an agent known to reject batches: "
                        "the rest of the lifecycle is still judged)")
    p.add_argument("--baseline", metavar="FILE.toml",
                   help="failures accepted until fixed (`acp-model baseline write`): the run "
                        "fails only on failures the file does not name; stale entries are "
                        "reported")
    p.add_argument("--baseline-strict", action="store_true",
                   help="a stale baseline entry fails the run too")
    add_reading_option(p, auto=True)
    p.add_argument("agent", nargs="*", metavar="-- AGENT_CMD",
                   help="the agent's command line, after '--'")
    p.set_defaults(func=cmd_fuzz)


def _presets() -> list[str]:
    from acp_model.fuzzing.editors import PRESETS

    return list(PRESETS)


def _register_replay(sub: Any) -> None:
    p = sub.add_parser(
        "replay", help="re-run a counterexample and report how often it reproduces",
        description="Replay the client actions of a replay file against fresh agent "
        "processes, each held to the boundary schedule recorded beside it (schedule.json: "
        "every client write and model release waits until what preceded it in the recording "
        "has happened; --free lets the agent's timing fall as it may). Exit 1 when the "
        "failure reproduced at least once, 0 when it never did.",
        epilog="example: acp-model replay out/CANCEL-07/replay.json --runs 10",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("replay_file", help="replay.json written by acp-model fuzz --out")
    p.add_argument("--html", metavar="PATH.html", help="write a self-contained HTML page of "
                   "the replay (its failures with proofs, sequence diagram, transcript)")
    p.add_argument("--runs", type=int_at_least(1), default=10, help="replays (default 10)")
    p.add_argument("--deadline", type=positive_float, metavar="S",
                   help="override the deadline stored in the replay file")
    p.add_argument("--free", action="store_true",
                   help="replay free-running: without holding the replay to the boundary "
                        "schedule recorded beside the file (schedule.json), as the agent's "
                        "timing falls")
    add_reading_option(p, stored=True)
    p.add_argument("agent", nargs="*", metavar="-- AGENT_CMD",
                   help="the agent's command line after '--' (default: the one in the file)")
    p.set_defaults(func=cmd_replay)
