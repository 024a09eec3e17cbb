"""pytest plugin: ``pytest --acp-agent "CMD ARGS"`` fuzzes an ACP v2 agent as ordinary tests.

Installed with the package (entry point ``pytest11``, name ``acp_model``). Without
``--acp-agent`` it only registers its options, the ``acp`` marker and its fixtures, so it never
changes anybody else's test run.

With ``--acp-agent`` pytest gets one extra test per rule group (``acp-model::test_acp[CANCEL]``
...), so the outcome reads like a conformance report. The lifecycle fuzz itself runs once per
session (the session-scoped ``acp_fuzz`` fixture; the group tests read the same run) under a
profile (``--acp-profile quick|ci|deep``) that is a registered Hypothesis settings profile
(``acp-model-quick`` ...) plus the fuzzer's own budgets. A group test fails with that group's
violations, the minimal counterexample of each and how often it reproduced in fresh agent
processes; SHOULD-level findings are emitted as :class:`AcpWarning` (``-W error::...`` turns
them into failures); a group none of whose rules was exercised is skipped.

Fixtures for hand-written tests: ``acp_client`` (a connected, initialized
:class:`~acp_model.fuzzing.client.FuzzClient`), ``acp_monitor`` (its monitor),
``acp_state_machine`` (the Hypothesis state machine class bound to a fresh agent pool, to
subclass with extra rules; see :func:`lifecycle_machine`), ``acp_settings`` (the profile's
Hypothesis settings), ``acp_config`` (the :class:`~acp_model.fuzzing.runner.FuzzConfig`) and
``acp_fuzz`` (the session's :class:`AcpRun`). See ``docs/pytest-plugin.md``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import shlex
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from acp_model.argtypes import positive_float

if TYPE_CHECKING:
    from hypothesis import settings as Settings
    from hypothesis.stateful import RuleBasedStateMachine

    from acp_model.fuzzing.campaign import FuzzResult
    from acp_model.fuzzing.client import FuzzClient
    from acp_model.fuzzing.runner import Found, FuzzConfig, Recorder
    from acp_model.monitor import Monitor

NODE_NAME = "acp-model"
DEFAULT_DB = ".hypothesis/acp-model"  # relative to pytest's rootdir


class AcpWarning(UserWarning):
    """A SHOULD-level finding about the agent under test (a failure only with ``-W error``)."""


# ---------------------------------------------------------------------------- profiles ----

@dataclass(frozen=True)
class AcpProfile:
    """One ``--acp-profile``: Hypothesis settings (registered under ``hypothesis``) plus the
    fuzzer's own budgets, which Hypothesis has no settings for."""

    name: str
    max_examples: int
    steps: int
    derandomize: bool  # deterministic generation: a fixed seed and no example database
    time_budget: float
    max_rounds: int
    replay_runs: int
    shrink_budget: float
    description: str

    @property
    def hypothesis(self) -> str:
        return f"acp-model-{self.name}"


PROFILES: dict[str, AcpProfile] = {p.name: p for p in (
    AcpProfile("quick", 30, 15, False, 60.0, 2, 2, 5.0,
               "smoke run: ~30 examples, a minute at most"),
    AcpProfile("ci", 100, 25, True, 300.0, 3, 3, 10.0,
               "deterministic moderate run (seed 0 unless --acp-seed, no example database)"),
    AcpProfile("deep", 2000, 40, False, 1800.0, 6, 10, 60.0,
               "long run: 2000 examples, up to 30 minutes, 10 replays per counterexample"),
)}


def register_profiles() -> None:
    """Register ``acp-model-<name>`` Hypothesis profiles (never loads one: that is the user's)."""
    from hypothesis import HealthCheck, settings

    for p in PROFILES.values():
        settings.register_profile(
            p.hypothesis, max_examples=p.max_examples, stateful_step_count=p.steps,
            deadline=None, derandomize=p.derandomize, database=None,
            suppress_health_check=list(HealthCheck))


def default_profile() -> str:
    """``ci`` where the ``CI`` variable is set (as Hypothesis itself does), else ``quick``."""
    return "ci" if os.environ.get("CI") else "quick"


# ---------------------------------------------------------------------------- options -----

def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acp-model", "ACP v2 agent conformance (acp-model)")
    group.addoption("--acp-agent", metavar="CMD", default=None,
                    help="fuzz this agent command line (one string, split like a shell): adds "
                         "one test per rule group, test_acp[GROUP]")
    group.addoption("--acp-profile", choices=sorted(PROFILES), default=None,
                    help="quick (smoke), ci (deterministic), deep (long); default: ci when the "
                         "CI variable is set, else quick")
    group.addoption("--acp-seed", type=int, default=None,
                    help="seed the generator (same seed: same client programs)")
    group.addoption("--acp-deadline", type=positive_float, default=3.0, metavar="S",
                    help="seconds to wait for what the agent owes before it is a liveness "
                         "failure (default 3)")
    group.addoption("--acp-reading", action="append", default=[], metavar="NAME=VALUE",
                    help="choose a reading of an ambiguous place (repeatable), e.g. A-01=forbid")
    group.addoption("--acp-out", metavar="DIR", default=None,
                    help="write report.json and, per failure, transcript, counterexample, "
                         "sequence diagram and replay file under DIR")
    group.addoption("--acp-db", metavar="DIR", default=None,
                    help=f"Hypothesis example database root (default {DEFAULT_DB} under the "
                         "rootdir; 'none' disables; the ci profile never uses one)")


@dataclass
class AcpOptions:
    """The validated options of this pytest run."""

    argv: list[str]
    profile: AcpProfile
    seed: int | None
    deadline: float
    readings: Any
    out: Path | None
    database: str | None
    cwd: str


_OPTIONS = pytest.StashKey[AcpOptions]()
_RUN = pytest.StashKey["AcpRun | BaseException"]()
_TESTRUN = pytest.StashKey[str]()  # xdist run id, on the controller


def agent_argv(command: str) -> list[str]:
    """Split ``--acp-agent`` and check the program exists and is executable (else UsageError)."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise pytest.UsageError(f"--acp-agent {command!r}: {exc}") from None
    if not argv:
        raise pytest.UsageError("--acp-agent is empty: give the agent's command line")
    exe = argv[0]
    found = shutil.which(exe) if os.sep not in exe else (exe if os.path.isfile(exe) else None)
    if found is None:
        raise pytest.UsageError(f"--acp-agent: agent command {exe!r} not found")
    if not os.access(found, os.X_OK):
        raise pytest.UsageError(f"--acp-agent: agent command {exe!r} is not executable")
    return argv


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "acp: a test of the ACP agent given with --acp-agent")
    command = config.getoption("acp_agent")
    if command is None:
        return
    from acp_model.readings import DEFAULT, ReadingError

    register_profiles()
    try:
        readings = DEFAULT.parse(config.getoption("acp_reading"))
    except (ReadingError, ValueError) as exc:
        raise pytest.UsageError(f"--acp-reading: {exc}") from None
    profile = PROFILES[config.getoption("acp_profile") or default_profile()]
    db = config.getoption("acp_db")  # given: relative to the current directory, like --acp-out
    if profile.derandomize or (db is not None and db.lower() == "none"):
        database = None
    else:
        database = str(Path(db).resolve() if db else config.rootpath / DEFAULT_DB)
    out = config.getoption("acp_out")
    config.stash[_OPTIONS] = AcpOptions(
        argv=agent_argv(command), profile=profile, seed=config.getoption("acp_seed"),
        deadline=config.getoption("acp_deadline"), readings=readings,
        out=Path(out) if out else None, database=database, cwd=str(config.rootpath))


def _options(config: pytest.Config) -> AcpOptions | None:
    return config.stash.get(_OPTIONS, None)


def fuzz_config(opts: AcpOptions) -> FuzzConfig:
    """The fuzzer configuration a profile and the options stand for."""
    from acp_model.fuzzing.runner import FuzzConfig

    p = opts.profile
    seed = opts.seed if opts.seed is not None else (0 if p.derandomize else None)
    return FuzzConfig(argv=list(opts.argv), max_examples=p.max_examples, steps=p.steps,
                      seed=seed, time_budget=p.time_budget, deadline=opts.deadline,
                      readings=opts.readings, replay_runs=p.replay_runs,
                      max_rounds=p.max_rounds, shrink_budget=p.shrink_budget,
                      cwd=opts.cwd, database=opts.database)


def profile_settings(profile: AcpProfile, cfg: FuzzConfig | None = None) -> Settings:
    """The profile's Hypothesis settings, with the agent's example database unless derandomized.

    Meant for tests that run their own machine (``acp_state_machine``) with the same budget.
    """
    from hypothesis import settings

    from acp_model.fuzzing.campaign import example_database

    register_profiles()
    base = settings.get_profile(profile.hypothesis)
    if cfg is None or profile.derandomize or cfg.database is None:
        return base
    return settings(base, database=example_database(cfg))


# ---------------------------------------------------------------------------- usability ---

def probe_agent(opts: AcpOptions) -> None:
    """Start the agent once and initialize it: a command that cannot be fuzzed is a usage error.

    Not found, not startable, exiting before it answers initialize, no answer, an error answer:
    the command is wrong (or not an ACP agent on stdio), so pytest stops with a message rather
    than a page of failing tests. A wrong protocol version is a conformance finding (INIT-04)
    and is left to the fuzz to report.
    """
    from acp_model.fuzzing.client import AgentUnusable, FuzzClient

    def unusable(detail: object, stderr: str = "") -> pytest.UsageError:
        return pytest.UsageError(f"--acp-agent: {detail}\n  agent command: "
                                 f"{shlex.join(opts.argv)}{stderr}")

    try:
        client = FuzzClient(opts.argv, readings=opts.readings, deadline=opts.deadline,
                            cwd=opts.cwd)
    except AgentUnusable as exc:
        raise unusable(exc) from None
    try:
        client.initialize()
    except AgentUnusable as exc:
        if any(v.level == "fail" and v.rule.startswith("INIT-")
               for v in client.monitor.violations):
            return
        detail, stderr = str(exc), ""
        if client.alive:
            if "did not answer" in detail:
                detail += (f" within {opts.deadline:g} s (is it an ACP agent speaking JSON-RPC "
                           "on stdio? a slow start needs a larger --acp-deadline)")
        else:
            code = client.proc.wait_exit(1.0)
            tail = client.proc.stderr_text()[-500:].strip()
            detail = f"the agent exited before answering initialize (exit code {code})"
            stderr = f"\n  its stderr ends with:\n{tail}" if tail else "\n  its stderr was empty"
        raise unusable(detail, stderr) from None
    finally:
        client.close()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    opts = _options(config)
    if opts is None or config.option.collectonly or hasattr(config, "workerinput"):
        return  # xdist workers: the controller already probed
    probe_agent(opts)


# ---------------------------------------------------------------------------- the run -----

def rule_groups() -> list[str]:
    """Rule groups in catalogue order; a rule's group is its ID prefix (``CANCEL-07``)."""
    from acp_model.rules import RULES

    groups: list[str] = []
    for rule_id in RULES:
        group = group_of(rule_id)
        if group not in groups:
            groups.append(group)
    return groups


def group_of(rule_id: str) -> str:
    return rule_id.split("-", 1)[0]


@dataclass
class AcpRun:
    """One fuzz run of the session: the result, its JSON report and the files written."""

    result: FuzzResult
    report: dict[str, Any]
    profile: AcpProfile
    files: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def failed_rules(self) -> list[str]:
        return sorted(self.result.recorder.found)

    def rules_of(self, group: str) -> list[dict[str, Any]]:
        return [r for r in self.report["rules"] if group_of(r["id"]) == group]


def run_once(config: pytest.Config) -> AcpRun:
    """The session's fuzz run, started by whichever test needs it first.

    Under pytest-xdist the workers share it: the first worker to need it fuzzes while holding
    a lock, stores the run, and the others load it (one run, one verdict, whatever the
    distribution mode).
    """
    got = config.stash.get(_RUN, None)
    if got is None:
        opts = _options(config)
        if opts is None:
            pytest.skip("no --acp-agent given")
        workerinput = getattr(config, "workerinput", None)
        try:
            if workerinput is None:
                got = _fuzz(opts)
            else:
                got = _shared_fuzz(opts, str(workerinput["testrunuid"]))
        except BaseException as exc:  # every later caller sees the same outcome
            config.stash[_RUN] = exc
            raise
        config.stash[_RUN] = got
    if isinstance(got, BaseException):
        raise got
    return got


def _shared_paths(testrunuid: str) -> tuple[Path, Path]:
    base = Path(tempfile.gettempdir()) / f"acp-model-pytest-{testrunuid}"
    return base.with_suffix(".lock"), base.with_suffix(".pickle")


def _shared_fuzz(opts: AcpOptions, testrunuid: str) -> AcpRun:
    lock, data = _shared_paths(testrunuid)
    with lock.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes
        if data.exists():
            return pickle.loads(data.read_bytes())
        run = _fuzz(opts)
        tmp = data.with_suffix(".part")
        tmp.write_bytes(pickle.dumps(run))
        tmp.replace(data)
        return run


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: remember the run id, to summarize and clean up the shared run."""
    node.config.stash[_TESTRUN] = str(node.workerinput["testrunuid"])


def pytest_unconfigure(config: pytest.Config) -> None:
    uid = config.stash.get(_TESTRUN, None)
    if uid is not None:
        for path in _shared_paths(uid):
            path.unlink(missing_ok=True)


def _fuzz(opts: AcpOptions) -> AcpRun:
    from acp_model.fuzzing.artifacts import fuzz_report, write_out_dir
    from acp_model.fuzzing.campaign import run_fuzz
    from acp_model.report import write_json

    result = run_fuzz(fuzz_config(opts))
    if result.interrupted:
        raise KeyboardInterrupt
    files: dict[str, dict[str, str]] = {}
    out = opts.out
    if out is not None:
        files = write_out_dir(result, out)
    report = fuzz_report(result, files)
    report["profile"] = opts.profile.name
    if out is not None:
        write_json(report, out / "report.json")
    result.monitors = []  # summarized in the report; keeps the run small enough to share
    return AcpRun(result, report, opts.profile, files)


def describe_failures(found: Mapping[str, Found], rules: Iterable[str] | None = None,
                      files: dict[str, dict[str, str]] | None = None) -> str:
    """Recorded failures (``Recorder.found``, optionally only ``rules``) as conformance text.

    Each rule: its strength, statement and citation, what the agent did, the minimal client
    program and its reproduction rate, the offending message, and the files if written.
    """
    from acp_model.fuzzing.artifacts import counterexample_records, describe_action
    from acp_model.rules import RULES
    from acp_model.trace import summarize

    wanted = set(rules) if rules is not None else None
    lines: list[str] = []
    for rule_id, one in sorted(found.items()):
        if wanted is not None and rule_id not in wanted:
            continue
        rule = RULES[rule_id]
        lines += [f"{rule_id} ({rule.effective_strength()}, binds the {rule.party}): "
                  f"{rule.statement}",
                  f"  source: {rule.citation}",
                  f"  what happened: {one.violation.message}"]
        if one.replays:
            rate = (f"reproduced {one.reproduced}/{one.replays} in fresh agent processes")
        else:
            rate = "not replayed"
        if one.actions:
            lines.append(f"  minimal counterexample, {len(one.actions)} client action(s), "
                         f"{rate}:")
            lines += [f"    {n}. {describe_action(a)}" for n, a in enumerate(one.actions, 1)]
        else:
            lines.append(f"  no client action needed (the agent fails while initializing), "
                         f"{rate}")
        records, offending = counterexample_records(one)
        described = summarize(records)
        if 0 <= offending < len(described):
            direction, text = described[offending]
            arrow = "client -> agent" if direction == "c2a" else "agent -> client"
            lines.append(f"  offending message ({arrow}): {text[:300]}")
        lines += [f"  note: {note}" for note in one.notes]
        where = (files or {}).get(rule_id)
        if where:
            folder = Path(where["replay.json"]).parent
            lines.append(f"  files: {folder}/ (replay: acp-model replay "
                         f"{folder / 'replay.json'})")
        lines.append("")
    return "\n".join(lines).rstrip()


def emit_warnings(recorder: Recorder, group: str | None = None) -> None:
    """Each recorded warning (of ``group``) as an :class:`AcpWarning` in pytest's summary."""
    for (rule_id, check), v in sorted(recorder.warnings.items(), key=lambda kv: str(kv[0])):
        if group is None or group_of(rule_id) == group:
            count = recorder.warning_counts[(rule_id, check)]
            warnings.warn(AcpWarning(f"{rule_id} ({v.strength}): {v.message} (seen {count} "
                                     "time(s))"), stacklevel=3)


class AcpGroupFailure(Exception):
    """A rule group failed: the message is the conformance text, shown without a traceback."""


def check_group(run: AcpRun, group: str) -> None:
    """Fail, warn or skip one rule group of the run (what ``test_acp[GROUP]`` does)."""
    result = run.result
    failed = [r for r in run.failed_rules if group_of(r) == group]
    emit_warnings(result.recorder, group)
    if failed:
        head = (f"{group}: {len(failed)} rule(s) failed against {shlex.join(result.cfg.argv)} "
                f"(profile {run.profile.name}, {result.recorder.examples} examples)")
        raise AcpGroupFailure(head + "\n\n" + describe_failures(result.recorder.found, failed,
                                                                    run.files))
    if result.unusable:
        _skip(f"the agent could not be fuzzed: {result.unusable}")
    if not any(r["exercised"] for r in run.rules_of(group)):
        _skip(f"no {group} rule was exercised in this run")


def _skip(reason: str) -> NoReturn:
    """Skip, reported at the test (``acp-model``), not at this line of the plugin."""
    exc = pytest.skip.Exception(reason)
    exc._use_item_location = True  # what pytest's own skip markers do
    raise exc


# ---------------------------------------------------------------------------- collection --

class AcpConformance(pytest.File):
    """The virtual file ``acp-model`` that holds one test per rule group."""

    def collect(self) -> Iterator[pytest.Item]:
        for group in rule_groups():
            yield AcpGroupItem.from_parent(self, name=f"test_acp[{group}]", group=group)


class AcpGroupItem(pytest.Item):
    """``test_acp[GROUP]``: the group's verdict from the session's fuzz run."""

    def __init__(self, *, group: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.group = group
        self.add_marker("acp")
        opts = _options(self.config)
        if self.config.pluginmanager.hasplugin("xdist"):
            # ``--dist loadgroup`` keeps every group on one worker, hence one fuzz run.
            self.add_marker(pytest.mark.xdist_group(NODE_NAME))
        if opts is not None and self.config.pluginmanager.hasplugin("timeout"):
            p = opts.profile
            # Generation, shrinking, replays: generous, a guard against a wedged run only.
            self.add_marker(pytest.mark.timeout(
                p.time_budget + p.shrink_budget * 8 + opts.deadline * 20 + 120))

    def runtest(self) -> None:
        check_group(run_once(self.config), self.group)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str | Any:
        if isinstance(excinfo.value, AcpGroupFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        # A line number is required where pytest reports a skip at the item (see _skip).
        return self.path, 0, f"acp-model rule group {self.group}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Add the group tests (before -k/-m deselection) and mark tests using the agent."""
    if _options(config) is None:
        return
    agent_fixtures = {"acp_client", "acp_monitor", "acp_state_machine", "acp_fuzz"}
    for item in items:
        if agent_fixtures & set(getattr(item, "fixturenames", ())):
            item.add_marker("acp")
    holder = AcpConformance.from_parent(session, path=config.rootpath / NODE_NAME)
    added = list(holder.collect())
    # Reported like a collected file, so "collected N items" counts the group tests too.
    config.hook.pytest_collectreport(
        report=pytest.CollectReport(holder.nodeid, "passed", None, list(added)))
    items.extend(added)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    got = config.stash.get(_RUN, None)
    uid = config.stash.get(_TESTRUN, None)
    if got is None and uid is not None:  # xdist controller: the run a worker shared
        data = _shared_paths(uid)[1]
        with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError):
            got = pickle.loads(data.read_bytes())
    if not isinstance(got, AcpRun):
        return
    s = got.report["summary"]
    tr = terminalreporter
    tr.section("acp-model")
    tr.write_line(f"agent: {got.report['source']}  profile: {got.profile.name}  seed: "
                  f"{got.result.cfg.seed}  example database: {got.result.cfg.database or 'none'}")
    tr.write_line(f"{s['examples']} examples, {s['actions']} client actions in {s['seconds']} s, "
                  f"{s['restarts']} restart(s); failures: {', '.join(got.failed_rules) or 'none'}"
                  f"; warnings: {s['warnings']}")
    for note in got.result.notes:
        tr.write_line(f"note: {note}")
    opts = _options(config)
    if opts is not None and opts.out is not None:
        tr.write_line(f"report: {opts.out / 'report.json'}")


# ---------------------------------------------------------------------------- fixtures ----

@pytest.fixture(scope="session")
def acp_config(request: pytest.FixtureRequest) -> FuzzConfig:
    """The fuzzer configuration for the agent under test (skips without ``--acp-agent``)."""
    opts = _options(request.config)
    if opts is None:
        pytest.skip("needs --acp-agent")
    return fuzz_config(opts)


@pytest.fixture(scope="session")
def acp_settings(request: pytest.FixtureRequest, acp_config: FuzzConfig) -> Settings:
    """Hypothesis settings of the selected ``--acp-profile`` (with the agent's database)."""
    opts = _options(request.config)
    assert opts is not None
    return profile_settings(opts.profile, acp_config)


@pytest.fixture(scope="session")
def acp_fuzz(request: pytest.FixtureRequest) -> AcpRun:
    """The session's fuzz run (run once, shared with the ``test_acp[GROUP]`` tests)."""
    return run_once(request.config)


@pytest.fixture
def acp_client(acp_config: FuzzConfig) -> Iterator[FuzzClient]:
    """A connected, initialized client to the agent under test; closed afterwards."""
    from acp_model.fuzzing.client import AgentUnusable, FuzzClient

    cfg = acp_config
    try:
        client = FuzzClient(cfg.argv, readings=cfg.readings, deadline=cfg.deadline,
                            validate=cfg.validate, cwd=cfg.cwd, env=cfg.env)
    except AgentUnusable as exc:
        pytest.fail(f"cannot start the agent: {exc}", pytrace=False)
    try:
        try:
            client.initialize()
        except AgentUnusable as exc:
            pytest.fail(f"the agent did not initialize: {exc}", pytrace=False)
        yield client
    finally:
        client.close()


@pytest.fixture
def acp_monitor(acp_client: FuzzClient) -> Monitor:
    """The monitor of ``acp_client``: every message both ways, judged as it arrives."""
    return acp_client.monitor


@contextlib.contextmanager
def lifecycle_machine(cfg: FuzzConfig) -> Iterator[type[RuleBasedStateMachine]]:
    """The fuzzer's Hypothesis state machine bound to a fresh agent pool, closed on exit.

    Subclass the yielded class to add ``@rule``s and run it with :func:`run_lifecycle`.
    Instances hold ``self.ex`` (the :class:`~acp_model.fuzzing.runner.Example`):
    ``self.ex.act({"op": ...})`` performs a client action (the vocabulary of
    :meth:`FuzzClient.perform <acp_model.fuzzing.client.FuzzClient.perform>`) and raises
    :class:`~acp_model.fuzzing.runner.LifecycleFailure` when the oracle reports a failure. The
    class carries ``acp_recorder`` (every failure and warning seen, the side channel that
    survives Hypothesis' flakiness reports), ``acp_pool`` and ``acp_config``. Raises
    ``AgentUnusable`` when the agent cannot be started.
    """
    from acp_model.fuzzing.machine import build_machine
    from acp_model.fuzzing.runner import AgentPool, Example, Recorder, ShrinkBudgetSpent

    recorder = Recorder()
    pool = AgentPool(cfg, recorder)
    limits: dict[str, float | None] = {"shrink": None}  # set by run_lifecycle while it runs
    try:
        capabilities = pool.client().prompt_capabilities()

        def begin() -> Example:
            budget, first = limits["shrink"], recorder.round_failure_at
            if budget is not None and first is not None and recorder.elapsed() - first > budget:
                raise ShrinkBudgetSpent  # the shortest failing program is already recorded
            return Example(pool.client(), recorder, deadline=cfg.deadline)

        machine = build_machine(begin, pool.end_example, capabilities, cfg.max_sessions)
        machine.acp_recorder = recorder  # type: ignore[attr-defined]
        machine.acp_pool = pool  # type: ignore[attr-defined]
        machine.acp_config = cfg  # type: ignore[attr-defined]
        machine.acp_limits = limits  # type: ignore[attr-defined]
        yield machine
    finally:
        pool.retire()


def _only_expected(exc: BaseException) -> bool:
    """Lifecycle failures and Hypothesis' replay troubles: the recorder holds the truth."""
    from hypothesis.errors import HypothesisException

    from acp_model.fuzzing.runner import LifecycleFailure, ShrinkBudgetSpent

    nested = getattr(exc, "exceptions", None)
    if nested:
        return all(_only_expected(e) for e in nested)
    return isinstance(exc, LifecycleFailure | HypothesisException | ShrinkBudgetSpent)


def run_lifecycle(machine: type[RuleBasedStateMachine], settings: Settings | None = None, *,
                  replay: bool = True) -> None:
    """Run a machine from :func:`lifecycle_machine` (or a subclass) and fail like the plugin.

    ``run_state_machine_as_test`` alone reports a timing-dependent failure as Hypothesis
    flakiness (``FlakyFailure``, "inconsistent data generation"), because a live agent need not
    fail the same way twice. Here failures come from the recorder instead: shrinking stops after
    ``acp_config.shrink_budget`` seconds, each failure is replayed in fresh agent processes
    (unless ``replay=False``), and the test fails with the same text as ``test_acp[GROUP]``.
    Anything else the rules raise (your own assertions) propagates unchanged.
    """
    from hypothesis.stateful import run_state_machine_as_test

    from acp_model.fuzzing.campaign import measure_reproduction

    recorder = machine.acp_recorder  # type: ignore[attr-defined]
    cfg = machine.acp_config  # type: ignore[attr-defined]
    limits = machine.acp_limits  # type: ignore[attr-defined]
    before = set(recorder.found)
    recorder.round_failure_at = None
    limits["shrink"] = cfg.shrink_budget
    try:
        run_state_machine_as_test(machine, settings=settings)
    except BaseException as exc:
        if not (_only_expected(exc) and recorder.found):
            raise
    finally:
        limits["shrink"] = None
    emit_warnings(recorder)
    new = {rule: f for rule, f in recorder.found.items() if rule not in before}
    if not new:
        return
    if replay:
        for found in new.values():
            measure_reproduction(cfg, found, recorder.elapsed)
    pytest.fail(f"{len(new)} rule(s) failed against {shlex.join(cfg.argv)}\n\n"
                + describe_failures(new), pytrace=False)


@pytest.fixture
def acp_state_machine(acp_config: FuzzConfig) -> Iterator[type[RuleBasedStateMachine]]:
    """The lifecycle state machine class for the agent under test (see lifecycle_machine)."""
    from acp_model.fuzzing.client import AgentUnusable

    try:
        with lifecycle_machine(acp_config) as machine:
            yield machine
    except AgentUnusable as exc:
        pytest.fail(f"cannot start the agent: {exc}", pytrace=False)

