"""What each message uses of what the initialize exchange advertised, and the facts of the
session it reads (model.capabilities decides): the client's requests against the agent's
capabilities, the agent's against the client's, and the updates whose meaning a capability or
an earlier answer fixed (a custom state, a boolean config option, a tool an allow approved)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_model.model import reducers, views, wire_table
from acp_model.model.answering import Asking, Showing
from acp_model.model.check import CheckMeta, Dispatch, dispatch_everywhere, watches
from acp_model.model.vocab import Reads, State
from acp_model.oracle.answers import Answers
from acp_model.oracle.machines import Machines
from acp_model.oracle.rpc import OpenRequest
from acp_model.oracle.store import ViolationStore

# the checks of what a message of one method or update kind uses: those reading its row's
# ``use_reads``
UseEntry = tuple[tuple[Callable[..., str | None], CheckMeta], ...]
_STANDARD = frozenset({State.RUNNING, State.REQUIRES_ACTION})  # the states a turn owes


class AdvertisedUse:
    """Judges each request and update by what was advertised, through the checks declaring
    its row's ``use_reads``; keeps the facts they read across messages (an allow that
    approved a tool call, the work each session began in a custom state: SDK-STATE-01)."""

    def __init__(self, store: ViolationStore, machines: Machines, answers: Answers) -> None:
        self.store, self.machines, self.answers = store, machines, answers
        self._custom_work: dict[str, tuple[int, str]] = {}  # work begun in a custom state
        self._by_kind: Dispatch = dispatch_everywhere(answers.rev)
        # method -> its checks and its control (a target in the client's view), on first use
        self._entries: dict[str, tuple[UseEntry, views.Control | None]] = {}
        self._shown: dict[Any, UseEntry] = {}  # update kind -> its checks, on first use

    @watches(Reads.REQUEST)
    def request(self, direction: str, method: str, params: Any, sid: str | None,
                idx: int, req: OpenRequest) -> None:
        """What the initialize exchange allows this request: the checks declaring its row's
        ``use_reads``, on one record (the client's requests once the agent's initialize
        result is in: before it, INIT-01 judges a client that goes on); what its answer's
        checks read of it (``req``): a control's target as the client's view showed it."""
        told = self.answers.told
        if method == "session/set_config_option" and isinstance(params, dict):
            req.shape = params.get("configId")  # V1-CONFIG-02 reads it in the answer
        found = self._entries.get(method)
        entry, control = found if found is not None else self._entry(method)
        if not entry or (direction == "c2a" and told.agent_caps is None):
            return
        asking = Asking(method, params, sid, told, self.answers.shape)
        if control is not None and isinstance(params, dict):
            target = params.get(control.target_param)
            advertised, ended = reducers.cancel_target(
                self.machines.views.get(sid) if sid is not None else None, control, target)
            asking.target = (control.noun, str(target), advertised)
            req.shape = (control.noun, str(target), ended)  # SDK-TOOL-03 reads it
        self.store.run_entry(entry, idx, asking, session=sid)

    def _entry(self, method: str) -> tuple[UseEntry, views.Control | None]:
        """The checks of what a request of ``method`` uses: those reading its row's
        ``use_reads`` (built once per method), and the row's control."""
        row = wire_table.messages().get(method)
        kind = row.use_reads if row is not None else None
        entry = self._by_kind.get(kind, ()) if kind is not None else ()
        found = self._entries[method] = (entry, row.control if row is not None else None)
        return found

    @watches(Reads.UPDATE)
    def update(self, sid: str, update: dict[str, Any], kind: Any, idx: int, *,
               history: bool = False) -> None:
        """A session/update of a known session, judged by the checks declaring its row's
        ``use_reads`` with the facts it ends: the allow that approved its tool call (popped by
        the status it reports; a status in a reopen's replayed ``history`` says nothing about
        the tool now, and one of work the client has cancelled since may end it unrun, so
        TOOL-12 then watches nothing), the custom-state work its idle ends."""
        told = self.answers.told
        allowed_at = None
        tool = update.get("toolCallId")
        if isinstance(tool, str) and (sid, tool) in told.allowed:
            if history or self.machines.sessions[sid].cancel_book.owing():
                told.allowed.pop((sid, tool))
            elif update.get("status") is not None:
                allowed_at = told.allowed.pop((sid, tool))
        custom = self._standard_states(sid, update.get("state"), idx) \
            if kind in wire_table.state_kinds() else None
        entry = self._shown.get(kind)
        if entry is None:
            row = wire_table.updates().get(kind) if isinstance(kind, str) else None
            entry = self._shown[kind] = self._by_kind.get(row.use_reads, ()) \
                if row is not None and row.use_reads is not None else ()
        if entry:
            self.store.run_entry(entry, idx, Showing(sid, update, told, self.answers.shape,
                                                     allowed_at, custom), session=sid)

    def _standard_states(self, sid: str, state: Any, idx: int) -> tuple[int, str] | None:
        """Keeps the work that began in a custom state; returns it when this idle ends it
        and no standard state was reported since (SDK-STATE-01 judges it)."""
        if state in _STANDARD:
            self._custom_work.pop(sid, None)
        elif state == State.IDLE:
            return self._custom_work.pop(sid, None)
        elif isinstance(state, str) and self.machines.views[sid].state in (None, State.IDLE):
            self._custom_work[sid] = (idx, state)
        return None
