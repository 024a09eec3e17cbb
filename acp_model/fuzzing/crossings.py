"""The boundary schedule of one connection as it happens (``fuzzing/schedule.py``): every
record of the transcript (a tap called under the transcript's lock, so its order is the
transcript's), every crossing of the model boundary in the connection's scripted turns, and
the client's looks; with a :class:`~acp_model.fuzzing.hold.Hold`, a replay held to a
recorded schedule as well, and with an :class:`~acp_model.fuzzing.clock.AgentClock` to the
agent's wall clock it records: the trial begins with the agent's clock reading the
recording's t=0, and before each held input (a client write, a model release) the clock
moves forward, never back, to read what it read at that input in the recording.

:class:`Names` owns how what crossed is named: the sessions by the answer that made each, each
side's requests by id, the scripted turns by the prompt that carried each tag, each session's
run of chunks. :class:`ScheduleLog` owns the events in order and what asks the hold.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from acp_model.fuzzing.clock import ProcessClock
from acp_model.fuzzing.hold import Hold
from acp_model.fuzzing.schedule import Boundary, Crossed, Crossing, Key, Schedule, What, event_key
from acp_model.fuzzing.stop import Interrupted
from acp_model.llm.wire import ResponsePart, find_tag

CHUNK_KINDS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk",
                         "tool_call_content_chunk"})


class Named(NamedTuple):
    """What a record is, as :class:`Names` names it (the event's fields but its time)."""

    boundary: Boundary
    what: What
    session: int | None = None
    cause: int | None = None
    by_action: bool = False  # issued by the client itself (not a reaction of its delivery)


class Names:
    """How a connection's crossings are named, learnt as its records go by: the sessions by
    the answer to ``session/new`` that made each, each side's requests by id, the scripted
    turns by the prompt that carried each tag, and each session's current run of chunks."""

    def __init__(self) -> None:
        self.sessions: dict[str, int] = {}  # session id -> the event that made it
        self.ours: dict[Any, int] = {}  # the client's request ids -> their events
        self.theirs: dict[Any, int] = {}  # the agent's request ids -> their events
        self.turns: dict[str, int] = {}  # scripted turn tag -> the prompt that carried it
        self.runs: dict[int | None, What] = {}  # session -> its chunk run

    def of(self, record: Mapping[str, Any]) -> Named | None:
        """What ``record`` is (None: a continuation of a chunk run); nothing is learnt."""
        inbound = record.get("dir") == "c2a"
        boundary = Boundary.WRITE if inbound else Boundary.MESSAGE
        if "msg" not in record:
            return Named(boundary, (Crossed.RAW, str(record.get("error", ""))))
        msg = record["msg"]
        if isinstance(msg, list):
            return Named(boundary, (Crossed.BATCH, *(str(m.get("method", "answer"))
                                                    if isinstance(m, dict) else "?"
                                                    for m in msg)))
        if not isinstance(msg, dict):
            return Named(boundary, (Crossed.OTHER,))
        method, rid = msg.get("method"), msg.get("id")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        session = self.session(params.get("sessionId"))
        if isinstance(method, str):
            if rid is not None:
                # a session is made ahead of need or by the action that needs it, on a shared
                # process by an earlier example: its session/new is no action's own
                return Named(boundary, (Crossed.REQUEST, method), session,
                             by_action=inbound and method != "session/new")
            if method == "session/update" and not inbound:
                what = _update(params.get("update"))
                if what[1] in CHUNK_KINDS and self.runs.get(session) == what:
                    return None
                return Named(boundary, what, session)
            return Named(boundary, (Crossed.NOTIFY, method), session, by_action=inbound)
        outcome = "error" if "error" in msg else "result"
        asked = (self.theirs if inbound else self.ours).get(_hashable(rid))
        # an answer the action itself writes is its own (a reaction's is the delivery's)
        return Named(boundary, (Crossed.ANSWER if inbound else Crossed.RESPONSE, outcome), None,
                     asked,
                     by_action=inbound)

    def session(self, sid: Any) -> int | None:
        if not isinstance(sid, str):
            return None
        return self.sessions.get(sid, -1)  # -1: a session the client never made

    def learn(self, index: int, event: Crossing, record: Mapping[str, Any] | None,
              events: Sequence[Crossing]) -> None:
        """What later events refer to: ``event`` (at ``index`` of ``events``), of
        ``record`` (None: a model event)."""
        if event.boundary is Boundary.MESSAGE:
            self.runs[event.session] = event.what
        msg = record.get("msg") if record is not None else None
        if not isinstance(msg, dict):
            return
        rid = _hashable(msg.get("id"))
        if event.what[:1] == (Crossed.REQUEST,):
            (self.ours if event.boundary is Boundary.WRITE else self.theirs)[rid] = index
            params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
            if event.what[1] == "session/prompt":
                text = " ".join(b.get("text", "") for b in params.get("prompt") or []
                                if isinstance(b, dict) and isinstance(b.get("text"), str))
                tag = find_tag(text)
                if tag is not None:
                    self.turns[tag] = index
        elif event.what == (Crossed.RESPONSE, "result") and event.cause is not None:
            result = msg.get("result")
            sid = result.get("sessionId") if isinstance(result, dict) else None
            if events[event.cause].what == (Crossed.REQUEST, "session/new") \
                    and isinstance(sid, str):
                self.sessions.setdefault(sid, index)


def _update(update: Any) -> What:
    """An update by its kind (a tool call's by its status; a state by its value)."""
    if not isinstance(update, dict):
        return (Crossed.UPDATE, "?")
    kind = str(update.get("sessionUpdate", "?"))
    if kind == "tool_call_update":
        status = update.get("status")
        # a status change is a step of the tool call; content alone streams like chunks
        return (Crossed.UPDATE, kind, str(status)) if isinstance(status, str) \
            else (Crossed.UPDATE, "tool_call_content_chunk")
    if kind == "state_update" and isinstance(update.get("state"), str):
        return (Crossed.UPDATE, kind, update["state"])
    return (Crossed.UPDATE, kind)


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
        self.events: list[Crossing] = []
        self._hold: Hold | None = None
        self.clock = ProcessClock()  # the agent's wall clock, where a replay can hold it
        self.recording = False
        self._early = False  # recording began before the first program (:meth:`begin_early`)
        self.action: int | None = None
        self._action_thread: int | None = None
        self._t0 = time.monotonic()
        self.epoch = time.time()  # what the agent's wall clock read at ``_t0``
        self.names = Names()
        self.records: Sequence[Any] = ()  # the transcript's (its length places model events)
        # the transcript index where the latest teardown began: what the client wrote from
        # there on is the teardown's (its cancels, answers and syncs), not a program action's
        self.teardown_at: int | None = None
        # each model event with the number of transcript records before it: a
        # counterexample shows the scripted model's part among the wire's messages
        self.model: list[tuple[int, Crossing]] = []

    @property
    def hold(self) -> Hold | None:
        """The recorded schedule a replay is held to (None: free-running)."""
        return self._hold

    @hold.setter
    def hold(self, hold: Hold | None) -> None:
        """Hold the replay to ``hold`` from now on; what was recorded before (a warm process's
        first spare session, :meth:`begin_early`) is what the replay did first, matched now."""
        with self.lock:
            self._hold = hold
            if hold is not None:
                for index, event in enumerate(self.events):
                    hold.observe(index, self._key(event))

    @classmethod
    def of(cls, proc: Any, stop: threading.Event | None = None) -> ScheduleLog:
        """The schedule of an agent process's connection, wired to its transcript, its
        stdin writer and its stdout reader (``fuzzing/transport.py``)."""
        log = cls(proc.log.cond, stop)
        log.records = proc.log.records
        log.clock.pgid = proc.pgid
        proc.log.taps.append(log.on_record)
        proc.stdin.before = log.before_write
        proc.reader.before = log.before_read
        return log

    def follow(self, hold: Hold | None) -> bool:
        """A replay held to ``hold`` 's schedule begins (None: free-running); returns whether
        the agent's clock is held too (its process has a clock, the schedule an epoch)."""
        self.hold = hold
        return self.clock.follow(hold.schedule.first_clock() if hold is not None else None)

    def _tick(self, j: int | None) -> None:
        """A held input whose recorded match is ``j`` is about to be issued: the agent's
        clock reads at least what it read then (``AgentClock.advance``)."""
        hold = self.hold
        if hold is None or j is None \
                or hold.events[j].boundary not in (Boundary.WRITE, Boundary.RELEASE):
            return
        wall = hold.schedule.clock_at(j)
        if wall is not None:
            self.clock.advance(wall)

    def settle(self) -> None:
        """The program and its teardown are done: a held replay ends once the agent messages
        the recording had came (``Hold.settle``)."""
        if self.hold is not None:
            self.hold.settle(self.stop)

    def close(self) -> None:
        """The connection ends: a held replay's waits end with it."""
        if self.hold is not None:
            self.hold.close()

    # --- the program's side ---------------------------------------------------------------
    def begin_early(self) -> None:
        """Record from now on, before the first program begins: what the client does ahead of
        it (its first spare session, made while a warm process waits for its replay) is the
        first program's (``fuzzing/sessions.py``)."""
        with self.lock:
            if not self.recording:
                self.recording = self._early = True
                self._t0 = time.monotonic()

    def start(self) -> int:
        """Record from now on (a program begins); returns where its events begin. The first
        program after :meth:`begin_early` begins with what was recorded before it, and its
        clock goes on from the last of that: how long the process waited for it is not the
        program's (a held input keeps the recorded pace after the event before it)."""
        with self.lock:
            if self._early:
                self._early = False
                before = self.events[-1].t if self.events else 0.0
                self._t0 = time.monotonic() - before
                self.epoch = self.clock.now() - before  # t=0 as the program's clock counts it
                return 0
            if not self.recording:
                self.recording = True
                self._t0 = time.monotonic()
                self.epoch = self.clock.now()
            return len(self.events)

    def act(self, n: int, *, teardown: bool = False) -> None:
        """The program's action ``n`` begins (on this thread); ``teardown``: its drain."""
        with self.lock:
            self.action = n
            self._action_thread = threading.get_ident()
            if teardown:
                self.teardown_at = len(self.records)
        hold = self.hold
        if hold is not None:
            hold.left_behind(n)
            if teardown:
                hold.read_freely()

    def schedule(self, start: int = 0, actions: int | None = None) -> Schedule:
        """The events since ``start`` as a schedule of a program of ``actions`` actions
        (default: those begun), renumbered from there. A session an earlier example made (a
        shared process's, or one made ahead of need) keeps the events that made it, first:
        a replay, which makes it in its program, matches them."""
        with self.lock:
            events = list(self.events)
            n = actions if actions is not None else (self.action or 0) + 1
            epoch = round(self.epoch, 6)
        made = {i for e in events[start:] for i in (e.session,) if i is not None and 0 <= i < start}
        made |= {c for i in made if (c := events[i].cause) is not None}
        picked = [*sorted(made), *range(start, len(events))]
        index = {old: new for new, old in enumerate(picked)}
        t0 = events[start].t if start < len(events) else 0.0

        def rebase(i: int | None) -> int | None:
            return i if i is None or i < 0 else index.get(i)

        out = []
        for i in picked:
            e = dataclasses.replace(events[i], session=rebase(events[i].session),
                                    cause=rebase(events[i].cause))
            if i < start:  # made before this program: no action of it issued it; paced as
                # its first event, yet its clock reads when it crossed (a shared process's
                # session made minutes before: gemini-cli's history is lost by a load in
                # the clock minute its session was made, s15)
                e = dataclasses.replace(e, action=None, by_action=False, t=t0,
                                        ahead=e.ahead + e.t - t0)
            out.append(e)
        return Schedule(tuple(out), n, epoch)

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
            self._tick(hold.admit(self._key(event), event, stop=self.stop))

    def before_read(self, record: Mapping[str, Any]) -> None:
        """Before an agent message is read into the transcript (the reader's thread): a
        replay reads it no earlier than the inputs that preceded it in the recording."""
        hold = self.hold
        if hold is None:
            return
        event = self._describe(record)
        if event is not None:
            hold.admit(self._key(event), event, stop=self.stop)

    def _describe(self, record: Mapping[str, Any]) -> Crossing | None:
        """The event of a record (None: a continuation of a chunk run); nothing is learnt."""
        named = self.names.of(record)
        return None if named is None else self._event(*named)

    def _event(self, boundary: Boundary, what: What, session: int | None = None,
               cause: int | None = None, by_action: bool = False, *, ok: bool = True,
               waited: float = 0.0) -> Crossing:
        mine = by_action and threading.get_ident() == self._action_thread
        return Crossing(boundary, what, session, cause, self.action, mine,
                        round(time.monotonic() - self._t0, 4), ok, round(waited, 4),
                        self.clock.ahead())

    def _append(self, event: Crossing, record: Mapping[str, Any] | None = None) -> None:
        """Append ``event`` (the lock held) and learn what later events refer to."""
        index = len(self.events)
        self.events.append(event)
        self.names.learn(index, event, record, self.events)
        hold = self.hold
        if hold is not None:
            hold.observe(index, self._key(event))

    def _key(self, event: Crossing) -> Key:
        hold = self.hold
        return event_key(event, (lambda i: i) if hold is None else hold.ref)

    # --- the model boundary (a ``ModelGate`` for the connection's scripted turns) ---------
    def _model_event(self, boundary: Boundary, tag: str, what: tuple[str, ...]) -> Crossing | None:
        with self.lock:
            if not self.recording:
                return None
            turn = self.names.turns.get(tag)
            session = self.events[turn].session if turn is not None else None
            return self._event(boundary, (Crossed.MODEL, *what), session, turn)

    async def requested(self, tag: str, step: int, attempt: int) -> None:
        await self._model(Boundary.REQUEST, tag, (str(step), str(attempt)))

    async def release(self, tag: str, step: int, attempt: int, part: ResponsePart, n: int) -> None:
        await self._model(Boundary.RELEASE, tag, (str(step), str(attempt), part.value, str(n)))

    def hung_up(self, tag: str, step: int, attempt: int) -> None:
        event = self._model_event(Boundary.HANGUP, tag, (str(step), str(attempt)))
        if event is not None:
            with self.lock:
                self._append(event)
                self.model.append((len(self.records), event))

    async def _model(self, boundary: Boundary, tag: str, what: tuple[str, ...]) -> None:
        event = self._model_event(boundary, tag, what)
        if event is None:
            return
        hold = self.hold
        if hold is not None:
            self._tick(await hold.admit_async(self._key(event), event))
        with self.lock:
            event = dataclasses.replace(event, t=round(time.monotonic() - self._t0, 4),
                                        ahead=self.clock.ahead())
            self._append(event)
            self.model.append((len(self.records), event))

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

    def look_begin(self) -> Crossing | None:
        """A wait of the client begins: a replay waits until what preceded the recorded look
        happened, and returns that look (its ``ok``, its ``waited``); None otherwise."""
        hold = self.hold
        if hold is None or not self.recording:
            return None
        event = self._event(Boundary.LOOK, (Crossed.LOOK,), by_action=True)
        j = hold.admit(self._key(event), event, stop=self.stop)
        return None if j is None else hold.events[j]

    def look_end(self, ok: bool, waited: float) -> None:
        if not self.recording:
            return
        with self.lock:
            self._append(self._event(Boundary.LOOK, (Crossed.LOOK,), by_action=True, ok=ok,
                                     waited=waited))


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


__all__ = ["CHUNK_KINDS", "Named", "Names", "ScheduleLog"]
