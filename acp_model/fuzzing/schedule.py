"""The boundary schedule: one total order of what crossed the agent's two boundaries, and a
replay held to it.

The fuzzer holds both of the agent's boundaries: it writes every client message (stdin) and
it is the model the agent calls (the scripted model, ``acp_model.llm``). A run's schedule is
the order in which, on one connection, the client wrote, the agent wrote a message, the agent
called the model, the model released each part of a response (its start, text chunks, tool
calls, a stall, its end or failure), the agent hung up on one, and the client looked at what
it had seen (a wait ended: its next decision reads that view). It is recorded for every
program a connection runs (``fuzzing/crossings.py``), as :class:`Crossing` s that name what
crossed by a stable key, never by text or by an id the agent chose: the method, the session by the
``session/new`` answer that made it, the request a response answers, the update kind (a run of
text chunks is one event: their count varies with timing), the scripted turn by the prompt
that carried its tag, the model step, attempt and part, and the client action it belongs to.

A replay under a recorded schedule (``fuzzing/hold.py``, after STS and DEMi) issues each
input (a client write, a model release) only once everything that preceded it in the recording
has happened, matched by key; lets each look end only then; and reads each agent message no
earlier than the inputs that preceded it in the recording. :meth:`Schedule.restrict` derives
the schedule a smaller program is expected to follow, for minimizing under it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from acp_model.model.vocab import Reads

FORMAT = "acp-model-schedule/1"


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


class Crossed(StrEnum):
    """What crossed: the first word of a :class:`Crossing`'s ``what``, which the words after it
    name (a schedule file keeps its value, so files written before it read the same)."""

    REQUEST = "request"  # a request, by its method
    NOTIFY = "notify"  # a notification other than a session/update, by its method
    UPDATE = "update"  # a session/update, by its kind (a tool call's status, a state's name)
    RESPONSE = "response"  # the agent's response to the client: "result" or "error"
    ANSWER = "answer"  # the client's answer to the agent's request: "result" or "error"
    BATCH = "batch"  # a JSON-RPC batch, by its members' methods
    RAW = "raw"  # a line that is no message, by its read error
    OTHER = "other"  # a message of none of these shapes
    MODEL = "model"  # the scripted model: its step, attempt, part and count
    LOOK = "look"  # a wait of the client ended
    END = "end"  # the program's end (a replay's last turn)


What = tuple[Crossed, *tuple[str, ...]]  # a Crossing's key words: what crossed, then its names


# Agent messages whose number follows the agent's timing, not the program (state it reports
# as it likes: usage, commands, modes, titles, compaction, its own extensions): recorded and
# matched, but nothing waits for them (a replay that waited for one that did not come would
# shift every input after it, and with it the race it replays).
SOFT_UPDATES = frozenset({"usage_update", "available_commands_update", "current_mode_update",
                          "config_option_update", "session_info_update", "compaction_update",
                          "compaction_summary_chunk"})

# Agent messages whose number follows the agent's timing as much as the program: the runs of
# streamed content (a thought between two texts splits a run), a plan's revisions, a tool
# call's progress short of its end. A replay waits for them as recorded, but one that does not
# come is a count that differs, not another branch: it is left out soon (never after the
# whole deadline) and the replay stays held (``fuzzing/hold.py``); only the first of a
# stretch that one of our inputs ends is the branch's (:meth:`Schedule.content_begins`).
COUNTED_UPDATES = frozenset({Reads.AGENT_MESSAGE_CHUNK, Reads.AGENT_THOUGHT_CHUNK,
                             Reads.TOOL_CALL_CONTENT_CHUNK, "terminal_output_chunk", "plan",
                             # the v2 revisions' messages, thoughts, plans, terminal output
                             Reads.AGENT_MESSAGE, Reads.AGENT_THOUGHT, Reads.PLAN_UPDATE,
                             Reads.TERMINAL_UPDATE})
PROGRESS = frozenset({"pending", "in_progress"})  # a tool call's status short of its end


def essential(boundary: Boundary, what: What) -> bool:
    """Whether an agent's output of this kind is part of the branch it took (a response, a
    request, a model call, a hang-up, an update that starts or ends something), not a count
    (:data:`COUNTED_UPDATES`, a tool call's progress); our own events always are."""
    if boundary is not Boundary.MESSAGE or what[:1] != (Crossed.UPDATE,) or len(what) < 2:
        return True
    if what[1] in COUNTED_UPDATES:
        return False
    return not (what[1] == Reads.TOOL_CALL_UPDATE and what[2:3] and what[2] in PROGRESS)


# What the replay does that the recording did not takes its place where the recording went on
# (``fuzzing/hold.py``): the client's own writes and looks, and the model's side (a model
# request the recorded turn never made is answered only then, as a model that was slow would).
PLACED = frozenset({Boundary.RELEASE, Boundary.REQUEST})


@dataclass(frozen=True, slots=True)
class Crossing:
    """One crossing. ``session`` and ``cause`` are indices of earlier events of the same
    schedule (the answer to ``session/new`` that made the session; the request a response
    answers, or the prompt whose tag a model event's turn carries), so a key stays the same
    across processes, ids and texts."""

    boundary: Boundary
    what: What  # (a first word of an older caller or file is read as its Crossed member)
    session: int | None = None
    cause: int | None = None
    action: int | None = None  # the program's action running (its teardown: len(program))
    by_action: bool = False  # issued by the action itself (its thread), not a reaction
    t: float = 0.0  # seconds since the schedule began
    ok: bool = True  # a look: whether the condition waited for held
    waited: float = 0.0  # a look: how long the wait took
    # seconds the agent's wall clock had been moved forward, beyond ``t``, since the
    # schedule began (a replay holding the clock moves it: ``fuzzing/clock.py``); 0 in a
    # recording of a clock nobody moved
    ahead: float = 0.0

    def __post_init__(self) -> None:
        if self.what and type(self.what[0]) is not Crossed:
            object.__setattr__(self, "what", (Crossed(self.what[0]), *self.what[1:]))

    @property
    def kind(self) -> Crossed:
        """What crossed (the first word of ``what``)."""
        return self.what[0]

    @property
    def soft(self) -> bool:
        """An agent message nothing waits for (:data:`SOFT_UPDATES`, a notification of the
        agent's own extensions)."""
        if self.boundary is not Boundary.MESSAGE or len(self.what) < 2:
            return False
        kind, name = self.what[0], self.what[1]
        return (kind is Crossed.UPDATE and (name in SOFT_UPDATES or name.startswith("_"))) \
            or (kind is Crossed.NOTIFY and name != "session/update")

    @property
    def essential(self) -> bool:
        """Part of the branch the run took, not a count of what it streamed (:func:`essential`)."""
        return essential(self.boundary, self.what)

    def place(self, actions: int | None = None) -> str | None:
        """Where in a program of ``actions`` actions it crossed: "action 3", or "the
        teardown" (what runs after the last action); None: not known. The one place both
        a divergence and the held order name it."""
        if self.action is None:
            return None
        return "the teardown" if actions is not None and self.action >= actions \
            else f"action {self.action + 1}"

    def describe(self, actions: int | None = None) -> str:
        """The crossing in a divergence's words; with the program's number of ``actions``,
        its place (:meth:`place`), and, for a write no action made, the session factory's
        that made it ahead of need."""
        what = f"{self.boundary.value} {' '.join(self.what)}"
        place = self.place(actions)
        if place is None:
            return what
        if self.boundary is Boundary.WRITE and not self.by_action:
            return f"{what} (a spare session's, made ahead during {place})"
        return f"{what} ({place})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"b": self.boundary.value, "w": list(self.what), "t": self.t}
        for name, value in (("s", self.session), ("c", self.cause), ("a", self.action)):
            if value is not None:
                out[name] = value
        if self.by_action:
            out["x"] = True
        if self.boundary is Boundary.LOOK:
            out["ok"], out["dt"] = self.ok, self.waited
        if self.ahead:
            out["ck"] = self.ahead
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Crossing:
        return cls(Boundary(data["b"]), tuple(str(w) for w in data["w"]), data.get("s"),
                   data.get("c"), data.get("a"), bool(data.get("x", False)),
                   float(data.get("t", 0.0)), bool(data.get("ok", True)),
                   float(data.get("dt", 0.0)), float(data.get("ck", 0.0)))


Key = tuple[Any, ...]


def event_key(e: Crossing, ref: Callable[[int], Any]) -> Key:
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
    program's length (the teardown's action index); ``epoch``: what the agent's wall clock
    read at t=0 (epoch seconds; None: a schedule recorded before it was kept, replayed with
    the real clock). An event's ``ahead`` is how far the clock read past ``epoch + t``: a held
    replay moved it forward, or (negative) a session made before the program crossed earlier
    than the ``t`` it is paced by."""

    events: tuple[Crossing, ...]
    actions: int
    epoch: float | None = None

    def clock_at(self, k: int) -> float | None:
        """What the agent's wall clock read when event ``k`` crossed (None: not recorded)."""
        if self.epoch is None:
            return None
        e = self.events[k]
        return self.epoch + e.t + e.ahead

    def first_clock(self) -> float | None:
        """What a held replay's agent clock reads at its start: the earliest reading of
        the recording, its epoch or earlier (a session made before the program, on a shared
        process, crossed before t=0 by its clock); the clock moves only forward from there."""
        return None if self.epoch is None else min([self.epoch, *self._readings()])

    def clock_span(self) -> float:
        """Seconds the recording's clock read from its first reading to its last (0: none)."""
        first, readings = self.first_clock(), self._readings()
        return 0.0 if first is None or not readings else max(readings) - first

    def _readings(self) -> list[float]:
        return [w for k in range(len(self.events)) if (w := self.clock_at(k)) is not None]

    def said(self, k: int) -> str:
        """Its event ``k`` in a divergence's words, placed in the program (an action, the
        teardown, a spare session made ahead)."""
        return self.events[k].describe(self.actions)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": FORMAT, "actions": self.actions}
        if self.epoch is not None:
            out["epoch"] = self.epoch
        out["events"] = [e.to_json() for e in self.events]
        return out

    @classmethod
    def from_json(cls, data: Any) -> Schedule:
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ScheduleError(f"not an {FORMAT} schedule")
        try:
            events = tuple(Crossing.from_json(e) for e in data["events"])
            epoch = data.get("epoch")
            return cls(events, int(data["actions"]),
                       None if epoch is None else float(epoch))
        except (KeyError, TypeError, ValueError) as exc:
            raise ScheduleError(f"{FORMAT}: {exc}") from None

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.events:
            out[e.boundary.value] = out.get(e.boundary.value, 0) + 1
        return out

    def session_of(self, k: int) -> int | None:
        """The session event ``k`` belongs to: its own, or the one of the request it answers."""
        e = self.events[k]
        if e.session is None and e.cause is not None and 0 <= e.cause < len(self.events):
            return self.events[e.cause].session
        return e.session

    def content_begins(self) -> dict[int, tuple[int, ...]]:
        """The recorded updates with which content begins before one of our inputs, each with
        the later counted updates of its stretch. A stretch of a session's counted updates
        (:data:`COUNTED_UPDATES`) runs from one of our inputs or the session's last essential
        output to the next of either; its first update is part of the branch when an input of
        ours ends the stretch: whether the agent's output had begun before we wrote, released
        or looked is the race the recording took (codex-acp's first chunk before our set_mode,
        qwen-code's before the teardown's cancel, s7 matrix). Only the later updates of such a
        stretch are counts, and one of them coming shows the content began all the same."""
        out: dict[int, tuple[int, ...]] = {}
        open_: dict[int | None, list[int]] = {}  # session -> its stretch's counted updates
        for k, e in enumerate(self.events):
            if e.boundary.ours:
                out.update((run[0], tuple(run[1:])) for run in open_.values())
                open_.clear()
            elif e.soft:
                continue
            elif e.essential:
                open_.pop(self.session_of(k), None)
            else:
                open_.setdefault(e.session, []).append(k)
        return out

    def restrict(self, kept: Sequence[int], teardown: int | None = None) -> Schedule:
        """The schedule a sub-program (``kept``: the indices of this program's actions it
        keeps, in order) is expected to follow: what the removed actions issued and what was
        caused by it leaves with them (a response with its request, a model event with its
        turn's prompt, a session's events with the session, an agent message with the
        client's last write on its session before it); the rest is renumbered. What the
        sub-program then does differently is found as a divergence, and its own recording
        replaces this one once it reproduces.

        ``teardown``: a removed action whose place the sub-program's teardown takes (its
        events become the teardown's). A recording that showed the rule has no teardown (the
        replay stopped there), so a teardown past the recording would run free, look at once
        and cancel a turn whose end the recording had read before that action's first write:
        held in its place, it looks only once what preceded that write happened."""
        actions = {old: new for new, old in enumerate(kept)}
        actions[self.actions] = len(kept)
        if teardown is not None:
            actions[teardown] = len(kept)
        index: dict[int, int] = {}
        last_write: dict[int | None, int] = {}
        out: list[Crossing] = []
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
        return Schedule(tuple(out), len(kept), self.epoch)

    def upto(self, actions: int) -> Schedule:
        """The schedule of the program cut after its first ``actions`` actions (what the
        later ones and the teardown did leaves)."""
        return self.restrict(range(actions))


def read_schedule(path: Path) -> Schedule | None:
    """The schedule file ``path`` (None: missing or unreadable)."""
    if not path.is_file():
        return None
    try:
        return Schedule.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ScheduleError):
        return None


__all__ = ["COUNTED_UPDATES", "FORMAT", "PLACED", "SOFT_UPDATES", "Boundary", "Crossed",
           "Crossing", "Key", "Schedule", "ScheduleError", "What", "essential", "event_key",
           "read_schedule"]
