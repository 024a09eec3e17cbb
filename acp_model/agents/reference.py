"""A conforming ACP v2 reference agent (and, with ``--mutant``, a seeded-bug variant of it).

Run: ``python -m acp_model.agents.reference [--mutant NAME] [--seed N] [--timing fast|real|slow]``
(``--list-mutants`` prints the zoo). Newline-delimited JSON-RPC 2.0 on stdin/stdout, logs on
stderr only.

This is an independent implementation of the protocol: it imports nothing from ``acp_model``
outside ``acp_model.agents``, so its mistakes are not correlated with the oracle's.

It is genuinely concurrent (asyncio): a thread keeps reading stdin while turns run, every
session has its own turn task, cancels / prompts / permission answers land mid-turn, and every
delay is an ``Event.wait`` with a timeout that a cancel interrupts at once. All output is
written by the event-loop thread, one whole line per message.

Readings (the oracle's defaults; ids refer to section 6 of RULES.md):

* A-01 prompt while a turn is running or blocked on a permission: accepted (``{}``), its user
  message is reported at once, and its work is folded into the current turn: no second
  ``running``, one idle at the end of the combined turn (stop reason of the last prompt).
  A prompt read after a ``session/cancel`` of the running turn is not folded into the doomed
  turn: it is accepted once that turn has reported its cancelled idle, and starts a new turn.
* A-03 order: prompt response, then the user message, then ``running``.
* A-04 ``session/cancel`` with no foreground work: a no-op, nothing is sent.
* A-07 / A-09: foreground work only ever starts from a prompt; ``running`` always precedes any
  ``requires_action`` and the stop-reason idle; every turn ends with exactly one idle and it
  always carries a stop reason; no idle is sent after ``session/new``.
* A-10 a ``session/cancel`` read while a prompt is read but not yet accepted (the acceptance
  step is asynchronous, so the window exists in every timing): the prompt is still accepted
  (``{}``), its user message is reported, then the work is cancelled: if another turn is
  running the prompt joins it and the single idle says ``cancelled``; otherwise the agent
  sends ``running`` and immediately ``idle`` with ``cancelled``. A ``$/cancel_request`` for a
  prompt that is not accepted yet rejects it with -32800 (no user message, no turn).
* A-11 once the agent has read ``session/cancel`` while foreground work is in progress, the
  turn ends with ``idle`` + ``cancelled``, even if the model had just finished. Open tool calls
  are marked ``cancelled`` before that idle, never after it.
* A-12 a selected ``optionId`` that was not offered is treated as a rejection.
* A-14 pending permission requests at cancel: the agent stops waiting at once and alternates
  per session, deterministically, between (i) just dropping them (the client still owes the
  ``cancelled`` outcome) and (ii) also sending ``$/cancel_request`` for each (the client then
  answers with the cancelled outcome or -32800). Late answers (after the cancel, unknown ids,
  duplicates) are ignored and never resume anything.
* A-19 ``session/close`` cancels like ``session/cancel``, waits for the cancelled idle (if a
  turn was running), then answers ``{}``; prompts still awaiting acceptance get -32800.
* A-26 errors: unknown or closed session ids get -32602 (invalid params); requests before
  ``initialize`` (and a second ``initialize``) get -32600 (invalid request).
* Permission outcomes: ``selected`` with an allow option runs the tool (``in_progress`` ->
  ``completed``/``failed``); a reject option, an unknown/custom outcome or a JSON-RPC error
  (including -32800) marks the tool ``failed`` without ever reaching ``in_progress``; the
  ``cancelled`` outcome marks it ``cancelled``. The turn then continues.
* Background updates while idle: after every second completed turn of a session the agent
  sends a ``usage_update`` or an ``available_commands_update`` (alternating) right after idle.
* Batches from the client are answered with one array once every request in it is answered;
  notification-only batches get nothing; ``[]`` gets a single -32600.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import logging
import os
import posixpath
import sys
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_model.agents import mutants as zoo
from acp_model.agents.stdio import EOF, OVERSIZE, StdinReader, StdoutWriter
from acp_model.agents.turns import Step, ToolSpec, TurnPlan, plan_turn, prompt_text

log = logging.getLogger("acp_model.agents.reference")

PROTOCOL_VERSION = 2
AGENT_INFO = {"name": "acp-model-reference-agent", "title": "acp-model reference agent",
              "version": "0.1.0"}  # fmt: skip
CAPABILITIES = {"session": {"prompt": {"image": {}, "audio": {}, "embeddedContext": {}}}}

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800

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

PERMISSION_OPTIONS = [
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"},
]
ALLOW_OPTIONS = frozenset({"allow-once", "allow-always"})

AVAILABLE_COMMANDS = [
    {"name": "plan", "description": "Draft a plan before editing"},
    {"name": "review", "description": "Review the working tree"},
]

_CANCELLED_BY_AGENT = ("cancelled-by-agent", None)
_KNOWN_BLOCKS = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": ("resource",),
}


class RpcFailure(Exception):
    """Raised by a handler to answer the current request with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def is_absolute(path: object) -> bool:
    """Absolute POSIX path or Windows drive/UNC path."""
    if not isinstance(path, str) or not path:
        return False
    if path.startswith("/"):
        return True
    return (len(path) > 2 and path[1] == ":" and path[2] in "\\/") or path.startswith("\\\\")


# --------------------------------------------------------------------------- replies


class Batch:
    """Collects the responses to one client batch and sends them as a single array."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.expected = 0
        self.responses: list[dict[str, Any]] = []
        self.closed = False

    def expect(self) -> None:
        self.expected += 1

    def add(self, response: dict[str, Any]) -> None:
        self.responses.append(response)
        self._maybe_send()

    def close(self) -> None:
        self.closed = True
        if self.expected == 0 and self.agent.bug("empty_batch_reply"):
            self.agent.send([])
        self._maybe_send()

    def _maybe_send(self) -> None:
        if self.closed and self.expected and len(self.responses) == self.expected:
            self.agent.send(list(self.responses))
            self.expected = 0  # sent once


@dataclass
class Ctx:
    """Where the answer to one request goes."""

    request_id: Any
    batch: Batch | None = None


# ---------------------------------------------------------------------------- state


@dataclass
class PendingPrompt:
    """A prompt that has been read but not accepted yet."""

    ctx: Ctx
    blocks: list[Any]
    text: str
    index: int  # 1-based prompt number on its session
    busy_at_read: bool
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    session_cancelled: bool = False
    request_cancelled: bool = False


@dataclass
class PermWait:
    request_id: int
    turn: Turn
    tool_id: str
    tool: ToolSpec
    future: asyncio.Future[tuple[str, Any]]


@dataclass
class PlanCtx:
    plan: TurnPlan
    plan_id: str | None = None


@dataclass
class Turn:
    session: Session
    index: int
    stop_reason: str = "end_turn"
    steps: deque[tuple[Step, PlanCtx]] = field(default_factory=deque)
    cancel_event: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: bool = False
    open_tools: dict[str, str] = field(default_factory=dict)
    pending_perms: dict[int, PermWait] = field(default_factory=dict)
    late_answers: set[int] = field(default_factory=set)
    late_answered: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, plan: TurnPlan) -> None:
        ctx = PlanCtx(plan)
        self.steps.extend((step, ctx) for step in plan.steps)
        self.stop_reason = plan.stop_reason


@dataclass
class Session:
    id: str
    cwd: str
    index: int
    turn: Turn | None = None
    prompts_read: int = 0
    turns_started: int = 0
    turns_completed: int = 0
    user_messages: int = 0
    cancels_with_perms: int = 0
    closing: bool = False
    closed: bool = False
    pending: list[PendingPrompt] = field(default_factory=list)
    queued: list[PendingPrompt] = field(default_factory=list)
    history: dict[str, dict[str, Any]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    stale_cancel: bool = False  # mutant late_cancel_kills_next_turn
    after_cancel: bool = False  # mutant second_stop_reason

    def new_id(self, prefix: str) -> str:
        n = self.counters.get(prefix, 0) + 1
        self.counters[prefix] = n
        return f"{prefix}_{self.index}_{n}"

    def abs_path(self, rel: str) -> str:
        return posixpath.join(self.cwd, rel) if self.cwd.startswith("/") else self.cwd + "\\" + rel


# ---------------------------------------------------------------------------- agent


class Agent:
    """Protocol logic; every method runs on the event loop thread."""

    def __init__(
        self,
        *,
        writer: StdoutWriter,
        mutant: zoo.Mutant | None = None,
        seed: int = 0,
        timing: str = "fast",
    ) -> None:
        self.writer = writer
        self.mutant = mutant
        self.seed = seed
        self.timing = TIMINGS[timing]
        self.accept_timing = ACCEPT_DELAYS[timing]
        self.initialized = False
        self.sessions: dict[str, Session] = {}
        self.first_session: Session | None = None
        self.perm_waiters: dict[int, PermWait] = {}
        self.next_request_id = 0
        self.finished = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._outbox: list[dict[str, Any]] = []
        self._flush_scheduled = False

    def bug(self, name: str) -> bool:
        return self.mutant is not None and self.mutant.name == name

    # ------------------------------------------------------------------ output

    def send(self, msg: Any) -> None:
        """Write one message; with ``batched_updates`` session/updates are grouped in arrays."""
        if self.bug("batched_updates") and isinstance(msg, dict):
            if msg.get("method") == "session/update":
                self._outbox.append(msg)
                if len(self._outbox) >= 3:
                    self._flush()
                elif not self._flush_scheduled:
                    self._flush_scheduled = True
                    asyncio.get_running_loop().call_soon(self._flush)
                return
            self._flush()
        self.writer.write_line(orjson.dumps(msg))
        if self.writer.broken:
            self.finished.set()

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._outbox:
            return
        batch, self._outbox = self._outbox, []
        self.writer.write_line(orjson.dumps(batch if len(batch) > 1 else batch[0]))

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
        """The sessionId put on this session's updates (mutants misroute them)."""
        if self.bug("updates_wrong_session") and s.index >= 2 and self.first_session:
            return self.first_session.id
        if self.bug("updates_unknown_session") and s.prompts_read >= 2:
            return "sess_unknown"
        return s.id

    def update(self, s: Session, update: dict[str, Any]) -> None:
        self._remember(s, update)
        params = {"sessionId": self.route(s), "update": update}
        self.send({"jsonrpc": "2.0", "method": "session/update", "params": params})

    def state(self, s: Session, state: str, stop_reason: str | None = None) -> None:
        update: dict[str, Any] = {"sessionUpdate": "state_update", "state": state}
        if stop_reason is not None:
            update["stopReason"] = stop_reason
        self.update(s, update)

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
            if self.bug("answers_cancel"):
                self.send({"jsonrpc": "2.0", "id": None, "result": None})
            sid = params.get("sessionId") if isinstance(params, dict) else None
            s = self.sessions.get(sid) if isinstance(sid, str) else None
            if s is None or s.closed:
                log.info("cancel for unknown session %r ignored", sid)
                return
            self.cancel_session(s)
            if self.bug("cancel_crosses_sessions"):
                for other in self.sessions.values():
                    if other is not s and other.turn is not None:
                        self.cancel_session(other)
        elif method == "$/cancel_request":
            target = params.get("requestId") if isinstance(params, dict) else None
            for s in self.sessions.values():
                for pend in s.pending:
                    if pend.ctx.request_id == target and type(pend.ctx.request_id) is type(target):
                        pend.request_cancelled = True
                        pend.wake.set()
        else:
            log.info("ignoring notification %s", method)

    def handle_response(self, msg: dict[str, Any]) -> None:
        rid = msg.get("id")
        pw = self.perm_waiters.pop(rid, None) if type(rid) is int else None
        if pw is None:
            log.info("ignoring response to unknown or stale request id %r", rid)
            return
        answer = ("error", msg["error"]) if "error" in msg else ("result", msg.get("result"))
        turn = pw.turn
        if pw.future.done():  # the turn was cancelled; only some mutants keep listening
            turn.late_answers.discard(rid)
            if not turn.late_answers:
                turn.late_answered.set()
            if self.bug("stale_answer_resumes_tool"):
                self.spawn(self._resume_stale_tool(pw))
            return
        turn.pending_perms.pop(rid, None)
        pw.future.set_result(answer)

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
            "protocolVersion": PROTOCOL_VERSION,  # 2 is requested or our only version
            "capabilities": CAPABILITIES,
            "info": AGENT_INFO,
        }
        if self.bug("init_without_info"):
            del result["info"]
        if self.bug("init_wrong_version"):
            result["protocolVersion"] = 1
        self.initialized = True
        self.reply(ctx, result)
        if self.bug("stdout_banner"):
            self.send_raw(b"acp-model reference agent ready")

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
        if self.bug("duplicate_session_id") and self.first_session is not None:
            self.reply(ctx, {"sessionId": self.first_session.id})
            return
        index = len(self.sessions) + 1
        digest = hashlib.sha256(f"{self.seed}/{index}".encode()).hexdigest()[:10]
        s = Session(id=f"sess_{index}_{digest}", cwd=cwd, index=index)
        self.sessions[s.id] = s
        if self.first_session is None:
            self.first_session = s
        self.reply(ctx, {"sessionId": s.id})
        if self.bug("idle_after_session_new"):
            self.state(s, "idle")
        if self.bug("chatty_idle"):
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

    # ------------------------------------------------------------------ prompt

    def on_prompt(self, ctx: Ctx, params: Any) -> None:
        p = self._obj(params)
        s = self._session(p)
        if s.closing:
            raise RpcFailure(INVALID_PARAMS, "session is closing")
        blocks = p.get("prompt")
        if not isinstance(blocks, list):
            raise RpcFailure(INVALID_PARAMS, "prompt must be an array of content blocks")
        for block in blocks:
            self._check_block(block)
        s.prompts_read += 1
        index = s.prompts_read
        if self.bug("prompt_method_not_found") and index >= 2:
            raise RpcFailure(METHOD_NOT_FOUND, "method not found: session/prompt")
        busy = s.turn is not None and not s.turn.cancelled
        if busy and self.bug("busy_prompt_deadlock"):
            return  # never answered, never processed
        if busy and self.bug("busy_prompt_rejected"):
            raise RpcFailure(INVALID_PARAMS, "session already has foreground work")
        pend = PendingPrompt(ctx, blocks, prompt_text(blocks), index, busy)
        if busy and self.bug("cancelled_prompt_unanswered"):
            s.queued.append(pend)  # accepted only when the current turn ends normally
            return
        s.pending.append(pend)
        self.spawn(self._accept(s, pend))

    @staticmethod
    def _check_block(block: Any) -> None:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise RpcFailure(INVALID_PARAMS, "content blocks must be objects with a type")
        kind = block["type"]
        required = _KNOWN_BLOCKS.get(kind)
        if required is None:
            if not kind.startswith("_"):
                raise RpcFailure(INVALID_PARAMS, f"unsupported content block type {kind!r}")
            return
        for key in required:
            value = block.get(key)
            if key == "resource":
                ok = (
                    isinstance(value, dict)
                    and isinstance(value.get("uri"), str)
                    and (isinstance(value.get("text"), str) or isinstance(value.get("blob"), str))
                )
            else:
                ok = isinstance(value, str)
            if not ok:
                raise RpcFailure(INVALID_PARAMS, f"{kind} block needs {key!r}")

    def _accept_delay(self, pend: PendingPrompt) -> float:
        base, span = self.accept_timing
        plan = self.plan_for(pend.text)
        delay = base + span * plan.accept_jitter
        if self.bug("cancel_rejects_pending_prompt"):
            delay = max(delay, 0.03)
        return delay

    async def _accept(self, s: Session, pend: PendingPrompt) -> None:
        try:
            delay = self._accept_delay(pend)
            if delay > 0:
                await _wait(pend.wake, delay)
            # A cancel that preceded this prompt must not touch its work (that would be the
            # "late cancel kills the next turn" bug): let the cancelled turn finish first. A
            # cancel read meanwhile wakes us up: the prompt then joins that turn.
            while (
                s.turn is not None
                and s.turn.cancelled
                and not (pend.session_cancelled or pend.request_cancelled or s.closing)
            ):
                await _wait_first(s.turn.done, pend.wake)
            if (
                pend.request_cancelled
                or s.closing
                or (pend.session_cancelled and self.bug("cancel_rejects_pending_prompt"))
            ):
                self.reply_error(pend.ctx, REQUEST_CANCELLED, "prompt cancelled before acceptance")
                return
            self.accept(s, pend)
        finally:
            if pend in s.pending:
                s.pending.remove(pend)
            pend.settled.set()

    def plan_for(self, text: str) -> TurnPlan:
        m = self.mutant
        return plan_turn(
            text,
            self.seed,
            force_tool=bool(m and m.force_tool),
            force_permission=bool(m and m.force_permission),
            force_plan=bool(m and m.force_plan),
            force_usage=bool(m and m.force_usage),
        )

    def accept(self, s: Session, pend: PendingPrompt) -> None:
        """Accept a prompt: respond, report the user message, start or join the turn."""
        plan = self.plan_for(pend.text)
        msg_id = s.new_id("msg_user")
        result: dict[str, Any] = {}
        if self.bug("prompt_result_meta"):
            result["_meta"] = {"acpModel/promptIndex": pend.index}
        if self.bug("prompt_result_message_id"):
            result["messageId"] = msg_id
        turn = s.turn
        joining = turn is not None
        dropped = self.bug("busy_prompt_dropped") and joining and pend.busy_at_read
        answer = not (self.bug("prompt_never_answered") and pend.index >= 2)
        early = self.bug("running_before_response")
        if answer and not early:
            self.reply(pend.ctx, result)
        if not dropped and not (self.bug("no_user_message") and pend.index >= 2):
            self.user_message(s, pend.blocks, msg_id)
        if not dropped:
            if turn is not None:
                if not turn.cancelled:
                    turn.add(plan)  # joins the running work, no second `running`
            else:
                self.start_turn(s, plan, cancelled=pend.session_cancelled)
        if answer and early:
            self.reply(pend.ctx, result)
        if self.bug("prompt_answered_twice"):
            self.reply(pend.ctx, result)

    def user_message(self, s: Session, blocks: list[Any], msg_id: str) -> None:
        s.user_messages += 1
        chunked = s.user_messages % 2 == 0 or self.bug("user_chunks_only")
        if not chunked or not blocks:
            self.update(s, {"sessionUpdate": "user_message", "messageId": msg_id,
                            "content": blocks})  # fmt: skip
            return
        pieces: list[Any] = []
        for block in blocks:
            text = block.get("text") if block.get("type") == "text" else None
            if isinstance(text, str) and len(text) >= 4 and len(blocks) == 1:
                cut = len(text) // 3 or 1
                for part in (text[:cut], text[cut : 2 * cut], text[2 * cut :]):
                    pieces.append({"type": "text", "text": part})
            else:
                pieces.append(block)
        for piece in pieces:
            self.update(s, {"sessionUpdate": "user_message_chunk", "messageId": msg_id,
                            "content": piece})  # fmt: skip

    # -------------------------------------------------------------------- turns

    def start_turn(self, s: Session, plan: TurnPlan, *, cancelled: bool) -> Turn:
        s.turns_started += 1
        turn = Turn(session=s, index=s.turns_started)
        s.turn = turn
        turn.add(plan)
        if cancelled:
            turn.cancelled = True
            turn.cancel_event.set()
        if self.bug("late_cancel_kills_next_turn") and s.stale_cancel:
            s.stale_cancel = False
            turn.cancelled = True
            turn.cancel_event.set()
        if not (self.bug("no_running") or self.bug("requires_action_from_idle")):
            self.state(s, "running")
            if self.bug("dup_running"):
                self.state(s, "running")
        self._plant_turn_start(s, turn)
        self.spawn(self.run_turn(turn))
        return turn

    def _plant_turn_start(self, s: Session, turn: Turn) -> None:
        """Payload bugs that every turn carries, planted right after it starts."""
        if self.bug("unknown_state"):
            self.state(s, "thinking")
            self.state(s, "running")
        if self.bug("unknown_update_kind"):
            self.update(s, {"sessionUpdate": "progress", "percent": 10})
        if self.bug("chunk_without_message_id"):
            self.update(s, {"sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": "Starting."}})  # fmt: skip
        if self.bug("invalid_utf8"):
            msg = {"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": self.route(s),
                "update": {"sessionUpdate": "agent_message_chunk",
                           "messageId": s.new_id("msg_agent"),
                           "content": {"type": "text", "text": "caf@@"}}}}  # fmt: skip
            self.send_raw(orjson.dumps(msg).replace(b"caf@@", b"caf\xe9"))

    async def pause(self, turn: Turn, jitter: float) -> None:
        """The model's think time; a cancel cuts it short. In fast timing just yield."""
        base, span = self.timing
        if base <= 0:
            await asyncio.sleep(0)
            return
        await _wait(turn.cancel_event, base + span * jitter)

    async def run_turn(self, turn: Turn) -> None:
        try:
            while not turn.cancelled and turn.steps:
                step, plan_ctx = turn.steps.popleft()
                await self.exec_step(turn, step, plan_ctx)
                if turn.cancelled:
                    break
                await self.pause(turn, step.jitter)
        except Exception:
            log.exception("turn failed")
        await self.finish_turn(turn)

    async def finish_turn(self, turn: Turn) -> None:
        s = turn.session
        if turn.cancelled:
            # prompts that were pending when the cancel came join this turn first.
            for pend in list(s.pending):
                if pend.session_cancelled:
                    await pend.settled.wait()
            if self.bug("wait_permission_answers") and turn.late_answers:
                await _wait(turn.late_answered, 1.0)
            late = self.bug("updates_after_cancelled_idle")
            if not late:
                self._cancel_open_tools(s, turn)
            if not self.bug("cancel_no_idle"):
                reason = "end_turn" if self.bug("cancel_as_end_turn") else "cancelled"
                self.state(s, "idle", reason)
            if late:
                self._cancel_open_tools(s, turn)
                self.update(s, {"sessionUpdate": "agent_message_chunk",
                                "messageId": s.new_id("msg_agent"),
                                "content": {"type": "text", "text": "(cancelled)"}})  # fmt: skip
        else:
            skip_idle = self.bug("never_idle") and turn.index >= 2
            if not skip_idle:
                reason: str | None = turn.stop_reason
                if self.bug("unknown_stop_reason"):
                    reason = "done"
                if self.bug("idle_without_stop_reason"):
                    reason = None
                self.state(s, "idle", reason)
                if self.bug("second_stop_reason") and s.after_cancel:
                    s.after_cancel = False
                    self.state(s, "idle", "cancelled")
            s.turns_completed += 1
        s.turn = None
        turn.done.set()
        if not turn.cancelled and not s.closing:
            if self.bug("chatty_idle"):
                self.background(s)
            elif s.turns_completed % 2 == 0:
                self.background(s, which=(s.turns_completed // 2) % 2)
            queued, s.queued = s.queued, []
            for pend in queued:  # mutant cancelled_prompt_unanswered: accept them now
                s.pending.append(pend)
                self.spawn(self._accept(s, pend))

    def _cancel_open_tools(self, s: Session, turn: Turn) -> None:
        for tool_id in list(turn.open_tools):
            self.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                            "status": "cancelled"})  # fmt: skip
            del turn.open_tools[tool_id]

    def background(self, s: Session, which: int | None = None) -> None:
        """Updates while idle (legal: they do not change the state)."""
        used = 1000 + 250 * s.turns_completed
        cost = {"amount": round(0.002 * s.turns_completed, 4), "currency": "USD"}
        usage = {"sessionUpdate": "usage_update", "used": used, "size": 200000, "cost": cost}
        commands = {"sessionUpdate": "available_commands_update",
                    "availableCommands": AVAILABLE_COMMANDS}  # fmt: skip
        if which == 0:
            self.update(s, usage)
        elif which == 1:
            self.update(s, commands)
        else:
            self.update(s, usage)
            note = [{"type": "text", "text": "Indexing finished."}]
            self.update(s, {"sessionUpdate": "agent_message", "messageId": s.new_id("msg_bg"),
                            "content": note})  # fmt: skip
            self.update(s, commands)

    # ------------------------------------------------------------------- steps

    async def exec_step(self, turn: Turn, step: Step, plan_ctx: PlanCtx) -> None:
        s = turn.session
        if step.kind in ("thought", "message"):
            family = "agent_thought" if step.kind == "thought" else "agent_message"
            msg_id = s.new_id("msg_thought" if step.kind == "thought" else "msg_agent")
            if not step.chunked:
                content = [{"type": "text", "text": t} for t in step.texts]
                self.update(s, {"sessionUpdate": family, "messageId": msg_id, "content": content})
                return
            for i, text in enumerate(step.texts):
                if i:
                    await self.pause(turn, step.jitter / 2)
                    if turn.cancelled:
                        return
                self.update(s, {"sessionUpdate": f"{family}_chunk", "messageId": msg_id,
                                "content": {"type": "text", "text": text}})  # fmt: skip
        elif step.kind == "plan":
            self._plan_update(s, step, plan_ctx)
        elif step.kind == "usage":
            update: dict[str, Any] = {"sessionUpdate": "usage_update", "used": step.used,
                                      "size": step.size}  # fmt: skip
            if step.cost is not None or self.bug("usage_bad_currency"):
                currency = "usd" if self.bug("usage_bad_currency") else "USD"
                update["cost"] = {"amount": step.cost or 0.0, "currency": currency}
            if self.bug("usage_negative"):
                update["used"] = -1
            self.update(s, update)
        elif step.kind == "custom":
            self.update(s, {"sessionUpdate": "_acp_model_progress", "turn": turn.index})
        elif step.kind == "tools":
            await self._tools(turn, step.tools)

    def _plan_update(self, s: Session, step: Step, plan_ctx: PlanCtx) -> None:
        entries_spec = plan_ctx.plan.plan_entries
        if not entries_spec:
            return
        if plan_ctx.plan_id is None:
            plan_ctx.plan_id = s.new_id("plan")
        entries = []
        for i, (content, priority) in enumerate(entries_spec):
            status = (
                "completed" if i < step.progress else "in_progress" if i == step.progress
                else "pending"
            )  # fmt: skip
            entries.append({"content": content, "priority": priority, "status": status})
        plan: dict[str, Any] = {"type": "items", "planId": plan_ctx.plan_id, "entries": entries}
        if self.bug("plan_missing_plan_id"):
            del plan["planId"]
        self.update(s, {"sessionUpdate": "plan_update", "plan": plan})

    async def _tools(self, turn: Turn, tools: tuple[ToolSpec, ...]) -> None:
        s = turn.session
        ids: list[str] = []
        for tool in tools:
            tool_id = s.new_id("call")
            ids.append(tool_id)
            turn.open_tools[tool_id] = "pending"
            path = tool.path if self.bug("relative_tool_location") else s.abs_path(tool.path)
            self.update(s, {
                "sessionUpdate": "tool_call_update", "toolCallId": tool_id, "title": tool.title,
                "kind": "shell" if self.bug("unknown_tool_kind") else tool.kind,
                "status": "pending", "locations": [{"path": path, "line": 1}],
                "rawInput": {"path": path},
            })  # fmt: skip
        decisions = {tool_id: "allow" for tool_id in ids}
        asking = [(i, t) for i, t in zip(ids, tools, strict=True) if t.needs_permission]
        if asking:
            waits = [self._ask_permission(turn, tool_id, tool) for tool_id, tool in asking]
            self.state(s, "requires_action")
            answers = await asyncio.gather(*(w.future for w in waits))
            if turn.cancelled:
                return
            for wait, answer in zip(waits, answers, strict=True):
                decisions[wait.tool_id] = self.judge(answer)
            self.state(s, "running")
            if self.bug("dup_running"):
                self.state(s, "running")
        for tool_id, tool in zip(ids, tools, strict=True):
            if turn.cancelled:
                return
            decision = decisions[tool_id]
            if decision == "allow":
                await self._run_tool(turn, tool_id, tool)
            else:
                status = "cancelled" if decision == "cancelled" else "failed"
                note = f"Not run: permission {decision}."
                self.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                                "status": status, "content": [_text_item(note)]})  # fmt: skip
                turn.open_tools.pop(tool_id, None)

    def _ask_permission(self, turn: Turn, tool_id: str, tool: ToolSpec) -> PermWait:
        s = turn.session
        rid = self.next_request_id
        self.next_request_id += 1
        future: asyncio.Future[tuple[str, Any]] = asyncio.get_running_loop().create_future()
        wait = PermWait(rid, turn, tool_id, tool, future)
        self.perm_waiters[rid] = wait
        turn.pending_perms[rid] = wait
        options = [] if self.bug("empty_permission_options") else PERMISSION_OPTIONS
        params = {
            "sessionId": s.id,
            "title": f"Allow: {tool.title}?",
            "description": f"The agent wants to {tool.kind} {s.abs_path(tool.path)}.",
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": tool_id}},
            "options": options,
        }
        self.send({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission",
                   "params": params})  # fmt: skip
        return wait

    def judge(self, answer: tuple[str, Any]) -> str:
        """Map a permission answer to allow / reject / cancelled / error / unknown."""
        kind, payload = answer
        if kind == "error":
            decision = "error"
        else:
            outcome = payload.get("outcome") if isinstance(payload, dict) else None
            value = outcome.get("outcome") if isinstance(outcome, dict) else None
            if value == "selected":
                option = outcome.get("optionId")
                decision = (
                    "allow" if isinstance(option, str) and option in ALLOW_OPTIONS else "reject"
                )
            elif value == "cancelled":
                decision = "cancelled"
            else:
                decision = "unknown"  # never approval (PERM-11)
        if decision == "unknown" and self.bug("perm_custom_outcome_approves"):
            decision = "allow"
        if decision in ("reject", "cancelled") and self.bug("perm_reject_proceeds"):
            decision = "allow"
        return decision

    async def _run_tool(self, turn: Turn, tool_id: str, tool: ToolSpec) -> None:
        s = turn.session
        status = "running" if self.bug("unknown_tool_status") else "in_progress"
        self.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                        "status": status})  # fmt: skip
        turn.open_tools[tool_id] = "in_progress"
        for chunk in tool.chunks:
            await self.pause(turn, 0.5)
            if turn.cancelled:
                return
            item: dict[str, Any] = _text_item(chunk)
            if self.bug("tool_content_unwrapped"):
                item = item["content"]
            self.update(s, {"sessionUpdate": "tool_call_content_chunk", "toolCallId": tool_id,
                            "content": item})  # fmt: skip
        await self.pause(turn, 0.5)
        if turn.cancelled:
            return
        final = "failed" if tool.fails else "completed"
        summary = " ".join(tool.chunks) + (" Error: tool failed." if tool.fails else " Done.")
        self.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                        "status": final, "content": [_text_item(summary)]})  # fmt: skip
        turn.open_tools.pop(tool_id, None)

    async def _resume_stale_tool(self, wait: PermWait) -> None:
        """Mutant stale_answer_resumes_tool: a late answer restarts the cancelled tool."""
        await wait.turn.done.wait()
        s = wait.turn.session
        self.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": wait.tool_id,
                        "status": "in_progress"})  # fmt: skip
        self.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": wait.tool_id,
                        "status": "completed", "content": [_text_item("Done.")]})  # fmt: skip

    # ------------------------------------------------------------------ cancel

    def cancel_session(self, s: Session) -> None:
        """session/cancel (or close) semantics; see A-04, A-10, A-11 and A-14 above."""
        for pend in s.pending:
            pend.session_cancelled = True
            pend.wake.set()
        turn = s.turn
        if turn is not None and self.bug("cancelled_prompt_unanswered"):
            s.queued.clear()  # the bug: queued prompts vanish without a response
        if turn is None:
            if self.bug("late_cancel_kills_next_turn") and not s.pending:
                s.stale_cancel = True
            if self.bug("idle_cancel_echo") and not s.pending and not s.closing:
                self.state(s, "idle", "cancelled")
            return
        if turn.cancelled:
            return  # a second cancel changes nothing
        turn.cancelled = True
        turn.cancel_event.set()
        if self.bug("second_stop_reason"):
            s.after_cancel = True
        perms = list(turn.pending_perms.values())
        turn.pending_perms.clear()
        if not perms:
            return
        announce = s.cancels_with_perms % 2 == 1  # alternate (i) drop / (ii) announce
        s.cancels_with_perms += 1
        if self.bug("cancel_request_all"):
            announce = True
        keep_listening = self.bug("wait_permission_answers") or self.bug(
            "stale_answer_resumes_tool"
        )
        if self.bug("stale_answer_resumes_tool"):
            announce = False
        for wait in perms:
            if keep_listening:
                turn.late_answers.add(wait.request_id)
            else:
                self.perm_waiters.pop(wait.request_id, None)
            if announce:
                self.send({"jsonrpc": "2.0", "method": "$/cancel_request",
                           "params": {"requestId": wait.request_id}})  # fmt: skip
            if not wait.future.done():
                wait.future.set_result(_CANCELLED_BY_AGENT)


def _text_item(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


async def _wait_first(*events: asyncio.Event) -> None:
    """Return as soon as any of ``events`` is set."""
    if any(e.is_set() for e in events):
        return
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()


async def _wait(event: asyncio.Event, timeout: float) -> None:
    """Sleep up to ``timeout`` seconds, waking early when ``event`` is set."""
    if event.is_set():
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout)


# --------------------------------------------------------------------------- main


async def serve(mutant: zoo.Mutant | None, seed: int, timing: str) -> None:
    loop = asyncio.get_running_loop()
    agent = Agent(writer=StdoutWriter(sys.stdout.fileno()), mutant=mutant, seed=seed,
                  timing=timing)  # fmt: skip
    reader = StdinReader(loop, agent.on_input, fd=sys.stdin.fileno())
    reader.start()
    await agent.finished.wait()
    agent._flush()
    for task in list(agent._tasks):
        task.cancel()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m acp_model.agents.reference",
        description="ACP v2 reference agent with optional seeded-bug mutants.",
    )
    parser.add_argument("--mutant", default=None, help="plant one bug / benign variant")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fake model")
    parser.add_argument("--timing", choices=sorted(TIMINGS), default="fast")
    parser.add_argument("--list-mutants", action="store_true", help="print the mutant table")
    parser.add_argument("--verbose", action="store_true", help="log protocol events to stderr")
    args = parser.parse_args(argv)
    if args.list_mutants:
        print(zoo.table())
        return 0
    try:
        mutant = zoo.get(args.mutant)
    except KeyError:
        print(f"unknown mutant {args.mutant!r}; see --list-mutants", file=sys.stderr)
        return 2
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    log.info("starting (mutant=%s, seed=%d, timing=%s)", args.mutant, args.seed, args.timing)
    asyncio.run(serve(mutant, args.seed, args.timing))
    sys.stderr.flush()
    os._exit(0)  # the stdin reader thread may still be blocked in read()


if __name__ == "__main__":
    sys.exit(main())
