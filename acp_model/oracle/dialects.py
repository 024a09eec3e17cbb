"""The translator of a revision's wire into the model's events, at the wire table.

The router and the answers route every revision's messages the same way (the routes of
:data:`~acp_model.model.wire_table.MESSAGES`) and hand the translator what a message was, as
one of the records below (:data:`Seen`: a prompt sent, a cancel, a withdrawal, a request of
the user, an update, a prompt's response). ``Dialect.translate(seen, memory)`` is a pure
function: it returns the steps the message stands for besides its own event (each an event
for the session machine with its payload) and the translator's memory of the connection after
it (v1: the open prompts and their turns, :data:`~acp_model.oracle.turns_v1.Turns`, a value
never changed in place). It reads no oracle part, fires no event and runs no check: the
:class:`Translator` the oracle holds keeps the memory, and the oracle fires the steps. The
rules a revision adds (v1's V1-LOAD-01, V1-RESUME-01, V1-TURN-01, V1-TOOL-01, V1-NOTICE-01 ...)
are declared checks with the revision's levels, dispatched like every check.

v2's messages say what they mean themselves (a prompt's response is its acceptance or
rejection, a ``state_update`` its state), so :class:`V2` derives nothing else. v1 has no state
updates and no acknowledgement: :class:`V1` derives the turn's events from the prompt, its
content and its response (:mod:`~acp_model.oracle.turns_v1`) and reads each update kind as its
table row's v1 reading (``v1_as``, ``v1_event``, ``turn``). The other differences of the wires
are facts the translator states (:attr:`V2.prompts_are_the_conversation`) or the initialize
exchange's shape (:mod:`acp_model.model.wire_shapes`). This module and ``turns_v1`` are the
only ones in ``model/`` and ``oracle/`` that tell the revisions apart
(tests/unit/test_layout.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from acp_model.model import wire_table
from acp_model.model.events import Payload
from acp_model.model.vocab import Event
from acp_model.oracle import turns_v1
from acp_model.oracle.turns_v1 import Steps, Turns

__all__ = ["V1", "V2", "Answered", "AskedUser", "Cancelled", "Dialect", "Prompted", "Seen",
           "Steps", "Translator", "Updated", "Withdrawn", "for_protocol"]


# --- what the translator is handed: one record per kind of message it reads (tuples: built
# on every update, a tuple costs about a quarter of a frozen dataclass) -----------------------
class Prompted(NamedTuple):
    """The client sent a prompt for a known session."""

    sid: str
    req_id: Any
    idx: int
    blocks: Any  # its prompt content


class Cancelled(NamedTuple):
    """The client cancelled the session's work (session/cancel, or session/close)."""

    sid: str


class Withdrawn(NamedTuple):
    """The client withdrew its request ``req_id`` of the session ($/cancel_request)."""

    sid: str
    req_id: Any


class AskedUser(NamedTuple):
    """The agent asked the user (a permission request) in a known session."""

    sid: str
    idx: int
    what: str


class Updated(NamedTuple):
    """A ``session/update`` of a known session (``history``: replayed history, which starts
    no work)."""

    sid: str
    kind: Any  # its sessionUpdate
    history: bool
    idx: int
    what: str


class Answered(NamedTuple):
    """The agent answered a prompt of a known session."""

    sid: str
    req_id: Any
    idx: int
    result: Any
    has_error: bool
    code: Any  # the error's code
    what: str


Seen = Prompted | Cancelled | Withdrawn | AskedUser | Updated | Answered
Memory = Turns  # what a translator remembers of the connection (v2: nothing)


class V2:
    """v2's wire: its messages are the model's events; nothing to derive."""

    # Does a prompt's success response add the prompt's text to the conversation a replay
    # owes (SESS-07)? v2: no, the user message the agent reports live does.
    prompts_are_the_conversation = False
    start: Memory = turns_v1.NONE  # the memory of a fresh connection

    def event_of(self, row: wire_table.Update) -> Event:
        """The event an update kind becomes on this wire."""
        return row.event

    def read_as(self, row: wire_table.Update) -> str | None:
        """The kind the model reads an update of ``row`` as (None: its own)."""
        return None

    def moved_by(self, row: wire_table.Update | None) -> bool:
        """Does an update of ``row``'s kind (None: one the table lacks) reach
        :meth:`translate` as :class:`Updated` at all (v2: no update derives a step)? The
        oracle hands it only those (its plan of a kind asks once, ``oracle.updates``)."""
        return False

    def translate(self, seen: Seen, memory: Memory) -> tuple[Memory, Steps]:
        """The memory after ``seen`` and the steps it stands for besides its own event: a
        prompt's response is its acceptance (with its receipt) or its rejection."""
        if type(seen) is not Answered:
            return memory, ()
        if seen.has_error:
            return memory, ((Event.PROMPT_REJECTED,
                             Payload(seen.idx, id=seen.req_id, error_code=seen.code), seen.what),)
        result = seen.result
        keys = tuple(result) if isinstance(result, dict) else None
        receipt = result.get("messageId") if isinstance(result, dict) else None
        return memory, ((Event.PROMPT_ACCEPTED,
                         Payload(seen.idx, id=seen.req_id, result_keys=keys,
                            message_id=receipt if isinstance(receipt, str) else None),
                         seen.what),)


class V1(V2):
    """v1's wire: the turn is the prompt and its response (module docstring of ``turns_v1``)."""

    # v1 reports no user message of its own: the prompts whose turns ended normally are the
    # conversation a session/load replays
    prompts_are_the_conversation = True

    def event_of(self, row: wire_table.Update) -> Event:
        """v1 reads a user message as replayed history (the turn's start is derived from the
        prompt): the row's ``v1_event``. A kind v1 reads as another (``v1_as``: :meth:`read_as`)
        is classified by that kind's row."""
        return row.v1_event if row.v1_event is not None and row.v1_as is None else row.event

    def read_as(self, row: wire_table.Update) -> str | None:
        return row.v1_as

    def moved_by(self, row: wire_table.Update | None) -> bool:
        """Turn content (the row's ``turn``) may start the oldest open prompt's turn."""
        return row is not None and row.turn

    def translate(self, seen: Seen, memory: Memory) -> tuple[Memory, Steps]:
        """The open turns after ``seen``, and the turn events it stands for: the turn
        content of a quiet session starts the oldest open prompt's turn; a prompt's response
        ends its turn or rejects it."""
        match seen:
            case Prompted(sid, req_id, idx, blocks):
                return turns_v1.prompt(memory, sid, req_id, idx, blocks), ()
            case Cancelled(sid):
                return turns_v1.cancel(memory, sid), ()
            case Withdrawn(sid, req_id):
                return turns_v1.withdraw(memory, sid, req_id), ()
            case AskedUser(sid, idx, what):
                return turns_v1.start(memory, sid, idx, what)
            case Updated(sid, kind, history, idx, what):
                row = wire_table.updates().get(kind) if isinstance(kind, str) else None
                if not self.moved_by(row) or history:
                    return memory, ()
                return turns_v1.start(memory, sid, idx, what)
            case Answered(sid, req_id, idx, result, has_error, code, what):
                return turns_v1.response(memory, sid, req_id, idx, result,
                                         code if has_error else None, what)
        return memory, ()


Dialect = V2  # the translator's interface: V2's methods


class Translator:
    """A connection's translator and its memory, the oracle's one holder of both: each
    message the oracle hands it is translated, the memory kept and the steps returned for the
    oracle to fire."""

    __slots__ = ("dialect", "memory")

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.memory = dialect.start

    def __call__(self, seen: Seen) -> Steps:
        self.memory, steps = self.dialect.translate(seen, self.memory)
        return steps


def for_protocol(protocol: int) -> Dialect:
    """The translator of a protocol version's wire."""
    return V1() if protocol == 1 else V2()
