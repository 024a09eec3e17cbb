"""What each message uses of what the initialize exchange advertised, and the facts of the
session it reads (model.capabilities decides): the client's requests against the agent's
capabilities, the agent's against the client's, and the updates whose meaning a capability or
an earlier answer fixed (a custom state, a boolean config option, a tool an allow approved)."""

from __future__ import annotations

from typing import Any

from acp_model.model import capabilities, permissions, wire_table
from acp_model.model.check import watches
from acp_model.model.vocab import Reads
from acp_model.oracle.answers import Answers
from acp_model.oracle.machines import Machines
from acp_model.oracle.rpc import OpenRequest
from acp_model.oracle.store import ViolationStore
from acp_model.trace.methods import Method


class AdvertisedUse:
    """Judges each request and update by what was advertised; owns the work each session
    began in a custom state (SDK-STATE-01)."""

    def __init__(self, store: ViolationStore, machines: Machines, answers: Answers) -> None:
        self.store, self.machines, self.answers = store, machines, answers
        self._custom_work: dict[str, tuple[int, str]] = {}  # work begun in a custom state

    @watches(Reads.REQUEST)
    def request(self, direction: str, method: str, params: Any, sid: str | None,
                idx: int, req: OpenRequest) -> None:
        """What the initialize exchange allows this request (model.capabilities); what its
        answer's checks read of it (``req``)."""
        run, told = self.store.run, self.answers.told
        if method == "session/set_config_option" and isinstance(params, dict):
            req.shape = params.get("configId")  # V1-CONFIG-02 reads it in the answer
        if direction == "a2c":
            if method in capabilities.CLIENT_METHODS:
                run(capabilities.client_method_advertised, idx, method, told.client_caps,
                    session=sid)
                run(capabilities.file_in_root_set, idx, method, params,
                    told.roots.get(sid) if sid is not None else None, session=sid)
            return
        if told.agent_caps is None:
            return  # no initialize result yet: INIT-01 judges a client that goes on
        if method in ("auth/login", "auth/logout", "authenticate"):
            run(capabilities.auth_call_allowed, idx, method, params, told.auth_methods)
        if method in (Method.NEW_SESSION, Method.LOAD, Method.RESUME):
            shape = self.answers.shape
            run(capabilities.additional_directories_advertised, idx, params, told.agent_caps,
                shape, session=sid)
            run(capabilities.mcp_transports_advertised, idx, params, told.agent_caps, shape,
                session=sid)
        if method in self.answers.shape.advertised_methods:
            run(capabilities.session_method_advertised, idx, method, told.agent_caps,
                session=sid)
        if method == Method.RESUME and sid is not None:
            roots = told.roots.get(sid)
            run(capabilities.resume_keeps_cwd, idx, params, roots[0] if roots else None,
                session=sid)

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
