"""The reference agent's sessions: the registry, and the requests that make, list, load,
resume and close them."""

from __future__ import annotations

import hashlib
from typing import Any

from acp_model.agents.reference.faults import SessionHooks
from acp_model.agents.reference.host import Host
from acp_model.agents.reference.state import Session
from acp_model.agents.reference.v1 import PROTOCOL_V1
from acp_model.agents.reference.wire import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Ctx,
    RpcFailure,
    is_absolute,
    object_params,
)
from acp_model.agents.reference.work import Work


class Sessions:
    """Every session the agent made, by id; the first one is kept for a planted bug that
    routes later sessions' updates to it."""

    def __init__(self, host: Host, work: Work, hooks: SessionHooks) -> None:
        self.host = host
        self.hooks = hooks  # where a planted bug changes a session's id or a replay
        self.work = work
        self.by_id: dict[str, Session] = {}
        self.first: Session | None = None

    def find(self, sid: Any) -> Session | None:
        """The open session ``sid`` names, if any."""
        s = self.by_id.get(sid) if isinstance(sid, str) else None
        return None if s is None or s.closed else s

    def named(self, params: dict[str, Any]) -> Session:
        """The open session a request's ``sessionId`` names (-32602 otherwise)."""
        sid = params.get("sessionId")
        s = self.find(sid)
        if s is None:
            raise RpcFailure(INVALID_PARAMS, f"unknown session: {sid!r}")
        return s

    def __iter__(self) -> Any:
        return iter(list(self.by_id.values()))

    # --- requests --------------------------------------------------------------------------------
    def on_new(self, ctx: Ctx, params: Any) -> None:
        host = self.host
        p = object_params(params)
        cwd = p.get("cwd")
        if not is_absolute(cwd):
            raise RpcFailure(INVALID_PARAMS, "cwd must be an absolute path")
        if (
            "mcpServers" in p
            and p["mcpServers"] is not None
            and not isinstance(p["mcpServers"], list)
        ):
            raise RpcFailure(INVALID_PARAMS, "mcpServers must be an array")
        index = len(self.by_id) + 1
        digest = hashlib.sha256(f"{host.seed}/{index}".encode()).hexdigest()[:10]
        fresh = f"sess_{index}_{digest}"
        sid = self.hooks.session_id(host, fresh)
        if sid != fresh:  # the planted bug hands out an old id: no new session
            host.reply(ctx, {"sessionId": sid})
            return
        s = Session(id=sid, cwd=cwd, index=index)
        self.by_id[s.id] = s
        if self.first is None:
            self.first = s
        host.reply(ctx, {"sessionId": s.id})
        if host.design.initial_idle == "yes":
            host.state(s, "idle")
        if host.design.background == "chatty":
            self.work.background(s)

    def on_list(self, ctx: Ctx, params: Any) -> None:
        p = object_params(params) if params is not None else {}
        cwd = p.get("cwd")
        if cwd is not None and not is_absolute(cwd):
            raise RpcFailure(INVALID_PARAMS, "cwd must be an absolute path")
        sessions = [
            {"sessionId": s.id, "cwd": s.cwd, "title": f"Session {s.index}"}
            for s in self.by_id.values()
            if not s.closed and (cwd is None or s.cwd == cwd)
        ]
        self.host.reply(ctx, {"sessions": sessions})

    def reopened(self, params: dict[str, Any]) -> Session:
        """The session a session/load or session/resume names, open again (-32602 for one
        this agent never made, or one being closed)."""
        sid = params.get("sessionId")
        s = self.by_id.get(sid) if isinstance(sid, str) else None
        if s is None:
            raise RpcFailure(INVALID_PARAMS, f"unknown session: {sid!r}")
        if s.closing and not s.closed:
            raise RpcFailure(INVALID_PARAMS, "session is closing")
        if not is_absolute(params.get("cwd")):
            raise RpcFailure(INVALID_PARAMS, "cwd must be an absolute path")
        s.closed = s.closing = False
        return s

    def on_resume(self, ctx: Ctx, params: Any) -> None:
        p = object_params(params)
        replay = p.get("replayFrom")
        if replay is not None and not (isinstance(replay, dict) and replay.get("type") == "start"):
            raise RpcFailure(INVALID_PARAMS, "unsupported replayFrom cursor")
        s = self.reopened(p)
        if replay is not None and self.host.protocol != PROTOCOL_V1:
            for mid, entry in list(s.history.items()):
                self.host.update(s, {"sessionUpdate": entry["sessionUpdate"],
                                     "messageId": self.hooks.replay_id or mid,
                                     "content": list(entry["content"])})
        if self.host.newer:  # sdk-2.4.0: the session's current state before the answer
            self.host.state(s, s.shown_state)
        self.host.reply(ctx, {})

    def on_load(self, ctx: Ctx, params: Any) -> None:
        """v1 session/load: the whole conversation as chunks, then the answer (v1
        session-setup.mdx §Loading Sessions); a v2 agent has no such method."""
        if self.host.protocol != PROTOCOL_V1:
            raise RpcFailure(METHOD_NOT_FOUND, "method not found: session/load")
        s = self.reopened(object_params(params))
        for mid, entry in list(s.history.items()):
            for block in entry["content"]:
                update = {"sessionUpdate": f"{entry['sessionUpdate']}_chunk",
                          "messageId": self.hooks.replay_id or mid, "content": block}
                self.host.send({"jsonrpc": "2.0", "method": "session/update", "params": {
                    "sessionId": self.host.route(s), "update": update}})
        self.host.reply(ctx, {})

    def on_close(self, ctx: Ctx, params: Any) -> None:
        s = self.named(object_params(params))
        s.closing = True
        self.host.cancel_session(s)
        self.host.spawn(self._finish_close(ctx, s))

    async def _finish_close(self, ctx: Ctx, s: Session) -> None:
        while s.turn is not None:
            await s.turn.done.wait()
        while s.pending:
            await s.pending[0].settled.wait()
        s.closed = True
        self.host.reply(ctx, {})
