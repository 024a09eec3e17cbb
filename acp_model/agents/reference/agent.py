"""The reference agent: the connection (initialize, the protocol it speaks), the reports its
parts share (updates and states), and the parts it is made of.

Its parts own their state: :class:`~.output.Output` (what is written), :class:`~.inbox.Inbox`
(what is read, and which part handles each method), :class:`~.sessions.Sessions` (the registry
and the session methods), :class:`~.prompts.Prompts` (a prompt from the request to its turn),
:class:`~.work.Work` (a turn from running to idle), :class:`~.permissions.Permissions`
(requests and answers), :class:`~.cancels.Cancels` (what a cancel reaches),
:class:`~.quiesce.Quiescence` (the tests' causal wait). They see the agent as a
:class:`~.host.Host`. What the agent does where the text leaves it a choice is its
:class:`~acp_model.agents.design.Design`, and a planted bug is its
:class:`~acp_model.agents.reference.faults.Fault`: one hooks object per part, handed to it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from acp_model.agents.design import Design
from acp_model.agents.reference import v1
from acp_model.agents.reference.cancels import Cancels
from acp_model.agents.reference.faults import Fault
from acp_model.agents.reference.inbox import Inbox
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
    PROTOCOL_VERSION,
    Ctx,
    RpcFailure,
    object_params,
)
from acp_model.agents.reference.work import Work
from acp_model.agents.stdio import StdoutWriter

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
        self.elicits = False  # the client advertised form elicitation (v2's capabilities)
        self.finished = asyncio.Event()
        self.out = Output(writer, self.design.writes, self.finished)
        self._tasks: set[asyncio.Task[Any]] = set()
        hooks = self.fault
        self.perms = Permissions(self, hooks.permissions)
        self.work = Work(self, self.perms, TIMINGS[timing], self._turn_ended, hooks.turns,
                         hooks.payloads)
        self.sessions = Sessions(self, self.work, hooks.sessions)
        self.prompts = Prompts(self, self.work, ACCEPT_DELAYS[timing], self.sessions.named,
                               hooks.prompts)
        self.quiescence = Quiescence(self.reply)
        self.cancels = Cancels(self, self.prompts, self.perms, lambda: list(self.sessions),
                               self.sessions.find, hooks)
        self.inbox = Inbox(self.out, self.finished, requests={
            "initialize": self.on_initialize,
            QUIESCE: lambda ctx, params: self.quiescence.request(ctx),
            "session/new": self.sessions.on_new,
            "session/list": self.sessions.on_list,
            "session/resume": self.sessions.on_resume,
            "session/load": self.sessions.on_load,
            "session/close": self.sessions.on_close,
            "session/prompt": self.prompts.on_prompt,
            "session/cancel": self.cancels.refuse_request,
        }, notifications={
            "session/cancel": self.cancels.on_session_cancel,
            "$/cancel_request": self.cancels.on_cancel_request,
        }, on_response=self.perms.handle_response, ready=lambda: self.initialized,
            before_ready=frozenset({"initialize", QUIESCE}),
            empty_batch_reply=hooks.connection.empty_batch_reply)

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
        return self.fault.sessions.route(self, s)

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
        if self.newer and s.background_listed and self.fault.turns.lists_background(s, state):
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

    # ------------------------------------------------------------------ input

    def on_input(self, item: object) -> None:
        """Every stdin line (called on the loop by the reader thread)."""
        self.inbox.on_input(item)

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
        else:
            caps = p.get("capabilities")
            elicitation = caps.get("elicitation") if isinstance(caps, dict) else None
            self.elicits = isinstance(elicitation, dict) \
                and isinstance(elicitation.get("form"), dict)
        self.initialized = True
        self.reply(ctx, self.fault.connection.initialize_result(result))
        self.fault.connection.after_initialize(self)

    def cancel_session(self, s: Session) -> None:
        """session/cancel semantics (a close cancels too): see :class:`~.cancels.Cancels`."""
        self.cancels.cancel_session(s)
