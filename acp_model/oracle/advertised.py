"""What each message uses of what the initialize exchange advertised, and the facts of the
session it reads (model.capabilities decides): the client's requests against the agent's
capabilities, the agent's against the client's, and the updates whose meaning a capability or
an earlier answer fixed (a custom state, a boolean config option, a tool an allow approved)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_model.model import capabilities, permissions, wire_table
from acp_model.model.answering import Asking
from acp_model.model.check import CheckMeta, Dispatch, dispatch_everywhere, watches
from acp_model.model.vocab import Reads
from acp_model.oracle.answers import Answers
from acp_model.oracle.machines import Machines
from acp_model.oracle.rpc import OpenRequest
from acp_model.oracle.store import ViolationStore

# the checks of what a request of one method uses: those reading its row's ``use_reads``
UseEntry = tuple[tuple[Callable[..., str | None], CheckMeta], ...]


class AdvertisedUse:
    """Judges each request and update by what was advertised; owns the work each session
    began in a custom state (SDK-STATE-01)."""

    def __init__(self, store: ViolationStore, machines: Machines, answers: Answers) -> None:
        self.store, self.machines, self.answers = store, machines, answers
        self._custom_work: dict[str, tuple[int, str]] = {}  # work begun in a custom state
        self._by_kind: Dispatch = dispatch_everywhere(answers.rev)
        self._entries: dict[str, UseEntry] = {}  # method -> its checks, found on first use

    @watches(Reads.REQUEST)
    def request(self, direction: str, method: str, params: Any, sid: str | None,
                idx: int, req: OpenRequest) -> None:
        """What the initialize exchange allows this request: the checks declaring its row's
        ``use_reads``, on one record (the client's requests once the agent's initialize
        result is in: before it, INIT-01 judges a client that goes on); what its answer's
        checks read of it (``req``)."""
        told = self.answers.told
        if method == "session/set_config_option" and isinstance(params, dict):
            req.shape = params.get("configId")  # V1-CONFIG-02 reads it in the answer
        entry = self._entries.get(method)
        if entry is None:
            entry = self._entry(method)
        if entry and (direction == "a2c" or told.agent_caps is not None):
            self.store.run_entry(entry, idx, Asking(method, params, sid, told,
                                                    self.answers.shape), session=sid)

    def _entry(self, method: str) -> UseEntry:
        """The checks of what a request of ``method`` uses: those reading its row's
        ``use_reads`` (built once per method)."""
        row = wire_table.messages().get(method)
        kind = row.use_reads if row is not None else None
        entry = self._entries[method] = self._by_kind.get(kind, ()) if kind is not None else ()
        return entry

    @watches(Reads.UPDATE)
    def update(self, sid: str, update: dict[str, Any], kind: Any, idx: int, *,
               history: bool = False) -> None:
        """A session/update of a known session: the tool an allow approved, the standard
        states, v1's boolean config options. A status in a reopen's replayed ``history``
        says nothing about the tool now, and one of work the client has cancelled since may
        end it unrun (TOOL-12 then watches nothing)."""
        told = self.answers.told
        tool = update.get("toolCallId")
        if isinstance(tool, str) and (sid, tool) in told.allowed:
            if history or self.machines.sessions[sid].cancel_book.owing():
                told.allowed.pop((sid, tool))
            elif update.get("status") is not None:
                self.store.run(permissions.allowed_tool_reported_running, idx, tool,
                               update["status"], told.allowed.pop((sid, tool)), session=sid)
        if kind in wire_table.state_kinds():
            self._standard_states(sid, update.get("state"), idx)
        if kind == Reads.NOTICE:
            self.store.run(capabilities.notice_advertised, idx, told.client_caps, session=sid)
        if kind == Reads.CONFIG_OPTION_UPDATE and self.answers.shape.gates_boolean_options:
            self.store.run(capabilities.boolean_options_advertised, idx,
                           update.get("configOptions"), told.client_caps, session=sid)

    def _standard_states(self, sid: str, state: Any, idx: int) -> None:
        """Work that began in a custom state and reported no standard one before its idle
        (SDK-STATE-01)."""
        if state in ("running", "requires_action"):
            self._custom_work.pop(sid, None)
        elif state == "idle":
            began = self._custom_work.pop(sid, None)
            if began is not None:
                self.store.run(capabilities.custom_state_advertised, idx, began[1], began[0],
                               self.answers.told.client_caps, session=sid)
        elif isinstance(state, str) and self.machines.views[sid].state in (None, "idle"):
            self._custom_work[sid] = (idx, state)
