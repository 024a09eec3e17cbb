"""``run_fuzz`` and ``replay``: the library API behind ``acp-model fuzz`` and ``replay``."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Verbosity, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from hypothesis.errors import HypothesisException
from hypothesis.stateful import run_state_machine_as_test

from acp_model.fuzzing.client import Action, AgentUnusable, FuzzClient
from acp_model.fuzzing.machine import build_machine
from acp_model.fuzzing.runner import (
    AgentPool,
    BudgetExhausted,
    Example,
    Found,
    FuzzConfig,
    LifecycleFailure,
    Recorder,
    ShrinkBudgetSpent,
    standalone,
)
from acp_model.monitor import Monitor, Violation


class FuzzerBug(Exception):
    """An exception that is neither a lifecycle failure nor Hypothesis flakiness (exit 3)."""


@dataclass
class FuzzResult:
    cfg: FuzzConfig
    recorder: Recorder
    monitors: list[Monitor]
    seconds: float
    interrupted: bool = False
    unusable: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.recorder.found) or self.unusable is not None

    @property
    def actions_per_second(self) -> float:
        return self.recorder.actions / self.seconds if self.seconds > 0 else 0.0


def example_database(cfg: FuzzConfig) -> ExampleDatabase | None:
    """Hypothesis' example database for this agent, or None when ``cfg.database`` is unset.

    A stored entry is a Hypothesis choice sequence, not our action list: it means the same
    client program only for the same agent command line (its advertised capabilities shape the
    prompts) and the same ``max_sessions``, and it fails only under the same readings. Hence
    one subdirectory of ``cfg.database`` per such key, shared by every run and process that
    fuzzes that agent (the directory database is safe for concurrent processes).
    """
    if cfg.database is None:
        return None
    ident = json.dumps([cfg.argv, cfg.max_sessions, cfg.readings.as_dict()], sort_keys=True)
    key = hashlib.sha256(ident.encode()).hexdigest()[:16]
    return DirectoryBasedExampleDatabase(Path(cfg.database) / key)


class _KeepStored(ExampleDatabase):
    """The database as seen by rounds after the first: saves and moves, never deletes.

    Those rounds mask the rules already found, so a stored failure replays as a pass there and
    Hypothesis would delete it; it must stay for the next run (which masks nothing).
    """

    def __init__(self, db: ExampleDatabase) -> None:
        super().__init__()
        self.db = db

    def save(self, key: bytes, value: bytes) -> None:
        self.db.save(key, value)

    def fetch(self, key: bytes) -> Any:
        return self.db.fetch(key)

    def delete(self, key: bytes, value: bytes) -> None:
        pass

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.db.move(src, dest, value)


def _leaves(exc: BaseException) -> list[BaseException]:
    nested = getattr(exc, "exceptions", None)
    if nested:
        return [leaf for e in nested for leaf in _leaves(e)]
    return [exc]


def _expected(exc: BaseException) -> bool:
    """Lifecycle failures and Hypothesis' own flakiness reports are expected outcomes."""
    return all(isinstance(e, LifecycleFailure | HypothesisException | BudgetExhausted
                          | ShrinkBudgetSpent) for e in _leaves(exc))


def run_fuzz(cfg: FuzzConfig, *, on_progress: Callable[[Recorder], None] | None = None
             ) -> FuzzResult:
    """Fuzz one agent command line; never raises for anything the agent does."""
    recorder = Recorder(on_progress=on_progress)
    database = example_database(cfg)
    pool = AgentPool(cfg, recorder)
    start = time.monotonic()
    result = FuzzResult(cfg, recorder, [], 0.0)
    try:
        try:
            first = pool.client()
        except AgentUnusable as exc:
            result.unusable = str(exc)
            _harvest_unusable(pool, recorder)
            first = None
        capabilities = first.prompt_capabilities() if first is not None else {}
        stop_at = start + cfg.time_budget if cfg.time_budget else None

        def begin() -> Example:
            if stop_at is not None and time.monotonic() > stop_at:
                raise BudgetExhausted
            if cfg.stop_on and cfg.stop_on <= set(recorder.found):
                raise BudgetExhausted  # what the caller came for is found (benchmarks)
            first_failure = recorder.round_failure_at
            if first_failure is not None and recorder.elapsed() - first_failure > \
                    cfg.shrink_budget:
                raise ShrinkBudgetSpent
            try:
                client = pool.client()
            except AgentUnusable as exc:
                result.notes.append(f"agent could not be restarted: {exc}")
                _harvest_unusable(pool, recorder)
                raise BudgetExhausted from None
            return Example(client, recorder, deadline=cfg.deadline)

        machine = build_machine(begin, pool.end_example, capabilities, cfg.max_sessions)
        for round_no in range(cfg.max_rounds if first is not None else 0):
            known = set(recorder.found)
            examples = cfg.max_examples if round_no == 0 else max(10, cfg.max_examples // 2)
            chosen = settings(max_examples=examples, stateful_step_count=cfg.steps,
                              deadline=None, report_multiple_bugs=False,
                              database=database if round_no == 0 or database is None
                              else _KeepStored(database),
                              suppress_health_check=list(HealthCheck),
                              verbosity=Verbosity.quiet, print_blob=False)
            target = seed(cfg.seed + round_no)(machine) if cfg.seed is not None else machine
            recorder.round_failure_at = None
            try:
                run_state_machine_as_test(target, settings=chosen)
            except BudgetExhausted:
                result.notes.append("stopped: what was asked for is found"
                                    if cfg.stop_on and cfg.stop_on <= set(recorder.found)
                                    else "time budget spent")
                break
            except ShrinkBudgetSpent:
                result.notes.append(f"shrinking stopped after {cfg.shrink_budget:g} s")
            except KeyboardInterrupt:
                result.interrupted = True
                break
            except BaseException as exc:  # classified just below
                if not _expected(exc):
                    raise FuzzerBug(f"{type(exc).__name__}: {exc}") from exc
                if any(isinstance(e, HypothesisException) for e in _leaves(exc)):
                    result.notes.append("Hypothesis could not replay a failure exactly (the "
                                        "agent's timing differs between runs); the first "
                                        "failure seen and its shortest program were kept")
            if set(recorder.found) == known:
                break  # a whole round without a new failure
            recorder.masked |= set(recorder.found)
            if stop_at is not None and time.monotonic() > stop_at:
                break
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        pool.retire()
        result.monitors = pool.monitors()
        result.seconds = time.monotonic() - start
    if not result.interrupted:
        for found in recorder.found.values():
            try:
                measure_reproduction(cfg, found, recorder.elapsed)
            except KeyboardInterrupt:
                result.interrupted = True
                break
    return result


def _harvest_unusable(pool: AgentPool, recorder: Recorder) -> None:
    """Turn what the monitor saw of an unusable agent into recorded failures."""
    client = pool.current
    if client is None:
        return
    client.check_alive()
    records = client.proc.records()
    for v in client.monitor.violations:
        if v.level == "fail":
            recorder.failure(v, [], records, v.index, [])
        else:
            recorder.warning(v)


@dataclass
class ReplayOutcome:
    reproduced: bool
    violations: list[Violation]
    records: list[dict[str, Any]]
    offending: int | None
    error: str | None = None


def replay_once(cfg: FuzzConfig, actions: list[Action], rule: str | None,
                abort: threading.Event | None = None) -> ReplayOutcome:
    """Run an action list against a fresh agent process, exactly as the fuzzer did.

    ``abort`` (set on Ctrl-C while replays run in threads) stops it after the current action.
    """
    try:
        client = FuzzClient(cfg.argv, readings=cfg.readings, deadline=cfg.deadline,
                            validate=cfg.validate, cwd=cfg.cwd, env=cfg.env,
                            startup_deadline=cfg.startup_deadline)
    except AgentUnusable as exc:
        return ReplayOutcome(False, [], [], None, str(exc))
    error = None
    try:
        try:
            client.initialize()
            ex = Example(client, Recorder(), deadline=cfg.deadline)
            with contextlib.suppress(LifecycleFailure):
                for action in actions:
                    if abort is not None and abort.is_set():
                        return ReplayOutcome(False, [], [], None, "interrupted")
                    ex.act(action)
            with contextlib.suppress(LifecycleFailure):
                ex.finish()
        except AgentUnusable as exc:
            error = str(exc)
    finally:
        client.close()
    failures = [v for v in client.monitor.violations if v.level == "fail"]
    hit = next((v for v in failures if rule is None or v.rule == rule), None)
    return ReplayOutcome(hit is not None, failures, client.proc.records(),
                         hit.index if hit else None, error)


def measure_reproduction(cfg: FuzzConfig, found: Found,
                         clock: Callable[[], float] | None = None) -> None:
    """Find a counterexample that replays in a fresh process, shrink it, measure it.

    Candidates are the shortest programs that showed the failure (the one Hypothesis shrank
    may depend on a lucky race, and Hypothesis stops shrinking when a replay misses). With a
    shared agent process an example can also depend on what earlier examples left behind (the
    second session/new of a connection...): then the shortest reproducing suffix of the
    process's history stands in. The chosen program is then delta-debugged against fresh
    processes within ``cfg.shrink_budget`` seconds, and replayed ``cfg.replay_runs`` times.
    """
    stop_at = time.monotonic() + cfg.shrink_budget
    chosen: list[Action] | None = None
    candidates = found.candidates or [(found.actions, found.history)]
    hit = _first_reproducing(cfg, found.rule, [c[0] for c in candidates], confirm=1)
    if hit is not None:
        chosen = candidates[hit][0]
    if chosen is None:
        for _, history in candidates[:2]:
            if len(history) > 1 and time.monotonic() < stop_at:
                suffix = _history_suffix(cfg, found.rule, history, stop_at)
                if suffix is not None:
                    chosen = suffix
                    found.notes.append("the example needed state left by earlier examples on "
                                       "the shared agent process; this counterexample replays "
                                       "that history, shrunk")
                    break
    if chosen is not None:
        shrunk = _delta_debug(cfg, found.rule, chosen, stop_at)
        if clock is not None and len(shrunk) < len(found.actions):
            found.minimal_at = clock()  # only when this step made it smaller
        found.actions = shrunk
    outcomes = _replay_many(cfg, found.actions, found.rule, cfg.replay_runs)
    for outcome in outcomes:
        found.replays += 1
        if outcome.reproduced:
            found.reproduced += 1
            if found.replay_records is None:
                found.replay_records = outcome.records
                found.replay_offending = outcome.offending
                # Its index and wording match the transcript written for the counterexample.
                found.violation = next(v for v in outcome.violations if v.rule == found.rule)


def _replay_many(cfg: FuzzConfig, actions: list[Action], rule: str, runs: int
                 ) -> list[ReplayOutcome]:
    """Independent replays, a few at a time: they mostly wait on the agent."""
    if runs <= 0:
        return []
    return _in_threads(lambda _, abort: replay_once(cfg, actions, rule, abort), range(runs))


def _in_threads(job: Callable[[Any, threading.Event], ReplayOutcome], items: Any
                ) -> list[ReplayOutcome]:
    """Run replays four at a time; Ctrl-C stops the running ones after their current action."""
    abort = threading.Event()
    items = list(items)
    with ThreadPoolExecutor(max_workers=max(1, min(4, len(items)))) as pool:
        try:
            return list(pool.map(lambda item: job(item, abort), items))
        except KeyboardInterrupt:
            abort.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _first_reproducing(cfg: FuzzConfig, rule: str, trials: list[list[Action]],
                       confirm: int = 2, stop_at: float | None = None) -> int | None:
    """Index of the first trial that reproduces ``confirm`` times in a row.

    Racy failures reproduce only sometimes; demanding two hits keeps delta debugging from
    trading a reliable counterexample for a shorter, luckier one. Replays run four at a time;
    no new batch starts after ``stop_at``.
    """
    jobs = [(n, trial) for n, trial in enumerate(trials) for _ in range(confirm)]
    for start in range(0, len(jobs), 4):
        if stop_at is not None and time.monotonic() > stop_at:
            return None
        batch = jobs[start:start + 4]
        outcomes = _in_threads(lambda job, abort: replay_once(cfg, job[1], rule, abort), batch)
        done: dict[int, list[bool]] = {}
        for (n, _), outcome in zip(batch, outcomes, strict=True):
            done.setdefault(n, []).append(outcome.reproduced)
        for n in sorted(done):
            if len(done[n]) == confirm and all(done[n]):
                return n
    return None


# A failure that needs more of the shared process's history than this is reported with the
# shortest program that showed it, not with a replayed history (replaying hours is no help).
MAX_HISTORY_EXAMPLES = 64


def _history_suffix(cfg: FuzzConfig, rule: str, history: list[list[Action]], stop_at: float
                    ) -> list[Action] | None:
    """The shortest suffix of the process's examples that reproduces on a fresh process."""
    longest = min(len(history), MAX_HISTORY_EXAMPLES)
    sizes = sorted({min(2 ** n, longest) for n in range(1, 7)})
    trials = [standalone([a for ex in history[-k:] for a in ex]) for k in sizes]
    hit = _first_reproducing(cfg, rule, trials, stop_at=stop_at)
    return None if hit is None else trials[hit]


def _delta_debug(cfg: FuzzConfig, rule: str, actions: list[Action], stop_at: float
                 ) -> list[Action]:
    """Remove chunks, then single actions, while the failure still reproduces."""
    actions = standalone(actions)
    chunk = max(1, len(actions) // 2)
    while len(actions) > 1 and time.monotonic() < stop_at:
        removals = [standalone(actions[:i] + actions[i + chunk:])
                    for i in range(0, len(actions), chunk)]
        removals = [r for r in removals if r]
        hit = (_first_reproducing(cfg, rule, removals, stop_at=stop_at) if removals
               else None)
        if hit is not None:
            actions = removals[hit]
            chunk = min(chunk, max(1, len(actions) // 2))
        elif chunk == 1:
            break
        else:
            chunk //= 2
    return actions
