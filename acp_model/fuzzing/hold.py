"""A replay held to a recorded boundary schedule (``fuzzing/schedule.py``), after STS and
DEMi: which recorded events happened (matched by key, first come first matched), and the waits
of the replay's inputs, looks and reads for their turn.

An input (a client write, a model release) and a look wait until everything before their
recorded match happened; an agent message is read no earlier than the inputs before it while
the program's actions run (the teardown, which judges what is owed on deadlines, reads
everything as it comes). What the replay does and the recording did not takes its place just
before the recording's next input after the last one the replay matched. A recorded event the
replay does not bring is left out once it is later than :meth:`Expectation.allowance` allows, and
the first place the replay left its schedule is kept (:class:`Divergence`); after
:data:`MAX_LEFT_OUT` of them the replay runs free. The agent taking another branch is told
apart from a count that differs (``schedule.essential``): a recorded run of chunks, a plan or
a tool call's progress that does not come is left out soon and the replay stays held (but for
the first update of content that began before one of our inputs, :meth:`Expectation.branch`); a
response that comes with another outcome than recorded (an error for a result) takes the
recorded one's place at once, and an agent message of a branch the recording does not have is
the divergence it records. Holding only delays: the oracle's proofs
rest on the order of the agent's own messages (a response to a later message read first),
which a delay never changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

from acp_model.fuzzing.schedule import (
    PLACED,
    Boundary,
    Crossed,
    Crossing,
    Key,
    Schedule,
    essential,
    event_key,
)

HOLD_DEADLINE = 5.0  # seconds a recorded event may be late at most (default: the run's deadline)
# A recorded event the replay does not bring is left out once it is this late: the time it
# took in the recording, SLOWER times over, plus FLOOR seconds (never more than the deadline)
FLOOR, SLOWER = 0.5, 3.0
MAX_LEFT_OUT = 3  # ... after that many (of the branch's own) the replay runs free
# An input follows the last recorded event before it that the replay brought no sooner than
# it did in the recording, up to this many seconds (:meth:`Expectation.pace`)
PACE_MAX = 2.0


@dataclass
class Divergence:
    """Where a replay first left its recorded schedule."""

    at: float  # seconds into the replay
    what: str

    def __str__(self) -> str:
        return f"{self.what} ({self.at:.2f} s into the replay)"


class Expectation:
    """What a replay expects of each recorded event: whether it is part of the branch the
    recording took, how late it may be, whether it can still come; and which recorded events
    the replay brought (a later update of a stretch of content that came shows it began)."""

    def __init__(self, schedule: Schedule, deadline: float, exact: bool) -> None:
        self.events = schedule.events
        self.deadline = deadline
        # the replay runs the very program that recorded the schedule (a measurement of the
        # reported counterexample, a replay of its file): each agent message recorded is
        # expected, and one that is late is a slower machine, not a divergence
        self.exact = exact
        self.came: set[int] = set()  # recorded events the replay brought (not left out)
        # the recorded first updates of content before an input of ours -> the later counted
        # updates of their stretch (``Schedule.content_begins``)
        self.begins = schedule.content_begins()

    def anchor(self, k: int) -> int | None:
        """The last input recorded before ``k`` (a write or a model release: what the agent
        saw last; the client's looks are not the agent's to see)."""
        return next((a for a in range(k - 1, -1, -1)
                     if self.events[a].boundary in (Boundary.WRITE, Boundary.RELEASE)), None)

    def branch(self, k: int) -> bool:
        """Whether recorded event ``k`` is part of the branch the recording took: an essential
        event (``schedule.essential``), or the first update of content that began before one
        of our inputs, unless a later update of its stretch came (the content began all the
        same: the first is then a count that differs)."""
        if self.events[k].essential:
            return True
        later = self.begins.get(k)
        return later is not None and not any(j in self.came for j in later)

    def allowance(self, k: int) -> float:
        """How late recorded event ``k`` may be, after the replay's last input before it,
        before it is left out: the time it took after that one in the recording,
        :data:`SLOWER` times over, plus :data:`FLOOR` (at most the deadline). Replaying the
        program that recorded it (``exact``), an agent's event may take the whole deadline:
        on the s4 matrix a held replay of opencode's CANCEL-07 let its look end 1.4 s after
        the model's reply without the tool call the recording had next, and the teardown's
        cancel then came before the turn's end, which the recording had the other way round.
        A smaller program (minimizing's trials) may well not bring it: it is left out soon.
        The first update of content that began before our next input is the branch's too
        (:meth:`branch`): on the s7 matrix the hold gave codex-acp's and qwen-code's first
        chunk 0.6 s, wrote the set_mode and the teardown's cancel before it, and took the
        race the other way in 3 replays of 6; the later updates of its stretch stay counts."""
        if self.exact and not self.events[k].boundary.ours and self.branch(k):
            return self.deadline
        anchor = self.anchor(k)
        took = self.events[k].t - (self.events[anchor].t if anchor is not None else 0.0)
        return min(self.deadline, FLOOR + SLOWER * max(0.0, took))

    def pace(self, j: int | None, done_at: dict[int, float], now: float) -> float:
        """How much longer input ``j`` (a client write, a model release) waits: it follows the
        last recorded event before it that the replay brought (``came``) no sooner than it
        followed it in the recording (at most :data:`PACE_MAX`). The order alone lets an input
        go the moment its predecessors came, while a real agent may decide a race by time
        inside it (whether a ``session/load`` finds the cancelled turn in its history,
        whether a ``$/cancel_request`` finds the prompt queued): on the s9 matrix four
        failures reproduced 4 of 6 held, and pacing keeps that time as recorded (whether it
        was the cause is not measured: a spot check of mistral-vibe's stayed at 4/6).
        Holding an input back longer than it was never moves a proof: the proofs rest on
        the order of the agent's own messages."""
        if j is None or j >= len(self.events) \
                or self.events[j].boundary not in (Boundary.WRITE, Boundary.RELEASE):
            return 0.0
        last = next((k for k in range(j - 1, -1, -1) if k in self.came and k in done_at), None)
        if last is None:
            return 0.0
        gap = min(PACE_MAX, max(0.0, self.events[j].t - self.events[last].t))
        return max(0.0, done_at[last] + gap - now)

    def can_come(self, k: int) -> bool:
        """Whether recorded agent message ``k`` can still come: what it answers, and the
        session it is on, the replay brought."""
        e = self.events[k]
        return all(ref is None or ref < 0 or ref in self.came for ref in (e.cause, e.session))

    def own_before(self, event: Crossing, j: int, done: list[bool], start: int) -> int | None:
        """An input of ``event`` 's own action recorded before ``j`` (its match; from
        ``start``) that has not happened (``done``): the action issues its events one after
        another, so it will not happen before ``event``, and waiting for it would wait for
        ``event`` 's own future (a client that looks before it writes where the recording's
        client wrote first: the teardown's look before its cancel, 04da9da, replaying an
        older recording)."""
        if not (event.by_action and event.boundary.ours):
            return None
        return next((k for k in range(start, j)
                     if not done[k] and self.events[k].by_action
                     and self.events[k].boundary.ours and self.events[k].action == event.action),
                    None)


class Happened:
    """Which recorded events the replay has done with (brought, or left out) and when, and the
    frontiers the waits read: the first recorded event not done, of ours, of the agent's."""

    def __init__(self, events: tuple[Crossing, ...]) -> None:
        self.events = events
        # what nothing waits for counts as come (it is still matched when it comes)
        self.done = [e.soft for e in events]
        self.at: dict[int, float] = {}  # when each recorded event happened in the replay
        self.frontier = 0  # the first recorded event not yet matched
        self.ours = 0  # ... the first of ours (a write, a release, a look)
        self.theirs = 0  # ... the first of the agent's
        self.advance()

    def mark(self, j: int) -> None:
        self.done[j] = True
        self.at[j] = time.monotonic()
        self.advance()

    def advance(self) -> None:
        events, done, n = self.events, self.done, len(self.events)
        while self.frontier < n and done[self.frontier]:
            self.frontier += 1
        while self.ours < n and (done[self.ours] or not events[self.ours].boundary.ours):
            self.ours += 1
        while self.theirs < n and (done[self.theirs] or events[self.theirs].boundary.ours):
            self.theirs += 1


class Hold:
    """A replay held to a recorded schedule: which recorded events happened (matched by key,
    first come first matched), and the waits of the inputs, looks and reads for their turn."""

    def __init__(self, schedule: Schedule, deadline: float = HOLD_DEADLINE, *,
                 exact: bool = False) -> None:
        self.schedule = schedule
        self.events = schedule.events
        self.deadline = deadline
        self.expect = Expectation(schedule, deadline, exact)
        self.matched: dict[int, int] = {}  # replay event -> recorded event
        self.happened = Happened(self.events)
        self._queues: dict[Key, deque[int]] = defaultdict(deque)
        for j, e in enumerate(self.events):
            self._queues[event_key(e, lambda i: i)].append(j)
        # the last action the recording holds something of: past it, the replay runs free
        self.last_action = max((e.action for e in self.events if e.action is not None),
                               default=-1)
        self._late_since: dict[int, float] = {}  # a recorded event that keeps others waiting
        self._last_ours = -1  # the latest recorded input or look the replay matched
        self.cond = threading.Condition()
        self.free = False  # the replay runs free (a divergence, or its end)
        self.reading_held = True  # agent messages wait for the inputs before them
        self.divergence: Divergence | None = None
        self.skipped = 0  # recorded events the replay left behind (or did not bring in time)
        self.left_out = 0  # ... of them, outputs of the recorded branch (not a count)
        self.extra = 0  # events of the replay the recording does not have
        self.held_for = 0.0  # the longest a read or input waited
        self._t0 = time.monotonic()
        self._waiters: list[tuple[_Turn, asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    # --- what happened --------------------------------------------------------------------
    def ref(self, i: int) -> Any:
        """A replay event's reference, as its recorded match (an unmatched one is itself)."""
        return self.matched.get(i, ("replay", i))

    def observe(self, index: int, key: Key) -> None:
        """The replay's event ``index`` happened: it matches the first recorded event of its
        key not yet matched (none: an extra)."""
        with self.cond:
            j = self._peek(key)
            if j is None:
                self.extra += 1
                self._unexpected(key)
                return
            self._queues[key].popleft()
            self.matched[index] = j
            self.expect.came.add(j)
            if self.events[j].boundary.ours:
                self._last_ours = max(self._last_ours, j)
            self._mark(j)

    def _unexpected(self, key: Key) -> None:
        """An agent's output the recording does not have: a response with another outcome
        than the recorded one to the same request takes its place at once (no input waits
        for the recorded one until its allowance ends); another of the branch's own kind is
        a divergence; a count that differs (or what the agent reports as it likes) is not."""
        boundary, what = key[0], key[1]
        if boundary.ours or not essential(boundary, what) or _soft(boundary, what):
            return
        if what[:1] == (Crossed.RESPONSE,):
            recorded = next((q for k, q in self._queues.items()
                             if q and k[0] is boundary and k[1][:1] == (Crossed.RESPONSE,)
                             and k[3] == key[3]), None)
            if recorded is not None:
                j = recorded.popleft()
                self.skipped += 1
                self.left_out += 1
                self._diverged(f"the agent answered with {what[1]} where the recording had "
                               f"its {self.schedule.said(j)}",
                               free=self.left_out > MAX_LEFT_OUT)
                self._mark(j)
                return
        self._diverged(f"the agent's {boundary.value} {' '.join(what)} is not in the "
                       "recording (another branch)", free=False)

    def left_behind(self, action: int) -> None:
        """The replay's program reached ``action``: what earlier actions were recorded to
        issue themselves and did not will not happen any more (past the last action the
        recording holds anything of, nothing more is held)."""
        with self.cond:
            if action > self.last_action:
                self.free = True
                self._wake()
                return
            missed = [j for j in range(self.happened.frontier, len(self.events))
                      if not self.happened.done[j] and self.events[j].by_action
                      and self.events[j].action is not None and self.events[j].action < action]
            for j in missed:
                self._queues[event_key(self.events[j], lambda i: i)].remove(j)
                self.skipped += 1
                self._mark(j)
            if missed:
                self._diverged(f"the recorded {self.schedule.said(missed[0])} did not "
                               "happen before the next action", free=False)

    def read_freely(self) -> None:
        """From now on agent messages are read as they come (the teardown: what the agent
        owes is judged on deadlines, which a held read would distort)."""
        with self.cond:
            self.reading_held = False
            self._wake()

    def settle(self, stop: threading.Event | None = None) -> None:
        """The replay is about to end (its agent is closed): that comes after every agent
        message the recording had that can still come (not one answering a request, or of a
        session, the replay never made), each waited for as an input waits for it, and left
        out once later than its allowance (within one deadline in all): codex-acp v1's
        CANCEL-09 chunk came after the teardown's last look (s7 matrix)."""
        turn = _Turn(Crossing(Boundary.WRITE, (Crossed.END,)), None, len(self.events), ending=True)
        until = time.monotonic() + self.deadline  # the end is late one deadline at most
        with self.cond:
            while not self._ready(turn) and not (stop is not None and stop.is_set()) \
                    and time.monotonic() < until:
                self.cond.wait(0.05)
                self._late(turn)

    def close(self) -> None:
        """The replay ended: nothing waits any more."""
        with self.cond:
            self.free = True
            self._wake()

    # --- waiting for a turn ---------------------------------------------------------------
    def admit(self, key: Key, event: Crossing, *, stop: threading.Event | None = None
              ) -> int | None:
        """Wait until ``event`` (about to happen in the replay) may: what preceded its
        recorded match happened (an agent message: the inputs before it). A write the
        recording does not have waits for what the recording did before its action, and for
        the agent's messages in it. Returns the match (None: none, or the replay runs free)."""
        started = time.monotonic()
        with self.cond:
            turn = self._turn(key, event)
            if turn is None:
                return None
            while not self._ready(turn):
                if stop is not None and stop.is_set():
                    break
                self.cond.wait(0.05)
                self._late(turn)
            delay = self._pace(turn)
        if delay > 0:  # (the lock released: the agent's messages go on being observed)
            if stop is not None:
                stop.wait(delay)
            else:
                time.sleep(delay)
        with self.cond:
            self.held_for = max(self.held_for, time.monotonic() - started)
        return turn.match

    def would_wait(self, key: Key, event: Crossing) -> bool:
        """Whether ``event`` would wait for its turn now."""
        with self.cond:
            turn = self._turn(key, event)
            return turn is not None and not self._ready(turn)

    async def admit_async(self, key: Key, event: Crossing) -> int | None:
        """:meth:`admit` for the scripted model's event loop: the hold opens the gate."""
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        with self.cond:
            turn = self._turn(key, event)
            if turn is None:
                return None
            future: asyncio.Future[None] = loop.create_future()
            if self._ready(turn):
                future.set_result(None)
            else:
                self._waiters.append((turn, loop, future))
                self.cond.notify_all()
        while not future.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(future), 0.05)
            with self.cond:
                if not future.done():
                    self._late(turn)
        with self.cond:
            delay = self._pace(turn)
        if delay > 0:
            await asyncio.sleep(delay)
        with self.cond:
            self.held_for = max(self.held_for, time.monotonic() - started)
        return turn.match

    # --- bookkeeping (the condition's lock held) ------------------------------------------
    def _turn(self, key: Key, event: Crossing) -> _Turn | None:
        """What ``event`` waits for (None: nothing, the replay runs free or it is the
        agent's and the recording has nothing like it)."""
        if self.free:
            return None
        queue = self._queues.get(key)
        if queue:
            k = self.expect.own_before(event, queue[0], self.happened.done, self.happened.frontier)
            if k is None:
                return _Turn(event, queue[0], queue[0])
            self._diverged(f"the replay's {event.describe(self.schedule.actions)} came "
                           f"before the recorded {self.schedule.said(k)}, which the same action "
                           "did first there", free=False)
            return None
        self._extra(event)
        if event.action is not None and (event.by_action or event.boundary in PLACED):
            # placed where the recording went on: before its next input after the last one
            # the replay matched, once the agent's messages recorded before that came
            after = self._last_ours + 1
            upto = next((k for k in range(after, len(self.events))
                         if self.events[k].boundary.ours and not self.happened.done[k]),
                        len(self.events))
            return _Turn(event, None, upto)
        return None

    def _peek(self, key: Key) -> int | None:
        queue = self._queues.get(key)
        return queue[0] if queue else None

    def _ready(self, turn: _Turn) -> bool:
        if self.free:
            return True
        j = turn.match
        if j is None:
            return self._blocker(turn) is None
        if self.happened.done[j]:
            return True
        if self.events[j].boundary.ours:
            return self.happened.frontier >= j
        # an agent message is held only while the agent kept the recorded order so far: one
        # it wrote before this one that has not come yet may be behind it in the pipe, and
        # an input held for it would wait for what holding this one keeps from coming
        return not self.reading_held or self.happened.ours >= j or self.happened.theirs < j

    def _pace(self, turn: _Turn) -> float:
        """The seconds ``turn`` 's input still waits to keep its recorded pace (none: free)."""
        return 0.0 if self.free else self.expect.pace(turn.match, self.happened.at,
                                                      time.monotonic())

    def _blocker(self, turn: _Turn) -> int | None:
        """The first recorded event ``turn`` still waits for."""
        return next((k for k in range(self.happened.frontier, turn.upto)
                     if not self.happened.done[k] and turn.waits_for(self.events[k])
                     and (not turn.ending or self.expect.can_come(k))), None)

    def _mark(self, j: int) -> None:
        self.happened.mark(j)
        self._wake()

    def _extra(self, event: Crossing) -> None:
        """``event`` of ours has no match: the replay did what the recording did not (past
        the recording's last action that is no divergence: it holds nothing there)."""
        if event.boundary.ours and (event.action is None or event.action <= self.last_action):
            self._diverged(f"the replay's {event.describe(self.schedule.actions)} is not in "
                           "the recording", free=False)

    def _late(self, turn: _Turn) -> None:
        """``turn`` waits: the recorded event keeping it waiting is left out once it is later
        than :meth:`Expectation.allowance` allows (the replay did not bring it); after
        :data:`MAX_LEFT_OUT` of them the replay runs free."""
        if self.free:
            return
        k = self._blocker(turn)
        if k is None:
            return
        now = time.monotonic()
        anchor = self.expect.anchor(k)
        since = self.happened.at.get(anchor) if anchor is not None else None
        if since is None:  # (its anchor never came: from when it was first waited for)
            since = self._late_since.setdefault(k, now)
        allowed = self.expect.allowance(k)
        if now - since < allowed:
            return
        key = event_key(self.events[k], lambda i: i)
        with contextlib.suppress(ValueError):
            self._queues[key].remove(k)
        self.skipped += 1
        branch = self.expect.branch(k)
        self.left_out += branch
        why = "" if branch else " (a count that differs: still held)"
        if branch and not self.events[k].essential:
            why = " (the content the recording had begun before our next input)"
        self._diverged(f"{turn.event.describe(self.schedule.actions)} waited {allowed:.1f} s for "
                       f"the recorded {self.schedule.said(k)}, which did not come: left out{why}",
                       free=self.left_out > MAX_LEFT_OUT)
        self._mark(k)

    def _diverged(self, what: str, *, free: bool) -> None:
        if self.divergence is None:
            self.divergence = Divergence(round(time.monotonic() - self._t0, 3), what)
        if free:
            self.free = True
            self._wake()

    def _wake(self) -> None:
        self.cond.notify_all()
        waiting = []
        for turn, loop, future in self._waiters:
            if self._ready(turn):
                loop.call_soon_threadsafe(_settle, future)
            else:
                waiting.append((turn, loop, future))
        self._waiters = waiting


@dataclass(frozen=True)
class _Turn:
    """What a replay's event waits for: the recorded events before ``upto`` (its recorded
    match, or, for what the recording does not have, the recorded input that follows the last
    one the replay matched: the extra takes its place just before it), all of them for one
    of ours, the inputs among them for an agent's message or an extra."""

    event: Crossing
    match: int | None
    upto: int
    ending: bool = False  # the replay's end (:meth:`Hold.settle`)

    def waits_for(self, e: Crossing) -> bool:
        if self.match is None:  # an extra: the agent's messages recorded before its place
            return not e.boundary.ours
        return self.event.boundary.ours or e.boundary.ours


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def describe_divergence(hold: Hold | None) -> str | None:
    """The first place a held replay left its schedule, and how far it left it (None: it kept
    to it, or was free)."""
    if hold is None or hold.divergence is None:
        return None
    counts = [f"{hold.skipped} recorded event(s) left out ({hold.left_out} of its branch)",
              f"{hold.extra} not in the recording"]
    return (f"{hold.divergence}; {', '.join(counts)}; "
            + ("then ran free" if hold.free and hold.left_out > MAX_LEFT_OUT
               else "held to the end"))


def _soft(boundary: Boundary, what: tuple[str, ...]) -> bool:
    return Crossing(boundary, what).soft


__all__ = ["FLOOR", "HOLD_DEADLINE", "MAX_LEFT_OUT", "PACE_MAX", "SLOWER", "Divergence",
           "Expectation", "Hold", "describe_divergence"]
