"""The agent's requests that wait for the user: a permission request and a session-scoped
elicitation, each a user-action wait of its session (STATE-05/06 judge how the session reports
it), routed here from :class:`~acp_model.oracle.router.Router` by their wire-table route."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_model.model import messages, reducers, views
from acp_model.model.events import Payload
from acp_model.model.vocab import Event
from acp_model.oracle import wire
from acp_model.oracle.dialects import AskedUser, Translator
from acp_model.oracle.machines import Machines
from acp_model.oracle.shapes import ShapeJudge


class UserAsks:
    """Fires a session's user-action wait for each request the agent makes of the user.
    ``unknown_session`` judges a request naming a session no response created (SESS-12)."""

    def __init__(self, rev: str, machines: Machines, shapes: ShapeJudge, translate: Translator,
                 unknown_session: Callable[[int, Any, str], None]) -> None:
        self.rev, self.machines, self.shapes, self.translate = rev, machines, shapes, translate
        self.unknown_session = unknown_session

    def permission(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str
                   ) -> None:
        """``session/request_permission``: its shape, its subject on the session's view, the
        turn content the translator derives, and the session's user-action wait."""
        self.shapes.findings(messages.permission_request(params, self.rev), idx, what, sid)
        if sid is None or sid not in self.machines.sessions:
            self.unknown_session(idx, sid, what)
            return
        ev = wire.permission_request(idx, req_id, params)
        self.shapes.findings(reducers.judge_permission(self.machines.views[sid], params,
                                                       self.rev), idx, what, sid)
        self.machines.views[sid] = views.apply_permission_subject(self.machines.views[sid],
                                                                  params)
        self.machines.derived(sid, self.translate(AskedUser(sid, idx, what)))
        self.machines.session_event(sid, Event.PERMISSION_REQUEST, ev, what)

    def elicitation(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str
                    ) -> None:
        """A session-scoped elicitation (its params name a session) is a user-action wait of
        that session; a request-scoped one moves no machine ("request-scoped elicitations do
        not themselves change session state", sdk-2.4.0 $defs.CreateElicitationRequest)."""
        if not isinstance(params, dict) or "sessionId" not in params:
            return
        if sid is None or sid not in self.machines.sessions:
            self.unknown_session(idx, sid, what)
            return
        tool = params.get("toolCallId")
        self.machines.session_event(sid, Event.ELICITATION_REQUEST,
                                    Payload(idx, id=req_id,
                                       tool_call_id=tool if isinstance(tool, str) else None),
                                    what)
