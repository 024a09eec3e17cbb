"""What the reference agent keeps per session, per prompt, per turn and per permission wait."""

from __future__ import annotations

import asyncio
import posixpath
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from acp_model.agents.reference.wire import Ctx
from acp_model.agents.turns import Step, ToolSpec, TurnPlan


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
    elicit: bool = False  # asked with a form elicitation, not a permission request


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
    shown_state: str = "idle"  # the last state_update sent (a resume reports it again)
    prompts_read: int = 0
    turns_started: int = 0
    turns_completed: int = 0
    user_messages: int = 0
    cancels_with_perms: int = 0
    closing: bool = False
    closed: bool = False
    pending: list[PendingPrompt] = field(default_factory=list)
    queued: list[PendingPrompt] = field(default_factory=list)  # held behind the running turn
    history: dict[str, dict[str, Any]] = field(default_factory=dict)
    # v1: prompts answered when their turn ends, and the tool calls already reported
    v1_prompts: list[Any] = field(default_factory=list)
    v1_tools: set[str] = field(default_factory=set)
    counters: dict[str, int] = field(default_factory=dict)
    # The sdk-2.4.0 revision: tool calls running in the background, and whether a snapshot
    # ever listed one (then every state update carries the list).
    background: list[str] = field(default_factory=list)
    background_listed: bool = False

    def new_id(self, prefix: str) -> str:
        n = self.counters.get(prefix, 0) + 1
        self.counters[prefix] = n
        return f"{prefix}_{self.index}_{n}"

    def abs_path(self, rel: str) -> str:
        return posixpath.join(self.cwd, rel) if self.cwd.startswith("/") else self.cwd + "\\" + rel
