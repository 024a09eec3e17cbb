"""Replaying counterexamples in fresh agent processes: reproduction rates and delta debugging."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from acp_model.fuzzing.client import Action, AgentUnusable, FuzzClient
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.pool import Example
from acp_model.fuzzing.recorder import Found, LifecycleFailure, Recorder, standalone
from acp_model.fuzzing.stop import Interrupted, Stop
from acp_model.oracle.monitor import Violation


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
    stop = Stop(abort)
    if stop.requested:
        return ReplayOutcome(False, [], [], None, "interrupted")
    try:
        client = FuzzClient.from_config(cfg, stop)
    except AgentUnusable as exc:
        return ReplayOutcome(False, [], [], None, str(exc))
    error = None
    try:
        try:
            client.initialize()
            ex = Example(client, Recorder(), deadline=cfg.deadline)
            with contextlib.suppress(LifecycleFailure):
                for action in actions:
                    ex.act(action)
            with contextlib.suppress(LifecycleFailure):
                ex.finish()
        except AgentUnusable as exc:
            error = str(exc)
        except Interrupted:
            return ReplayOutcome(False, [], [], None, "interrupted")
    finally:
        client.close()
    failures = [v for v in client.monitor.violations if v.level == "fail"]
    hit = next((v for v in failures if rule is None or v.rule == rule), None)
    return ReplayOutcome(hit is not None, failures, client.proc.records(),
                         hit.index if hit else None, error)


def measure_reproduction(cfg: FuzzConfig, found: Found,
                         clock: Callable[[], float] | None = None, *,
                         stop: Stop | None = None) -> None:
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
    hit = first_reproducing(cfg, found.rule, [c[0] for c in candidates], confirm=1, stop=stop)
    if hit is not None:
        chosen = candidates[hit][0]
    if chosen is None:
        for _, history in candidates[:2]:
            if len(history) > 1 and time.monotonic() < stop_at:
                suffix = history_suffix(cfg, found.rule, history, stop_at, stop=stop)
                if suffix is not None:
                    chosen = suffix
                    found.notes.append("the example needed state left by earlier examples on "
                                       "the shared agent process; this counterexample replays "
                                       "that history, shrunk")
                    break
    if chosen is not None:
        shrunk = delta_debug(cfg, found.rule, chosen, stop_at, stop=stop)
        if clock is not None and len(shrunk) < len(found.actions):
            found.minimal_at = clock()  # only when this step made it smaller
        found.actions = shrunk
    outcomes = replay_many(cfg, found.actions, found.rule, cfg.replay_runs, stop=stop)
    for outcome in outcomes:
        found.replays += 1
        if outcome.reproduced:
            found.reproduced += 1
            if found.replay_records is None:
                found.replay_records = outcome.records
                found.replay_offending = outcome.offending
                # Its index and wording match the transcript written for the counterexample.
                found.violation = next(v for v in outcome.violations if v.rule == found.rule)


def replay_many(cfg: FuzzConfig, actions: list[Action], rule: str, runs: int, *,
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
    with ThreadPoolExecutor(max_workers=max(1, min(4, len(items)))) as pool:
        try:
            return list(pool.map(lambda item: job(item, abort), items))
        except KeyboardInterrupt:
            abort.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def first_reproducing(cfg: FuzzConfig, rule: str, trials: list[list[Action]],
                      confirm: int = 2, stop_at: float | None = None, *,
                      stop: Stop | None = None) -> int | None:
    """Index of the first trial that reproduces ``confirm`` times in a row.

    Racy failures reproduce only sometimes; demanding two hits keeps delta debugging from
    trading a reliable counterexample for a shorter, luckier one. Replays run four at a time;
    no new batch starts after ``stop_at``.
    """
    jobs = [(n, trial) for n, trial in enumerate(trials) for _ in range(confirm)]
    for start in range(0, len(jobs), 4):
        if (stop_at is not None and time.monotonic() > stop_at) or (stop and stop.requested):
            return None
        batch = jobs[start:start + 4]
        outcomes = in_threads(lambda job, abort: replay_once(cfg, job[1], rule, abort), batch,
                              stop=stop)
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


def history_suffix(cfg: FuzzConfig, rule: str, history: list[list[Action]], stop_at: float,
                   *, stop: Stop | None = None) -> list[Action] | None:
    """The shortest suffix of the process's examples that reproduces on a fresh process."""
    longest = min(len(history), MAX_HISTORY_EXAMPLES)
    sizes = sorted({min(2 ** n, longest) for n in range(1, 7)})
    trials = [standalone([a for ex in history[-k:] for a in ex]) for k in sizes]
    hit = first_reproducing(cfg, rule, trials, stop_at=stop_at, stop=stop)
    return None if hit is None else trials[hit]


def delta_debug(cfg: FuzzConfig, rule: str, actions: list[Action], stop_at: float, *,
                stop: Stop | None = None) -> list[Action]:
    """Remove chunks, then single actions, while the failure still reproduces."""
    actions = standalone(actions)
    chunk = max(1, len(actions) // 2)
    while len(actions) > 1 and time.monotonic() < stop_at:
        removals = [standalone(actions[:i] + actions[i + chunk:])
                    for i in range(0, len(actions), chunk)]
        removals = [r for r in removals if r]
        hit = (first_reproducing(cfg, rule, removals, stop_at=stop_at, stop=stop)
               if removals else None)
        if hit is not None:
            actions = removals[hit]
            chunk = min(chunk, max(1, len(actions) // 2))
        elif chunk == 1:
            break
        else:
            chunk //= 2
    return actions
