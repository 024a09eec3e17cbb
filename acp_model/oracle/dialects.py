"""The translator of a revision's wire into the model's events, at the wire table.

The router and the answers route every revision's messages the same way (the routes of
:data:`~acp_model.model.wire_table.MESSAGES`) and ask the translator, at the same hooks, what
the message means for the session machine. v2's messages say it themselves (a prompt's
response is its acceptance or rejection, a ``state_update`` its state), so :class:`V2` adds
nothing. v1 has no state updates and no acknowledgement: :class:`V1` derives the turn's
events from the prompt, its content and its response (:class:`~acp_model.oracle.turns_v1.V1Turns`),
reads each update kind as its table row's v1 reading (``v1_as``, ``turn``) and judges v1's
own replay rules. The monitor holds one translator and no v1 flag.
"""

from __future__ import annotations

from typing import Any

from acp_model.model import replay, wire_table
from acp_model.model.events import Ev, text_key
from acp_model.model.vocab import Event
from acp_model.oracle.machines import Machines
from acp_model.oracle.reopens import Reopens
from acp_model.oracle.rpc import Rpc
from acp_model.oracle.store import ViolationStore
from acp_model.oracle.turns_v1 import Derived, V1Turns


class V2:
    """v2's wire: its messages are the model's events; nothing to derive but the replay
    rules of its resume (SESS-06, SESS-07's order)."""

    def __init__(self, rpc_: Rpc, store: ViolationStore, machines: Machines,
                 reopens: Reopens) -> None:
        self.rpc, self.store, self.machines, self.reopens = rpc_, store, machines, reopens
        self.message_ids: dict[str, set[str]] = {}  # per session: the ids its content used

    def earlier(self, sid: str, kind: Any, update: dict[str, Any], judged: bool) -> str | None:
        """Why the content is an earlier message of the conversation, if it is one (only
        worked out when a replay rule judges it); the ids it names are remembered."""
        seen = self.message_ids.setdefault(sid, set())
        mid = update.get("messageId")
        out = replay.earlier_message(kind, mid, seen) if judged else None
        if isinstance(mid, str):
            seen.add(mid)
        return out

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
               what: str) -> dict[str, Any]:
        """The update as the model reads it (and the events it derives, fired here); the
        resume's replay rules: none without a cursor, all of it before the response."""
        busy = self.machines.busy(sid)
        requests = self.rpc.open["c2a"].values()
        resume = replay.resume_awaited((r for r in requests if r.replayed is None), sid, busy)
        answered = None if busy else self.reopens.load_answer(sid)
        earlier = self.earlier(sid, kind, update, resume is not None or answered is not None)
        run = self.store.run
        run(replay.resume_without_cursor_replays_nothing, idx, kind, resume, earlier,
            session=sid)
        run(replay.resume_replays_before_answering, idx, kind, answered, earlier,
            session=sid)
        return update

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

    def __init__(self, rpc_: Rpc, store: ViolationStore, machines: Machines,
                 reopens: Reopens) -> None:
        super().__init__(rpc_, store, machines, reopens)
        self.turns = V1Turns()
        # per session: the first text of each prompt it was sent -> where (V1-LOAD-01's proof)
        self.prompt_texts: dict[str, dict[str, int]] = {}

    def event_of(self, row: wire_table.Update) -> Event:
        """v1 reads a user message as replayed history (the turn's start is derived from the
        prompt): the row's ``v1_event``. A kind v1 reads as another (``v1_as``) was renamed
        by :meth:`update` first."""
        return row.v1_event if row.v1_event is not None and row.v1_as is None else row.event

    def prompt(self, sid: str, req_id: Any, idx: int, blocks: Any) -> None:
        self.turns.prompt(sid, req_id, idx, blocks)
        text = text_key(blocks)
        if text is not None:
            self.prompt_texts.setdefault(sid, {}).setdefault(text, idx)

    def cancel(self, sid: str) -> None:
        self.turns.cancel(sid)

    def withdraw(self, sid: str, req_id: Any) -> None:
        self.turns.withdraw(sid, req_id)

    def turn_content(self, sid: str, idx: int, what: str) -> Derived:
        return self.turns.start(sid, idx, what)

    def update(self, sid: str, update: dict[str, Any], kind: Any, history: bool, idx: int,
               what: str) -> dict[str, Any]:
        """v1's replay rules, and the turn an update of a quiet session starts; returns the
        update as the table's v1 reading has it (v1's first report of a tool call is an upsert
        like v2's ``tool_call_update``)."""
        run, busy = self.store.run, self.machines.busy(sid)
        resume = replay.resume_awaited(self.rpc.open["c2a"].values(), sid, busy)
        loaded = None if busy else self.reopens.load_answer(sid)  # (busy: the turn's)
        replayed = replay.replayed_user_message(  # (read before this message's id is seen)
            kind, update.get("messageId"), text_key(update.get("content")),
            self.message_ids.get(sid, set()),
            self.prompt_texts.get(sid, {})) if loaded is not None else None
        earlier = self.earlier(sid, kind, update, resume is not None)
        run(replay.resume_replays_nothing, idx, kind, resume, earlier, session=sid)
        if not run(replay.load_history_after_answer, idx, kind, loaded, replayed, session=sid):
            run(replay.load_replays_before_answering, idx, kind, loaded, session=sid)
        row = wire_table.updates().get(kind) if isinstance(kind, str) else None
        if row is not None and row.v1_as is not None:
            update = {**update, "sessionUpdate": row.v1_as}
        if row is not None and row.turn and not history:
            self.machines.derived(sid, self.turns.start(sid, idx, what))
        return update

    def prompt_answered(self, sid: str, req_id: Any, idx: int, result: Any, has_error: bool,
                        code: Any, what: str) -> Derived:
        return self.turns.response(sid, req_id, idx, result, code if has_error else None,
                                   what)


Dialect = V2  # the translator's interface: V2's hooks


def for_protocol(protocol: int, rpc_: Rpc, store: ViolationStore, machines: Machines,
                 reopens: Reopens) -> V2:
    """The translator of a protocol version's wire."""
    return V1(rpc_, store, machines, reopens) if protocol == 1 \
        else V2(rpc_, store, machines, reopens)
