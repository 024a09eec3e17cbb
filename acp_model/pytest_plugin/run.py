"""The validated options and the one fuzz run of a pytest session (shared with xdist workers
through a file lock and a pickle)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypothesis import settings as Settings

    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.fuzzing.run import FuzzResult


import fcntl
import pickle
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from acp_model.pytest_plugin.profiles import AcpProfile, register_profiles
from acp_model.spec.levels import Level
from acp_model.spec.rules import group_of

DEFAULT_DB = ".hypothesis/acp-model"  # relative to pytest's rootdir


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
    shared_databases: tuple[str, ...] = ()  # Redis URLs (fuzzing/database.py)
    database_readonly: bool = False
    spec: str = "auto"  # the revision, or auto (decided when the run starts)
    # the rules whose failures are minimized and replayed (None: all): those of the groups
    # left after -k/-m deselection, when no selected test reads the whole run
    reproduce_only: frozenset[str] | None = None


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
    from acp_model.fuzzing.frontend import agent_problem

    problem = agent_problem(argv)
    if problem is not None:
        raise pytest.UsageError(f"--acp-agent: {problem}")
    return argv


def _options(config: pytest.Config) -> AcpOptions | None:
    return config.stash.get(_OPTIONS, None)


def fuzz_config(opts: AcpOptions) -> FuzzConfig:
    """The fuzzer configuration a profile and the options stand for."""
    from acp_model.fuzzing.config import FuzzConfig

    p = opts.profile
    seed = opts.seed if opts.seed is not None else (0 if p.derandomize else None)
    return FuzzConfig(argv=list(opts.argv), max_examples=p.max_examples, steps=p.steps,
                      seed=seed, time_budget=p.time_budget, deadline=opts.deadline,
                      readings=opts.readings, replay_runs=p.replay_runs,
                      max_rounds=p.max_rounds, shrink_budget=p.shrink_budget,
                      cwd=opts.cwd, database=opts.database, spec=opts.spec,
                      shared_databases=opts.shared_databases,
                      database_readonly=opts.database_readonly,
                      reproduce_only=opts.reproduce_only)


def profile_settings(profile: AcpProfile, cfg: FuzzConfig | None = None) -> Settings:
    """The profile's Hypothesis settings, with the agent's example database unless derandomized.

    Meant for tests that run their own machine (``acp_state_machine``) with the same budget.
    """
    from hypothesis import settings

    from acp_model.fuzzing.database import example_database

    register_profiles()
    base = settings.get_profile(profile.hypothesis)
    if cfg is None or profile.derandomize or (cfg.database is None
                                              and not cfg.shared_databases):
        return base
    return settings(base, database=example_database(cfg))


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

    cfg = fuzz_config(opts)
    try:
        client = FuzzClient(cfg)
    except AgentUnusable as exc:
        raise unusable(exc) from None
    try:
        client.initialize()
    except AgentUnusable as exc:
        if any(v.level == Level.FAIL and v.rule.startswith("INIT-")
               for v in client.monitor.violations):
            return
        detail, stderr = str(exc), ""
        if client.alive:
            if "did not answer" in detail:
                detail += (f" within {client.startup_deadline:g} s (is it an ACP agent "
                           "speaking JSON-RPC on stdio?)")
        else:
            code = client.proc.wait_exit(1.0)
            tail = client.proc.stderr_text()[-500:].strip()
            detail = f"the agent exited before answering initialize (exit code {code})"
            stderr = f"\n  its stderr ends with:\n{tail}" if tail else "\n  its stderr was empty"
        raise unusable(detail, stderr) from None
    finally:
        client.close()


@dataclass
class AcpRun:
    """One fuzz run of the session: the result, its JSON report and the files written."""

    result: FuzzResult
    report: dict[str, Any]
    profile: AcpProfile
    files: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def failed_rules(self) -> list[str]:
        """Rules whose failure stands (one a shared process showed once, which no fresh
        process reproduced, is a warning)."""
        return sorted(rule for rule, f in self.result.recorder.found.items() if f.stands)

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


def _fuzz(opts: AcpOptions) -> AcpRun:
    from acp_model.fuzzing.orchestrator import FuzzRun, Outputs

    run = FuzzRun(fuzz_config(opts))
    result = run.fuzz(strict_spec=False)
    if result.interrupted:
        raise KeyboardInterrupt
    out = opts.out
    outcome = run.report(result, Outputs(out=out, report=out / "report.json" if out else None),
                         extra={"profile": opts.profile.name})
    result.monitors = []  # summarized in the report; keeps the run small enough to share
    return AcpRun(result, outcome.report, opts.profile, outcome.files)
