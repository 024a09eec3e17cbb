"""The boundary schedule: one total order of what crossed the agent's two boundaries, and a
replay held to it.

The fuzzer holds both of the agent's boundaries: it writes every client message (stdin) and
it is the model the agent calls (the scripted model, ``acp_model.llm``). A run's schedule is
the order in which, on one connection, the client wrote, the agent wrote a message, the agent
called the model, the model released each part of a response (its start, text chunks, tool
calls, a stall, its end or failure), the agent hung up on one, and the client looked at what
it had seen (a wait ended: its next decision reads that view). It is recorded for every
program a connection runs (:class:`ScheduleLog`), as :class:`Event` s that name what crossed
by a stable key, never by text or by an id the agent chose: the method, the session by the
``session/new`` answer that made it, the request a response answers, the update kind (a run of
text chunks is one event: their count varies with timing), the scripted turn by the prompt
that carried its tag, the model step, attempt and part, and the client action it belongs to.

A replay under a recorded schedule (:class:`Hold`, after STS and DEMi) issues each input (a
client write, a model release) only once everything that preceded it in the recording has
happened, matched by key; lets each look end only then; and reads each agent message no earlier
than the inputs that preceded it in the recording (while the program's actions run; the
teardown, which judges what is still owed on deadlines, reads everything as it comes). What the
recording has and the replay does not (or the reverse) is a divergence: the first is kept in
the replay's outcome, and a hold that waited a deadline in vain lets the rest run free.

Holding is sound: it only delays, and the oracle's proofs rest on the order of the agent's own
messages (a response to a later message read first), which a delay never changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from acp_model.fuzzing.stop import Interrupted
from acp_model.llm.wire import Part, find_tag

FORMAT = "acp-model-schedule/1"
CHUNK_KINDS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk",
                         "tool_call_content_chunk"})
HOLD_DEADLINE = 5.0  # seconds an input waits for what preceded it (default: the run's deadline)
# A recorded event the replay does not bring is left out once it is this late: the time it
# took in the recording, SLOWER times over, plus FLOOR seconds (never more than the deadline)
FLOOR, SLOWER = 0.5, 3.0
MAX_LEFT_OUT = 3  # ... after that many the replay has left its schedule: it runs free


class Boundary(StrEnum):
    """What crossed, and which way: inputs are ours to issue, outputs the agent's."""

    WRITE = "write"  # the client wrote a message to the agent (input)
    MESSAGE = "message"  # the agent wrote a message to the client (output)
    REQUEST = "request"  # the agent called the scripted model (output)
    RELEASE = "release"  # the scripted model released a part of a response (input)
    HANGUP = "hangup"  # the agent hung up on a response (output)
    LOOK = "look"  # a wait of the client ended: what it decides next reads its view then

    @property
    def ours(self) -> bool:
        """Issued by our side (the client or the model), in the recorded order on replay."""
        return self in (Boundary.WRITE, Boundary.RELEASE, Boundary.LOOK)


# What the replay does that the recording did not is placed after what the recording did
# before its action, and the agent's messages in it: the client's own writes and looks, and
# the model's side (a model request the recorded turn never made is answered only then, as
# a model that was slow would).
PLACED = frozenset({Boundary.RELEASE, Boundary.REQUEST})


@dataclass(frozen=True, slots=True)
class Event:
    """One crossing. ``session`` and ``cause`` are indices of earlier events of the same
    schedule (the answer to ``session/new`` that made the session; the request a response
    answers, or the prompt whose tag a model event's turn carries), so a key stays the same
    across processes, ids and texts."""

    boundary: Boundary
    what: tuple[str, ...]
    session: int | None = None
    cause: int | None = None
    action: int | None = None  # the program's action running (its teardown: len(program))
    by_action: bool = False  # issued by the action itself (its thread), not a reaction
    t: float = 0.0  # seconds since the schedule began
    ok: bool = True  # a look: whether the condition waited for held
    waited: float = 0.0  # a look: how long the wait took

    def describe(self) -> str:
        what = " ".join(self.what)
        where = f" (action {self.action + 1})" if self.action is not None else ""
        return f"{self.boundary.value} {what}{where}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"b": self.boundary.value, "w": list(self.what), "t": self.t}
        for name, value in (("s", self.session), ("c", self.cause), ("a", self.action)):
            if value is not None:
                out[name] = value
        if self.by_action:
            out["x"] = True
        if self.boundary is Boundary.LOOK:
            out["ok"], out["dt"] = self.ok, self.waited
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Event:
        return cls(Boundary(data["b"]), tuple(str(w) for w in data["w"]), data.get("s"),
                   data.get("c"), data.get("a"), bool(data.get("x", False)),
                   float(data.get("t", 0.0)), bool(data.get("ok", True)),
                   float(data.get("dt", 0.0)))


Key = tuple[Any, ...]


def event_key(e: Event, ref: Callable[[int], Any]) -> Key:
    """What an event is matched by: ``ref`` names the events it refers to (in a recording,
    themselves; in a replay, the recorded events they were matched to)."""
    return (e.boundary, e.what, _ref(e.session, ref), _ref(e.cause, ref),
            e.action if e.by_action else None)


def _ref(index: int | None, ref: Callable[[int], Any]) -> Any:
    return index if index is None or index < 0 else ref(index)  # (-1: an unknown session)


class ScheduleError(ValueError):
    """A schedule file that is not one."""


@dataclass(frozen=True)
class Schedule:
    """The recorded order of one program's run on a fresh connection: ``actions`` is the
    program's length (the teardown's action index)."""

    events: tuple[Event, ...]
    actions: int

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "actions": self.actions,
                "events": [e.to_json() for e in self.events]}

    @classmethod
    def from_json(cls, data: Any) -> Schedule:
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ScheduleError(f"not an {FORMAT} schedule")
        try:
            events = tuple(Event.from_json(e) for e in data["events"])
            return cls(events, int(data["actions"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ScheduleError(f"{FORMAT}: {exc}") from None

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.events:
            out[e.boundary.value] = out.get(e.boundary.value, 0) + 1
        return out

    def restrict(self, kept: Sequence[int]) -> Schedule:
        """The schedule a sub-program (``kept``: the indices of this program's actions it
        keeps, in order) is expected to follow: what the removed actions issued and what was
        caused by it leaves with them (a response with its request, a model event with its
        turn's prompt, a session's events with the session, an agent message with the
        client's last write on its session before it); the rest is renumbered. What the
        sub-program then does differently is found as a divergence, and its own recording
        replaces this one once it reproduces."""
        actions = {old: new for new, old in enumerate(kept)}
        actions[self.actions] = len(kept)
        index: dict[int, int] = {}
        last_write: dict[int | None, int] = {}
        out: list[Event] = []
        for i, e in enumerate(self.events):
            gone = e.action is not None and e.action not in actions
            keep = not (gone and (e.by_action or e.boundary is Boundary.LOOK
                                  or (e.session is None and e.cause is None)))
            keep = keep and (e.session is None or e.session < 0 or e.session in index) \
                and (e.cause is None or e.cause in index)
            if keep and not e.boundary.ours and e.session is not None:
                write = last_write.get(e.session)
                keep = write is None or write in index
            if e.boundary is Boundary.WRITE:
                last_write[e.session] = i
            if keep:
                index[i] = len(out)
                out.append(dataclasses.replace(
                    e, session=e.session if e.session is None or e.session < 0
                    else index[e.session],
                    cause=None if e.cause is None else index[e.cause],
                    action=None if e.action is None else actions.get(e.action, e.action)))
        return Schedule(tuple(out), len(kept))

    def upto(self, actions: int) -> Schedule:
        """The schedule of the program cut after its first ``actions`` actions (what the
        later ones and the teardown did leaves)."""
        return self.restrict(range(actions))


# --- recording ----------------------------------------------------------------------------

class ScheduleLog:
    """The schedule of one connection as it happens: every record of the transcript (a tap
    called under the transcript's lock, so its order is the transcript's), every crossing of
    the model boundary in the connection's scripted turns, and the client's looks. With a
    :class:`Hold` it also replays a recorded schedule: the transport asks it before each
    write (``before_write``) and each read (``before_read``), the model before each request
    and release, the client before each look."""

    def __init__(self, lock: threading.Condition, stop: threading.Event | None = None) -> None:
        self.lock = lock  # the transcript's: one order for records and model events
        self.stop = stop
        self.events: list[Event] = []
        self.hold: Hold | None = None
        self.recording = False
        self.action: int | None = None
        self._action_thread: int | None = None
        self._t0 = time.monotonic()
        self._sessions: dict[str, int] = {}  # session id -> the event that made it
        self._ours: dict[Any, int] = {}  # the client's request ids -> their events
        self._theirs: dict[Any, int] = {}  # the agent's request ids -> their events
        self._turns: dict[str, int] = {}  # scripted turn tag -> the prompt that carried it
        self._runs: dict[int | None, tuple[str, ...]] = {}  # session -> its chunk run

    @classmethod
    def of(cls, proc: Any, stop: threading.Event | None = None) -> ScheduleLog:
        """The schedule of an agent process's connection, wired to its transcript, its
        stdin writer and its stdout reader (``fuzzing/transport.py``)."""
        log = cls(proc.log.cond, stop)
        proc.log.taps.append(log.on_record)
        proc.stdin.before = log.before_write
        proc.reader.before = log.before_read
        return log

    def close(self) -> None:
        """The connection ends: a held replay's waits end with it."""
        if self.hold is not None:
            self.hold.close()

    # --- the program's side ---------------------------------------------------------------
    def start(self) -> int:
        """Record from now on (a program begins); returns where its events begin."""
        with self.lock:
            if not self.recording:
                self.recording = True
                self._t0 = time.monotonic()
            return len(self.events)

    def act(self, n: int, *, teardown: bool = False) -> None:
        """The program's action ``n`` begins (on this thread); ``teardown``: its drain."""
        with self.lock:
            self.action = n
            self._action_thread = threading.get_ident()
        hold = self.hold
        if hold is not None:
            hold.left_behind(n)
            if teardown:
                hold.read_freely()

    def schedule(self, start: int = 0, actions: int | None = None) -> Schedule:
        """The events since ``start`` as a schedule of a program of ``actions`` actions
        (default: those begun), renumbered from there; references to earlier events (a
        session an earlier example made) are dropped."""
        with self.lock:
            events = self.events[start:]
            n = actions if actions is not None else (self.action or 0) + 1

        def rebase(i: int | None) -> int | None:
            return i if i is None or i < 0 else (None if i < start else i - start)

        return Schedule(tuple(dataclasses.replace(e, session=rebase(e.session),
                                                  cause=rebase(e.cause)) for e in events), n)

    # --- the wire -------------------------------------------------------------------------
    def on_record(self, record: Mapping[str, Any]) -> None:
        """A transcript record (the transcript's lock held)."""
        if not self.recording:
            return
        event = self._describe(record)
        if event is not None:
            self._append(event, record)

    def before_write(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Before the client writes ``records`` in one write: a replay waits for their turn
        (the first's: the others follow it in the same write)."""
        hold = self.hold
        if hold is None or not records:
            return
        event = self._describe(records[0])
        if event is not None:
            hold.admit(self._key(event), event, stop=self.stop)

    def before_read(self, record: Mapping[str, Any]) -> None:
        """Before an agent message is read into the transcript (the reader's thread): a
        replay reads it no earlier than the inputs that preceded it in the recording."""
        hold = self.hold
        if hold is None:
            return
        event = self._describe(record)
        if event is not None:
            hold.admit(self._key(event), event, stop=self.stop)

    def _describe(self, record: Mapping[str, Any]) -> Event | None:
        """The event of a record (None: a continuation of a chunk run); no state changes."""
        inbound = record.get("dir") == "c2a"
        boundary = Boundary.WRITE if inbound else Boundary.MESSAGE
        if "msg" not in record:
            return self._event(boundary, ("raw", str(record.get("error", ""))))
        msg = record["msg"]
        if isinstance(msg, list):
            methods = tuple(str(m.get("method", "answer")) if isinstance(m, dict) else "?"
                            for m in msg)
            return self._event(boundary, ("batch", *methods))
        if not isinstance(msg, dict):
            return self._event(boundary, ("other",))
        method, rid = msg.get("method"), msg.get("id")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        session = self._session(params.get("sessionId"))
        if isinstance(method, str):
            if rid is not None:
                return self._event(boundary, ("request", method), session, by_action=inbound)
            if method == "session/update" and not inbound:
                what = self._update(params.get("update"))
                if what[1] in CHUNK_KINDS and self._runs.get(session) == what:
                    return None
                return self._event(boundary, what, session)
            return self._event(boundary, ("notify", method), session, by_action=inbound)
        outcome = "error" if "error" in msg else "result"
        asked = (self._theirs if inbound else self._ours).get(_hashable(rid))
        # an answer the action itself writes is its own (a reaction's is the delivery's)
        return self._event(boundary, ("answer" if inbound else "response", outcome),
                           None, asked, by_action=inbound)

    @staticmethod
    def _update(update: Any) -> tuple[str, ...]:
        if not isinstance(update, dict):
            return ("update", "?")
        kind = str(update.get("sessionUpdate", "?"))
        if kind == "tool_call_update":
            status = update.get("status")
            # a status change is a step of the tool call; content alone streams like chunks
            return ("update", kind, str(status)) if isinstance(status, str) \
                else ("update", "tool_call_content_chunk")
        if kind == "state_update" and isinstance(update.get("state"), str):
            return ("update", kind, update["state"])
        return ("update", kind)

    def _session(self, sid: Any) -> int | None:
        if not isinstance(sid, str):
            return None
        return self._sessions.get(sid, -1)  # -1: a session the client never made

    def _event(self, boundary: Boundary, what: tuple[str, ...], session: int | None = None,
               cause: int | None = None, *, by_action: bool = False, ok: bool = True,
               waited: float = 0.0) -> Event:
        mine = by_action and threading.get_ident() == self._action_thread
        return Event(boundary, what, session, cause, self.action, mine,
                     round(time.monotonic() - self._t0, 4), ok, round(waited, 4))

    def _append(self, event: Event, record: Mapping[str, Any] | None = None) -> None:
        """Append ``event`` (the lock held) and learn what later events refer to."""
        index = len(self.events)
        self.events.append(event)
        if record is not None:
            self._learn(index, event, record)
        if event.boundary is Boundary.MESSAGE:
            self._runs[event.session] = event.what
        hold = self.hold
        if hold is not None:
            hold.observe(index, self._key(event))

    def _learn(self, index: int, event: Event, record: Mapping[str, Any]) -> None:
        msg = record.get("msg")
        if not isinstance(msg, dict):
            return
        rid = _hashable(msg.get("id"))
        if event.what[:1] == ("request",):
            (self._ours if event.boundary is Boundary.WRITE else self._theirs)[rid] = index
            params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
            if event.what[1] == "session/prompt":
                text = " ".join(b.get("text", "") for b in params.get("prompt") or []
                                if isinstance(b, dict) and isinstance(b.get("text"), str))
                tag = find_tag(text)
                if tag is not None:
                    self._turns[tag] = index
        elif event.what == ("response", "result") and event.cause is not None:
            asked = self.events[event.cause]
            result = msg.get("result")
            sid = result.get("sessionId") if isinstance(result, dict) else None
            if asked.what == ("request", "session/new") and isinstance(sid, str):
                self._sessions.setdefault(sid, index)

    def _key(self, event: Event) -> Key:
        hold = self.hold
        return event_key(event, (lambda i: i) if hold is None else hold.ref)

    # --- the model boundary (a ``ModelGate`` for the connection's scripted turns) ---------
    def _model_event(self, boundary: Boundary, tag: str, what: tuple[str, ...]) -> Event | None:
        with self.lock:
            if not self.recording:
                return None
            turn = self._turns.get(tag)
            session = self.events[turn].session if turn is not None else None
            return self._event(boundary, ("model", *what), session, turn)

    async def requested(self, tag: str, step: int, attempt: int) -> None:
        await self._model(Boundary.REQUEST, tag, (str(step), str(attempt)))

    async def release(self, tag: str, step: int, attempt: int, part: Part, n: int) -> None:
        await self._model(Boundary.RELEASE, tag, (str(step), str(attempt), part.value, str(n)))

    def hung_up(self, tag: str, step: int, attempt: int) -> None:
        event = self._model_event(Boundary.HANGUP, tag, (str(step), str(attempt)))
        if event is not None:
            with self.lock:
                self._append(event)

    async def _model(self, boundary: Boundary, tag: str, what: tuple[str, ...]) -> None:
        event = self._model_event(boundary, tag, what)
        if event is None:
            return
        hold = self.hold
        if hold is not None:
            await hold.admit_async(self._key(event), event)
        with self.lock:
            # re-described: the turn's prompt is known by now, whatever happened meanwhile
            self._append(dataclasses.replace(event, t=round(time.monotonic() - self._t0, 4)))

    # --- the client's looks ---------------------------------------------------------------
    def looked(self, wait: Callable[[float], bool], timeout: float,
               caught_up: Callable[[], object]) -> bool:
        """A wait of the client as a look: ``wait(seconds)`` waits up to that long for its
        condition and says whether it held (0: reads it now). On a replay held to a recorded
        schedule the wait begins once what preceded the recorded look happened, and one that
        ran out then lasts as long again before the view is read."""
        started = time.monotonic()
        look = self.look_begin()
        if look is not None:
            caught_up()
            if not look.ok:
                self._pause(min(look.waited, timeout) - (time.monotonic() - started))
                caught_up()
                timeout = 0.0
        held = wait(timeout)
        self.look_end(held, time.monotonic() - started)
        return held

    def _pause(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self.stop is not None and self.stop.wait(min(left, 0.1)):
                raise Interrupted
            if self.stop is None:
                time.sleep(min(left, 0.1))

    def look_begin(self) -> Event | None:
        """A wait of the client begins: a replay waits until what preceded the recorded look
        happened, and returns that look (its ``ok``, its ``waited``); None otherwise."""
        hold = self.hold
        if hold is None or not self.recording:
            return None
        event = self._event(Boundary.LOOK, ("look",), by_action=True)
        j = hold.admit(self._key(event), event, stop=self.stop)
        return None if j is None else hold.recorded(j)

    def look_end(self, ok: bool, waited: float) -> None:
        if not self.recording:
            return
        with self.lock:
            self._append(self._event(Boundary.LOOK, ("look",), by_action=True, ok=ok,
                                     waited=waited))


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


# --- replaying ----------------------------------------------------------------------------

@dataclass
class Divergence:
    """Where a replay first left its recorded schedule."""

    at: float  # seconds into the replay
    what: str

    def __str__(self) -> str:
        return f"{self.what} ({self.at:.2f} s into the replay)"


class Hold:
    """A replay held to a recorded schedule: which recorded events happened (matched by key,
    first come first matched), and the waits of the inputs, looks and reads for their turn."""

    def __init__(self, schedule: Schedule, deadline: float = HOLD_DEADLINE) -> None:
        self.schedule = schedule
        self.events = schedule.events
        self.deadline = deadline
        self.done = [False] * len(self.events)
        self.matched: dict[int, int] = {}  # replay event -> recorded event
        self._queues: dict[Key, deque[int]] = defaultdict(deque)
        for j, e in enumerate(self.events):
            self._queues[event_key(e, lambda i: i)].append(j)
        self.frontier = 0  # the first recorded event not yet matched
        self.ours = 0  # ... the first of ours (a write, a release, a look)
        # the last action the recording holds something of: past it, the replay runs free
        self.last_action = max((e.action for e in self.events if e.action is not None),
                               default=-1)
        self._late_since: dict[int, float] = {}  # a recorded event that keeps others waiting
        self.cond = threading.Condition()
        self.free = False  # the replay runs free (a divergence, or its end)
        self.reading_held = True  # agent messages wait for the inputs before them
        self.divergence: Divergence | None = None
        self.skipped = 0  # recorded events the replay left behind (or did not bring in time)
        self.extra = 0  # events of the replay the recording does not have
        self.held_for = 0.0  # the longest a read or input waited
        self._t0 = time.monotonic()
        self._waiters: list[tuple[_Turn, asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    # --- what happened --------------------------------------------------------------------
    def ref(self, i: int) -> Any:
        """A replay event's reference, as its recorded match (an unmatched one is itself)."""
        return self.matched.get(i, ("replay", i))

    def recorded(self, j: int) -> Event:
        return self.events[j]

    def observe(self, index: int, key: Key) -> None:
        """The replay's event ``index`` happened: it matches the first recorded event of its
        key not yet matched (none: an extra)."""
        with self.cond:
            j = self._peek(key)
            if j is None:
                self.extra += 1
                return
            self._queues[key].popleft()
            self.matched[index] = j
            self._mark(j)

    def left_behind(self, action: int) -> None:
        """The replay's program reached ``action``: what earlier actions were recorded to
        issue themselves and did not will not happen any more (past the last action the
        recording holds anything of, nothing more is held)."""
        with self.cond:
            if action > self.last_action:
                self.free = True
                self._wake()
                return
            missed = [j for j in range(self.frontier, len(self.events))
                      if not self.done[j] and self.events[j].by_action
                      and self.events[j].action is not None and self.events[j].action < action]
            for j in missed:
                self._queues[event_key(self.events[j], lambda i: i)].remove(j)
                self.skipped += 1
                self._mark(j)
            if missed:
                self._diverged(f"the recorded {self.events[missed[0]].describe()} did not "
                               "happen before the next action", free=False)

    def read_freely(self) -> None:
        """From now on agent messages are read as they come (the teardown: what the agent
        owes is judged on deadlines, which a held read would distort)."""
        with self.cond:
            self.reading_held = False
            self._wake()

    def close(self) -> None:
        """The replay ended: nothing waits any more."""
        with self.cond:
            self.free = True
            self._wake()

    # --- waiting for a turn ---------------------------------------------------------------
    def admit(self, key: Key, event: Event, *, stop: threading.Event | None = None
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
            self.held_for = max(self.held_for, time.monotonic() - started)
            return turn.match

    def would_wait(self, key: Key, event: Event) -> bool:
        """Whether ``event`` would wait for its turn now."""
        with self.cond:
            turn = self._turn(key, event)
            return turn is not None and not self._ready(turn)

    async def admit_async(self, key: Key, event: Event) -> None:
        """:meth:`admit` for the scripted model's event loop: the hold opens the gate."""
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        with self.cond:
            turn = self._turn(key, event)
            if turn is None or self._ready(turn):
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((turn, loop, future))
            self.cond.notify_all()
        while not future.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(future), 0.05)
            with self.cond:
                if not future.done():
                    self._late(turn)
        with self.cond:
            self.held_for = max(self.held_for, time.monotonic() - started)

    # --- bookkeeping (the condition's lock held) ------------------------------------------
    def _turn(self, key: Key, event: Event) -> _Turn | None:
        """What ``event`` waits for (None: nothing, the replay runs free or it is the
        agent's and the recording has nothing like it)."""
        if self.free:
            return None
        queue = self._queues.get(key)
        if queue:
            return _Turn(event, queue[0])
        self._extra(event)
        if event.action is not None and (event.by_action or event.boundary in PLACED):
            return _Turn(event, None)  # placed after what the recording did before it
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
        if self.done[j]:
            return True
        if self.events[j].boundary.ours:
            return self.frontier >= j
        return not self.reading_held or self.ours >= j

    def _blocker(self, turn: _Turn) -> int | None:
        """The first recorded event ``turn`` still waits for."""
        upper = len(self.events) if turn.match is None else turn.match
        return next((k for k in range(self.frontier, upper)
                     if not self.done[k] and turn.waits_for(self.events[k])), None)

    def _mark(self, j: int) -> None:
        self.done[j] = True
        n = len(self.events)
        while self.frontier < n and self.done[self.frontier]:
            self.frontier += 1
        while self.ours < n and (self.done[self.ours] or not self.events[self.ours].boundary.ours):
            self.ours += 1
        self._wake()

    def _extra(self, event: Event) -> None:
        """``event`` of ours has no match: the replay did what the recording did not (past
        the recording's last action that is no divergence: it holds nothing there)."""
        if event.boundary.ours and (event.action is None or event.action <= self.last_action):
            self._diverged(f"the replay's {event.describe()} is not in the recording",
                           free=False)

    def _late(self, turn: _Turn) -> None:
        """``turn`` waits: the recorded event keeping it waiting is left out once it is later
        than :meth:`allowance` allows (the replay did not bring it); after
        :data:`MAX_LEFT_OUT` of them the replay runs free."""
        if self.free:
            return
        k = self._blocker(turn)
        if k is None:
            return
        now = time.monotonic()
        since = self._late_since.setdefault(k, now)
        allowed = self.allowance(k)
        if now - since < allowed:
            return
        key = event_key(self.events[k], lambda i: i)
        with contextlib.suppress(ValueError):
            self._queues[key].remove(k)
        self.skipped += 1
        self._diverged(f"{turn.event.describe()} waited {allowed:.1f} s for the recorded "
                       f"{self.events[k].describe()}, which did not come: left out",
                       free=self.skipped > MAX_LEFT_OUT)
        self._mark(k)

    def allowance(self, k: int) -> float:
        """How late recorded event ``k`` may be before it is left out: the time it took in
        the recording after the event before it, :data:`SLOWER` times over, plus
        :data:`FLOOR` (at most the deadline)."""
        took = self.events[k].t - (self.events[k - 1].t if k else 0.0)
        return min(self.deadline, FLOOR + SLOWER * max(0.0, took))

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
    """What a replay's event waits for: its recorded match's predecessors (an agent message:
    the inputs among them), or, for a write the recording does not have (``match`` None),
    what the recording did in earlier actions and the agent's messages in its own."""

    event: Event
    match: int | None

    def waits_for(self, e: Event) -> bool:
        if self.match is not None:
            return self.event.boundary.ours or e.boundary.ours
        action = self.event.action
        assert action is not None
        return e.action is not None and (e.action < action
                                         or (e.action == action and e.boundary is not
                                             Boundary.LOOK and not e.by_action))


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def describe_divergence(hold: Hold | None) -> str | None:
    """The first place a held replay left its schedule (None: it kept to it, or was free)."""
    return str(hold.divergence) if hold is not None and hold.divergence is not None else None


__all__ = ["FORMAT", "Boundary", "Divergence", "Event", "Hold", "Schedule", "ScheduleError",
           "ScheduleLog", "describe_divergence", "event_key"]

