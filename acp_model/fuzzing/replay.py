"""One program on a fresh agent process: free-running, or held to a recorded boundary
schedule (``fuzzing/schedule.py``), from a pool of agent processes started ahead.

A replay's cost on a real agent is mostly the agent's start-up (seconds: a Node runtime, a
Python interpreter, its configuration); minimizing runs dozens of replays. :class:`WarmPool`
keeps fresh, initialized processes ready and starts the next one while a replay runs, so a
replay costs its program, not the start-up. A process is used once.

A held replay can hold the agent's wall clock too (``fuzzing/clock.py``), once one on the
real clock failed on its own (:meth:`WarmPool.hold_clock`): its process then starts under
libfaketime with the real clock, and the clock is set when its trial begins (a warm process is
started before the schedule it will follow is known). A free-running replay from such a
process runs on the real clock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from acp_model.fuzzing.actions import Action
from acp_model.fuzzing.client import AgentUnusable, FuzzClient
from acp_model.fuzzing.clock import AgentClock, ClockChoice, ClockEvidence
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.hold import Hold, describe_divergence
from acp_model.fuzzing.pool import Example
from acp_model.fuzzing.recorder import LifecycleFailure, Recorder, request_method
from acp_model.fuzzing.schedule import Boundary, Crossing, Schedule
from acp_model.fuzzing.stop import Interrupted, Stop
from acp_model.llm.wire import ResponsePart
from acp_model.model.vocab import Level
from acp_model.model.wire_table import roots
from acp_model.oracle.monitor import Violation
from acp_model.spec.rules import RULES

INTERRUPTED = "interrupted"  # a replay's error when a stop (or the budget's end) cut it
STRAGGLER_GRACE = 1.0  # seconds a replay gets to notice a stop before it is left behind


@dataclass
class ReplayOutcome:
    reproduced: bool
    violations: list[Violation]
    records: list[dict[str, Any]]
    offending: int | None
    error: str | None = None
    performed: int | None = None  # actions run when the rule showed (None: not before the end)
    session: int | None = None  # the program's session (by creation) the failure is about
    schedule: Schedule | None = None  # what this replay's own run recorded
    held: bool = False  # it ran held to a recorded schedule
    divergence: str | None = None  # where it first left that schedule (None: it kept to it)
    # the scripted model's side: (transcript records before it, what crossed), in order
    model: list[tuple[int, str]] = field(default_factory=list)
    seconds: float = 0.0  # how long it took, its agent's start-up included when none was warm
    # the index in ``records`` where the teardown began (None: it did not run, or the records
    # are of a process a relaunch replaced): what the client wrote from there on is its own
    teardown: int | None = None
    # the agent's process exited (without a relaunch asking it to): during which action
    # (1, 2, ...), with its exit code; None: it did not before the program's end
    exited: tuple[int, int | None] | None = None
    # the rule the reproduction showed: the one asked for, or a broader one it narrows on the
    # same request (``roots``), which is then the failure's root (None: not reproduced)
    rule: str | None = None
    # a held replay held the agent's wall clock too; else why not (None: it did, or the
    # replay ran free)
    unclocked: str | None = None

    @property
    def clock_held(self) -> bool:
        """It ran held to the recorded schedule and the recorded clock."""
        return self.held and self.unclocked is None


class WarmPool:
    """Fresh agent processes, initialized ahead of the replays that take them: from the first
    one taken on, ``size`` are kept ready (never more than run at once), the next one started
    as one is taken."""

    def __init__(self, cfg: FuzzConfig, size: int, stop: Stop | None = None) -> None:
        self.cfg = cfg
        self.size = max(0, size)
        self.stop = stop or Stop()
        self._ready: list[FuzzClient] = []
        self._starting = 0
        self._cond = threading.Condition()
        self._closed = False
        # one agent initializes at a time: some keep state in the home their profile gives
        # every process of a run, and two starting at once made one fail (codex-acp's sqlite)
        self._initializing = threading.Lock()
        self.started = 0
        self.problem: str | None = None  # the agent could not be started: replays say why
        # processes start under a clock a held replay can set (``fuzzing/clock.py``) only once
        # a held replay showed the real clock matters (:meth:`hold_clock`): preloading
        # libfaketime changes some agents (claude-agent-acp's Claude Code child exits at its
        # shared-memory set-up), so an agent is not run under it without cause
        self.clock = False
        self.choice = ClockChoice()  # what held replays showed of the clock

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def take(self, stop: Stop) -> FuzzClient:
        """A fresh initialized client whose waits answer to ``stop`` (one started now when
        none is ready); :class:`AgentUnusable` when the agent cannot be started."""
        client = None
        with self._cond:
            self._cond.wait_for(lambda: self._ready or not self._starting or self._closed,
                                timeout=self.cfg.startup_deadline)
            if self._ready:
                client = self._ready.pop(0)
        self._fill()
        if client is None:
            return _started(self.cfg, stop, self._initializing, clock=self.clock)
        client.rebind(stop)
        return client

    def hold_clock(self) -> None:
        """From now on its processes start under a clock a held replay can set (the wall
        clock may be an input); the processes warm without it go."""
        self.weigh_clock(ClockEvidence(wanted=True, clocked=False, failed=False))

    def weigh_clock(self, seen: ClockEvidence) -> None:
        """One held replay's evidence on the agent's wall clock (``ClockChoice.weigh``); the
        processes warm on the other clock than the one chosen go."""
        self._switch(self.choice.weigh(seen))

    def _switch(self, clock: bool) -> None:
        with self._cond:
            if self.clock is clock:
                return
            self.clock = clock
            ready, self._ready = self._ready, []
        for client in ready:
            _retire(client)
        self._fill()

    def _fill(self) -> None:
        with self._cond:
            wanted = self.size - len(self._ready) - self._starting
            if self._closed or wanted <= 0 or self.stop.requested:
                return
            self._starting += wanted
        for _ in range(wanted):
            threading.Thread(target=self._start_one, name="acp-model warm agent",
                             daemon=True).start()

    def _start_one(self) -> None:
        client = None
        clock = self.clock
        stale = False  # started on the other clock than the pool's when ready: it goes
        try:
            client = _started(self.cfg, self.stop, self._initializing, clock=clock)
        except (AgentUnusable, Interrupted) as exc:
            self.problem = str(exc)
        finally:
            with self._cond:
                self._starting -= 1
                if client is not None:
                    self.started += 1
                    stale = self.clock is not clock
                    if self._closed:
                        _close(client)
                    elif not stale:
                        self._ready.append(client)
                self._cond.notify_all()
        if stale and client is not None:
            _retire(client)
            self._fill()

    def close(self) -> None:
        """Close the ready processes, and await the ones still starting (each closes itself
        once started, seeing the pool closed): a run that ended while one started would leave
        it behind, a daemon thread's child outliving the run."""
        with self._cond:
            self._closed = True
            ready, self._ready = self._ready, []
            self._cond.notify_all()
        for client in ready:
            _close(client)
        with self._cond:
            self._cond.wait_for(lambda: not self._starting, timeout=self.cfg.startup_deadline)


def _started(cfg: FuzzConfig, stop: Stop, alone: threading.Lock | None = None, *,
             spares: bool = True, clock: bool = False) -> FuzzClient:
    """A fresh agent process, initialized (``alone``: held while it initializes), making its
    first spare session (``spares``: a program begins on it; a process under a clock makes
    it once its trial has set the clock); ``clock``: under a wall clock a held replay can set
    (``fuzzing/clock.py``), where it can be."""
    agent_clock, why = AgentClock.for_agent(cfg.argv, cfg.env) if clock else (None, None)
    if agent_clock is not None:
        cfg = dataclasses.replace(cfg, env=agent_clock.env(cfg.env))
    try:
        client = FuzzClient(cfg, stop)
    except BaseException:
        if agent_clock is not None:
            agent_clock.close()
        raise
    client.schedule.clock.agent, client.schedule.clock.unclocked = agent_clock, why
    try:
        with alone or contextlib.nullcontext():
            client.initialize()
        if spares and agent_clock is None:
            # made now, a warm process's while it waits for its replay (kilo's first
            # session/new took 5.8 s, s13); under a clock, once its trial has set it
            _spares_ahead(client)
    except BaseException:
        _close(client)
        raise
    return client


def _spares_ahead(client: FuzzClient) -> None:
    """Begin making the process's spare sessions, recorded as its first program's. Under a
    clock, only once the trial has set it: a spare made before would be made on the real
    clock, and the recording's epoch would not say what the agent's clock read then
    (gemini-cli's V1-LOAD-01, s14: a recorded load in its session's minute by the epoch,
    answered because the session had been made an hour of real clock away)."""
    if client.factory.ahead > 0:
        client.schedule.begin_early()
        client.factory.start()


def _begin(client: FuzzClient, hold: Hold | None) -> bool:
    """A trial begins on ``client``'s process: held to ``hold`` (None: free), its agent's wall
    clock too where it can be (returned); a process under a clock makes its spares from now."""
    clocked = client.schedule.follow(hold)
    if client.schedule.clock.agent is not None:
        _spares_ahead(client)  # on the clock the trial set (or the real one it keeps)
    return clocked


def _close(client: FuzzClient) -> None:
    """End an agent process, then its clock's file (read until the process ends)."""
    client.close()
    client.schedule.clock.close()


def _hold(cfg: FuzzConfig, schedule: Schedule | None, exact: bool) -> Hold | None:
    """The hold of a replay to ``schedule`` (None: free-running)."""
    if schedule is None:
        return None
    return Hold(schedule, deadline=max(cfg.deadline, 1.0), exact=exact)


def unclocked(hold: Hold | None, client: FuzzClient, clocked: bool) -> str | None:
    """Why a held replay runs on the agent's real clock (None: it holds the clock too,
    ``clocked``, or it runs free)."""
    if hold is None or clocked:
        return None
    if hold.schedule.epoch is None:
        return "the schedule records no clock (written before it was kept)"
    return client.schedule.clock.unclocked or "the real clock was kept: no held replay had " \
        "failed on its own on it yet (the clock is held only then)"


def replay_once(cfg: FuzzConfig, actions: Sequence[Action], rule: str | None,
                abort: threading.Event | None = None, *, schedule: Schedule | None = None,
                pool: WarmPool | None = None, exact: bool = False,
                method: str | None = None, clock: bool = False) -> ReplayOutcome:
    """Run an action list against a fresh agent process, exactly as the fuzzer did;
    ``schedule``: held to that recorded boundary schedule (else free-running); ``exact``:
    ``actions`` are the program that recorded it (each agent event it has may take the
    deadline: ``Hold.allowance``). The outcome carries this run's own schedule.

    Other failures on the way do not stop it (a mutant may break a second rule first); once
    ``rule`` is seen, the liveness drain at the end is skipped. ``abort`` (set on Ctrl-C
    while replays run in threads) stops it after the current action. ``method``: see
    :class:`Shows`. ``clock``: held without a pool, the agent starts under a clock the replay
    sets to the recording's (the caller saw the real clock matter: ``WarmPool.hold_clock``)."""
    stop = Stop(abort)
    if stop.requested:
        return ReplayOutcome(False, [], [], None, INTERRUPTED)
    started = time.monotonic()
    try:
        client = pool.take(stop) if pool is not None \
            else _started(cfg, stop, clock=clock and schedule is not None
                          and schedule.epoch is not None)
    except AgentUnusable as exc:
        return ReplayOutcome(False, [], [], None, str(exc))
    except Interrupted:
        return ReplayOutcome(False, [], [], None, INTERRUPTED)
    hold = _hold(cfg, schedule, exact)
    clocked = _begin(client, hold)
    error = None
    performed: int | None = None
    exited: tuple[int, int | None] | None = None
    ex: Example | None = None
    shows = Shows(rule, method)
    recorder = Recorder(masked=set(RULES) - shows.rules if rule is not None else set())
    replaced = _Replaced(cfg, stop)
    try:
        try:
            ex = Example(client, recorder, deadline=cfg.deadline, relaunch=replaced.relaunch)
            performed, exited = _perform(ex, actions, shows if rule is not None else None)
            if rule is None or not shows.rules & recorder.found.keys():
                with contextlib.suppress(LifecycleFailure):
                    ex.finish()
                    client.schedule.settle()  # the recording's last agent messages came
        except AgentUnusable as exc:
            error = str(exc)
        except Interrupted:
            return ReplayOutcome(False, [], [], None, INTERRUPTED)
        client = ex.client if ex is not None else client
        failures, records = replaced.proof(client, shows)
    finally:
        _retire(client)
    hit = shows.hit(failures, records)
    sids = [client.sessions[i].sid for i in ex.local if i is not None] if ex is not None else []
    session = sids.index(hit.session) if hit is not None and hit.session in sids else None
    recorded, model, teardown = _recorded(client, ex, performed or len(actions))
    return ReplayOutcome(hit is not None, failures, records,
                         hit.index if hit else None, error, performed if hit else None, session,
                         recorded, hold is not None, describe_divergence(hold), model,
                         round(time.monotonic() - started, 3), teardown, exited,
                         hit and hit.rule, unclocked(hold, client, clocked))


def _perform(ex: Example, actions: Sequence[Action], shows: Shows | None
             ) -> tuple[int | None, tuple[int, int | None] | None]:
    """Run the program until ``shows``'s rules show (None: to its end): (the action they
    showed at, None: not; the action during which the agent's process exited, with its
    code, None: it did not)."""
    exited = None
    for n, action in enumerate(actions, start=1):
        with contextlib.suppress(LifecycleFailure):
            ex.act(action)
        if shows is not None and shows.rules & ex.recorder.found.keys():
            return n, exited
        if exited is None and ex.client.proc.exited:
            exited = n, ex.client.proc.returncode
    return None, exited


def _recorded(client: FuzzClient, ex: Example | None, actions: int
              ) -> tuple[Schedule | None, list[tuple[int, str]], int | None]:
    """What a replay's run recorded: its schedule of ``actions`` actions, the scripted
    model's part, and where its teardown began (a schedule and a teardown are of one
    process: none after a relaunch)."""
    with client.schedule.lock:
        model = [(at, model_text(e)) for at, e in client.schedule.model]
    if ex is None or ex.relaunched:
        return None, model, None
    return (client.schedule.schedule(ex.schedule_start, actions), model,
            client.schedule.teardown_at)


class _Replaced:
    """The processes a :class:`~acp_model.fuzzing.actions.Relaunch` replaced during one
    replay, oldest first."""

    def __init__(self, cfg: FuzzConfig, stop: Stop) -> None:
        self.cfg, self.stop = cfg, stop
        self.clients: list[FuzzClient] = []

    def relaunch(self, old: FuzzClient) -> FuzzClient:
        """A fresh process in place of ``old``, free-running (a schedule is of one process)."""
        self.clients.append(old)
        old.schedule.close()
        _close(old)  # before the next starts: what it stores of its sessions is written
        return _started(self.cfg, self.stop, spares=False)  # as the run's: on a take

    def proof(self, last: FuzzClient, shows: Shows
              ) -> tuple[list[Violation], list[dict[str, Any]]]:
        """The failures and records of the process that showed the rule: the ``last`` one,
        unless only a process it replaced did."""
        for client in (last, *self.clients):
            failures, records = _failures(client), client.proc.records()
            if shows.hit(failures, records) is not None:
                return failures, records
        return _failures(last), last.proc.records()


@dataclass(frozen=True)
class Shows:
    """What reproduces a failure of ``rule`` about a request of ``method``: that rule, or a
    broader one it is a special case of (``roots``) on a request of the same method, whose
    failure shows the same fault without the narrowing circumstance (one root, one failure:
    an agent that answers no prompt breaks PROMPT-04, withdrawn or not)."""

    rule: str | None
    method: str | None = None

    @property
    def rules(self) -> set[str]:
        if self.rule is None:
            return set()
        return {self.rule, *roots(self.rule, self.method)}

    def hit(self, failures: list[Violation], records: list[dict[str, Any]]
            ) -> Violation | None:
        """The failure that reproduces it (the rule's own first), None: none does (``rule``
        None: any failure)."""
        if self.rule is None:
            return next(iter(failures), None)
        own = next((v for v in failures if v.rule == self.rule), None)
        return own or next((v for v in failures if v.rule in self.rules
                            and request_method(records, v.index) == self.method), None)


def _failures(client: FuzzClient) -> list[Violation]:
    with client.lock:
        return [v for v in client.oracle.violations() if v.level == Level.FAIL]


def model_text(e: Crossing) -> str:
    """A model event for people: ``request (step 0)``, ``released text 2 (step 1)``..."""
    step, attempt = e.what[1], e.what[2]
    retry = f", attempt {attempt}" if attempt != "1" else ""
    if e.boundary is Boundary.RELEASE:
        part, n = e.what[3], e.what[4]
        shown = f"{part} {int(n) + 1}" if part in (ResponsePart.TEXT, ResponsePart.TOOL) else part
        return f"the scripted model released {shown} (step {step}{retry})"
    if e.boundary is Boundary.HANGUP:
        return f"the agent hung up on the scripted model (step {step}{retry})"
    return f"the agent called the scripted model (step {step}{retry})"


def _retire(client: FuzzClient) -> None:
    """End a replay's agent process off the replay's time: its verdict is taken, and an agent
    that takes its grace to exit (seconds, for some) should not make every trial wait."""
    client.schedule.close()
    threading.Thread(target=_close, args=(client,), name="acp-model replay close",
                     daemon=True).start()


def in_threads(job: Callable[[Any, threading.Event], ReplayOutcome], items: Any, *,
               stop: Stop | None = None, parallel: int = 1) -> list[ReplayOutcome]:
    """Run replays ``parallel`` at a time; Ctrl-C (or the run's stop request) stops the
    running ones. A replay still busy :data:`STRAGGLER_GRACE` seconds after the stop (judging
    a flood, an agent's close) is not waited for: it counts as cut, and ends on its own."""
    abort = stop.event if stop is not None else threading.Event()
    items = list(items)
    if not items:
        return []
    pool = ThreadPoolExecutor(max_workers=max(1, min(parallel, len(items))),
                              thread_name_prefix="acp-model replay")
    futures = [pool.submit(job, item, abort) for item in items]
    pending: set[Future[ReplayOutcome]] = set(futures)
    try:
        while pending and not abort.is_set():
            done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            for future in done:
                future.result()  # a replay's exception (a Ctrl-C seen there) is raised now
        if pending:
            _, pending = wait(pending, timeout=STRAGGLER_GRACE)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            abort.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=not pending, cancel_futures=True)
    return [f.result() if f.done() and not f.cancelled()
            else ReplayOutcome(False, [], [], None, INTERRUPTED) for f in futures]

