"""The reference agent's core: output, JSON-RPC dispatch, the connection and session methods.

Prompts, turns and permissions are the mixins of :mod:`.prompts`, :mod:`.work` and
:mod:`.permissions`; what the agent does where the text leaves it a choice is its
:class:`~acp_model.agents.design.Design`, and a planted bug is its
:class:`~acp_model.agents.reference.faults.Fault`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Coroutine
from typing import Any

import orjson

from acp_model.agents.design import Design
from acp_model.agents.reference import v1
from acp_model.agents.reference.faults import Fault
from acp_model.agents.reference.permissions import PermissionsMixin
from acp_model.agents.reference.prompts import PromptsMixin
from acp_model.agents.reference.state import PermWait, Session
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
    is_absolute,
)
from acp_model.agents.reference.work import WorkMixin
from acp_model.agents.stdio import EOF, OVERSIZE, StdoutWriter

log = logging.getLogger("acp_model.agents.reference")

QUIESCE = "_acp_model/quiesce"
"""A test-only extension request: answered (``{}``) once the agent has nothing left to do
without new input, so a test can await the proof that a message will never come instead of
waiting out a timed absence window."""

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


def quiescent(loop: asyncio.AbstractEventLoop) -> bool:
    """Nothing will run on ``loop`` until new input arrives: no callback is ready and no timer
    (a think time, a grace period) is pending.

    Called from a task step, so the caller's own wake-up is not in the ready queue. It reads
    the private queues of CPython's ``BaseEventLoop``: asyncio offers no public view, and this
    is a test hook of the reference agent only.
    """
    ready = getattr(loop, "_ready", None)
    scheduled = getattr(loop, "_scheduled", None)
    if ready is None or scheduled is None:
        raise RuntimeError("quiesce needs CPython's asyncio event loop")
    return not ready and all(handle.cancelled() for handle in scheduled)


class Agent(PromptsMixin, WorkMixin, PermissionsMixin):
    """Protocol logic; every method runs on the event loop thread."""

    def __init__(self, *, writer: StdoutWriter, fault: Fault | None = None,
                 design: Design | None = None, forced: dict[str, bool] | None = None,
                 seed: int = 0, timing: str = "fast", spec: str = "seed") -> None:
        self.writer = writer
        self.spec = spec  # the revision of the text it follows: "seed" or "sdk-2.4.0"
        self.fault = fault or Fault()
        self.design = design or Design()
        self.forced = forced or {}  # force_tool / force_permission ... (see mutants.py)
        self.seed = seed
        self.timing = TIMINGS[timing]
        self.accept_timing = ACCEPT_DELAYS[timing]
        self.initialized = False
        self.protocol = PROTOCOL_VERSION  # 1 when the client asked for v1 (reference/v1.py)
        self.sessions: dict[str, Session] = {}
        self.first_session: Session | None = None
        self.perm_waiters: dict[int, PermWait] = {}
        self.next_request_id = 0
        self.finished = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._outbox: list[dict[str, Any]] = []
        self._pending_lines: list[bytes] = []
        self._flush_scheduled = False
        self._quiesce_waiting: list[Ctx] = []
        self._quiesce_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ output

    def send(self, msg: Any) -> None:
        """Write one message the way the design's ``writes`` axis says."""
        writes = self.design.writes
        if writes == "batch-array" and isinstance(msg, dict) \
                and msg.get("method") == "session/update":
            self._outbox.append(msg)
            if len(self._outbox) >= 3:
                self._flush()
            else:
                self._schedule_flush()
            return
        if writes == "lines":
            self._pending_lines.append(orjson.dumps(msg))
            self._schedule_flush()
            return
        self._flush()
        line = orjson.dumps(msg)
        if writes == "split" and len(line) > 1:
            cut = len(line) // 2
            self.writer.write(line[:cut])
            self.writer.write(line[cut:] + b"\n")
        else:
            self.writer.write_line(line)
        if self.writer.broken:
            self.finished.set()

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._outbox:
            batch, self._outbox = self._outbox, []
            self.writer.write_line(orjson.dumps(batch if len(batch) > 1 else batch[0]))
        if self._pending_lines:
            lines, self._pending_lines = self._pending_lines, []
            self.writer.write(b"".join(line + b"\n" for line in lines))

    def send_raw(self, line: bytes) -> None:
        self._flush()
        self.writer.write_line(line)

    def reply(self, ctx: Ctx, result: Any) -> None:
        self._answer(ctx, {"jsonrpc": "2.0", "id": ctx.request_id, "result": result})

    def reply_error(self, ctx: Ctx, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        self._answer(ctx, {"jsonrpc": "2.0", "id": ctx.request_id, "error": error})

    def _answer(self, ctx: Ctx, response: dict[str, Any]) -> None:
        if ctx.batch is not None:
            ctx.batch.add(response)
        else:
            self.send(response)

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

    def spawn_quiesce(self, ctx: Ctx) -> None:
        """Answer ``ctx`` once the agent is quiescent (see :data:`QUIESCE`).

        One checker serves every pending request (two checkers would each see the other's
        wake-up and never agree the loop is idle); it is not one of the agent's ``_tasks``.
        """
        self._quiesce_waiting.append(ctx)
        if self._quiesce_task is None:
            self._quiesce_task = asyncio.get_running_loop().create_task(self._quiesce())

    async def _quiesce(self) -> None:
        loop = asyncio.get_running_loop()
        while not quiescent(loop):
            await asyncio.sleep(0)
        waiting, self._quiesce_waiting = self._quiesce_waiting, []
        self._quiesce_task = None
        for ctx in waiting:
            self.reply(ctx, {})

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("task failed", exc_info=task.exception())

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
                batch = Batch(self)
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
                self.handle_response(msg)
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
                self.spawn_quiesce(ctx)
                return
            if not self.initialized:
                raise RpcFailure(INVALID_REQUEST, "connection not initialized")
            handler = {
                "session/new": self.on_new,
                "session/list": self.on_list,
                "session/resume": self.on_resume,
                "session/close": self.on_close,
                "session/prompt": self.on_prompt,
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
            s = self.sessions.get(sid) if isinstance(sid, str) else None
            if s is None or s.closed:
                log.info("cancel for unknown session %r ignored", sid)
                return
            self.cancel_session(s)
            if self.fault.cancels_other_sessions():
                for other in self.sessions.values():
                    if other is not s and other.turn is not None:
                        self.cancel_session(other)
        elif method == "$/cancel_request":
            target = params.get("requestId") if isinstance(params, dict) else None
            for s in self.sessions.values():
                for pend in [*s.pending, *s.queued]:
                    if pend.ctx.request_id == target and type(pend.ctx.request_id) is type(target):
                        pend.request_cancelled = True
                        pend.wake.set()
                self.withdraw_queued(s, target)
        else:
            log.info("ignoring notification %s", method)

    # -------------------------------------------------------------- handlers

    @staticmethod
    def _obj(params: Any) -> dict[str, Any]:
        if not isinstance(params, dict):
            raise RpcFailure(INVALID_PARAMS, "params must be an object")
        return params

    def _session(self, params: dict[str, Any]) -> Session:
        sid = params.get("sessionId")
        s = self.sessions.get(sid) if isinstance(sid, str) else None
        if s is None or s.closed:
            raise RpcFailure(INVALID_PARAMS, f"unknown session: {sid!r}")
        return s

    def on_initialize(self, ctx: Ctx, params: Any) -> None:
        if self.initialized:
            raise RpcFailure(INVALID_REQUEST, "already initialized")
        p = self._obj(params)
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

    def on_new(self, ctx: Ctx, params: Any) -> None:
        p = self._obj(params)
        cwd = p.get("cwd")
        if not is_absolute(cwd):
            raise RpcFailure(INVALID_PARAMS, "cwd must be an absolute path")
        if (
            "mcpServers" in p
            and p["mcpServers"] is not None
            and not isinstance(p["mcpServers"], list)
        ):
            raise RpcFailure(INVALID_PARAMS, "mcpServers must be an array")
        index = len(self.sessions) + 1
        digest = hashlib.sha256(f"{self.seed}/{index}".encode()).hexdigest()[:10]
        fresh = f"sess_{index}_{digest}"
        sid = self.fault.session_id(self, fresh)
        if sid != fresh:  # the planted bug hands out an old id: no new session
            self.reply(ctx, {"sessionId": sid})
            return
        s = Session(id=sid, cwd=cwd, index=index)
        self.sessions[s.id] = s
        if self.first_session is None:
            self.first_session = s
        self.reply(ctx, {"sessionId": s.id})
        if self.design.initial_idle == "yes":
            self.state(s, "idle")
        if self.design.background == "chatty":
            self.background(s)

    def on_list(self, ctx: Ctx, params: Any) -> None:
        p = self._obj(params) if params is not None else {}
        cwd = p.get("cwd")
        if cwd is not None and not is_absolute(cwd):
            raise RpcFailure(INVALID_PARAMS, "cwd must be an absolute path")
        sessions = [
            {"sessionId": s.id, "cwd": s.cwd, "title": f"Session {s.index}"}
            for s in self.sessions.values()
            if not s.closed and (cwd is None or s.cwd == cwd)
        ]
        self.reply(ctx, {"sessions": sessions})

    def on_resume(self, ctx: Ctx, params: Any) -> None:
        p = self._obj(params)
        sid = p.get("sessionId")
        s = self.sessions.get(sid) if isinstance(sid, str) else None
        if s is None:
            raise RpcFailure(INVALID_PARAMS, f"unknown session: {sid!r}")
        if s.closing and not s.closed:
            raise RpcFailure(INVALID_PARAMS, "session is closing")
        if not is_absolute(p.get("cwd")):
            raise RpcFailure(INVALID_PARAMS, "cwd must be an absolute path")
        replay = p.get("replayFrom")
        if replay is not None and not (isinstance(replay, dict) and replay.get("type") == "start"):
            raise RpcFailure(INVALID_PARAMS, "unsupported replayFrom cursor")
        s.closed = s.closing = False
        if replay is not None:
            for mid, entry in list(s.history.items()):
                self.update(s, {"sessionUpdate": entry["sessionUpdate"], "messageId": mid,
                                "content": list(entry["content"])})  # fmt: skip
        self.reply(ctx, {})

    def on_close(self, ctx: Ctx, params: Any) -> None:
        s = self._session(self._obj(params))
        s.closing = True
        self.cancel_session(s)
        self.spawn(self._finish_close(ctx, s))

    async def _finish_close(self, ctx: Ctx, s: Session) -> None:
        while s.turn is not None:
            await s.turn.done.wait()
        while s.pending:
            await s.pending[0].settled.wait()
        s.closed = True
        self.reply(ctx, {})

    def on_cancel_request(self, ctx: Ctx, params: Any) -> None:
        raise RpcFailure(INVALID_REQUEST, "session/cancel is a notification; send it without id")
