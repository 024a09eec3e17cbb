"""The reference agent: the connection, JSON-RPC dispatch, and the reports its parts share.

Its parts own their state: :class:`~.output.Output` (what is written), :class:`~.sessions.Sessions`
(the registry and the session methods), :class:`~.prompts.Prompts` (a prompt from the request to
its turn), :class:`~.work.Work` (a turn from running to idle), :class:`~.permissions.Permissions`
(requests and answers), :class:`~.quiesce.Quiescence` (the tests' causal wait). They see the
agent as a :class:`~.host.Host`. What the agent does where the text leaves it a choice is its
:class:`~acp_model.agents.design.Design`, and a planted bug is its
:class:`~acp_model.agents.reference.faults.Fault`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

import orjson

from acp_model.agents.design import Design
from acp_model.agents.reference import v1
from acp_model.agents.reference.faults import Fault
from acp_model.agents.reference.output import Output
from acp_model.agents.reference.permissions import Permissions
from acp_model.agents.reference.prompts import Prompts
from acp_model.agents.reference.quiesce import QUIESCE, Quiescence
from acp_model.agents.reference.sessions import Sessions
from acp_model.agents.reference.state import Session
from acp_model.agents.reference.wire import (
    AGENT_INFO,
    CAPABILITIES,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROTOCOL_VERSION,
    Batch,
    Ctx,
    RpcFailure,
    object_params,
)
from acp_model.agents.reference.work import Work
from acp_model.agents.stdio import EOF, OVERSIZE, StdoutWriter

__all__ = ["ACCEPT_DELAYS", "QUIESCE", "TIMINGS", "Agent"]

log = logging.getLogger("acp_model.agents.reference")

# (base, span) seconds: the pause after a step is base + span * step.jitter.
TIMINGS: dict[str, tuple[float, float]] = {
    "fast": (0.0, 0.0),
    "real": (0.002, 0.004),
    "slow": (0.02, 0.03),
}
ACCEPT_DELAYS: dict[str, tuple[float, float]] = {
    "fast": (0.0, 0.0),
    "real": (0.001, 0.002),
    "slow": (0.01, 0.02),
}


class Agent:
    """Protocol logic; every method runs on the event loop thread."""

    def __init__(self, *, writer: StdoutWriter, fault: Fault | None = None,
                 design: Design | None = None, forced: dict[str, bool] | None = None,
                 seed: int = 0, timing: str = "fast", spec: str = "seed") -> None:
        self.spec = spec  # the revision of the text it follows: "seed" or "sdk-2.4.0"
        self.fault = fault or Fault()
        self.design = design or Design()
        self.forced = forced or {}  # force_tool / force_permission ... (see mutants.py)
        self.seed = seed
        self.initialized = False
        self.protocol = PROTOCOL_VERSION  # 1 when the client asked for v1 (reference/v1.py)
        self.finished = asyncio.Event()
        self.out = Output(writer, self.design.writes, self.finished)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.perms = Permissions(self)
        self.work = Work(self, self.perms, TIMINGS[timing], self._turn_ended)
        self.sessions = Sessions(self, self.work)
        self.prompts = Prompts(self, self.work, ACCEPT_DELAYS[timing], self.sessions.named)
        self.quiescence = Quiescence(self.reply)

    @property
    def first_session(self) -> Session | None:
        return self.sessions.first

    def shut_down(self) -> None:
        """Write what is still buffered and stop every task (stdin is at its end)."""
        self.out.flush()
        for task in list(self._tasks):
            task.cancel()

    # ------------------------------------------------------------------ output

    def send(self, msg: Any) -> None:
        self.out.send(msg)

    def send_raw(self, line: bytes) -> None:
        self.out.send_raw(line)

    def reply(self, ctx: Ctx, result: Any) -> None:
        self.out.reply(ctx, result)

    def reply_error(self, ctx: Ctx, code: int, message: str) -> None:
        self.out.reply_error(ctx, code, message)

    def route(self, s: Session) -> str:
        """The sessionId put on this session's updates."""
        return self.fault.route(self, s)

    def update(self, s: Session, update: dict[str, Any]) -> None:
        self._remember(s, update)
        for item in (v1.translate(update, s.v1_tools) if self.protocol == v1.PROTOCOL_V1
                     else [update]):
            params = {"sessionId": self.route(s), "update": item}
            self.send({"jsonrpc": "2.0", "method": "session/update", "params": params})

    @property
    def newer(self) -> bool:
        """Does it follow the sdk-2.4.0 revision (receipts, background lists, held prompts
        cancelled by a cancel)?"""
        return self.spec != "seed"

    @property
    def sends_receipts(self) -> bool:
        """Does it answer an accepted prompt with ``{messageId}``, the newer revision's
        receipt (its own revision, or the ``result=message-id`` design)?"""
        return self.newer or self.design.result == "message-id"

    def state(self, s: Session, state: str, stop_reason: str | None = None) -> None:
        if self.protocol == v1.PROTOCOL_V1:
            if state == "idle" and stop_reason is not None:
                self.answer_turn(s, stop_reason)
            return
        s.shown_state = state
        update: dict[str, Any] = {"sessionUpdate": "state_update", "state": state}
        if stop_reason is not None:
            update["stopReason"] = stop_reason
        if self.newer and s.background_listed and self.fault.lists_background(s, state):
            update["background"] = [{"type": "tool_call", "toolCallId": t}
                                    for t in s.background]
        self.update(s, update)

    def answer_turn(self, s: Session, stop_reason: str) -> None:
        """v1: the end of a turn is the response to its prompts."""
        waiting, s.v1_prompts = s.v1_prompts, []
        for ctx in waiting:
            if stop_reason in v1.STOP_REASONS:
                self.reply(ctx, {"stopReason": stop_reason})
            else:
                self.reply_error(ctx, INTERNAL_ERROR, f"the turn failed ({stop_reason})")

    def running(self, s: Session) -> None:
        """Report running (twice under the design ``running=repeat``)."""
        self.state(s, "running")
        if self.design.running == "repeat":
            self.state(s, "running")

    def judge(self, answer: tuple[str, Any]) -> str:
        return self.perms.judge(answer)

    def _remember(self, s: Session, update: dict[str, Any]) -> None:
        """Keep message history for ``session/resume`` with replay."""
        kind = update.get("sessionUpdate")
        mid = update.get("messageId")
        if not isinstance(mid, str) or not isinstance(kind, str):
            return
        family = kind.removesuffix("_chunk")
        if family not in ("user_message", "agent_message", "agent_thought"):
            return
        entry = s.history.setdefault(mid, {"sessionUpdate": family, "content": []})
        if kind.endswith("_chunk"):
            entry["content"].append(update["content"])
        elif "content" in update:
            entry["content"] = list(update["content"] or [])

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("task failed", exc_info=task.exception())

    def _turn_ended(self, s: Session) -> None:
        self.prompts.release_queued(s)

    # ------------------------------------------------------------------- input

    def on_input(self, item: object) -> None:
        """Entry point for every stdin line (called on the loop by the reader thread)."""
        if item is EOF:
            self.finished.set()
            return
        if item is OVERSIZE:
            self._parse_error("line too long")
            return
        assert isinstance(item, bytes)
        if not item.strip():
            return
        try:
            msg = orjson.loads(item)
        except orjson.JSONDecodeError:
            self._parse_error("invalid JSON")
            return
        try:
            if isinstance(msg, list):
                if not msg:
                    self.reply_error(Ctx(None), INVALID_REQUEST, "empty batch")
                    return
                batch = Batch(self.send, self.fault.empty_batch_reply)
                for entry in msg:
                    self.dispatch(entry, batch)
                batch.close()
            else:
                self.dispatch(msg, None)
        except Exception:  # never let one message kill the agent
            log.exception("internal error while dispatching")

    def _parse_error(self, why: str) -> None:
        self.reply_error(Ctx(None), PARSE_ERROR, f"parse error: {why}")

    def _invalid(self, batch: Batch | None, request_id: Any, why: str) -> None:
        if batch is not None:
            batch.expect()
        self.reply_error(Ctx(request_id, batch), INVALID_REQUEST, f"invalid request: {why}")

    def dispatch(self, msg: Any, batch: Batch | None) -> None:
        """Classify one JSON-RPC object; invalid objects get -32600 as JSON-RPC 2.0 says."""
        if not isinstance(msg, dict):
            self._invalid(batch, None, "not an object")
            return
        rid = msg.get("id")
        id_ok = (
            rid is None or isinstance(rid, str) or (isinstance(rid, int) and type(rid) is not bool)
        )
        reply_id = rid if id_ok else None
        if "method" not in msg and ("result" in msg or "error" in msg):
            if msg.get("jsonrpc") == "2.0":
                self.perms.handle_response(msg)
            else:  # never answer a response, even a malformed one
                log.info("ignoring malformed response %r", rid)
        elif msg.get("jsonrpc") != "2.0":
            self._invalid(batch, reply_id, 'jsonrpc must be "2.0"')
        elif "method" in msg:
            method, params = msg["method"], msg.get("params")
            if not isinstance(method, str):
                self._invalid(batch, reply_id, "method must be a string")
            elif not id_ok:
                self._invalid(batch, None, "id must be a string, an integer or null")
            elif "params" in msg and not isinstance(params, dict | list):
                self._invalid(batch, reply_id, "params must be an object or an array")
            elif "id" in msg:
                self.handle_request(Ctx(rid, batch), method, params)
            else:
                self.handle_notification(method, params)
        else:
            self._invalid(batch, reply_id, "neither a request nor a response")

    def handle_request(self, ctx: Ctx, method: str, params: Any) -> None:
        if ctx.batch is not None:
            ctx.batch.expect()
        try:
            if method == "initialize":
                self.on_initialize(ctx, params)
                return
            if method == QUIESCE:
                self.quiescence.request(ctx)
                return
            if not self.initialized:
                raise RpcFailure(INVALID_REQUEST, "connection not initialized")
            handler = {
                "session/new": self.sessions.on_new,
                "session/list": self.sessions.on_list,
                "session/resume": self.sessions.on_resume,
                "session/load": self.sessions.on_load,
                "session/close": self.sessions.on_close,
                "session/prompt": self.prompts.on_prompt,
                "session/cancel": self.on_cancel_request,
            }.get(method)
            if handler is None:
                raise RpcFailure(METHOD_NOT_FOUND, f"method not found: {method}")
            handler(ctx, params)
        except RpcFailure as exc:
            self.reply_error(ctx, exc.code, exc.message)
        except Exception:
            log.exception("internal error in %s", method)
            self.reply_error(ctx, INTERNAL_ERROR, "internal error")

    def handle_notification(self, method: str, params: Any) -> None:
        if method == "session/cancel":
            self.fault.on_cancel_notification(self)
            sid = params.get("sessionId") if isinstance(params, dict) else None
            s = self.sessions.find(sid)
            if s is None:
                log.info("cancel for unknown session %r ignored", sid)
                return
            self.cancel_session(s)
            if self.fault.cancels_other_sessions():
                for other in self.sessions:
                    if other is not s and other.turn is not None:
                        self.cancel_session(other)
        elif method == "$/cancel_request":
            target = params.get("requestId") if isinstance(params, dict) else None
            for s in self.sessions:
                for pend in [*s.pending, *s.queued]:
                    if pend.ctx.request_id == target and type(pend.ctx.request_id) is type(target):
                        pend.request_cancelled = True
                        pend.wake.set()
                self.prompts.withdraw_queued(s, target)
        else:
            log.info("ignoring notification %s", method)

    # -------------------------------------------------------------- handlers

    def on_initialize(self, ctx: Ctx, params: Any) -> None:
        if self.initialized:
            raise RpcFailure(INVALID_REQUEST, "already initialized")
        p = object_params(params)
        version = p.get("protocolVersion")
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise RpcFailure(INVALID_PARAMS, "protocolVersion must be a non-negative integer")
        result: dict[str, Any] = {
            "protocolVersion": PROTOCOL_VERSION,  # 2 is requested or our latest version
            "capabilities": CAPABILITIES,
            "info": AGENT_INFO,
        }
        if version == v1.PROTOCOL_V1:  # the client speaks v1: so do we
            self.protocol = v1.PROTOCOL_V1
            result = v1.initialize_result()
        self.initialized = True
        self.reply(ctx, self.fault.initialize_result(result))
        self.fault.after_initialize(self)

    def cancel_session(self, s: Session) -> None:
        """session/cancel (or close) semantics; see A-04, A-10, A-11 and A-14."""
        for pend in s.pending:
            pend.session_cancelled = True
            pend.wake.set()
        turn = s.turn
        if turn is None:
            if not s.pending:
                self.fault.cancel_while_idle(s)
            if self.design.idle_cancel == "echo" and not s.pending and not s.closing:
                self.state(s, "idle", "cancelled")
            return
        self.prompts.cancel_queued(s)
        if turn.cancelled:
            return  # a second cancel changes nothing
        turn.cancelled = True
        turn.cancel_event.set()
        self.fault.turn_cancelled(s)
        self.perms.withdraw(s, turn)

    def on_cancel_request(self, ctx: Ctx, params: Any) -> None:
        raise RpcFailure(INVALID_REQUEST, "session/cancel is a notification; send it without id")
