"""Turns: running, the fake model's steps (messages, plans, usage, tools), the end of a turn,
and what the agent sends while idle."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from acp_model.agents.reference.faults import PayloadHooks, TurnHooks
from acp_model.agents.reference.host import Host
from acp_model.agents.reference.permissions import Permissions
from acp_model.agents.reference.state import PlanCtx, Session, Turn
from acp_model.agents.turns import Step, StepOutput, ToolSpec, TurnPlan

log = logging.getLogger("acp_model.agents.reference")

AVAILABLE_COMMANDS = [
    {"name": "plan", "description": "Draft a plan before editing"},
    {"name": "review", "description": "Review the working tree"},
]
# The sdk-2.4.0 revision tags each command with its kind.
TYPED_COMMANDS = [{"type": "command", **c} for c in AVAILABLE_COMMANDS]


def text_item(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


async def wait_first(*events: asyncio.Event) -> None:
    """Return as soon as any of ``events`` is set."""
    if any(e.is_set() for e in events):
        return
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()


async def wait(event: asyncio.Event, timeout: float) -> None:
    """Sleep up to ``timeout`` seconds, waking early when ``event`` is set."""
    if event.is_set():
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout)


class Work:
    """A turn from ``running`` to its idle: the fake model's steps, at the agent's timing."""

    def __init__(self, host: Host, perms: Permissions, timing: tuple[float, float],
                 on_turn_end: Callable[[Session], None], hooks: TurnHooks,
                 payloads: PayloadHooks) -> None:
        self.host = host
        self.hooks = hooks  # where a planted bug changes a turn's course
        self.payloads = payloads  # ... or what its updates carry
        self.perms = perms
        self.timing = timing  # (base, span) seconds: the pause after a step
        self.on_turn_end = on_turn_end  # a turn ended: the prompts held behind it go on

    def start_turn(self, s: Session, plan: TurnPlan, *, cancelled: bool) -> Turn:
        s.turns_started += 1
        turn = Turn(session=s, index=s.turns_started)
        s.turn = turn
        turn.add(plan)
        if cancelled or self.hooks.starts_cancelled(s):
            turn.cancelled = True
            turn.cancel_event.set()
        instant = turn.cancelled and self.host.design.instant == "no-running"
        if self.hooks.reports_running() and not instant:
            self.host.running(s)
        self.finish_background(s)
        self.hooks.turn_started(self.host, s, turn)
        self.host.spawn(self.run_turn(turn))
        return turn

    async def pause(self, turn: Turn, jitter: float) -> None:
        """The model's think time; a cancel cuts it short. In fast timing just yield."""
        base, span = self.timing
        if base <= 0:
            await asyncio.sleep(0)
            return
        await wait(turn.cancel_event, base + span * jitter)

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
            await self._finish_cancelled(s, turn)
        else:
            self._finish_completed(s, turn)
        s.turn = None
        turn.done.set()
        if not turn.cancelled and not s.closing:
            if self.host.design.background == "chatty":
                self.background(s)
            elif self.host.design.background == "turns" and s.turns_completed % 2 == 0:
                self.background(s, which=(s.turns_completed // 2) % 2)
        if not s.closing:
            self.on_turn_end(s)

    async def _finish_cancelled(self, s: Session, turn: Turn) -> None:
        """The open tool calls end cancelled, then the cancelled idle (A-11)."""
        # prompts that were pending when the cancel came join this turn first.
        for pend in list(s.pending):
            if pend.session_cancelled:
                await pend.settled.wait()
        if turn.late_answers:
            await wait(turn.late_answered, self.perms.wait_for_answers())
        late = self.hooks.tools_after_cancelled_idle()
        if not late:
            self._cancel_open_tools(s, turn)
        reason = self.hooks.cancelled_reason()
        if reason is not None:
            self.host.state(s, "idle", reason)
        if late:
            self._cancel_open_tools(s, turn)
            self.host.update(s, {"sessionUpdate": "agent_message_chunk",
                            "messageId": s.new_id("msg_agent"),
                            "content": {"type": "text", "text": "(cancelled)"}})  # fmt: skip

    def _finish_completed(self, s: Session, turn: Turn) -> None:
        """The idle with the turn's stop reason (every third turn of the newer revision
        leaves a watcher running in the background)."""
        if self.host.newer and s.turns_started % 3 == 0:
            self.start_background(s)
        if not self.hooks.skips_idle(turn):
            self.host.state(s, "idle", self.hooks.stop_reason(turn.stop_reason))
            self.hooks.after_idle(self.host, s)
        s.turns_completed += 1

    def start_background(self, s: Session) -> None:
        """The newer revision: a watcher tool call keeps running after the turn; the idle
        that ends the turn lists it as background work."""
        tool_id = s.new_id("call_bg")
        self.host.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                        "title": "Watch the tests", "kind": "execute",
                        "status": "in_progress"})  # fmt: skip
        s.background.append(tool_id)
        s.background_listed = True

    def finish_background(self, s: Session) -> None:
        """The watcher ends when the next turn starts: its final status first, then the next
        snapshot leaves it out (the order BackgroundWork requires)."""
        if not s.background:
            return
        done, s.background = s.background, []
        early = self.hooks.removes_background_early()
        if early:
            self.host.state(s, "running")
        for tool_id in done:
            self.host.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                            "status": "completed"})  # fmt: skip

    def _cancel_open_tools(self, s: Session, turn: Turn) -> None:
        for tool_id in list(turn.open_tools):
            self.host.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                            "status": "cancelled"})  # fmt: skip
            del turn.open_tools[tool_id]

    def background(self, s: Session, which: int | None = None) -> None:
        """Updates while idle (legal: they do not change the state)."""
        used = 1000 + 250 * s.turns_completed
        cost = {"amount": round(0.002 * s.turns_completed, 4), "currency": "USD"}
        usage = {"sessionUpdate": "usage_update", "used": used, "size": 200000, "cost": cost}
        commands = {"sessionUpdate": "available_commands_update",
                    "availableCommands": TYPED_COMMANDS if self.host.newer
                    else AVAILABLE_COMMANDS}  # fmt: skip
        if which == 0:
            self.host.update(s, usage)
        elif which == 1:
            self.host.update(s, commands)
        else:
            self.host.update(s, usage)
            note = [{"type": "text", "text": "Indexing finished."}]
            self.host.update(s, {"sessionUpdate": "agent_message", "messageId": s.new_id("msg_bg"),
                            "content": note})  # fmt: skip
            self.host.update(s, commands)

    # ------------------------------------------------------------------- steps

    async def exec_step(self, turn: Turn, step: Step, plan_ctx: PlanCtx) -> None:
        s = turn.session
        if step.output in (StepOutput.THOUGHT, StepOutput.MESSAGE):
            family = "agent_thought" if step.output == StepOutput.THOUGHT else "agent_message"
            msg_id = s.new_id("msg_thought" if step.output == StepOutput.THOUGHT else "msg_agent")
            style = self.host.design.messages
            chunked = style == "chunks" or (style == "mixed" and step.chunked)
            if not chunked:
                content = [{"type": "text", "text": t} for t in step.texts]
                self.host.update(s, {"sessionUpdate": family, "messageId": msg_id,
                                     "content": content})
                return
            for i, text in enumerate(step.texts):
                if i:
                    await self.pause(turn, step.jitter / 2)
                    if turn.cancelled:
                        return
                self.host.update(s, {"sessionUpdate": f"{family}_chunk", "messageId": msg_id,
                                "content": {"type": "text", "text": text}})  # fmt: skip
        elif step.output == StepOutput.PLAN:
            self._plan_update(s, step, plan_ctx)
        elif step.output == StepOutput.USAGE:
            update: dict[str, Any] = {"sessionUpdate": "usage_update", "used": step.used,
                                      "size": step.size}  # fmt: skip
            if step.cost is not None:
                update["cost"] = {"amount": step.cost, "currency": "USD"}
            self.host.update(s, self.payloads.usage(update))
        elif step.output == StepOutput.CUSTOM:
            self.host.update(s, {"sessionUpdate": "_acp_model_progress", "turn": turn.index})
        elif step.output == StepOutput.TOOLS:
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
        self.host.update(s, {"sessionUpdate": "plan_update", "plan": self.payloads.plan(plan)})

    async def _tools(self, turn: Turn, tools: tuple[ToolSpec, ...]) -> None:
        s = turn.session
        ids: list[str] = []
        for tool in tools:
            tool_id = s.new_id("call")
            ids.append(tool_id)
            turn.open_tools[tool_id] = "pending"
            path = self.payloads.tool_path(s, tool.path)
            self.host.update(s, self.payloads.tool_call({
                "sessionUpdate": "tool_call_update", "toolCallId": tool_id, "title": tool.title,
                "kind": tool.kind, "status": "pending", "locations": [{"path": path, "line": 1}],
                "rawInput": {"path": path},
            }))  # fmt: skip
        decisions = {tool_id: "allow" for tool_id in ids}
        asking = [(i, t) for i, t in zip(ids, tools, strict=True) if t.needs_permission]
        if asking:
            waits = [self.perms.ask(turn, tool_id, tool) for tool_id, tool in asking]
            self.host.state(s, "requires_action")
            answers = await asyncio.gather(*(w.future for w in waits))
            if turn.cancelled:
                return
            for w, answer in zip(waits, answers, strict=True):
                decisions[w.tool_id] = self.perms.judge(answer)
            self.host.running(s)
        for tool_id, tool in zip(ids, tools, strict=True):
            if turn.cancelled:
                return
            decision = decisions[tool_id]
            if decision == "allow":
                await self._run_tool(turn, tool_id, tool)
            else:
                status = "cancelled" if decision == "cancelled" else "failed"
                note = f"Not run: permission {decision}."
                self.host.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                                "status": status, "content": [text_item(note)]})  # fmt: skip
                turn.open_tools.pop(tool_id, None)

    async def _run_tool(self, turn: Turn, tool_id: str, tool: ToolSpec) -> None:
        s = turn.session
        self.host.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                        "status": self.payloads.running_tool_status()})  # fmt: skip
        turn.open_tools[tool_id] = "in_progress"
        for chunk in tool.chunks:
            await self.pause(turn, 0.5)
            if turn.cancelled:
                return
            self.host.update(s, {"sessionUpdate": "tool_call_content_chunk", "toolCallId": tool_id,
                            "content": self.payloads.tool_chunk(text_item(chunk))})  # fmt: skip
        await self.pause(turn, 0.5)
        if turn.cancelled:
            return
        final = "failed" if tool.fails else "completed"
        summary = " ".join(tool.chunks) + (" Error: tool failed." if tool.fails else " Done.")
        self.host.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id,
                        "status": final, "content": [text_item(summary)]})  # fmt: skip
        turn.open_tools.pop(tool_id, None)
