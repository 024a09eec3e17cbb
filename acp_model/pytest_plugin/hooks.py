"""The plugin's pytest hooks: options, configuration, the usability probe, collection of the
conformance items and the terminal summary."""

from __future__ import annotations

import contextlib
import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from acp_model.argtypes import positive_float
from acp_model.pytest_plugin.items import NODE_NAME, AcpConformance, AcpGroupItem
from acp_model.pytest_plugin.profiles import PROFILES, default_profile, register_profiles
from acp_model.pytest_plugin.run import (
    _OPTIONS,
    _RUN,
    _TESTRUN,
    DEFAULT_DB,
    AcpOptions,
    AcpRun,
    _options,
    _shared_paths,
    agent_argv,
    probe_agent,
)
from acp_model.spec import revisions
from acp_model.spec.rules import RULES, group_of

if TYPE_CHECKING:

    pass

_GROUPS = pytest.StashKey[frozenset[str]]()  # every group's test, before deselection

# Fixtures whose tests read the session's whole run (every failure, minimized and replayed).
WHOLE_RUN_FIXTURES = frozenset({"acp_fuzz"})


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acp-model", "ACP agent conformance (acp-model)")
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
    group.addoption("--acp-spec", choices=revisions.CHOICES, default="auto",
                    help="the spec revision that judges (default auto: the agent's first "
                         "prompt response decides)")
    group.addoption("--acp-out", metavar="DIR", default=None,
                    help="write report.json and, per failure, transcript, counterexample, "
                         "sequence diagram and replay file under DIR")
    group.addoption("--acp-db", metavar="DIR|redis://HOST:PORT/N", default=None,
                    help=f"Hypothesis example database: a directory (default {DEFAULT_DB} "
                         "under the rootdir), a shared Redis server, or both comma-separated; "
                         "'none' disables; the ci profile never uses one")
    group.addoption("--acp-db-readonly", action="store_true", default=False,
                    help="replay from the shared (Redis) stores, save nothing there")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "acp: a test of the ACP agent given with --acp-agent")
    command = config.getoption("acp_agent")
    if command is None:
        return
    from acp_model.spec.readings import DEFAULT, ReadingError

    register_profiles()
    try:
        spec = config.getoption("acp_spec")
        readings = DEFAULT.parse([*([f"SPEC={spec}"] if spec != "auto" else []),
                                  *config.getoption("acp_reading")])
    except (ReadingError, ValueError) as exc:
        raise pytest.UsageError(f"--acp-reading: {exc}") from None
    profile = PROFILES[config.getoption("acp_profile") or default_profile()]
    db = config.getoption("acp_db")  # given: relative to the current directory, like --acp-out
    shared: tuple[str, ...] = ()
    if profile.derandomize or (db is not None and db.lower() == "none"):
        database = None
    elif db is None:
        database = str(config.rootpath / DEFAULT_DB)
    else:
        from acp_model.fuzzing.database import DatabaseError, locations

        try:
            database, shared = locations([db], Path.cwd())
        except DatabaseError as exc:
            raise pytest.UsageError(f"--acp-db: {exc}") from None
    out = config.getoption("acp_out")
    config.stash[_OPTIONS] = AcpOptions(
        argv=agent_argv(command), profile=profile, seed=config.getoption("acp_seed"),
        deadline=config.getoption("acp_deadline"), readings=readings, spec=spec,
        out=Path(out) if out else None, database=database, shared_databases=shared,
        database_readonly=config.getoption("acp_db_readonly"), cwd=str(config.rootpath))


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    opts = _options(config)
    if opts is None or config.option.collectonly or hasattr(config, "workerinput"):
        return  # xdist workers: the controller already probed
    probe_agent(opts)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: remember the run id, to summarize and clean up the shared run."""
    node.config.stash[_TESTRUN] = str(node.workerinput["testrunuid"])


def pytest_unconfigure(config: pytest.Config) -> None:
    uid = config.stash.get(_TESTRUN, None)
    if uid is not None:
        for path in _shared_paths(uid):
            path.unlink(missing_ok=True)


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
    config.stash[_GROUPS] = frozenset(item.group for item in added
                                      if isinstance(item, AcpGroupItem))


def pytest_collection_finish(session: pytest.Session) -> None:
    """After -k/-m deselection: when some rule groups' tests are left out and no selected
    test reads the whole run, only the selected groups' failures are minimized and replayed
    (the others cost replays no test reports; the run still finds and reports them)."""
    opts = _options(session.config)
    if opts is None or any(WHOLE_RUN_FIXTURES & set(getattr(item, "fixturenames", ()))
                           for item in session.items):
        return
    groups = {item.group for item in session.items if isinstance(item, AcpGroupItem)}
    collected = session.config.stash.get(_GROUPS, frozenset())
    if groups < collected:
        opts.reproduce_only = frozenset(r for r in RULES if group_of(r) in groups)


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
