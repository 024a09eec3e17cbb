"""Replaying counterexamples in fresh agent processes: reproduction rates and delta debugging.

A counterexample is what a fresh agent process, driven by its client actions, shows again. So
every program reported is one that reproduced at least once in a fresh process (the shortest
such), or is said not to be: a failure no replay reproduced keeps the program that showed it in
the run, marked unverified. Minimizing removes whole examples of a shared process's history
first, then chunks and single actions (delta debugging), accepting a removal when one replay
still shows the rule; the final program's rate is then measured, and when that program never
reproduces again (a racy failure that was lucky once), the next shortest that did is measured
instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from acp_model.fuzzing.actions import Action, NewSession, SessionAction, Wait
from acp_model.fuzzing.client import AgentUnusable, FuzzClient
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.pool import Example
from acp_model.fuzzing.program import Program, standalone
from acp_model.fuzzing.recorder import Found, LifecycleFailure, Recorder
from acp_model.fuzzing.stop import Interrupted, Stop, cutoff
from acp_model.model.vocab import Level
from acp_model.oracle.monitor import Violation
from acp_model.spec.rules import RULES

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
INTERRUPTED = "interrupted"  # a replay's error when a stop (or the budget's end) cut it


@dataclass
class ReplayOutcome:
    reproduced: bool
    violations: list[Violation]
    records: list[dict[str, Any]]
    offending: int | None
    error: str | None = None
    performed: int | None = None  # actions run when the rule showed (None: not before the end)
    session: int | None = None  # the program's session (by creation) the failure is about


def replay_once(cfg: FuzzConfig, actions: Sequence[Action], rule: str | None,
                abort: threading.Event | None = None) -> ReplayOutcome:
    """Run an action list against a fresh agent process, exactly as the fuzzer did.

    Other failures on the way do not stop it (a mutant may break a second rule before it
    reaches the one being replayed); once ``rule`` is seen, the liveness drain at the end is
    skipped unless the rule is about what is owed. ``abort`` (set on Ctrl-C while replays run
    in threads) stops it after the current action.
    """
    stop = Stop(abort)
    if stop.requested:
        return ReplayOutcome(False, [], [], None, INTERRUPTED)
    try:
        client = FuzzClient.from_config(cfg, stop)
    except AgentUnusable as exc:
        return ReplayOutcome(False, [], [], None, str(exc))
    error = None
    performed = None
    ex: Example | None = None
    recorder = Recorder(masked=set(RULES) - {rule} if rule is not None else set())
    try:
        try:
            client.initialize()
            ex = Example(client, recorder, deadline=cfg.deadline)
            for n, action in enumerate(actions, start=1):
                with contextlib.suppress(LifecycleFailure):
                    ex.act(action)
                if rule is not None and rule in recorder.found:
                    performed = n
                    break
            if rule is None or rule not in recorder.found:
                with contextlib.suppress(LifecycleFailure):
                    ex.finish()
        except AgentUnusable as exc:
            error = str(exc)
        except Interrupted:
            return ReplayOutcome(False, [], [], None, INTERRUPTED)
    finally:
        client.close()
    failures = [v for v in client.monitor.violations if v.level == Level.FAIL]
    hit = next((v for v in failures if rule is None or v.rule == rule), None)
    sids = [client.sessions[i].sid for i in ex.local] if ex is not None else []
    session = sids.index(hit.session) if hit is not None and hit.session in sids else None
    return ReplayOutcome(hit is not None, failures, client.proc.records(),
                         hit.index if hit else None, error, performed if hit else None, session)


@dataclass
class Minimizer:
    """Delta debugging against fresh processes, remembering every program that reproduced."""

    cfg: FuzzConfig
    rule: str
    stop_at: float
    stop: Stop | None = None
    reproduced: list[list[Action]] = field(default_factory=list)  # shortest first
    hit: ReplayOutcome | None = None  # the latest replay that reproduced
    # every fresh-process run of a program: its key -> [hits, runs, a reproducing outcome]
    runs: dict[str, list[Any]] = field(default_factory=dict)
    cut: bool = False  # the time ran out (or a stop came) before minimizing was done

    def out_of_time(self) -> bool:
        if time.monotonic() >= self.stop_at or (self.stop is not None and self.stop.requested):
            self.cut = True
        return self.cut

    def _keep(self, program: list[Action]) -> None:
        if program not in self.reproduced:
            self.reproduced.append(program)
            self.reproduced.sort(key=len)

    def count(self, program: Sequence[Action], outcome: ReplayOutcome) -> None:
        """Record one replay; a hit counts for the program cut after the rule's action (the
        same run, up to there). A replay the budget's end or a stop cut is no evidence."""
        if outcome.error == INTERRUPTED:
            return
        if outcome.reproduced and outcome.performed:
            program = program[:outcome.performed]
        entry = self.runs.setdefault(_key(program), [0, 0, None])
        entry[1] += 1
        if outcome.reproduced:
            entry[0] += 1
            entry[2] = entry[2] or outcome

    def tally(self, program: Sequence[Action]) -> tuple[int, int, ReplayOutcome | None]:
        hits, runs, outcome = self.runs.get(_key(program), [0, 0, None])
        return hits, runs, outcome

    def first(self, trials: list[list[Action]]) -> tuple[int, list[Action]] | None:
        """The first trial that reproduces once (a batch at a time): its index, and the trial
        cut after the action that showed the rule (what follows it cannot be needed)."""
        found = first_reproducing(self.cfg, self.rule, trials, stop_at=self.stop_at,
                                  stop=self.stop, on_outcome=self.count)
        if found is None:
            return None
        n, outcome = found
        self.hit = outcome
        program = trials[n][:outcome.performed] if outcome.performed else trials[n]
        self._keep(program)
        return n, program

    def minimize(self, actions: list[Action], units: Sequence[int] = ()) -> list[Action]:
        """Remove what the failure does not need: whole units first (``units`` are the
        lengths of the examples ``actions`` is made of), then chunks, then single actions."""
        program = standalone(actions)
        self._keep(program)
        target = self.hit.session if self.hit is not None else None
        sliced = Program(tuple(program)).session_slice(target) if target is not None \
            else None
        if sliced is not None and len(sliced) < len(program):
            # A failure is about one session: its own actions are the likely cause, and
            # removing every other session's at once saves most of delta debugging's replays
            # (a slow agent and a racy failure leave it too few to get below hundreds).
            for _ in range(ATTEMPTS):
                hit = self.first([sliced])
                if hit is not None:
                    program, units = hit[1], ()
                    break
                if self.out_of_time():
                    break
        if len(units) > 1:
            program = self._ddmin(_split(program, units))
        return self._ddmin([[a] for a in program])

    def _ddmin(self, parts: list[list[Action]]) -> list[Action]:
        chunk = max(1, len(parts) // 2)
        # A racy failure misses some replays, so a miss is weak evidence: on short programs
        # each granularity gets a second pass, and the finest one more.
        retries = RETRIES
        second = True
        while len(parts) > 1 and not self.out_of_time():
            starts = range(0, len(parts), chunk)
            trials = [parts[:i] + _without(parts[i:i + chunk]) + parts[i + chunk:]
                      for i in starts]
            trials = [t for t in trials if t]
            hit = self.first([_flat(t) for t in trials]) if trials else None
            short = len(_flat(parts)) <= RETRY_UP_TO
            if hit is not None:
                parts = _cut(trials[hit[0]], len(hit[1]))
                chunk = min(chunk, max(1, len(parts) // 2))
                second = True
            elif second and short:
                second = False
            elif chunk > 1:
                chunk //= 2
                second = True
            elif retries and short:
                retries -= 1
            else:
                break
        return _flat(parts)


def _without(chunk: list[list[Action]]) -> list[list[Action]]:
    """What removing ``chunk`` leaves of it: its ``session/new`` actions, since the actions
    after it name sessions by their order of creation and would land on other sessions
    without them, unless they are all it holds (then they go, one chunk at a time)."""
    kept = [[a for a in part if isinstance(a, NewSession)] for part in chunk]
    kept = [part for part in kept if part]
    return [] if sum(map(len, kept)) == sum(map(len, chunk)) else kept


def _key(program: Sequence[Action]) -> str:
    return json.dumps([a.to_json() for a in program], sort_keys=True)


def _cut(parts: list[list[T]], keep: int) -> list[list[T]]:
    """The parts holding the first ``keep`` actions."""
    out: list[list[T]] = []
    n = 0
    for part in parts:
        if n >= keep:
            break
        out.append(part[:keep - n])
        n += len(out[-1])
    return out


def _flat(parts: list[list[Action]]) -> list[Action]:
    return standalone([a for part in parts for a in part])


def _split(actions: list[Action], units: Sequence[int]) -> list[list[Action]]:
    out, at = [], 0
    for n in units:
        out.append(actions[at:at + n])
        at += n
    if at < len(actions):
        out.append(actions[at:])
    return [part for part in out if part]


def measure_reproduction(cfg: FuzzConfig, found: Found,
                         clock: Callable[[], float] | None = None, *,
                         stop: Stop | None = None, minimize_until: float | None = None,
                         on_step: Callable[[str], None] | None = None) -> None:
    """Find a program that reproduces in a fresh process, minimize it, measure it.

    Candidates are the shortest programs that showed the failure (the one Hypothesis shrank
    may depend on a lucky race). With a shared agent process an example can also depend on what
    earlier examples left behind (every third turn of the process...): then the shortest
    reproducing suffix of the process's history stands in. The chosen program is minimized
    against fresh processes within ``cfg.minimize_budget`` seconds and replayed
    ``cfg.replay_runs`` times. ``minimize_until`` (a ``time.monotonic()`` instant) ends
    minimizing earlier (the run's time budget); ``stop`` ends everything (its end, a signal).
    ``on_step`` hears "minimizing", then "replaying".
    """
    started = time.monotonic()
    until = min(started + cfg.minimize_budget, minimize_until or float("inf"))
    if on_step is not None:
        on_step("minimizing")
    # replays under way when minimizing's time ends are cut then, not waited out: the time
    # after it is the measurement's
    with cutoff(stop or Stop(), until) as ends:
        minimizer = _minimize(cfg, found, clock, Minimizer(cfg, found.rule, until, ends))
    minimizer.stop = stop
    took = time.monotonic() - started
    if on_step is not None:
        on_step("replaying")
    _measure(cfg, found, minimizer, stop)
    found.minimize_cut = minimizer.cut
    if minimizer.cut and found.verified:  # (unverified: its note says the time ran out)
        found.notes.append(f"minimizing was cut after {took:.1f} s (--minimize-budget, or "
                           "this failure's share of --time-budget): the program shown is the "
                           f"shortest that reproduced so far ({len(found.actions)} actions)")


def _minimize(cfg: FuzzConfig, found: Found, clock: Callable[[], float] | None,
              minimizer: Minimizer) -> Minimizer:
    """Search a program that reproduces in a fresh process, and minimize it into
    ``found.actions`` (unverified when none reproduced)."""
    candidates = found.candidates or [(found.actions, found.history)]
    programs = [standalone(c[0]) for c in candidates]
    # each also letting its sessions settle: a program that ends with a prompt showed the bug
    # in the run because the next example gave the turn time, not the teardown's cancel
    programs += [p for p in map(_settled, programs) if p is not None]
    chosen: list[Action] | None = None
    units: list[int] = []
    # A racy failure may need many tries: rounds of the run's programs, each followed by the
    # shared process's history, go on while the budget lasts (up to SEARCH_ROUNDS).
    for _ in range(SEARCH_ROUNDS):
        if minimizer.out_of_time():
            break
        hit = minimizer.first(programs)
        if hit is not None:
            chosen = hit[1]
            break
        for _, history in candidates[:2]:
            if len(history) > 1 and time.monotonic() < minimizer.stop_at:
                suffix = history_suffix(minimizer, history)
                if suffix is not None:
                    chosen, units = suffix
                    found.notes.append("the example needed state left by earlier examples on "
                                       "the shared agent process; this counterexample replays "
                                       "that history, minimized")
                    break
        if chosen is not None or minimizer.out_of_time():
            break
    if chosen is None:
        found.verified = False
        found.notes.append("no replay in a fresh agent process reproduced it"
                           + (" before minimizing's time ran out" if minimizer.cut else "")
                           + ": the program shown is the shortest that showed it during the "
                           "run, unverified (the transcript is the run's own)")
    else:
        shrunk = minimizer.minimize(chosen, units)
        if clock is not None and len(shrunk) < len(found.actions):
            found.minimal_at = clock()  # only when this step made it smaller
        found.actions = shrunk
    return minimizer


def _measure(cfg: FuzzConfig, found: Found, minimizer: Minimizer, stop: Stop | None) -> None:
    """The reproduction rate of the reported program, over every fresh-process run of it
    (minimization's and ``cfg.replay_runs`` more).

    A counterexample a reader replays must reproduce, not merely be short: when the shortest
    program that reproduced does so in fewer than half of its runs (a race it won once: a
    turn cut short by the teardown's cancel before it reached the bug, say), the next shortest
    that reproduced are measured too, and the first that reproduces at least half the time is
    reported; failing that, the one with the best rate (the shorter on a tie).
    """
    shortest = found.actions
    # the same program letting its sessions settle before the teardown cancels them (a turn
    # the teardown's cancel would cut short reaches the bug), then longer ones that reproduced
    # (only while a reader can still follow them: a program of hundreds of actions that
    # reproduces more often helps no one more than a short racy one)
    settled = _settled(shortest)
    longest = max(READABLE, 2 * len(shortest))
    others = minimizer.reproduced if found.verified else []
    tried: list[list[Action]] = [shortest, *[
        p for p in [settled, *others]
        if p is not None and p != shortest and len(p) <= longest][:FALLBACKS + 1]]
    measured: list[list[Action]] = []
    chosen = shortest
    cut = 0
    for program in tried:
        for outcome in replay_many(cfg, program, found.rule, cfg.replay_runs, stop=stop):
            minimizer.count(program, outcome)
            cut += outcome.error == INTERRUPTED
        measured.append(program)
        hits, runs, _ = minimizer.tally(program)
        if runs and 2 * hits >= runs:
            chosen = program
            break
        if stop is not None and stop.requested:
            break
    else:
        chosen = max(measured, key=lambda p: (_rate(minimizer, p), -len(p)))
    if chosen is not shortest:
        hits, runs, _ = minimizer.tally(shortest)
        found.notes.append(f"the shortest program that reproduced during minimization "
                           f"({len(shortest)} actions) reproduced {hits}/{runs}; this one "
                           "reproduces more often")
    found.actions = chosen
    if cut:
        found.notes.append(f"{cut} replay(s) were cut by the time budget (or a stop) and are "
                           "not counted")
    hits, runs, outcome = minimizer.tally(chosen)
    found.reproduced, found.replays = hits, runs
    if hits and not found.verified:  # letting its sessions settle made it reproduce
        found.verified = True
        found.notes = [n for n in found.notes if not n.startswith("no replay in a fresh")]
    if outcome is not None:
        found.replay_records = outcome.records
        found.replay_offending = outcome.offending
        # Its index and wording match the transcript written for the counterexample.
        found.violation = next(v for v in outcome.violations if v.rule == found.rule)


def _settled(program: list[Action]) -> list[Action] | None:
    """``program`` then a wait for each session it used to settle (None: it has one, or no
    session to wait for)."""
    used = sorted({a.s for a in program if isinstance(a, SessionAction)})
    if not used or (program and isinstance(program[-1], Wait)):
        return None
    return [*program, *(Wait(s, "settled") for s in used)]


def _rate(minimizer: Minimizer, program: Sequence[Action]) -> float:
    hits, runs, _ = minimizer.tally(program)
    return hits / runs if runs else 0.0


def replay_many(cfg: FuzzConfig, actions: Sequence[Action], rule: str, runs: int, *,
                stop: Stop | None = None) -> list[ReplayOutcome]:
    """Independent replays, a few at a time: they mostly wait on the agent."""
    if runs <= 0:
        return []
    return in_threads(lambda _, abort: replay_once(cfg, actions, rule, abort), range(runs),
                      stop=stop)


def in_threads(job: Callable[[Any, threading.Event], ReplayOutcome], items: Any, *,
               stop: Stop | None = None) -> list[ReplayOutcome]:
    """Run replays four at a time; Ctrl-C (or the run's stop request) stops the running ones
    within a second."""
    abort = stop.event if stop is not None else threading.Event()
    items = list(items)
    with ThreadPoolExecutor(max_workers=max(1, min(PARALLEL, len(items)))) as pool:
        try:
            return list(pool.map(lambda item: job(item, abort), items))
        except KeyboardInterrupt:
            abort.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def first_reproducing(cfg: FuzzConfig, rule: str, trials: list[list[Action]],
                      stop_at: float | None = None, *, stop: Stop | None = None,
                      on_outcome: Callable[[list[Action], ReplayOutcome], None] | None = None
                      ) -> tuple[int, ReplayOutcome] | None:
    """The first trial that reproduces in a fresh process, with that replay.

    Replays run four at a time; no new batch starts after ``stop_at``.
    """
    jobs = list(enumerate(trials))
    if 0 < len(jobs) < PARALLEL:  # idle slots of a batch cost nothing: try trials again
        jobs = [jobs[n % len(jobs)] for n in range(PARALLEL)]
    for start in range(0, len(jobs), PARALLEL):
        if (stop_at is not None and time.monotonic() > stop_at) or (stop and stop.requested):
            return None
        batch = jobs[start:start + PARALLEL]
        outcomes = in_threads(lambda job, abort: replay_once(cfg, job[1], rule, abort), batch,
                              stop=stop)
        hit = None
        for (n, trial), outcome in zip(batch, outcomes, strict=True):
            if on_outcome is not None:
                on_outcome(trial, outcome)
            if outcome.reproduced and hit is None:
                hit = n, outcome
        if hit is not None:
            return hit
    return None


def history_suffix(minimizer: Minimizer, history: list[list[Action]]
                   ) -> tuple[list[Action], list[int]] | None:
    """The shortest suffix of the process's examples that reproduces on a fresh process (cut
    after the action that showed the rule), and the length of each example in it."""
    longest = min(len(history), MAX_HISTORY_EXAMPLES)
    sizes = sorted({min(2 ** n, longest) for n in range(1, 7)})
    trials = [standalone([a for ex in history[-k:] for a in ex]) for k in sizes]
    hit = minimizer.first(trials)
    if hit is None:
        return None
    n, program = hit
    units = [len(ex) for ex in history[-sizes[n]:]]
    return program, [len(part) for part in _cut([list(range(u)) for u in units], len(program))]


def delta_debug(cfg: FuzzConfig, rule: str, actions: list[Action], stop_at: float, *,
                stop: Stop | None = None, units: Sequence[int] = ()) -> list[Action]:
    """Remove whole units, then chunks, then single actions while the failure reproduces."""
    return Minimizer(cfg, rule, stop_at, stop).minimize(actions, units)

