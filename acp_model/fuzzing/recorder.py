"""The side channel where every failure is kept the moment it is seen.

That is what makes a run robust to the agent's timing: Hypothesis may later fail to reproduce a
failure while shrinking (and raise a Flaky error), but the first failure and the shortest action
list that showed it are already safe."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from acp_model.fuzzing.actions import Action
from acp_model.fuzzing.schedule import Schedule
from acp_model.model.check import circumstance
from acp_model.model.vocab import Level
from acp_model.oracle.monitor import Violation
from acp_model.report.breaches import Kept, breach_words
from acp_model.report.reach import Reach
from acp_model.spec.levels import Standing, standing_of
from acp_model.spec.rules import RULES

WARNING_STRENGTHS = ("SHOULD", "SHOULD NOT")  # a rule of these strengths warns, never fails


class LifecycleFailure(AssertionError):
    """Raised inside an example when the oracle reports a failure (Hypothesis shrinks it)."""

    def __init__(self, violation: Violation) -> None:
        super().__init__(f"{violation.rule}: {violation.message}")
        self.violation = violation


def program_key(actions: Iterable[Action]) -> str:
    """A program as a key (its actions' JSON)."""
    return json.dumps([a.to_json() for a in actions], sort_keys=True)


class BudgetExhausted(BaseException):
    """Stops Hypothesis when the time budget is spent (BaseException: not a test failure)."""


class ShrinkBudgetSpent(BaseException):
    """Ends one round's shrinking: its shortest failing program is already recorded."""


@dataclass
class Found:
    """One distinct failure (keyed by rule) and the smallest action list that showed it."""

    rule: str
    violation: Violation
    actions: list[Action]
    records: list[dict[str, Any]]
    offending: int  # index of the offending record inside ``records``
    history: list[list[Action]]  # the agent process's earlier examples, concrete actions
    first_seen: float  # seconds since the run started
    minimal_at: float
    seen: int = 1
    candidates: list[tuple[list[Action], list[list[Action]]]] = field(default_factory=list)
    reproduced: int = 0
    replays: int = 0
    # reproduced at least once in a fresh process while being minimized (False: only the run
    # itself showed it, and the program is the shortest that did, unverified)
    verified: bool = True
    replay_records: list[dict[str, Any]] | None = None
    replay_offending: int | None = None
    # the scripted model's side of that replay: (transcript records before it, what crossed)
    replay_model: list[tuple[int, str]] = field(default_factory=list)
    # where that replay's teardown began, a message number (None: unknown, or it did not run)
    replay_teardown: int | None = None
    notes: list[str] = field(default_factory=list)
    minimize_cut: bool = False  # minimizing did not reach its fixpoint (the budget ended it)
    # the message number of each of ``records`` in its process's transcript (empty: they
    # are that whole transcript): on a shared process the earlier examples are left out, so
    # the files number messages as the violation's proof does, and mark the gaps
    numbers: list[int] = field(default_factory=list)
    # the boundary schedule each program showing it recorded in the run (by program), and
    # the one the reported program is replayed under (``fuzzing/schedule.py``)
    schedules: dict[str, Schedule] = field(default_factory=dict)
    schedule: Schedule | None = None
    free_reproduced: int = 0  # the reported program replayed free-running
    clock_held: bool = False  # its held replays held the agent's wall clock too
    free_replays: int = 0
    # replays of the reported program in which the agent failed on its own (held, free),
    # not counted in the rates, and why the first was (``fuzzing/inconclusive.py``)
    inconclusive: int = 0
    free_inconclusive: int = 0
    inconclusive_why: str | None = None
    # each inconclusive replay's reason (``inconclusive.reasons_json``): what re-judging reads
    inconclusive_reasons: list[dict[str, Any]] = field(default_factory=list)
    minimize: dict[str, Any] | None = None  # how far minimizing got (``Minimizer.report``)
    fresh_hits: int = 0  # fresh-process replays (of any program) that reproduced it ...
    fresh_runs: int = 0  # ... of those run (minimizing's and the measurement's)
    seen_fresh: bool = False  # seen in an example that was its process's first

    @property
    def standing(self) -> Standing | None:
        """``fresh``: a fresh agent process showed it (the reported program's replays, or the
        run's first example on its process); ``shared-only``: no replay of the reported
        program reproduced it (reported as a warning); None: never replayed
        (:func:`~acp_model.spec.levels.standing_of`)."""
        return standing_of((self.reproduced + self.free_reproduced,
                            self.replays + self.free_replays),
                           (self.fresh_hits, self.fresh_runs), self.seen_fresh)

    @property
    def method(self) -> str | None:
        """The method of the request the failure is about (None: not a request's)."""
        return request_method(self.records, self.offending)

    def reroot(self, violation: Violation) -> None:
        """Its minimized program shows ``violation``, a broader rule's failure on the same
        request (``wire_table.roots``): the narrowing circumstance is not needed, so that broader
        rule is the root, and the failure is reported under it."""
        if violation.rule == self.rule:
            self.violation = violation
            return
        self.notes.insert(0, f"first seen as {self.rule}; the program without the "
                             f"{circumstance(self.rule) or 'circumstance it adds'} shows it, "
                             f"so the root is {violation.rule}")
        self.rule, self.violation = violation.rule, violation

    def absorb(self, other: Found) -> None:
        """``other`` is the same root seen under a narrower rule first: one failure, whose
        program is the shorter of the two that reproduced."""
        self.seen += other.seen
        self.notes += [n for n in other.notes if n.startswith("first seen as ")]
        if other.verified and (not self.verified or len(other.actions) < len(self.actions)):
            kept = [n for n in self.notes if n.startswith("first seen as ")]
            for name in ("violation", "actions", "records", "offending", "history",
                         "replay_records", "replay_offending", "replay_model",
                         "replay_teardown", "numbers", "schedule", "reproduced", "replays",
                         "free_reproduced", "free_replays", "clock_held", "minimize",
                         "minimize_cut",
                         "verified", "fresh_hits", "fresh_runs", "notes"):
                setattr(self, name, getattr(other, name))
            self.notes = [*kept, *[n for n in self.notes if n not in kept]]
        self.seen_fresh = self.seen_fresh or other.seen_fresh

    @property
    def stands(self) -> bool:
        """A failure of the run: not a shared-process sighting no replay confirmed, nor one
        whose proof rests on what the agent did after the client's deliberate breach."""
        return self.standing != Standing.SHARED_ONLY and not self.breaches()[1]

    def shown(self) -> tuple[list[dict[str, Any]], int, list[int]]:
        """The transcript the counterexample shows (a fresh replay's that reproduced it, else
        the run's own), its offending record's position and each record's message number (a
        shared process's excerpt keeps the numbers of the records it kept)."""
        if self.replay_records is not None and self.replay_offending is not None:
            return self.replay_records, self.replay_offending, \
                list(range(len(self.replay_records)))
        numbers = list(self.numbers) if len(self.numbers) == len(self.records) \
            else list(range(len(self.records)))
        return self.records, self.offending, numbers

    def breaches(self) -> tuple[list[str], list[Kept]]:
        """The client's deliberate breaches the shown transcript keeps before the offending
        message, in words, and those the proof rests on (``report/breaches.py``)."""
        records, _, numbers = self.shown()
        return breach_words(records, numbers, self.violation.index,
                            [i for i, _ in self.violation.evidence])


def request_method(records: list[dict[str, Any]], idx: int) -> str | None:
    """The method of the request at record ``idx`` (None: not a request's record)."""
    msg = records[idx].get("msg") if 0 <= idx < len(records) else None
    method = msg.get("method") if isinstance(msg, dict) else None
    return method if isinstance(method, str) else None


@dataclass
class Recorder:
    """The side channel: failures and statistics survive whatever Hypothesis does."""

    started: float = field(default_factory=time.monotonic)
    found: dict[str, Found] = field(default_factory=dict)
    masked: set[str] = field(default_factory=set)
    warnings: dict[tuple[str, str | None], Violation] = field(default_factory=dict)
    warning_counts: dict[tuple[str, str | None], int] = field(default_factory=dict)
    # the first sighting of each warning, as it happened (neither shrunk nor replayed): a rare
    # warning on a real agent can then be read after the run
    warning_seen: dict[tuple[str, str | None], Found] = field(default_factory=dict)
    examples: int = 0
    actions: int = 0
    restarts: int = 0
    agent_info: dict[str, Any] | None = None  # what initialize said the agent is (name, version)
    round_failure_at: float | None = None  # when this round's first new failure was seen
    on_progress: Callable[[Recorder], None] | None = None
    on_phase: Callable[[str], None] | None = None  # "initialize", "shrinking CANCEL-07" ...
    on_failure: Callable[[Found], None] | None = None  # each rule's first failure, as it comes
    internal_error: BaseException | None = None  # the oracle failed: the run is void
    exercised: set[str] = field(default_factory=set)  # rules some check has judged so far
    transitions: set[str] = field(default_factory=set)  # model transitions fired so far
    coverage: list[dict[str, Any]] = field(default_factory=list)  # one sample per example
    # model transition -> seconds into the run when an example that fired it ended
    first_seen: dict[str, float] = field(default_factory=dict)
    # how far into the lifecycle the run got (``report/reach.py``), counted by its clients
    reach: Counter[Reach] = field(default_factory=Counter)
    agent_lines: int = 0  # lines of the agent's ACP layer reached so far (``--coverage``)
    # requests the client served because its capabilities advertised them (fs/*, terminal/*)
    served: Counter[str] = field(default_factory=Counter)

    def sample_coverage(self, rules: Iterable[str], transitions: Iterable[str]) -> None:
        """After each example: what is exercised so far, against actions and time."""
        self.exercised.update(rules)
        now = round(self.elapsed(), 3)
        for key in transitions:
            self.first_seen.setdefault(key, now)
        self.transitions.update(transitions)
        point = {"actions": self.actions, "seconds": round(self.elapsed(), 3),
                 "examples": self.examples, "rules": len(self.exercised),
                 "transitions": len(self.transitions)}
        last = self.coverage[-1] if self.coverage else None
        if last is not None and (last["rules"], last["transitions"]) == \
                (point["rules"], point["transitions"]) and len(self.coverage) > 1 and \
                (self.coverage[-2]["rules"], self.coverage[-2]["transitions"]) == \
                (point["rules"], point["transitions"]):
            self.coverage[-1] = point  # a flat stretch keeps its two ends only
        else:
            self.coverage.append(point)

    def coverage_report(self) -> dict[str, Any]:
        """The samples, and where coverage stopped growing: a plateau is declared when the
        last half of the run's actions (at least 200) added no rule and no transition."""
        samples = self.coverage
        plateau = None
        if samples and samples[-1]["actions"] >= 200:
            final = (samples[-1]["rules"], samples[-1]["transitions"])
            since = next(s["actions"] for s in samples
                         if (s["rules"], s["transitions"]) == final)
            if since <= samples[-1]["actions"] / 2:
                plateau = since
        return {"samples": samples, "plateau_since_actions": plateau,
                "first_seen": dict(sorted(self.first_seen.items(), key=lambda kv: kv[1]))}

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def failure(self, v: Violation, actions: list[Action], records: list[dict[str, Any]],
                offending: int, history: list[list[Action]], numbers: list[int] | None = None,
                schedule: Schedule | None = None, fresh: bool = True) -> None:
        now = self.elapsed()
        if self.round_failure_at is None and v.rule not in self.masked:
            self.round_failure_at = now
        known = self.found.get(v.rule)
        new = known is None
        if known is None:
            known = self.found[v.rule] = Found(v.rule, v, list(actions), records, offending,
                                               list(history), now, now,
                                               numbers=list(numbers or ()))
        else:
            known.seen += 1
            if len(actions) < len(known.actions):
                known.violation, known.actions, known.history = v, list(actions), list(history)
                known.records, known.offending, known.minimal_at = records, offending, now
                known.numbers = list(numbers or ())
        known.seen_fresh = known.seen_fresh or fresh
        if schedule is not None and len(known.schedules) < 12:
            known.schedules.setdefault(program_key(actions), schedule)
        # A few distinct programs that showed it: a shrunk one may depend on a lucky race.
        programs = [c[0] for c in known.candidates]
        if list(actions) not in programs:
            known.candidates.append((list(actions), list(history)))
            known.candidates.sort(key=lambda c: len(c[0]))
            del known.candidates[6:]
        if new and self.on_failure is not None:  # last: a Ctrl-C in a callback loses nothing
            self.on_failure(known)
        if new and self.on_phase is not None:
            self.on_phase(f"shrinking {v.rule}")

    def one_root(self) -> None:
        """Re-key the failures minimizing re-rooted under a broader rule (``Found.reroot``);
        where the run also found that rule, the two are one root and become one failure."""
        for key, found in list(self.found.items()):
            if found.rule == key:
                continue
            del self.found[key]
            broad = self.found.get(found.rule)
            if broad is None:
                self.found[found.rule] = found
            else:
                broad.absorb(found)

    def also(self, rule: str, program: list[Action]) -> None:
        """Another program that may show ``rule``'s failure again in a fresh process (the
        failing session's own actions over a shared process's history)."""
        known = self.found.get(rule)
        if known is not None and all(c[0] != program for c in known.candidates):
            known.candidates.append((program, [program]))

    def unprovoked(self, violations: Iterable[Violation], records: list[dict[str, Any]]
                   ) -> None:
        """Record what the agent got wrong with no client action behind it (while it started,
        or an agent that never became usable): failures and warnings with an empty program."""
        for v in violations:
            if v.level == Level.FAIL:
                self.failure(v, [], records, v.index, [])
            else:
                self.warning(v, ([], records, v.index, []))

    def sighted(self, rule: str) -> Found | None:
        """What the run found under ``rule``: its failure, or, for a rule whose own strength
        only warns (a SHOULD), the first sighting of its warning (neither shrunk nor
        replayed); None: neither."""
        if rule in self.found:
            return self.found[rule]
        if RULES.get(rule) is None or RULES[rule].strength not in WARNING_STRENGTHS:
            return None
        return next((f for (r, _), f in self.warning_seen.items() if r == rule), None)

    def is_new_warning(self, v: Violation) -> bool:
        return (v.rule, v.check) not in self.warnings

    def warning(self, v: Violation,
                sighting: tuple[list[Action], list[dict[str, Any]], int, list[int]]
                | None = None) -> None:
        """Count a warning; ``sighting`` (the program, a self-contained transcript, the
        offending record in it and the records' message numbers, as for a failure) is kept
        for its first one."""
        key = (v.rule, v.check)
        if key not in self.warnings and sighting is not None:
            actions, records, offending, numbers = sighting
            now = self.elapsed()
            self.warning_seen[key] = Found(v.rule, v, list(actions), records, offending, [],
                                           now, now, verified=False, numbers=list(numbers))
        self.warnings.setdefault(key, v)
        self.warning_counts[key] = self.warning_counts.get(key, 0) + 1
