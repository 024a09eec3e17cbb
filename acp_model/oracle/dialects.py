"""The translator of a revision's wire into the model's events, at the wire table.

The router and the answers route every revision's messages the same way (the routes of
:data:`~acp_model.model.wire_table.MESSAGES`) and ask the translator, at the same hooks, what
the message means for the session machine. Each hook is a pure translation: it returns the
events a message stands for besides its own (the router fires them) and updates only what the
translator remembers of the connection itself (v1: the open prompts and their turns). No hook
reads the oracle, fires an event or runs a check: the rules a revision adds (v1's V1-LOAD-01,
V1-RESUME-01) are declared checks the router hands every update to, with the revision's
levels (:mod:`~acp_model.model.replay_order`). v2's messages say what they mean themselves (a
prompt's response is its acceptance or rejection, a ``state_update`` its state), so :class:`V2`
derives nothing. v1 has no state updates and no acknowledgement: :class:`V1` derives the
turn's events from the prompt, its content and its response
(:class:`~acp_model.oracle.turns_v1.V1Turns`) and reads each update kind as its table row's v1
reading (``v1_as``, ``v1_event``, ``turn``). The other differences of the wires are facts the
translator states (:attr:`V2.prompts_are_the_conversation`) or the initialize exchange's
shape (:mod:`acp_model.model.wire_shapes`). This module and ``turns_v1`` are the only ones in
``model/`` and ``oracle/`` that tell the revisions apart (tests/unit/test_layout.py).
"""

from __future__ import annotations

from typing import Any

from acp_model.model import wire_table
from acp_model.model.events import Ev
from acp_model.model.vocab import Event
from acp_model.oracle.turns_v1 import Derived, V1Turns


class V2:
    """v2's wire: its messages are the model's events; nothing to derive."""

    # Does a prompt's success response add the prompt's text to the conversation a replay
    # owes (SESS-07)? v2: no, the user message the agent reports live does.
    prompts_are_the_conversation = False

    def event_of(self, row: wire_table.Update) -> Event:
        """The event an update kind becomes on this wire."""
        return row.event

    def prompt(self, sid: str, req_id: Any, idx: int, blocks: Any) -> None:
        """A prompt was sent for a known session."""

    def cancel(self, sid: str) -> None:
        """The client cancelled the session's work (session/cancel or session/close)."""

    def withdraw(self, sid: str, req_id: Any) -> None:
        """The client withdrew its prompt ``req_id`` ($/cancel_request)."""

    def turn_content(self, sid: str, idx: int, what: str) -> Derived:
        """Events a permission request of a known session stands for besides its own."""
        return []

    def update(self, sid: str, update: dict[str, Any], kind: Any, history: bool, idx: int,
               what: str) -> tuple[dict[str, Any], Derived]:
        """The update as the model reads it, and the events it stands for before its own
        (``history``: replayed history, which starts no work)."""
        return update, []

    def prompt_answered(self, sid: str, req_id: Any, idx: int, result: Any, has_error: bool,
                        code: Any, what: str) -> Derived:
        """The events a prompt's response becomes: its acceptance (with its receipt) or its
        rejection."""
        if has_error:
            return [(Event.PROMPT_REJECTED, Ev(idx, id=req_id, error_code=code), what)]
        keys = tuple(result) if isinstance(result, dict) else None
        receipt = result.get("messageId") if isinstance(result, dict) else None
        return [(Event.PROMPT_ACCEPTED,
                 Ev(idx, id=req_id, result_keys=keys,
                    message_id=receipt if isinstance(receipt, str) else None), what)]


class V1(V2):
    """v1's wire: the turn is the prompt and its response (module docstring of ``turns_v1``)."""

    # v1 reports no user message of its own: the prompts whose turns ended normally are the
    # conversation a session/load replays
    prompts_are_the_conversation = True

    def __init__(self) -> None:
        self.turns = V1Turns()

    def event_of(self, row: wire_table.Update) -> Event:
        """v1 reads a user message as replayed history (the turn's start is derived from the
        prompt): the row's ``v1_event``. A kind v1 reads as another (``v1_as``) was renamed
        by :meth:`update` first."""
        return row.v1_event if row.v1_event is not None and row.v1_as is None else row.event

    def prompt(self, sid: str, req_id: Any, idx: int, blocks: Any) -> None:
        self.turns.prompt(sid, req_id, idx, blocks)

    def cancel(self, sid: str) -> None:
        self.turns.cancel(sid)

    def withdraw(self, sid: str, req_id: Any) -> None:
        self.turns.withdraw(sid, req_id)

    def turn_content(self, sid: str, idx: int, what: str) -> Derived:
        return self.turns.start(sid, idx, what)

    def update(self, sid: str, update: dict[str, Any], kind: Any, history: bool, idx: int,
               what: str) -> tuple[dict[str, Any], Derived]:
        """The update as the table's v1 reading has it (v1's first report of a tool call is
        an upsert like v2's ``tool_call_update``), and the turn the turn content of a quiet
        session starts."""
        row = wire_table.updates().get(kind) if isinstance(kind, str) else None
        if row is not None and row.v1_as is not None:
            update = {**update, "sessionUpdate": row.v1_as}
        starts = row is not None and row.turn and not history
        return update, self.turns.start(sid, idx, what) if starts else []

    def prompt_answered(self, sid: str, req_id: Any, idx: int, result: Any, has_error: bool,
                        code: Any, what: str) -> Derived:
        return self.turns.response(sid, req_id, idx, result, code if has_error else None,
                                   what)


Dialect = V2  # the translator's interface: V2's hooks


def for_protocol(protocol: int) -> V2:
    """The translator of a protocol version's wire (a fresh one per connection)."""
    return V1() if protocol == 1 else V2()
