"""Counterexamples minimized to a fixpoint in fresh agent processes, held to their recorded
boundary schedule, and how often they reproduce.

A counterexample is what a fresh agent process, driven by its client actions, shows again.
The search first looks for a program that reproduces in a fresh process (the shortest the run
saw, held to the schedule its example recorded and free-running; or a suffix of a shared
process's history). Each replay records its own schedule (``fuzzing/schedule.py``); from then
on every trial of a smaller program is replayed held to the last reproducing run's schedule,
restricted to what the trial keeps, so a race the run won is won again instead of being left
to luck. Minimizing removes the actions written after the offending message (one trial, the
teardown held in their place), the other sessions' actions, then whole examples and chunks (delta
debugging), then single actions until none can go (1-minimal), then simplifies what is left
(fewer blocks, shorter texts, fewer and simpler model steps), over again until nothing changes:
only then is the program called minimal (the fixpoint); a budget that ends earlier says how far
it got. The program is then replayed ``replay_runs`` times held to its schedule (the headline
rate) and as many times free-running.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from acp_model.fuzzing.actions import (
    Action,
    Interrupt,
    LateAllow,
    LoadSession,
    NewSession,
    Prompt,
    Relaunch,
    SessionAction,
    Wait,
    WaitMode,
)
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.inconclusive import Unsure, clock_evidence, reasons_json, unsure_of
from acp_model.fuzzing.program import Program, standalone
from acp_model.fuzzing.recorder import Found, program_key
from acp_model.fuzzing.replay import (
    INTERRUPTED,
    ReplayOutcome,
    WarmPool,
    in_threads,
    replay_once,
)
from acp_model.fuzzing.schedule import Schedule
from acp_model.fuzzing.stop import Stop, cutoff
from acp_model.llm.script import Reply, Text, Tools, one_delay_less, untimed
from acp_model.report.text import CutBy, minimize_stopped
from acp_model.trace.authors import Part, author_of
from acp_model.trace.format import TAKEN

__all__ = [
    "INTERRUPTED",
    "Minimizer",
    "ReplayOutcome",
    "Stage",
    "Trial",
    "TrialClock",
    "WarmPool",
    "delta_debug",
    "first_reproducing",
    "history_suffix",
    "in_threads",
    "measure_reproduction",
    "replay_many",
    "replay_once",
]

T = TypeVar("T")
# Replays at a time: they mostly wait on the agent, but a racy failure replays like the run
# only when its agent gets about the CPU it had then: never more replays than cores.
PARALLEL = max(1, min(4, os.cpu_count() or 1))
# A failure that needs more of the shared process's history than this is reported with the
# shortest program that showed it, not with a replayed history (replaying hours is no help).
MAX_HISTORY_EXAMPLES = 64
FALLBACKS = 3  # longer reproducing programs measured when the shortest reproduces too rarely
READABLE = 12  # a fallback may be this long (or twice the shortest): still read by a person
RETRIES = 2  # extra passes of single removals when none reproduced (racy failures)
RETRY_UP_TO = 24  # ... on programs this short (each pass costs one replay per action)
ATTEMPTS = 3  # replay rounds of a failure's own session before delta debugging goes on
SEARCH_ROUNDS = 10  # rounds of replays looking for a reproducing program (within the budget)
CERTIFY = 2  # tries of each single removal before a program is called 1-minimal
# rounds of replays a trial whose every replay was inconclusive gets in all, held to one
# schedule (its first and CERTIFY more): then it stands as a miss, unreplayed
UNSURE_ROUNDS = 1 + CERTIFY
# trials in a row whose replays were all inconclusive after which minimizing ends (CutBy
# UNSURE): four trials that each had their UNSURE_ROUNDS rounds of PARALLEL replays and
# said nothing; more only spend the budget on an agent that fails on its own in fresh
# processes (gemini-cli v1's session/load in the s12 matrix: 200 trials, no fixpoint)
UNSURE_STREAK = 24
# held replays of the program being minimized that say whether it reproduces every time: one
# that misses some is racy, and each removal that missed CERTIFY times is tried once more
RACY_RUNS = 2
# A failure's minimizing budget grows (up to --minimize-growth times --minimize-budget) to what this
# many trials take on its agent, for a program of n actions: delta debugging's n log n, the
# CERTIFY tries of each single removal, a few simplifications of each action
TRIALS_BASE, TRIALS_PER_ACTION = 20, 8
# ... and, while no program reproduced yet, to what the search's own trials (SEARCH_ALLOWED)
# take at the agent's measured cost: a floor per failure, so that a slow agent's search is not
# cut by seconds after a few long trials (codex-acp v2's CANCEL-07 in the s10 matrix: cut
# after 22 trials and 60 s, while the program settled reproduced 1/5 free; growth came only
# once a program reproduced, which none had yet). A failure no trial reproduces costs
# SEARCH_ALLOWED trials at most, within --minimize-growth times --minimize-budget.
# The budget counted in trials (replays that ran), per failure: --minimize-trials N, or by
# default the search's SEARCH_ALLOWED and then what a program of the length of the first that
# reproduced needs (trials_for), never more than MAX_TRIALS in all. Seconds
# (--minimize-budget, grown up to --minimize-growth times) are only the outer bound: the s5
# matrix's slow agents got 23-35 trials in 180 s, where a 5-action program needs about 60.
SEARCH_ALLOWED = 30
MAX_TRIALS = 200


def trials_for(actions: int) -> int:
    """About how many replays minimizing a program of ``actions`` actions to its fixpoint
    takes (measured on the zoo's and the matrix's counterexamples: 2-13 actions)."""
    return TRIALS_BASE + TRIALS_PER_ACTION * actions


class Stage(StrEnum):
    """How far minimizing got (``fixpoint``: all the way)."""

    SEARCH = "search"  # a program that reproduces in a fresh process
    LATE = "late"  # without the actions written after the offending message (one trial)
    SILENT = "silent"  # without the actions that wrote nothing (one trial)
    BREACHES = "breaches"  # without the client's deliberate breaches (kept only if needed)
    SESSION = "session"  # cut to the failing session's own actions
    EXAMPLES = "examples"  # whole examples of a shared process's history
    CHUNKS = "chunks"  # delta debugging of actions
    SINGLE = "single"  # one action at a time, until none can go (1-minimal)
    CONTENT = "content"  # simpler content: fewer blocks, shorter texts, fewer model steps
    SPARE = "spare"  # a spare session the proof rests on, made by an action (one trial)
    FIXPOINT = "fixpoint"  # no removal and no simplification reproduces any more


@dataclass
class StageRecord:
    """How far one stage of minimizing got: the trials it ran, the program's length when it
    first began and after its last pass, its passes, the removals or simplifications it
    made, and whether its last pass ran to its end (``done``) rather than being cut."""

    trials: int = 0
    before: int | None = None
    after: int | None = None
    passes: int = 0
    changes: int = 0
    done: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"trials": self.trials, "actions": [self.before, self.after],
                "passes": self.passes, "changes": self.changes, "done": self.done}


@dataclass
class Progress:
    """How far minimizing got: the stage it is in, and what each stage did."""

    stage: Stage = Stage.SEARCH
    stages: dict[str, StageRecord] = field(default_factory=dict)

    @contextlib.contextmanager
    def staged(self, stage: Stage, trials: Callable[[], int], length: Callable[[], int]
               ) -> Iterator[StageRecord]:
        """One pass of ``stage``, recorded (its ``trials()`` and the program's ``length()``
        before and after; the pass marks itself done when it ran to its end)."""
        self.stage = stage
        record = self.stages.setdefault(stage.value, StageRecord())
        used, before = trials(), length()
        record.before = before if record.before is None else record.before
        record.passes += 1
        record.done = False
        try:
            yield record
        finally:
            record.trials += trials() - used
            record.after = length()


@dataclass
class Trial:
    """A program to replay, held to ``schedule`` (None: free-running)."""

    program: list[Action]
    schedule: Schedule | None = None


@dataclass
class Tally:
    """Fresh-process runs of programs: (its key, held) -> [hits, runs, a reproducing one]."""

    runs: dict[tuple[str, bool], list[Any]] = field(default_factory=dict)
    diverged: str | None = None  # where a held replay that did not reproduce left its schedule
    cut: bool = True  # a hit counts for the program cut after the rule's action
    # replays in which the agent failed on its own (``fuzzing/inconclusive.py``), per (its
    # key, held) -> why each was: no evidence, not in ``runs``
    unsure: dict[tuple[str, bool], list[Unsure]] = field(default_factory=dict)
    # programs (by key) a held replay of ran on the agent's real wall clock -> why the first
    unclocked: dict[str, str] = field(default_factory=dict)

    def count(self, program: Sequence[Action], outcome: ReplayOutcome,
              recording: Schedule | None = None) -> bool:
        """Record one replay; minimizing counts a hit for the program cut after the rule's
        action (the same run, up to there), a measurement for the program measured. A
        replay the budget's end or a stop cut is no evidence, nor one in which the agent
        failed on its own before where ``recording`` (the program's reproducing run) showed
        the rule. Returns whether it was evidence."""
        if outcome.error is not None and not outcome.reproduced:
            return False  # cut, or an agent that could not be started: no evidence either way
        if outcome.unclocked is not None:
            self.unclocked.setdefault(program_key(program), outcome.unclocked)
        why = unsure_of(outcome, recording)
        if why is not None:
            self.unsure.setdefault((program_key(program), outcome.held), []).append(why)
            return False
        if outcome.held and not outcome.reproduced and self.diverged is None:
            self.diverged = outcome.divergence
        if outcome.reproduced and outcome.performed and self.cut:
            program = program[:outcome.performed]
        entry = self.runs.setdefault((program_key(program), outcome.held), [0, 0, None])
        entry[1] += 1
        if outcome.reproduced:
            entry[0] += 1
            entry[2] = entry[2] or outcome
        return True

    def inconclusive(self, program: Sequence[Action], held: bool) -> list[Unsure]:
        """Why each replay of ``program`` (held, or free) that was inconclusive was."""
        return self.unsure.get((program_key(program), held), [])

    def get(self, program: Sequence[Action], held: bool
            ) -> tuple[int, int, ReplayOutcome | None]:
        hits, runs, outcome = self.runs.get((program_key(program), held), [0, 0, None])
        return hits, runs, outcome

    def totals(self) -> tuple[int, int]:
        """How many replays (of any program) reproduced, of how many."""
        return (sum(e[0] for e in self.runs.values()), sum(e[1] for e in self.runs.values()))


def _trial_key(trial: Trial) -> tuple[str, str]:
    """A trial's identity: its program and the schedule it is held to ("": free-running)."""
    return _held_key(trial) if trial.schedule is not None else (program_key(trial.program), "")


def _held_key(trial: Trial) -> tuple[str, str]:
    """A held trial's identity: its program and the schedule it is held to."""
    assert trial.schedule is not None
    return program_key(trial.program), json.dumps(trial.schedule.to_json(), sort_keys=True)


@dataclass
class Evidence:
    """Which trials of a round of replays (one :meth:`Minimizer.first`) said anything: a
    replay that reproduced or missed is evidence, one in which the agent failed on its own
    (``fuzzing/inconclusive.py``) is not; what each program's replay is compared with; and,
    over all rounds, which trials said nothing in :data:`UNSURE_ROUNDS` (:meth:`spent`) and
    how many trials in a row said nothing (``streak``)."""

    # the schedule each program's reproducing run recorded, by program key: what a
    # free-running trial of it is compared with
    recordings: dict[str, Schedule] = field(default_factory=dict)
    conclusive: set[int] = field(default_factory=set)  # trials (by id) a replay said something of
    unsure: set[int] = field(default_factory=set)  # ... whose replays were inconclusive
    # rounds in which every replay of a trial (its program, and the schedule it is held to)
    # was inconclusive
    rounds: Counter[tuple[str, str]] = field(default_factory=Counter)
    streak: int = 0  # the latest trials that ran, in a row, all inconclusive

    def recording(self, trial: Trial) -> Schedule | None:
        """The schedule it is held to, else its program's own recording (None: none known)."""
        if trial.schedule is not None:
            return trial.schedule
        return self.recordings.get(program_key(trial.program))

    def begin(self) -> None:
        self.conclusive.clear()
        self.unsure.clear()

    def note(self, trial: Trial, evidence: bool, ran: bool) -> None:
        if evidence:
            self.conclusive.add(id(trial))
        elif ran:  # the agent failed on its own (a replay that was cut: neither)
            self.unsure.add(id(trial))
        self.streak = 0 if evidence else self.streak + ran

    def again(self, trials: Sequence[Trial], pending: list[int]) -> list[int]:
        """The trials at ``pending`` whose every replay this round was inconclusive (each
        counts one more such round)."""
        out = [n for n in pending
               if id(trials[n]) in self.unsure and id(trials[n]) not in self.conclusive]
        self.rounds.update(_trial_key(trials[n]) for n in out)
        return out

    def spent(self, trial: Trial) -> bool:
        """A trial whose every replay was inconclusive in :data:`UNSURE_ROUNDS` rounds, held
        to the same schedule (or free): the agent keeps failing on its own there, and
        another round costs replays that say nothing (gemini-cli v1's V1-LOAD-01, s12 matrix:
        each single removal re-ran its inconclusive trials in every pass, and minimizing
        spent its 200 trials at the single stage)."""
        return self.rounds[_trial_key(trial)] >= UNSURE_ROUNDS


@dataclass
class TrialClock:
    """Minimizing's seconds for one failure: its base budget's end (``stop_at``,
    --minimize-budget), the ceiling a slow agent's trials may grow it to (``cap_at``:
    --minimize-growth times that; None: not at all), and what its trials cost."""

    stop_at: float
    cap_at: float | None = None
    started: float = field(default_factory=time.monotonic)
    durations: list[float] = field(default_factory=list)  # seconds of each replay that ran
    last: float = 0.0  # when the latest trial that ran ended (time.monotonic())
    grown: float = 0.0  # the latest end the budget grew to (it never shrinks back)

    def ran(self, seconds: float) -> None:
        """A trial ran (and took ``seconds``, 0: not known)."""
        self.last = time.monotonic()
        if seconds:
            self.durations.append(seconds)

    def median(self) -> float | None:
        """The median replay's seconds on this agent (None: none ran yet)."""
        return statistics.median(self.durations) if self.durations else None

    def wall(self) -> float | None:
        """Wall-clock seconds a trial costs: the median replay over how many overlapped, as
        measured (the replays' seconds over the time they took, between 1 and
        :data:`PARALLEL`): a batch's first reproduction ends the others and a stage's last
        batch is short (the s7 matrix's qwen-code ran 32 trials of 11.2 s in 301 s, an
        overlap of 1.2, not 2)."""
        cost = self.median()
        if cost is None:
            return None
        took = max(0.0, self.last - self.started)
        overlap = sum(self.durations) / took if took > 0 else PARALLEL
        return cost / min(PARALLEL, max(1.0, overlap))

    def deadline(self, trials: int, *, since_start: bool = False) -> float:
        """The base budget's end, or, if later, the end of ``trials`` more trials at this
        agent's cost (from the latest trial's end; ``since_start``: from the start, at
        :data:`PARALLEL` at a time), up to ``cap_at``. It only grows: a program that got
        shorter used time the estimate counted."""
        cost, wall = self.median(), self.wall()
        if self.cap_at is None or cost is None or wall is None:
            return max(self.stop_at, self.grown)
        need = self.started + trials * cost / PARALLEL if since_start \
            else max(self.started, self.last) + trials * wall
        self.grown = max(self.grown, min(self.cap_at, max(self.stop_at, need)))
        return self.grown


@dataclass
class Minimizer:
    """Delta debugging against fresh processes held to the last reproducing run's schedule,
    remembering every program that reproduced (with the schedule it recorded)."""

    cfg: FuzzConfig
    rule: str
    clock: TrialClock  # its seconds: the base budget, the ceiling, what its trials cost
    stop: Stop | None = None
    pool: WarmPool | None = None
    best: Trial | None = None  # the latest program that reproduced (cut), with its schedule
    reproduced: list[Trial] = field(default_factory=list)  # shortest first
    hit: ReplayOutcome | None = None  # the latest replay that reproduced
    seen: Tally = field(default_factory=Tally)  # every fresh-process run of a program
    trials: int = 0  # replays minimizing ran
    cut: bool = False  # the time ran out (or a stop came) before minimizing was done
    # held replays that ran and missed, per (program, the schedule held to): a program that
    # missed under one schedule may reproduce under another (a later best's), so the
    # refutation is of the pair
    missed: Counter[tuple[str, str]] = field(default_factory=Counter)
    # what ended minimizing before its fixpoint (None: not cut; UNSURE after UNSURE_STREAK
    # inconclusive trials)
    cut_by: CutBy | None = None
    # the allowance of trials fixed when the first program reproduced (None: searching, or
    # cfg.minimize_trials fixes it)
    fixed: int | None = None
    progress: Progress = field(default_factory=Progress)  # how far each stage got
    # the method of the request the failure is about: a broader rule's failure on such a
    # request is a hit too (``roots``: a withdrawn prompt's CANCEL-14 is PROMPT-04's)
    method: str | None = None
    evidence: Evidence = field(default_factory=Evidence)  # which trials said anything
    racy: Racy = field(default_factory=lambda: Racy())  # whether its programs miss some replays

    def allowed(self) -> int:
        """Trials this failure may use in all: ``cfg.minimize_trials``, else the search's
        :data:`SEARCH_ALLOWED` until a program reproduced, then the trials used so far plus
        what a program of that length needs (:func:`trials_for`), at most
        :data:`MAX_TRIALS`."""
        if self.cfg.minimize_trials:
            return self.cfg.minimize_trials
        if self.fixed is not None:
            return self.fixed
        if self.best is None:
            return SEARCH_ALLOWED
        self.fixed = min(MAX_TRIALS, self.trials + trials_for(len(self.best.program)))
        return self.fixed

    def deadline(self) -> float:
        """When minimizing ends (:meth:`TrialClock.deadline`): while searching, the latest
        trial's end plus what the search's trials left take (its floor: the search is
        counted in trials, :data:`SEARCH_ALLOWED`); once a program reproduced, the latest
        trial's end plus what the stages still to run need: minimizing the best program's
        length (:func:`trials_for`), at most the trials left. The trials the search and the
        cut of a long history took are counted in neither."""
        if self.best is None:
            return self.clock.deadline(self.trials_left())
        return self.clock.deadline(min(self.trials_left(), trials_for(len(self.best.program))))

    def out_of_time(self) -> bool:
        """Whether minimizing must end: its trials used up, its outer bound in seconds
        reached, or a stop (the first that came is kept in :attr:`cut_by`)."""
        if self.cut:
            return True
        if self.stop is not None and self.stop.requested:
            self.cut_by = CutBy.STOP if time.monotonic() < self.deadline() else CutBy.SECONDS
        elif self.trials >= self.allowed():
            self.cut_by = CutBy.TRIALS
        elif self.evidence.streak >= UNSURE_STREAK:
            self.cut_by = CutBy.UNSURE
        elif time.monotonic() >= self.deadline():
            self.cut_by = CutBy.SECONDS
        self.cut = self.cut_by is not None
        return self.cut

    def trials_left(self) -> int:
        return max(0, self.allowed() - self.trials)

    def first(self, trials: list[Trial]) -> tuple[int, Trial] | None:
        """The first trial that reproduces once (a batch at a time): its index, and the
        trial cut after the action that showed the rule, with the schedule that run
        recorded (it becomes the one later trials are held to).

        A trial whose every replay was inconclusive (the agent failed on its own) is run
        again, up to :data:`CERTIFY` more times: a miss it is not, and an action it left out
        must not look needed because the agent failed (issue 49). After that it stands as
        a miss would, and is not replayed again held to the same schedule (``spent``),
        but never refutes its program."""
        def counted(trial: Trial, outcome: ReplayOutcome) -> None:
            ran = outcome.error is None or outcome.reproduced
            self.trials += ran
            if ran:
                self.clock.ran(outcome.seconds)
            evidence = self.seen.count(trial.program, outcome, self.evidence.recording(trial))
            self.evidence.note(trial, evidence, ran)
            if evidence and trial.schedule is not None and not outcome.reproduced:
                self.missed[_held_key(trial)] += 1

        pending = [n for n, t in enumerate(trials)
                   if not self._refuted(t) and not self.evidence.spent(t)]
        found = None
        for _ in range(UNSURE_ROUNDS):
            if not pending:
                return None
            self.evidence.begin()
            found = first_reproducing(self.cfg, self.rule, [trials[n] for n in pending],
                                      stop_at=self.deadline(), stop=self.stop,
                                      on_outcome=counted, pool=self.pool,
                                      left=self.trials_left, method=self.method)
            if found is not None:
                break
            pending = self.evidence.again(trials, pending)
            if self.out_of_time():
                return None
        if found is None:
            return None
        n, outcome = pending[found[0]], found[1]
        self.hit = outcome
        program = trials[n].program
        program = program[:outcome.performed] if outcome.performed else program
        trial = Trial(program, outcome.schedule)
        if all(t.program != trial.program for t in self.reproduced):
            self.reproduced = sorted([*self.reproduced, trial], key=lambda t: len(t.program))
        self.best = trial
        return n, trial

    def _refuted(self, trial: Trial) -> bool:
        """A held trial whose program already missed :data:`CERTIFY` replays held to the
        same schedule and never reproduced: another costs a replay and says nothing new."""
        if trial.schedule is None:
            return False
        hits, _, _ = self.seen.get(trial.program, True)
        return hits == 0 and self.missed[_held_key(trial)] >= self.racy.refute_at

    def restricted(self, kept: Sequence[int], program: list[Action] | None = None,
                   teardown: int | None = None) -> Trial:
        """The best program cut down to the actions at ``kept`` (``program``: those actions
        as the trial sends them), held to its schedule restricted to them (``teardown``:
        the removed action whose place the teardown takes, ``Schedule.restrict``)."""
        assert self.best is not None
        actions = program if program is not None else [self.best.program[i] for i in kept]
        schedule = self.best.schedule
        return Trial(actions, None if schedule is None else schedule.restrict(kept, teardown))

    # --- the stages -----------------------------------------------------------------------
    @property
    def stage(self) -> Stage:
        return self.progress.stage

    def staged(self, stage: Stage, length: int = 0
               ) -> contextlib.AbstractContextManager[StageRecord]:
        """One pass of ``stage`` (:meth:`Progress.staged`); ``length``: the program's while
        none reproduced yet."""
        return self.progress.staged(stage, lambda: self.trials, lambda: len(
            self.best.program) if self.best is not None else length)

    def minimize(self, units: Sequence[int] = ()) -> None:
        """Remove what the failure does not need from :attr:`best`: the other sessions'
        actions, whole units (``units``: the lengths of the examples it is made of), chunks,
        then single actions and simpler content, over again until nothing changes."""
        if self.best is None:
            return
        drop_at_once(self)
        drop_breaches(self)
        self._session()
        drop_at_once(self)
        if len(units) > 1 and not self.out_of_time():
            with self.staged(Stage.EXAMPLES) as record:
                ddmin(self, _split(len(self.best.program), units), record)
        while not self.out_of_time():
            with self.staged(Stage.CHUNKS) as record:
                # paused once a removal lets a stage of one trial run (a relaunch went)
                paused = ddmin(self, [[i] for i in range(len(self.best.program))], record,
                               pause=lambda: at_once_pending(self))
            if not (paused and drop_at_once(self)):
                break
        certify = CERTIFY
        while not self.out_of_time():
            with self.staged(Stage.SINGLE) as record:
                removed, done = self._singles(record, certify)
            if not done:
                break
            with self.staged(Stage.CONTENT) as record:
                simpler, done = self._content(record)
            if not done:
                break
            if not removed and not simpler:
                spare_as_action(self)
                self.progress.stage = Stage.FIXPOINT
                break
            # over again: each removal missed CERTIFY times on a program that differs from
            # this one by what just went or got simpler; once more each is the evidence
            certify = 1

    def _session(self) -> None:
        """A failure is about one session: its own actions are the likely cause, and removing
        every other session's at once saves most of delta debugging's replays (a slow agent
        and a racy failure leave it too few to get below hundreds)."""
        assert self.best is not None
        target = self.hit.session if self.hit is not None else None
        if target is None:
            return
        program = Program(tuple(self.best.program))
        kept = program.session_slice_at(target)
        if kept is None or len(kept) >= len(program):
            return
        trial = self.restricted(kept, program.session_slice(target))
        with self.staged(Stage.SESSION) as record:
            for _ in range(ATTEMPTS):
                if self.first([trial]) is not None:
                    record.changes += 1
                    break
                if self.out_of_time():
                    return
            record.done = True

    def _singles(self, record: StageRecord, certify: int = CERTIFY) -> tuple[bool, bool]:
        """Remove one action at a time until none can go, each removal tried ``certify``
        times before it is given up (after one went, once more: the program changed by one
        action): (whether one went, whether it ended 1-minimal rather than out of time).
        Once every removal missed, a racy program's get one more try (:class:`Racy`)."""
        changed = retried = False
        misses: Counter[int] = Counter()
        while not self.out_of_time():
            assert self.best is not None
            n = len(self.best.program)
            left = [i for i in range(n) if misses[i] < certify]
            if n > 1 and not left and not retried and self.racy.again(self):
                retried, certify = True, certify + 1
                continue
            if n <= 1 or not left:
                record.done = True
                return changed, True
            hit = self.first([self.restricted([k for k in range(n) if k != i]) for i in left])
            if hit is None:
                misses.update(left)
            else:
                # positions after the removed one move down by one; each that missed is
                # tried once more on the shorter program
                removed = left[hit[0]]  # (``first`` gives the index in the trials it got)
                changed = True
                record.changes += 1
                misses = Counter({(i - 1 if i > removed else i): min(m, certify - 1)
                                  for i, m in misses.items() if i != removed})
        return changed, False

    def _content(self, record: StageRecord) -> tuple[bool, bool]:
        """Simpler content for each action in turn, each accepted when it reproduces: held to
        the whole schedule when the model's side stays as it was, else to the schedule of the
        actions before it. Returns (whether any was, whether all were tried)."""
        changed = False
        at = 0
        while self.best is not None and at < len(self.best.program):
            if self.out_of_time():
                return changed, False
            program, schedule = self.best.program, self.best.schedule
            trials = [Trial([*program[:at], simpler, *program[at + 1:]],
                            schedule if same or schedule is None else schedule.upto(at))
                      for simpler, same in simplifications(program[at])]
            if trials and self.first(trials) is not None:
                changed = True  # the simplest that reproduced (they come most drastic first)
                record.changes += 1
            else:
                at += 1
        record.done = True
        return changed, True


def minimize_entry(m: Minimizer, budget: float, seconds: float) -> dict[str, Any]:
    """The ``minimize`` entry of a counterexample (docs/reports.md): a reader's view of the
    minimizer's state, not part of it; ``steps``: the length of the program minimizing ended
    with (the one reported, unless a longer one reproduced more often)."""
    cost = m.clock.median()  # the median replay's seconds on this agent
    return {"fixpoint": m.stage is Stage.FIXPOINT, "stage": m.stage.value,
            "seconds": round(seconds, 1), "budget": round(budget, 1),
            "trials": m.trials, "trials_allowed": m.allowed(),
            "cut_by": None if m.stage is Stage.FIXPOINT or m.cut_by is None else m.cut_by.value,
            "trial_seconds": round(cost, 2) if cost is not None else None,
            "steps": len(m.best.program) if m.best is not None else None,
            "stages": {name: r.to_json() for name, r in m.progress.stages.items()}}


def ddmin(m: Minimizer, parts: list[list[int]], record: StageRecord,
          pause: Callable[[], bool] | None = None) -> bool:
    """Delta debugging over ``parts`` (positions in the best program of ``m``); returns
    whether it stopped after a removal because ``pause()`` said so."""
    chunk = max(1, len(parts) // 2)
    # A racy failure misses some free replays, so a miss is weak evidence: on short
    # programs each granularity gets a second pass, and the finest one more. Held to a
    # recorded schedule a miss is strong evidence: one pass each, and single actions are
    # left to the single stage (which tries each removal twice).
    retries = RETRIES
    second = True
    while len(parts) > 1 and not m.out_of_time():
        assert m.best is not None
        held = m.best.schedule is not None
        if held and chunk == 1 and all(len(part) == 1 for part in parts):
            break
        base = m.best.program
        starts = range(0, len(parts), chunk)
        candidates = [parts[:i] + _without(base, parts[i:i + chunk]) + parts[i + chunk:]
                      for i in starts]
        candidates = [c for c in candidates if _flat(c)]
        hit = m.first([m.restricted(_flat(c)) for c in candidates]) if candidates else None
        short = len(_flat(parts)) <= RETRY_UP_TO
        if hit is not None:
            record.changes += 1
            if pause is not None and pause():
                record.done = False
                return True
            parts = _renumber(_cut(candidates[hit[0]], len(hit[1].program)))
            chunk = min(chunk, max(1, len(parts) // 2))
            second = True
        elif second and short and not held:
            second = False
        elif chunk > 1:
            chunk //= 2
            second = True
        elif retries and short and not held:
            retries -= 1
        else:
            break
    record.done = not m.out_of_time()
    return False


def drop_at_once(m: Minimizer) -> bool:
    """The stages of one held trial each (``late``, ``silent``) that have not run and that the
    best program now allows, in turn: each runs once, as soon as it can. A program that
    relaunches the agent allows neither (its replay records no schedule, and its records are
    its last process's): gemini-cli v1's V1-LOAD-01 (s13) began as such a program of 36
    actions (neither stage is in its report), and delta debugging, cut by its seconds at 20
    actions, left 12 that wrote nothing. Returns whether one ran."""
    ran = False
    for stage, keeps in ((Stage.LATE, late_kept), (Stage.SILENT, silent_kept)):
        kept = None if stage.value in m.progress.stages or m.out_of_time() else keeps(m)
        if kept is not None:
            keep_only(m, kept, stage)
            ran = True
    return ran


def at_once_pending(m: Minimizer) -> bool:
    """Whether a stage of :func:`drop_at_once` that has not run can now."""
    return any(stage.value not in m.progress.stages and keeps(m) is not None
               for stage, keeps in ((Stage.LATE, late_kept), (Stage.SILENT, silent_kept)))


def late_kept(m: Minimizer) -> list[int] | None:
    """The ``late`` stage's trial (None: none): the actions written after the offending
    message go, in one trial. Under the recorded schedule none of them can be needed (each
    write waits for what preceded it in the recording, the offending message among them), yet
    a removal tried one at a time may miss by chance and keep one (codex-acp v1's CANCEL-11 in
    the s10 matrix kept a withdrawal written after the offending answer). The teardown is held
    in the first removed action's place (``Schedule.restrict``): run free, it would look at
    once and cancel a turn whose end the recording read first, and its cancel would then
    explain the stop. A trial that misses leaves them to the stages after. A run's program
    ends with the action during which the failure showed (and a replay stops there), so only
    a proof that ends before that action's last write leaves any."""
    assert m.best is not None
    hit = m.hit
    if hit is None or hit.offending is None or m.best.schedule is None:
        return None
    end = proof_end(hit)
    return written_before(m.best.program, hit.records, end) if end is not None else None


@dataclass
class Racy:
    """Whether the programs being minimized miss some of their own held replays: a removal's
    miss is then weak evidence (codex-acp v1's CANCEL-11, held 4/6, kept an action whose
    removal had missed by chance), so once every removal of a single pass missed its tries,
    each gets one more (once per pass: :data:`RACY_RUNS` replays of the program, measured
    once per program, plus one trial per action, within the failure's trials)."""

    measured: dict[str, bool] = field(default_factory=dict)  # program key -> it missed some
    # misses under one schedule that refute a held trial: one more once a program was racy
    refute_at: int = CERTIFY

    def again(self, m: Minimizer) -> bool:
        """Whether the single removals of ``m``'s best program get one more try."""
        assert m.best is not None
        best = m.best
        key = program_key(best.program)
        if key not in self.measured:
            runs = min(RACY_RUNS, m.trials_left())
            if runs <= 0:
                return False
            hits = said = 0
            for outcome in replay_many(m.cfg, best.program, m.rule, runs, stop=m.stop,
                                       schedule=best.schedule, pool=m.pool, method=m.method):
                ran = outcome.error is None or outcome.reproduced
                m.trials += ran
                if ran:
                    m.clock.ran(outcome.seconds)
                if m.seen.count(best.program, outcome, best.schedule):
                    said += 1
                    hits += outcome.reproduced
            self.measured[key] = said > 0 and hits < said
        if self.measured[key]:
            self.refute_at = CERTIFY + 1
        return self.measured[key]


def proof_end(hit: ReplayOutcome) -> int | None:
    """The last record a reproducing replay's proof rests on: its offending message, or a
    later one it cites (None: the finding is about what the agent did not do, a deadline's,
    or the offending record is the client's: what the client wrote after it may be the
    cause)."""
    offending = hit.offending
    if offending is None or not 0 <= offending < len(hit.records) \
            or hit.records[offending].get("dir") != "a2c":
        return None
    found = [v for v in hit.violations if v.index == offending
             and v.rule == (hit.rule or v.rule)]
    if not found or any(v.kind != "safety" for v in found):
        return None
    return max([offending, *(i for v in found for i, _ in v.evidence),
                *(i for v in found for i in v.related)])


def written_before(program: Sequence[Action], records: Sequence[Mapping[str, Any]],
                   offending: int) -> list[int] | None:
    """The positions of ``program``'s actions a replay's ``records`` (stamped with their
    authors, ``trace/authors.py``) show began at or before the ``offending`` record: each up
    to the last one with a write there, and every ``new session`` (taking a spare made
    ahead writes nothing); None when every action is one of them."""
    first: dict[int, int] = {}
    for i, record in enumerate(records):
        author = author_of(record)
        if author is not None and author.numbered and author.n is not None:
            first.setdefault(author.n, i)
    last = max((n for n, i in first.items() if i <= offending), default=0)
    kept = [i for i, a in enumerate(program) if i < last or isinstance(a, NewSession)]
    return kept if kept and len(kept) < len(program) else None


def silent_kept(m: Minimizer) -> list[int] | None:
    """The ``silent`` stage's trial (None: none): the actions that wrote nothing in the latest
    reproducing replay go, in one trial: a prompt a reading kept back (A-01=forbid skips one
    while another is open), a cancel of an idle session, an answer to a permission never
    asked, a wait. Held to the schedule they add no write to it, so the trial is the same run
    but for their waiting, and the program read by a maintainer lists only what crossed the
    wire (kilo v1's PROMPT-04 in the s12 matrix kept 11 such of 24, after delta debugging ran
    out of seconds on them). A trial that misses leaves them to the stages after (a wait the
    failure needs stays)."""
    assert m.best is not None
    hit = m.hit
    if hit is None or m.best.schedule is None:
        return None
    return wrote(m.best.program, hit.records)


def keep_only(m: Minimizer, kept: Sequence[int], stage: Stage) -> None:
    """One held trial of the best program with only the actions at ``kept``, as ``stage``:
    the teardown follows the last kept action, in the first removed one's place after it."""
    assert m.best is not None
    after = max(kept) + 1
    cut = after if after < len(m.best.program) else None
    with m.staged(stage) as record:
        if m.first([m.restricted(kept, teardown=cut)]) is not None:
            record.changes += 1
        record.done = not m.out_of_time()


def wrote(program: Sequence[Action], records: Sequence[Mapping[str, Any]]) -> list[int] | None:
    """The positions of ``program``'s actions that wrote something in a replay's ``records``
    (stamped with their authors, ``trace/authors.py``), and every ``new session`` (taking a
    spare made ahead writes nothing); None when none of the others was silent, or when the
    records cannot say (no stamps, or a relaunch: the records are of its last process)."""
    wrote_at = {a.n - 1 for a in map(author_of, records)
                if a is not None and a.numbered and a.n is not None}
    if not wrote_at or any(isinstance(a, Relaunch) for a in program):
        return None
    kept = [i for i, a in enumerate(program) if i in wrote_at or isinstance(a, NewSession)]
    return kept if kept and len(kept) < len(program) else None


def spare_as_action(m: Minimizer) -> None:
    """At the fixpoint, a proof that rests on a session the client made ahead and no action
    took (a spare, ``fuzzing/sessions.py``) gets one trial with a ``new session`` action
    taking it, right after the program's last one: the program then shows what the proof
    needs (gptme v1's SESS-01 in the s12 matrix: "1. new session s1" beside a breach that
    needs two session/new, the second a spare's). Kept when it reproduces and its proof no
    longer rests on an untaken spare; no removal follows (the spare would do again)."""
    if m.best is None or m.hit is None or not rests_on_spare(m.hit):
        return
    best, hit = m.best, m.hit
    program = best.program
    at = max((i + 1 for i, a in enumerate(program) if isinstance(a, NewSession)), default=0)
    trial = Trial([*program[:at], NewSession(), *program[at:]],
                  best.schedule.upto(at) if best.schedule is not None else None)
    with m.staged(Stage.SPARE) as record:
        found = m.first([trial])
        if found is not None and not rests_on_spare(m.hit):
            record.changes += 1
        elif found is not None:  # it reproduced, on a spare again: the shorter one stays
            m.best, m.hit = best, hit
        record.done = not m.out_of_time()


def rests_on_spare(hit: ReplayOutcome) -> bool:
    """Whether the proof of a reproducing replay cites a spare's ``session/new`` (or the
    agent's answer to it) whose session no action took (``"taken"``, ``trace/format.py``)."""
    records = hit.records
    cited = {i for v in hit.violations if v.rule == (hit.rule or v.rule)
             for i in (v.index, *(j for j, _ in v.evidence), *v.related)}
    spares: dict[Any, int] = {}  # request id of a spare's session/new -> its index
    # session id -> the spares' session/new that made it and no action took yet, in order
    # (an agent may give two sessions one id: gptme's SESS-01; the client takes in order)
    made: dict[str, list[int]] = {}
    for i, record in enumerate(records):
        for t in record.get(TAKEN) or ():
            if t and made.get(str(t[0])):
                made[str(t[0])].pop(0)
        msg = record.get("msg")
        if not isinstance(msg, dict):
            continue
        author = author_of(record)
        if author is not None and author.part is Part.SPARE \
                and msg.get("method") == "session/new":
            spares[msg.get("id")] = i
        elif record.get("dir") == "a2c" and "method" not in msg and msg.get("id") in spares:
            result = msg.get("result")
            if isinstance(result, dict) and isinstance(result.get("sessionId"), str):
                made.setdefault(result["sessionId"], []).append(spares[msg["id"]])
                cited |= {spares[msg["id"]]} if i in cited else set()
    return any(i in cited for left in made.values() for i in left)


# --- the client's deliberate breaches -----------------------------------------------------

def drop_breaches(m: Minimizer) -> None:
    """The client's deliberate breaches go first: a counterexample that keeps one invites
    "your client broke the protocol first". All of them at once, then each alone (its legal
    part kept: the cancel of an allow sent after it, the prompt of a late allow), until none
    can go; one is kept only when every trial without it missed (the single stage and the
    content stage try again later)."""
    with m.staged(Stage.BREACHES) as record:
        while not m.out_of_time():
            assert m.best is not None
            at = [i for i, a in enumerate(m.best.program) if a.breach() is not None]
            if not at:
                break
            trials = [without_breaches(m.best, at)] if len(at) > 1 else []
            trials += [without_breaches(m.best, [i]) for i in at]
            if m.first(trials) is None:
                break
            record.changes += 1
        record.done = not m.out_of_time()


def without_breaches(best: Trial, at: Sequence[int]) -> Trial:
    """``best`` with the actions at ``at`` stripped of their breaches: held to its schedule
    restricted to what stays when they simply go, else to the schedule of the actions before
    the first (what is left of one acts differently)."""
    program, schedule = best.program, best.schedule
    left = {i: program[i].without_breach() for i in at}
    if not any(left.values()):
        kept = [i for i in range(len(program)) if i not in left]
        return Trial([program[i] for i in kept],
                     schedule.restrict(kept) if schedule is not None else None)
    actions = [b for i, a in enumerate(program) for b in left.get(i, [a])]
    return Trial(actions, schedule.upto(min(at)) if schedule is not None else None)


# --- simpler content --------------------------------------------------------------------

def simplifications(action: Action) -> list[tuple[Action, bool]]:
    """Simpler versions of an action, the most drastic first, each with whether what crosses
    the model boundary stays as it was (its schedule still holds): a prompt with its first
    block only, with each text cut to its first word, without ``_meta`` (the same model
    events); with its model's last step dropped, with each model step simplified (one text
    chunk, one tool call, no delay), with its model's delays dropped alone, all or one at a
    time (the same model events, sooner); a reopen in a fresh process made on the same
    connection; the action without its deliberate breach (``Action.without_breach``)."""
    if isinstance(action, Relaunch):
        return [(LoadSession(action.s, action.replay), False)]
    legal = action.without_breach() if action.breach() is not None else []
    if len(legal) == 1:  # the action without its deliberate breach, first
        return [(legal[0], False), *_simpler(action)]
    return _simpler(action)


def _simpler(action: Action) -> list[tuple[Action, bool]]:
    """Simpler content of a prompt, or of the prompt an action carries."""
    if isinstance(action, Prompt):
        return list(_simpler_prompts(action))
    if isinstance(action, Interrupt | LateAllow):
        return [(dataclasses.replace(action, prompt=p), same)
                for p, same in _simpler_prompts(action.prompt)]
    return []


def _simpler_prompts(p: Prompt) -> list[tuple[Prompt, bool]]:
    out: list[tuple[Prompt, bool]] = []
    if len(p.blocks) > 1:
        out.append((dataclasses.replace(p, blocks=p.blocks[:1]), True))
    shorter = [_shorter(b) for b in p.blocks]
    if shorter != p.blocks:
        out.append((dataclasses.replace(p, blocks=shorter), True))
    if p.meta:
        out.append((dataclasses.replace(p, meta=False), True))
    if p.model:
        out.append((dataclasses.replace(p, model=p.model[:-1]), False))
        simple = tuple(_simpler_reply(r) for r in p.model)
        if simple != p.model:
            out.append((dataclasses.replace(p, model=simple), False))
        if untimed(p.model) not in (p.model, simple):
            out.append((dataclasses.replace(p, model=untimed(p.model)), True))
            out.extend((dataclasses.replace(p, model=m), True) for m in one_delay_less(p.model))
    return out


def _shorter(block: dict[str, Any]) -> dict[str, Any]:
    text = block.get("text")
    if block.get("type") == "text" and isinstance(text, str) and len(text.split()) > 1:
        return {**block, "text": text.split()[0]}
    return block


def _simpler_reply(reply: Reply) -> Reply:
    reply = reply.untimed()
    if isinstance(reply, Text) and reply.chunks > 1:
        return Text(1, 0)
    if isinstance(reply, Tools) and reply.count > 1:
        return dataclasses.replace(reply, count=1, calls=reply.calls[:1])
    return reply


# --- parts of a program -------------------------------------------------------------------

def _without(program: Sequence[Action], chunk: list[list[int]]) -> list[list[int]]:
    """What removing ``chunk`` leaves of it: its ``session/new`` actions, since the actions
    after it name sessions by their order of creation and would land on other sessions
    without them, unless they are all it holds (then they go, one chunk at a time)."""
    kept = [[i for i in part if isinstance(program[i], NewSession)] for part in chunk]
    kept = [part for part in kept if part]
    return [] if sum(map(len, kept)) == sum(map(len, chunk)) else kept


def _cut(parts: list[list[T]], keep: int) -> list[list[T]]:
    """The parts holding the first ``keep`` items."""
    out: list[list[T]] = []
    n = 0
    for part in parts:
        if n >= keep:
            break
        out.append(part[:keep - n])
        n += len(out[-1])
    return out


def _flat(parts: list[list[int]]) -> list[int]:
    return [i for part in parts for i in part]


def _renumber(parts: list[list[int]]) -> list[list[int]]:
    """The same parts over the program they make up (positions 0, 1, ... in order)."""
    out, n = [], 0
    for part in parts:
        out.append(list(range(n, n + len(part))))
        n += len(part)
    return out


def _split(length: int, units: Sequence[int]) -> list[list[int]]:
    out, at = [], 0
    for n in units:
        out.append(list(range(at, min(at + n, length))))
        at += n
    if at < length:
        out.append(list(range(at, length)))
    return [part for part in out if part]


# --- search, minimize, measure ----------------------------------------------------------

def measure_reproduction(cfg: FuzzConfig, found: Found,
                         clock: Callable[[], float] | None = None, *,
                         stop: Stop | None = None, minimize_until: float | None = None,
                         on_step: Callable[[str], None] | None = None,
                         pool: WarmPool | None = None) -> None:
    """Find a program that reproduces in a fresh process, minimize it, measure it.

    Candidates are the shortest programs that showed the failure (the one Hypothesis shrank
    may depend on a lucky race). With a shared agent process an example can also depend on what
    earlier examples left behind (every third turn of the process...): then the shortest
    reproducing suffix of the process's history stands in. The chosen program is minimized
    against fresh processes within ``cfg.minimize_budget`` seconds (``minimize_until``, a
    ``time.monotonic()`` instant, may end it earlier) and replayed ``cfg.replay_runs`` times
    held to its recorded schedule and as many times free-running; ``stop`` ends everything
    (its end, a signal). ``on_step`` hears "minimizing", then "replaying". ``pool``: the
    run's warm agent processes, shared by its failures (else one of its own).
    """
    started = time.monotonic()
    limit = minimize_until or float("inf")
    until = min(started + cfg.minimize_budget, limit)
    cap = min(started + max(1.0, cfg.minimize_growth) * cfg.minimize_budget, limit)
    if on_step is not None:
        on_step("minimizing")
    with contextlib.nullcontext(pool) if pool is not None \
            else WarmPool(cfg, PARALLEL, stop) as pool:
        # replays under way when minimizing's time (as grown) ends are cut then, not waited
        # out: the time after it is the measurement's
        with cutoff(stop or Stop(), cap) as ends:
            minimizer = _minimize(cfg, found, clock,
                                  Minimizer(cfg, found.rule,
                                            TrialClock(until, cap, started), ends, pool,
                                            method=found.method))
        minimizer.stop = stop
        took = time.monotonic() - started
        if on_step is not None:
            on_step("replaying")
        measured = _measure(cfg, found, minimizer, stop, pool)
    budget = max(0.0, min(minimizer.deadline(), cap) - started)
    found.minimize = minimize_entry(minimizer, budget, took)
    if minimizer.best is not None and found.actions != minimizer.best.program:
        found.minimize["other"] = True  # the program shown is not the one minimizing ended with
    found.minimize_cut = minimizer.stage is not Stage.FIXPOINT
    hits, runs = (a + b for a, b in zip(minimizer.seen.totals(), measured.totals(),
                                        strict=True))
    found.fresh_hits, found.fresh_runs = hits, runs
    if found.minimize_cut and found.verified:  # (unverified: its note says the time ran out)
        found.notes.append(f"{minimize_stopped(found.minimize)}: {_shown(minimizer, found)}")


def _shown(minimizer: Minimizer, found: Found) -> str:
    """What the program of a failure whose minimizing was cut is, in words that agree with
    the measurement's note (it may report another program than minimizing's shortest)."""
    n = len(found.actions)
    if minimizer.best is None:
        return (f"not minimized (no trial of it reproduced); the program shown ({n} actions) "
                "is the one that reproduced when measured")
    if found.actions != minimizer.best.program:
        return (f"not proven minimal; the program shown ({n} actions) reproduced more often "
                f"than the shortest that reproduced so far ({len(minimizer.best.program)} "
                "actions)")
    return f"not proven minimal, the program shown is the shortest that reproduced so far " \
           f"({n} actions)"


def _minimize(cfg: FuzzConfig, found: Found, clock: Callable[[], float] | None,
              minimizer: Minimizer) -> Minimizer:
    """Search a program that reproduces in a fresh process, and minimize it into
    ``found.actions`` (unverified when none reproduced)."""
    candidates = found.candidates or [(found.actions, found.history)]
    programs = [standalone(c[0]) for c in candidates]
    held = [Trial(p, found.schedules[program_key(c[0])]) for p, c in zip(programs, candidates,
                                                                    strict=True)
            if program_key(c[0]) in found.schedules]
    minimizer.evidence.recordings.update((program_key(t.program), t.schedule) for t in held
                                if t.schedule is not None)
    # each also letting its sessions settle, before the bare programs run free: a program
    # that ends with a prompt showed the bug in the run because the next example gave the
    # turn time, not the teardown's cancel (codex-acp v2's CANCEL-07, s10 matrix: the
    # settled program was the one that reproduced, and it came last in each round)
    trials = [*held, *(Trial(p) for p in map(_settled, programs) if p is not None),
              *(Trial(p) for p in programs)]
    units: list[int] = []
    # A racy failure may need many tries: rounds of the run's programs go on while the budget
    # lasts (up to SEARCH_ROUNDS); the shared process's history (long programs, a dependence
    # on state rather than a race) follows the first round only.
    with minimizer.staged(Stage.SEARCH, len(programs[0])) as record:
        for round_ in range(SEARCH_ROUNDS):
            if minimizer.out_of_time() or minimizer.first(trials) is not None:
                break
            for _, history in candidates[:2] if round_ == 0 else ():
                if len(history) > 1 and time.monotonic() < minimizer.deadline():
                    suffix = history_suffix(minimizer, history)
                    if suffix is not None:
                        units = suffix
                        found.notes.append("the example needed state left by earlier examples "
                                           "on the shared agent process; this counterexample "
                                           "replays that history, minimized")
                        break
            if minimizer.best is not None or minimizer.out_of_time():
                break
        record.done = minimizer.best is not None
    if minimizer.best is None:
        found.verified = False
        found.notes.append("no replay in a fresh agent process reproduced it"
                           + (f" in {minimizer.trials} trial(s), before "
                              f"{minimizer.cut_by.words}" if minimizer.cut_by else "")
                           + ": the program shown is the shortest that showed it during the "
                           "run, unverified (the transcript is the run's own)")
        return minimizer
    minimizer.minimize(units)
    shrunk = minimizer.best.program
    if clock is not None and len(shrunk) < len(found.actions):
        found.minimal_at = clock()  # only when this step made it smaller
    found.actions = shrunk
    return minimizer


def _measure(cfg: FuzzConfig, found: Found, minimizer: Minimizer, stop: Stop | None,
             pool: WarmPool) -> Tally:
    """The reproduction rates of the reported program: ``cfg.replay_runs`` fresh-process
    replays held to its recorded schedule, and as many free-running.

    A counterexample a reader replays must reproduce, not merely be short: when the shortest
    program that reproduced does so in fewer than half of its held runs (a race it won once),
    the same program letting its sessions settle and the next shortest that reproduced are
    measured too, and the first that reproduces at least half the time is reported; failing
    that, the one with the best rate (the shorter on a tie).
    """
    best = minimizer.best or Trial(found.actions)
    settled = _settled(best.program)
    longest = max(READABLE, 2 * len(best.program))
    others = minimizer.reproduced if found.verified else []
    tried = [best, *[t for t in [Trial(settled) if settled else None, *others]
                     if t is not None and t.program != best.program
                     and len(t.program) <= longest][:FALLBACKS + 1]]
    tally = Tally(cut=False)
    target = (found.rule, stop, pool, found.method)
    measured: list[Trial] = []
    cut = 0
    chosen = best
    for trial in tried:
        if trial.schedule is None:  # free first: a reproducing run records the schedule
            cut += _runs(cfg, tally, trial.program, None, *target)
            outcome = tally.get(trial.program, False)[2]
            trial = Trial(trial.program, outcome.schedule if outcome is not None else None)
            if trial.schedule is not None:
                cut += _runs(cfg, tally, trial.program, trial.schedule, *target)
        else:
            cut += _runs(cfg, tally, trial.program, trial.schedule, *target)
            cut += _runs(cfg, tally, trial.program, None, *target, trial.schedule)
        measured.append(trial)
        hits, runs = _rate(tally, trial)
        if runs and 2 * hits >= runs:
            chosen = trial
            break
        if stop is not None and stop.requested:
            break
    else:
        chosen = max(measured, key=lambda t: (_share(*_rate(tally, t)), -len(t.program)))
    if chosen.program != best.program:
        hits, runs = _rate(tally, measured[0])
        shortest = ("the shortest program that reproduced during minimization"
                    if minimizer.best is not None else
                    "the program the run showed it with (no trial of minimizing reproduced it)")
        this = "this one, as long," if len(chosen.program) == len(best.program) \
            else f"this one ({len(chosen.program)} actions)"
        found.notes.append(f"{shortest} ({len(best.program)} actions) reproduced {hits}/{runs}"
                           f"; {this} reproduces more often")
    if cut:
        found.notes.append(f"{cut} replay(s) were cut by the time budget (or a stop) and are "
                           "not counted")
    # the run that made the program shown what it is, when no final replay reproduced it
    last = minimizer.hit if minimizer.best is not None \
        and chosen.program == minimizer.best.program else None
    _reported(found, chosen, tally, last)
    return tally


def _reported(found: Found, chosen: Trial, tally: Tally,
              last: ReplayOutcome | None = None) -> None:
    """``found`` states ``chosen``: its program, schedule, rates and a transcript of a
    fresh-process replay that reproduced it (held, else free; else ``last``, the minimizing
    trial that made ``chosen`` the program it is: the run's own transcript is of a longer
    program, whose action numbers the one shown does not have)."""
    found.actions = chosen.program
    found.schedule = chosen.schedule
    held_hits, held_runs, held_outcome = tally.get(chosen.program, True)
    free_hits, free_runs, free_outcome = tally.get(chosen.program, False)
    found.reproduced, found.replays = held_hits, held_runs
    found.free_reproduced, found.free_replays = free_hits, free_runs
    held_unsure = tally.inconclusive(chosen.program, True)
    free_unsure = tally.inconclusive(chosen.program, False)
    found.inconclusive, found.free_inconclusive = len(held_unsure), len(free_unsure)
    unclocked = tally.unclocked.get(program_key(chosen.program))
    found.clock_held = bool(held_runs or held_unsure) and unclocked is None
    if unclocked is not None:
        found.notes.append(f"its held replays ran on the agent's real wall clock: {unclocked}")
    first = next(iter([*held_unsure, *free_unsure]), None)
    found.inconclusive_why = first.words() if first is not None else None
    # each one's reason, as re-judging needs it (matrix/rejudge.py)
    found.inconclusive_reasons = reasons_json(held_unsure, free_unsure)
    if (held_hits or free_hits) and not found.verified:  # letting it settle made it reproduce
        found.verified = True
        found.notes = [n for n in found.notes if not n.startswith("no replay in a fresh")]
    outcome = held_outcome or free_outcome or (last if last is not None and last.reproduced
                                                and last.offending is not None else None)
    if outcome is not None:
        found.replay_records = outcome.records
        found.replay_offending = outcome.offending
        found.replay_model = outcome.model
        found.replay_teardown = outcome.teardown
        # Its index and wording match the transcript written for the counterexample; a
        # broader rule's failure on the same request re-roots it (``Found.reroot``)
        found.reroot(next(v for v in outcome.violations
                          if v.rule == (outcome.rule or found.rule)))
    if held_runs and held_hits < held_runs and tally.diverged:
        found.notes.append(f"a held replay that did not reproduce left its recorded "
                           f"schedule: {tally.diverged}")


def _runs(cfg: FuzzConfig, tally: Tally, program: list[Action], schedule: Schedule | None,
          rule: str, stop: Stop | None, pool: WarmPool, method: str | None = None,
          recording: Schedule | None = None) -> int:
    """``cfg.replay_runs`` replays of ``program`` (held to ``schedule``, or free), counted;
    returns how many a stop cut. Each inconclusive one (the agent failed on its own where
    ``recording``, else ``schedule``, else a reproducing run's own schedule, had it
    succeed) is run again, at most ``cfg.replay_runs`` more in all: the rate is over
    conclusive runs when the budget allows."""
    def many(runs: int) -> list[ReplayOutcome]:
        return replay_many(cfg, program, rule, runs, stop=stop, schedule=schedule, pool=pool,
                           exact=True, method=method)

    cut = extra = 0
    outcomes = many(cfg.replay_runs)
    recording = recording or schedule or next(
        (o.schedule for o in outcomes if o.reproduced and o.schedule is not None), None)
    while outcomes:
        unsure = 0
        for outcome in outcomes:
            unsure += not tally.count(program, outcome, recording) and outcome.error is None
            cut += outcome.error == INTERRUPTED
        more = min(unsure, cfg.replay_runs - extra)
        if more <= 0 or (stop is not None and stop.requested):
            break
        extra += more
        outcomes = many(more)
    return cut


def _rate(tally: Tally, trial: Trial) -> tuple[int, int]:
    """The headline rate of a measured program: held to its schedule when it has one."""
    hits, runs, _ = tally.get(trial.program, trial.schedule is not None)
    if runs == 0:
        hits, runs, _ = tally.get(trial.program, False)
    return hits, runs


def _share(hits: int, runs: int) -> float:
    return hits / runs if runs else 0.0


def _settled(program: list[Action]) -> list[Action] | None:
    """``program`` then a wait for each session it used to settle (None: it has one, or no
    session to wait for)."""
    used = sorted({a.s for a in program if isinstance(a, SessionAction)})
    if not used or (program and isinstance(program[-1], Wait)):
        return None
    return [*program, *(Wait(s, WaitMode.SETTLED) for s in used)]


def replay_many(cfg: FuzzConfig, actions: Sequence[Action], rule: str, runs: int, *,
                stop: Stop | None = None, schedule: Schedule | None = None,
                pool: WarmPool | None = None, exact: bool = False,
                method: str | None = None) -> list[ReplayOutcome]:
    """Independent replays, a few at a time: they mostly wait on the agent. ``exact``:
    ``actions`` recorded ``schedule`` (the replays measure a reported program)."""
    if runs <= 0:
        return []
    return in_threads(lambda _, abort: _replay(cfg, actions, rule, abort, schedule, pool,
                                               exact, method),
                      range(runs), stop=stop, parallel=PARALLEL)


def _replay(cfg: FuzzConfig, actions: Sequence[Action], rule: str | None,
            abort: threading.Event, schedule: Schedule | None,
            pool: WarmPool | None, exact: bool = False,
            method: str | None = None) -> ReplayOutcome:
    """One replay through this module's ``replay_once`` (tests put a stand-in there); what a
    held one shows of the agent's wall clock chooses the clock of the pool's next processes
    (:meth:`WarmPool.weigh_clock`)."""
    outcome = _replay_as_asked(cfg, actions, rule, abort, schedule, pool, exact, method)
    if pool is not None and outcome.held:
        pool.weigh_clock(clock_evidence(outcome, schedule))
    return outcome


def _replay_as_asked(cfg: FuzzConfig, actions: Sequence[Action], rule: str | None,
                     abort: threading.Event, schedule: Schedule | None,
                     pool: WarmPool | None, exact: bool, method: str | None
                     ) -> ReplayOutcome:
    if method is not None:
        return replay_once(cfg, actions, rule, abort, schedule=schedule, pool=pool,
                           exact=exact and schedule is not None, method=method)
    if schedule is None and pool is None:
        return replay_once(cfg, actions, rule, abort)
    if exact and schedule is not None:
        return replay_once(cfg, actions, rule, abort, schedule=schedule, pool=pool,
                           exact=True)
    return replay_once(cfg, actions, rule, abort, schedule=schedule, pool=pool)


def first_reproducing(cfg: FuzzConfig, rule: str, trials: Sequence[Trial | list[Action]],
                      stop_at: float | None = None, *, stop: Stop | None = None,
                      on_outcome: Callable[[Trial, ReplayOutcome], None] | None = None,
                      pool: WarmPool | None = None, left: Callable[[], int] | None = None,
                      method: str | None = None) -> tuple[int, ReplayOutcome] | None:
    """The first trial that reproduces in a fresh process, with that replay.

    Replays run a few at a time; no new batch starts after ``stop_at``, and none holds more
    trials than ``left()`` says remain of a budget counted in trials.
    """
    jobs = [(n, t if isinstance(t, Trial) else Trial(list(t))) for n, t in enumerate(trials)]
    if 0 < len(jobs) < PARALLEL:  # idle slots of a batch cost nothing: try trials again
        jobs = [jobs[n % len(jobs)] for n in range(PARALLEL)]
    start = 0
    while start < len(jobs):
        if (stop_at is not None and time.monotonic() > stop_at) or (stop and stop.requested):
            return None
        size = PARALLEL if left is None else min(PARALLEL, left())
        if size <= 0:
            return None
        batch = jobs[start:start + size]
        start += size
        # the first replay of a batch that reproduces ends the others (cut: no evidence),
        # rather than waiting for them to run out their programs and deadlines
        with cutoff(stop or Stop(), float("inf")) as settled:
            def job(item: tuple[int, Trial], abort: threading.Event,
                    settled: Stop = settled) -> ReplayOutcome:
                outcome = _replay(cfg, item[1].program, rule, abort, item[1].schedule, pool,
                                  method=method)
                if outcome.reproduced:
                    settled.request()
                return outcome

            outcomes = in_threads(job, batch, stop=settled, parallel=PARALLEL)
        hit = None
        for (n, trial), outcome in zip(batch, outcomes, strict=True):
            if on_outcome is not None:
                on_outcome(trial, outcome)
            if outcome.reproduced and hit is None:
                hit = n, outcome
        if hit is not None:
            return hit
    return None


def history_suffix(minimizer: Minimizer, history: list[list[Action]]) -> list[int] | None:
    """The shortest suffix of the process's examples that reproduces on a fresh process (it
    becomes the minimizer's best, cut after the action that showed the rule); returns the
    length of each example in it."""
    longest = min(len(history), MAX_HISTORY_EXAMPLES)
    sizes = sorted({min(2 ** n, longest) for n in range(1, 7)})
    trials = [Trial(standalone([a for ex in history[-k:] for a in ex])) for k in sizes]
    hit = minimizer.first(trials)
    if hit is None:
        return None
    n, trial = hit
    units = [len(ex) for ex in history[-sizes[n]:]]
    return [len(part) for part in _cut([list(range(u)) for u in units], len(trial.program))]


def delta_debug(cfg: FuzzConfig, rule: str, actions: list[Action], stop_at: float, *,
                stop: Stop | None = None, units: Sequence[int] = ()) -> list[Action]:
    """Remove whole units, then chunks, then single actions while the failure reproduces
    (the program is taken to reproduce as it is; free-running until a replay recorded a
    schedule to hold the next ones to)."""
    minimizer = Minimizer(cfg, rule, TrialClock(stop_at), stop)
    if time.monotonic() >= stop_at:
        return actions
    minimizer.best = Trial(standalone(actions))
    minimizer.minimize(units)
    return minimizer.best.program
