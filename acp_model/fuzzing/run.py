"""``run_fuzz``: the library API behind ``acp-model fuzz``."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Verbosity, seed, settings
from hypothesis.database import ExampleDatabase, InMemoryExampleDatabase
from hypothesis.errors import HypothesisException
from hypothesis.stateful import run_state_machine_as_test

from acp_model.agentcov import AgentCoverage
from acp_model.fuzzing.alone import GateHold
from acp_model.fuzzing.backend import backend
from acp_model.fuzzing.budget import DRAIN_DEADLINES, Budget, failure_budget
from acp_model.fuzzing.client import AgentUnusable
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.corpus import Corpus, CorpusChoices, corpus_round
from acp_model.fuzzing.database import DatabaseError, _KeepStored, example_database
from acp_model.fuzzing.machine import machine_for
from acp_model.fuzzing.pool import AgentPool, Example
from acp_model.fuzzing.recorder import (
    BudgetExhausted,
    Found,
    LifecycleFailure,
    Recorder,
    ShrinkBudgetSpent,
)
from acp_model.fuzzing.revision import SpecUndecidable, resolve
from acp_model.fuzzing.shrink import PARALLEL, WarmPool, measure_reproduction
from acp_model.fuzzing.stop import Stop
from acp_model.oracle.monitor import Monitor
from acp_model.spec.revisions import AUTO

# The budget's end stopped an example mid-wait: what the agent owed then was not judged (an
# agent that never answers can pass a budget too short to prove it).
CUT_EXAMPLE = ("time budget spent: its end cut the last example before what the agent owed "
               "was judged (a longer --time-budget judges it)")


class FuzzerBug(Exception):
    """An exception that is neither a lifecycle failure nor Hypothesis flakiness (exit 3)."""


@dataclass
class FuzzResult:
    cfg: FuzzConfig
    recorder: Recorder
    monitors: list[Monitor]
    seconds: float
    interrupted: bool = False
    # The agent could not be fuzzed (it refused or never finished initialize...): what a rule
    # says about that is among the recorder's failures; the rest is not the agent's verdict.
    unusable: str | None = None
    # A usage or environment problem (a readings contradiction, a database gone): nothing was
    # judged, and no verdict is owed to the agent (exit 2).
    problem: str | None = None
    notes: list[str] = field(default_factory=list)
    # seconds of each phase ("probe", "generation", "minimizing", "replaying", "writing")
    phases: dict[str, float] = field(default_factory=dict)
    # the agent's own coverage of its ACP layer (``--coverage``; None: not measured)
    agent_coverage: AgentCoverage | None = None

    @property
    def failed(self) -> bool:
        """A failure stands (one only a shared process showed, which no fresh-process replay
        reproduced, is reported as a warning)."""
        return any(f.stands for f in self.recorder.found.values())

    @property
    def judged(self) -> bool:
        """Something was judged: the run is not void for a usage, environment or start-up
        problem that no rule of the agent's covers, nor interrupted before its first example
        (a pass of nothing: a matrix row stopped at its start read as passing)."""
        return self.failed or (self.problem is None and self.unusable is None
                               and not (self.interrupted and self.recorder.examples == 0))

    @property
    def actions_per_second(self) -> float:
        return self.recorder.actions / self.seconds if self.seconds > 0 else 0.0


def _leaves(exc: BaseException) -> list[BaseException]:
    nested = getattr(exc, "exceptions", None)
    if nested:
        return [leaf for e in nested for leaf in _leaves(e)]
    return [exc]


def _ours(exc: BaseException) -> BaseException | None:
    """What ended a round: our own stop signal if it is anywhere in ``exc``, else ``exc``'s first
    Hypothesis leaf, else None (a failure Hypothesis replayed and shrank: the normal end).

    A ``BudgetExhausted`` raised in the middle of an example reaches us as Hypothesis'
    ``FlakyStrategyDefinition`` (its data tree saw the example stop drawing earlier than one with
    the same start), with ours as its context: the budget ended the round, not a failure that
    would not replay."""
    leaves = _leaves(exc)
    for leaf in leaves:
        seen: BaseException | None = leaf
        while seen is not None:
            if isinstance(seen, BudgetExhausted | ShrinkBudgetSpent):
                return seen
            seen = seen.__context__
    return next((e for e in leaves if isinstance(e, HypothesisException)), None)


def _expected(exc: BaseException) -> bool:
    """Lifecycle failures and Hypothesis' own flakiness reports are expected outcomes."""
    return all(isinstance(e, LifecycleFailure | HypothesisException | BudgetExhausted
                          | ShrinkBudgetSpent) for e in _leaves(exc))


def run_fuzz(cfg: FuzzConfig, *, on_progress: Callable[[Recorder], None] | None = None,
             on_phase: Callable[[str], None] | None = None, stop: Stop | None = None,
             budget: Budget | None = None) -> FuzzResult:
    """Fuzz one agent command line; never raises for anything the agent does. The phases
    without the report: :class:`~acp_model.fuzzing.orchestrator.FuzzRun` adds it, as every
    front-end runs them.

    ``on_phase`` hears where the run is ("start-up", "initialize", "fuzzing", "shrinking R",
    "minimizing R", "replaying R"); ``stop`` ends it within a second when requested (the result says
    ``interrupted`` and holds what was found). An exception of the oracle itself is a
    :class:`FuzzerBug`, never a result. A configuration with ``model_api`` gets its scripted
    model for the whole run (replays included).

    ``cfg.time_budget`` bounds the whole run (fuzzing/budget.py); ``budget`` is a clock the
    caller started earlier (before its own probe), else one starts here.
    """
    stop = stop or Stop()
    with GateHold(cfg.minimize_alone, on_phase) as gate:
        if not gate.shared(stop):
            return FuzzResult(cfg, Recorder(), [], 0.0, interrupted=True)
        budget = budget or Budget(cfg.time_budget)
        with backend(cfg) as running:
            try:
                return fuzz_phases(running,
                                   Recorder(on_progress=on_progress, on_phase=on_phase),
                                   stop, budget, gate)
            finally:
                budget.close()


def fuzz_phases(cfg: FuzzConfig, recorder: Recorder, stop: Stop, budget: Budget,
                gate: GateHold | None = None) -> FuzzResult:
    """The phases after start-up, with the scripted model running: the probe (when ``cfg``'s
    revision is still ``auto``), generation, then minimizing and replaying each failure.
    ``recorder`` carries the caller's progress and phase listeners; ``gate`` (held shared
    until generation ends) is held alone for minimizing and replaying."""
    gate = gate or GateHold(None)
    phase = recorder.on_phase or (lambda _: None)
    if cfg.spec == AUTO and cfg.decision is None:
        phase("spec")
        budget.enter("probe")
    try:
        cfg = resolve(cfg, stop, budget.end)
    except SpecUndecidable as exc:
        result = FuzzResult(cfg, recorder, [], 0.0)
        result.problem = f"--spec {cfg.spec}: {exc}"
        return result
    except KeyboardInterrupt:  # during the probe: nothing judged yet, nothing lost
        return FuzzResult(cfg, recorder, [], 0.0, interrupted=True)
    budget.enter("generation")
    result = _generate(cfg, recorder, phase, stop, budget)
    gate.release()  # generation is done: a run waiting to minimize alone may go
    if recorder.internal_error is not None:
        error = recorder.internal_error
        raise FuzzerBug(str(error)) from error
    result.interrupted = result.interrupted or stop.requested
    _unjudged_after_probe(cfg, result)
    if not result.interrupted:
        _reproduce(cfg, result, phase, stop, budget, gate)
    if cfg.collector is not None:
        result.agent_coverage = agent_coverage(cfg)
    result.phases = budget.seconds()
    return result


def agent_coverage(cfg: FuzzConfig) -> AgentCoverage:
    """The run's figures of the agent's own coverage, its HTML pages written where
    ``--coverage-html`` asks (while the collector's hooks still exist: the Python report
    is written by the agent's interpreter)."""
    assert cfg.collector is not None
    figures = cfg.collector.result(html=cfg.coverage_html)
    figures.root = cfg.coverage_root
    if cfg.coverage_html:
        figures.write_html(cfg.coverage_html)
    return figures


def _unjudged_after_probe(cfg: FuzzConfig, result: FuzzResult) -> None:
    """A probe that waited out the budget for an agent that never answered leaves no example
    run: nothing of the lifecycle was judged, which is no pass (exit 2, with the reason)."""
    if cfg.decision is None or not cfg.decision.fallback or result.unusable is not None \
            or result.failed or result.interrupted or result.recorder.examples:
        return
    result.unusable = (f"--spec auto: {cfg.decision.evidence.split(';')[0]}, and no example "
                       "ran in what the time budget left: nothing of the prompt lifecycle "
                       "was judged (a larger --time-budget gives the run room)")


def _reproduce(cfg: FuzzConfig, result: FuzzResult, phase: Callable[[str], None], stop: Stop,
               budget: Budget, gate: GateHold) -> None:
    """Minimize and replay each failure, each within its own budget (``failure_budget``),
    holding ``gate`` alone (the wait for it is outside every budget)."""
    recorder = result.recorder
    found_all = [f for f in recorder.found.values()
                 if cfg.reproduce_only is None or f.rule in cfg.reproduce_only]
    skipped = sorted(set(recorder.found) - {f.rule for f in found_all})
    if skipped:
        result.notes.append(f"not minimized or replayed, as not asked for: {', '.join(skipped)}")
    if not found_all:
        return
    minimizing, replaying = failure_budget(cfg.minimize_budget, cfg.minimize_growth)
    if gate.path is not None:
        budget.enter("waiting")  # for the gate: no failure's budget runs meanwhile
    with gate.held_alone(stop) as alone:
        if alone:
            _minimize_all(cfg, result, found_all, phase, stop, budget,
                          (minimizing, replaying))
        else:
            result.interrupted = True


def _minimize_all(cfg: FuzzConfig, result: FuzzResult, found_all: list[Found],
                  phase: Callable[[str], None], stop: Stop, budget: Budget,
                  budgets: tuple[float, float]) -> None:
    """Each failure minimized and replayed in turn, sharing one warm pool."""
    recorder = result.recorder
    minimizing, replaying = budgets
    # one warm pool for every failure: the processes started ahead for one failure's last
    # replays serve the next one's first (on a slow agent, seconds each)
    with WarmPool(cfg, PARALLEL, stop) as pool:
        for found in found_all:
            now = time.monotonic()

            def step(name: str, rule: str = found.rule) -> None:
                budget.enter(name)
                phase(f"{name} {rule}")

            try:
                with budget.cutoff(stop, at=now + minimizing + replaying) as cut:
                    measure_reproduction(cfg, found, recorder.elapsed, stop=cut,
                                         minimize_until=now + minimizing, on_step=step,
                                         pool=pool)
            except KeyboardInterrupt:
                result.interrupted = True
                break
            if stop.requested:
                result.interrupted = True
                break
    recorder.one_root()  # failures minimizing re-rooted: under their root, one per root


def _generate(cfg: FuzzConfig, recorder: Recorder, phase: Callable[[str], None], stop: Stop,
              budget: Budget) -> FuzzResult:
    """Hypothesis' rounds against the agent, until the budget (or a round that found nothing
    new) ends them; a failure found stops them early enough to leave minimizing its share."""
    try:
        database = example_database(cfg)
    except DatabaseError as exc:  # a shared store that went away since the CLI checked it
        result = FuzzResult(cfg, recorder, [], 0.0)
        result.problem = f"example database: {exc}"
        return result
    if database is None and cfg.coverage:
        # the run's own corpus: the examples a round scored best on its targets (new agent
        # code among them) are replayed first in the next, and mutated from there
        database = InMemoryExampleDatabase()
    with budget.cutoff(stop) as hard:
        return _Rounds(cfg, recorder, stop, budget, AgentPool(cfg, recorder, hard)).run(
            phase, database)


# Measuring the agent's coverage, rounds are this short: a real agent runs a few dozen
# examples a minute, and guidance acts between rounds (the corpus rounds). Rounds go on until
# the time budget is spent or ``max_examples`` ran.
COVERAGE_ROUND = 20
# Guided, each round is followed by a corpus round continuing this many seeds at most
# (``fuzzing/corpus.py``): a third of the examples at most, the rest fresh generation.
CORPUS_ROUND = COVERAGE_ROUND // 2

# What ended a round, as the run's notes say it.
BUDGET_SPENT = "time budget spent"
ASKED_FOR_SEEN = "stopped: what was asked for is found"


class _Rounds:
    """The generation phase: Hypothesis rounds over one agent pool. It owns what the rounds
    share: the pool, the result being filled, the drain margin and the stop signals."""

    def __init__(self, cfg: FuzzConfig, recorder: Recorder, stop: Stop, budget: Budget,
                 pool: AgentPool) -> None:
        self.cfg, self.recorder, self.stop, self.budget, self.pool = \
            cfg, recorder, stop, budget, pool
        self.result = FuzzResult(cfg, recorder, [], 0.0)
        self.drain = DRAIN_DEADLINES * cfg.deadline
        # guidance measuring the agent's coverage: the examples that reached new code
        self.corpus = Corpus(random.Random(cfg.seed)) if cfg.coverage and cfg.guided else None

    def run(self, phase: Callable[[str], None], database: ExampleDatabase | None) -> FuzzResult:
        result, cfg = self.result, self.cfg
        start = time.monotonic()
        if cfg.decision is not None and cfg.decision.fallback:
            result.notes.append(f"--spec auto: {cfg.decision.evidence}")
        try:
            phase("start-up")
            machine = self._machine()
            phase("fuzzing")
            rounds = (-(-cfg.max_examples // COVERAGE_ROUND) if cfg.coverage
                      else cfg.max_rounds) if machine is not None else 0
            for round_no in range(rounds):
                if not self._round(machine, round_no, database):
                    break
                if self.corpus is not None and self.corpus.seeds and not self._round(
                        machine, round_no, database, self.corpus.prefixes(CORPUS_ROUND)):
                    break
        except KeyboardInterrupt:
            self._interrupted()
        finally:
            self.pool.retire()
            if self.corpus is not None:
                result.notes.append(
                    f"coverage guidance: {self.corpus.continued} examples continued one of "
                    f"the {self.corpus.kept} that reached new code (the corpus)")
            result.monitors = self.pool.monitors()
            result.seconds = time.monotonic() - start
        return result

    def _machine(self) -> type | None:
        """The Hypothesis machine over the pool's first agent; None when it cannot start."""
        try:
            return machine_for(self.cfg, self.pool, self._begin, self.corpus)
        except AgentUnusable as exc:
            self.result.unusable = str(exc)
            self.pool.harvest(unusable=True)
            return None

    def _stop_at(self) -> float | None:
        return self.budget.generation_end(self.drain)

    def _begin(self) -> Example:
        """Each example's start: the budget, the goals and the shrink budget may end the round
        here, between examples, never in the middle of one."""
        cfg, recorder = self.cfg, self.recorder
        self.stop.check()
        stop_at = self._stop_at()
        if stop_at is not None and time.monotonic() > stop_at:
            raise BudgetExhausted
        if _asked_for_is_seen(cfg, recorder):
            raise BudgetExhausted  # what the caller came for is found or reached
        first_failure = recorder.round_failure_at
        if first_failure is not None and recorder.elapsed() - first_failure > cfg.shrink_budget:
            raise ShrinkBudgetSpent
        try:
            client = self.pool.client()
        except AgentUnusable as exc:
            self.result.notes.append(f"agent could not be restarted: {exc}")
            self.pool.harvest(unusable=True)
            raise BudgetExhausted from None
        return Example(client, recorder, deadline=cfg.deadline, stop_at=stop_at,
                       relaunch=self.pool.relaunch)

    def _round(self, machine: type, round_no: int, database: ExampleDatabase | None,
               corpus: list[CorpusChoices] | None = None) -> bool:
        """One Hypothesis round; whether another follows. With ``corpus``, a corpus round:
        each prefix continued at random (Hypothesis' reuse phase), nothing else generated."""
        cfg, recorder = self.cfg, self.recorder
        known = set(recorder.found)
        examples = cfg.max_examples if round_no == 0 else max(10, cfg.max_examples // 2)
        if cfg.coverage:  # short rounds (see COVERAGE_ROUND)
            examples = min(cfg.max_examples, COVERAGE_ROUND)
        stored = database if round_no == 0 or database is None else _KeepStored(database)
        chosen_by: dict[str, Any] = {"max_examples": examples, "database": stored}
        if corpus is not None:
            chosen_by = corpus_round(corpus, stored)
        chosen = settings(stateful_step_count=cfg.steps, deadline=None,
                          report_multiple_bugs=False,
                          derandomize=False,  # not the ``ci`` profile's: rounds must differ
                          suppress_health_check=list(HealthCheck),
                          verbosity=Verbosity.quiet, print_blob=False, **chosen_by)
        target = seed(cfg.seed + round_no)(machine) if cfg.seed is not None else machine
        recorder.round_failure_at = None
        stopped: BaseException | None = None
        try:
            run_state_machine_as_test(target, settings=chosen)
        except KeyboardInterrupt:
            self._interrupted()
            return False
        except BaseException as exc:  # classified just below
            if not _expected(exc):
                raise FuzzerBug(f"{type(exc).__name__}: {exc}") from exc
            stopped = _ours(exc)
        if not self._note_end(stopped):
            return False
        if set(recorder.found) == known and stopped is None and not cfg.coverage:
            # a whole round without a new failure: said, as the run may end long before its
            # time budget (a coverage-guided run uses its whole budget: its short rounds
            # are steps of one search)
            self.result.notes.append(f"ended after a round of up to {examples} examples found "
                                     "nothing new (--max-examples sets the first round's size)")
            return False
        recorder.masked |= set(recorder.found)
        stop_at = self._stop_at()
        return stop_at is None or time.monotonic() <= stop_at

    def _note_end(self, stopped: BaseException | None) -> bool:
        """Say what ended a round; whether the run may go on."""
        notes, recorder = self.result.notes, self.recorder
        if isinstance(stopped, BudgetExhausted):
            if recorder.internal_error is None:
                notes.append(ASKED_FOR_SEEN if _asked_for_is_seen(self.cfg, recorder)
                             else BUDGET_SPENT)
            return False
        if isinstance(stopped, ShrinkBudgetSpent):
            notes.append(f"shrinking stopped after {self.cfg.shrink_budget:g} s")
        elif stopped is not None:
            why = f"{type(stopped).__name__}: the agent's timing differs between runs"
            note = (f"Hypothesis could not replay a failure exactly ({why}); the first "
                    "failure seen and its shortest program were kept"
                    if recorder.round_failure_at is not None else
                    f"Hypothesis ended a round early ({why}); a new round follows while "
                    "the budget lasts")
            if note not in notes:  # once, not every round
                notes.append(note)
        return True

    def _interrupted(self) -> None:
        """Ctrl-C (``stop`` requested) or the budget's end cutting an example mid-wait."""
        self.result.interrupted = self.stop.requested
        if not self.stop.requested and CUT_EXAMPLE not in self.result.notes:
            self.result.notes.append(CUT_EXAMPLE)


def _asked_for_is_seen(cfg: FuzzConfig, recorder: Recorder) -> bool:
    """A run given goals (rules to find, paths to reach) has met all of them."""
    if not cfg.stop_on and not cfg.stop_when_reached:
        return False
    return all(recorder.sighted(rule) for rule in cfg.stop_on) and all(
        group & recorder.transitions for group in cfg.stop_when_reached)
