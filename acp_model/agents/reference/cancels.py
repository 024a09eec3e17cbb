"""What a cancel does: ``session/cancel`` (and a close) to a session's prompts, its turn and its
permission requests, and ``$/cancel_request`` to one prompt that is not yet accepted."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from acp_model.agents.reference.faults import Fault
from acp_model.agents.reference.host import Host
from acp_model.agents.reference.permissions import Permissions
from acp_model.agents.reference.prompts import Prompts
from acp_model.agents.reference.state import Session
from acp_model.agents.reference.wire import INVALID_REQUEST, Ctx, RpcFailure

log = logging.getLogger("acp_model.agents.reference")


class Cancels:
    """Marks the prompts and the turn a cancel reaches, and tells the parts that hold the rest
    (held prompts, permission requests); the marks live on those records."""

    def __init__(self, host: Host, prompts: Prompts, perms: Permissions,
                 sessions: Callable[[], list[Session]], find: Callable[[Any], Session | None],
                 fault: Fault) -> None:
        self.host = host
        self.prompts = prompts
        self.perms = perms
        self.sessions = sessions  # every session the agent made
        self.find = find  # the open session an id names
        # a cancel meets three parts' planted bugs: how the notification is read (connection),
        # which sessions it reaches (sessions), what it does to a turn (turns)
        self.fault = fault

    def on_session_cancel(self, params: Any) -> None:
        """The ``session/cancel`` notification."""
        self.fault.connection.on_cancel_notification(self.host)
        sid = params.get("sessionId") if isinstance(params, dict) else None
        s = self.find(sid)
        if s is None:
            log.info("cancel for unknown session %r ignored", sid)
            return
        self.cancel_session(s)
        if self.fault.sessions.cancels_other_sessions():
            for other in self.sessions():
                if other is not s and other.turn is not None:
                    self.cancel_session(other)

    def on_cancel_request(self, params: Any) -> None:
        """``$/cancel_request``: a prompt not yet accepted, or held, is withdrawn."""
        target = params.get("requestId") if isinstance(params, dict) else None
        for s in self.sessions():
            for pend in [*s.pending, *s.queued]:
                if pend.ctx.request_id == target and type(pend.ctx.request_id) is type(target):
                    pend.request_cancelled = True
                    pend.wake.set()
            self.prompts.withdraw_queued(s, target)

    def cancel_session(self, s: Session) -> None:
        """session/cancel (or close) semantics; see A-04, A-10, A-11 and A-14."""
        for pend in s.pending:
            pend.session_cancelled = True
            pend.wake.set()
        turn = s.turn
        if turn is None:
            if not s.pending:
                self.fault.turns.cancel_while_idle(s)
            if self.host.design.idle_cancel == "echo" and not s.pending and not s.closing:
                self.host.state(s, "idle", "cancelled")
            return
        self.prompts.cancel_queued(s)
        if turn.cancelled:
            return  # a second cancel changes nothing
        turn.cancelled = True
        turn.cancel_event.set()
        self.fault.turns.turn_cancelled(s)
        self.perms.withdraw(s, turn)

    def refuse_request(self, ctx: Ctx, params: Any) -> None:
        """``session/cancel`` sent with an id."""
        raise RpcFailure(INVALID_REQUEST, "session/cancel is a notification; send it without id")
