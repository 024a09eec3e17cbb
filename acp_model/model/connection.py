"""The connection phase: initialize, then session/new, as its own small machine.

The per-session machine (``model/lifecycle.py``) only exists once a session does, so the rules about
*when* sessions may be created or named live here: the client initializes first (INIT-01), the
agent never hands out a session id twice (SESS-01), neither side names a session that does not
exist (SESS-12, SESS-13), and an agent that advertised ``session`` implements its baseline
methods (INIT-10).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from statemachine import State, StateMachine

from acp_model.model.check import check
from acp_model.model.context import Context
from acp_model.model.engine import guards
from acp_model.model.events import Payload
from acp_model.model.lifecycle import stay
from acp_model.model.vocab import ConnState, ErrorCode, Role


@dataclass
class ConnectionModel:
    """Extended state of one connection."""

    state: str = ConnState.AWAITING_INITIALIZE
    version: Any = None
    # each session id handed out -> the response that first handed it out (SESS-01's proof)
    session_ids: dict[str, int] = field(default_factory=dict)
    ctx: Context = field(default_factory=Context)

    # --- checks -------------------------------------------------------------------------
    @check("INIT-01", role=Role.GUARD)
    def initialize_done(self, ev: Payload) -> bool:
        """Sessions are created only after the initialize exchange has completed."""
        return self.state in (ConnState.READY, ConnState.INCOMPATIBLE)

    @check("INIT-05", role=Role.GUARD)
    def version_accepted(self, ev: Payload) -> bool:
        """After the agent chose a version other than 2 the client should not carry on."""
        return self.state != ConnState.INCOMPATIBLE

    @check("SESS-01", evidence="reused_evidence", role=Role.GUARD)
    def session_id_fresh(self, ev: Payload) -> bool:
        """session/new hands out an id not used before on this connection."""
        return ev.id not in self.session_ids

    @check("SESS-13", role=Role.GUARD)
    def client_names_known_session(self, ev: Payload) -> bool:
        """The client names only sessions created on this connection."""
        return False

    @check("PROMPT-01", role=Role.GUARD)
    def prompt_after_setup(self, ev: Payload) -> bool:
        """No session/prompt before initialization and session set-up."""
        return self.state in (ConnState.READY, ConnState.INCOMPATIBLE)

    @check("INIT-10", role=Role.GUARD)
    def session_methods_implemented(self, ev: Payload) -> bool:
        """An agent advertising `session` implements its baseline methods (no -32601)."""
        return not (self.ctx.session_advertised and ev.error_code == ErrorCode.METHOD_NOT_FOUND)

    @check("SESS-12", role=Role.GUARD)
    def agent_names_known_session(self, ev: Payload) -> bool:
        """The agent sends session updates and requests only for existing sessions."""
        return False

    # --- actions ------------------------------------------------------------------------
    def note_version(self, ev: Payload) -> None:
        self.version = ev.version

    def note_session(self, ev: Payload) -> None:
        self.session_ids.setdefault(ev.id, ev.idx)

    # --- proofs -------------------------------------------------------------------------
    def reused_evidence(self, ev: Payload) -> tuple[str, list[tuple[int, str]]] | None:
        """Where the id was handed out first: the message a maintainer compares this one to."""
        first = self.session_ids.get(ev.id)
        if first is None:
            return None
        return (f"session id {ev.id!r} was handed out before, at #{first}",
                [(first, "the same session id handed out before")])


class ConnectionLifecycle(StateMachine):
    """Awaiting initialize -> initializing -> ready (or incompatible version)."""

    awaiting_initialize = State("Awaiting initialize", initial=True)
    initializing = State("Initializing")
    ready = State("Ready (v2)")
    incompatible = State("Other version")

    initialize = (
        awaiting_initialize.to(initializing)
        | stay(initializing, ready, incompatible)
    )
    initialized = (
        initializing.to(ready, on="note_version")
        | awaiting_initialize.to(ready, on="note_version")
        | stay(ready, on="note_version")
        | incompatible.to(ready, on="note_version")
    )
    initialized_other_version = (
        initializing.to(incompatible, on="note_version")
        | awaiting_initialize.to(incompatible, on="note_version")
        | ready.to(incompatible, on="note_version")
        | stay(incompatible, on="note_version")
    )
    initialize_failed = (
        initializing.to(awaiting_initialize)
        | stay(awaiting_initialize, ready, incompatible)
    )
    session_requested = (
        stay(awaiting_initialize, initializing, cond=guards(ConnectionModel.initialize_done))
        | stay(ready)
        | stay(incompatible, cond=guards(ConnectionModel.version_accepted))
    )
    session_created = stay(awaiting_initialize, initializing, ready, incompatible,
                           cond=guards(ConnectionModel.session_id_fresh), on="note_session")
    session_method_missing = stay(awaiting_initialize, initializing, ready, incompatible,
                                  cond=guards(ConnectionModel.session_methods_implemented))
    unknown_session_named = (
        stay(awaiting_initialize, initializing, cond=guards(ConnectionModel.prompt_after_setup))
        | stay(ready, incompatible, cond=guards(ConnectionModel.client_names_known_session))
    )
    agent_names_unknown_session = stay(awaiting_initialize, initializing, ready, incompatible,
                                       cond=guards(ConnectionModel.agent_names_known_session))
