"""The connection phase: initialize, then session/new, as its own small machine.

The per-session machine (``lifecycle``) only exists once a session does, so the rules about
*when* sessions may be created or named live here: the client initializes first (INIT-01), the
agent never hands out a session id twice (SESS-01), neither side names a session that does not
exist (SESS-12, SESS-13).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from statemachine import State, StateMachine

from acp_model.model.session import Ev, check


@dataclass
class ConnectionModel:
    """Extended state of one connection."""

    state: str = "awaiting_initialize"
    version: Any = None
    session_ids: set[str] = field(default_factory=set)

    # --- checks -------------------------------------------------------------------------
    @check("INIT-01")
    def initialized(self, ev: Ev) -> bool:
        """Sessions are created only after the initialize exchange has completed."""
        return self.state in ("ready", "incompatible")

    @check("INIT-05")
    def version_accepted(self, ev: Ev) -> bool:
        """After the agent chose a version other than 2 the client should not carry on."""
        return self.state != "incompatible"

    @check("SESS-01")
    def session_id_fresh(self, ev: Ev) -> bool:
        """session/new hands out an id not used before on this connection."""
        return ev.id not in self.session_ids

    @check("SESS-13")
    def client_names_known_session(self, ev: Ev) -> bool:
        """The client names only sessions created on this connection."""
        return False

    @check("PROMPT-01")
    def prompt_after_setup(self, ev: Ev) -> bool:
        """No session/prompt before initialization and session set-up."""
        return self.state in ("ready", "incompatible")

    @check("SESS-12")
    def agent_names_known_session(self, ev: Ev) -> bool:
        """The agent sends session updates and requests only for existing sessions."""
        return False

    # --- actions ------------------------------------------------------------------------
    def note_version(self, ev: Ev) -> None:
        self.version = ev.kind

    def note_session(self, ev: Ev) -> None:
        self.session_ids.add(ev.id)


class ConnectionLifecycle(StateMachine):
    """Awaiting initialize -> initializing -> ready (or incompatible version)."""

    awaiting_initialize = State("Awaiting initialize", initial=True)
    initializing = State("Initializing")
    ready = State("Ready (v2)")
    incompatible = State("Other version")

    initialize = (
        awaiting_initialize.to(initializing)
        | initializing.to.itself(internal=True)
        | ready.to.itself(internal=True)
        | incompatible.to.itself(internal=True)
    )
    initialized = (
        initializing.to(ready, on="note_version")
        | awaiting_initialize.to(ready, on="note_version")
        | ready.to.itself(internal=True, on="note_version")
        | incompatible.to(ready, on="note_version")
    )
    initialized_other_version = (
        initializing.to(incompatible, on="note_version")
        | awaiting_initialize.to(incompatible, on="note_version")
        | ready.to(incompatible, on="note_version")
        | incompatible.to.itself(internal=True, on="note_version")
    )
    initialize_failed = (
        initializing.to(awaiting_initialize)
        | awaiting_initialize.to.itself(internal=True)
        | ready.to.itself(internal=True)
        | incompatible.to.itself(internal=True)
    )
    session_requested = (
        awaiting_initialize.to.itself(internal=True, cond="initialized")
        | initializing.to.itself(internal=True, cond="initialized")
        | ready.to.itself(internal=True)
        | incompatible.to.itself(internal=True, cond="version_accepted")
    )
    session_created = (
        awaiting_initialize.to.itself(internal=True, cond="session_id_fresh", on="note_session")
        | initializing.to.itself(internal=True, cond="session_id_fresh", on="note_session")
        | ready.to.itself(internal=True, cond="session_id_fresh", on="note_session")
        | incompatible.to.itself(internal=True, cond="session_id_fresh", on="note_session")
    )
    unknown_session_named = (
        awaiting_initialize.to.itself(internal=True, cond="prompt_after_setup")
        | initializing.to.itself(internal=True, cond="prompt_after_setup")
        | ready.to.itself(internal=True, cond="client_names_known_session")
        | incompatible.to.itself(internal=True, cond="client_names_known_session")
    )
    agent_names_unknown_session = (
        awaiting_initialize.to.itself(internal=True, cond="agent_names_known_session")
        | initializing.to.itself(internal=True, cond="agent_names_known_session")
        | ready.to.itself(internal=True, cond="agent_names_known_session")
        | incompatible.to.itself(internal=True, cond="agent_names_known_session")
    )
