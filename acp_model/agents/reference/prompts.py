"""Prompts: validation, acceptance (response, user message) and the turn they start or join."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_model.agents.reference.state import PendingPrompt, Session
from acp_model.agents.reference.wire import (
    INVALID_PARAMS,
    REQUEST_CANCELLED,
    Ctx,
    RpcFailure,
)
from acp_model.agents.turns import TurnPlan, plan_turn, prompt_text

if TYPE_CHECKING:
    from acp_model.agents.reference.agent import Agent

_KNOWN_BLOCKS = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": ("resource",),
}


class PromptsMixin:
    """``session/prompt`` from the request to the turn (part of :class:`Agent`)."""

    def on_prompt(self: Agent, ctx: Ctx, params: Any) -> None:
        p = self._obj(params)
        s = self._session(p)
        if s.closing:
            raise RpcFailure(INVALID_PARAMS, "session is closing")
        blocks = p.get("prompt")
        if not isinstance(blocks, list):
            raise RpcFailure(INVALID_PARAMS, "prompt must be an array of content blocks")
        for block in blocks:
            _check_block(block)
        s.prompts_read += 1
        index = s.prompts_read
        code = self.fault.check_prompt(s, index)
        if code is not None:
            raise RpcFailure(code, "method not found: session/prompt")
        busy = s.turn is not None and not s.turn.cancelled
        if busy and self.fault.ignores_busy_prompt():
            return  # never answered, never processed
        if busy and self.design.busy == "reject":
            raise RpcFailure(INVALID_PARAMS, "session already has foreground work")
        pend = PendingPrompt(ctx, blocks, prompt_text(blocks), index, busy)
        if busy and self.design.busy in ("queue", "queue-reject"):
            s.queued.append(pend)  # held unanswered until the running turn has ended
            self.fault.prompt_held(self, s, pend)
            return
        s.pending.append(pend)
        self.spawn(self._accept(s, pend))

    def release_queued(self: Agent, s: Session) -> None:
        """The turn ended: the prompts held behind it are accepted now, in order."""
        queued, s.queued = s.queued, []
        for pend in queued:
            s.pending.append(pend)
            self.spawn(self._accept(s, pend))

    def cancel_queued(self: Agent, s: Session) -> None:
        """A cancel: under ``busy=queue-reject`` the held prompts are rejected; a planted bug
        drops them unanswered; otherwise they outlive the cancel (RULES.md A-10 d)."""
        if self.fault.drops_queued_on_cancel():
            s.queued.clear()
        elif self.design.busy == "queue-reject" or (self.sends_receipts
                                                    and not self.fault.keeps_held_prompts()):
            # the newer revision: a cancel also cancels the prompts not yet inserted (and an
            # agent that answers prompts with receipts is taken for one, by clients and by
            # `--spec auto`, so it keeps that revision's promise)
            queued, s.queued = s.queued, []
            for pend in queued:
                self.reply_error(pend.ctx, REQUEST_CANCELLED, "prompt cancelled while held")

    def withdraw_queued(self: Agent, s: Session, request_id: Any) -> None:
        """$/cancel_request for a held prompt: rejected with -32800 (CANCEL-14)."""
        for pend in list(s.queued):
            if pend.ctx.request_id == request_id and type(pend.ctx.request_id) is type(
                    request_id):
                s.queued.remove(pend)
                self.reply_error(pend.ctx, REQUEST_CANCELLED, "prompt withdrawn")

    def _accept_delay(self: Agent, pend: PendingPrompt) -> float:
        base, span = self.accept_timing
        plan = self.plan_for(pend.text)
        delay = base + span * plan.accept_jitter
        if self.design.pending_cancel == "reject":
            delay = max(delay, 0.03)  # a window a cancel can land in, in every timing
        return delay

    async def _accept(self: Agent, s: Session, pend: PendingPrompt) -> None:
        from acp_model.agents.reference.work import wait, wait_first

        try:
            delay = self._accept_delay(pend)
            if delay > 0:
                await wait(pend.wake, delay)
            # A cancel that preceded this prompt must not touch its work (that would be the
            # "late cancel kills the next turn" bug): let the cancelled turn finish first. A
            # cancel read meanwhile wakes us up: the prompt then joins that turn.
            while (
                s.turn is not None
                and s.turn.cancelled
                and not (pend.session_cancelled or pend.request_cancelled or s.closing)
            ):
                await wait_first(s.turn.done, pend.wake)
            if (
                pend.request_cancelled
                or s.closing
                or (pend.session_cancelled and self.design.pending_cancel == "reject")
            ):
                if self.protocol == 1 and not pend.request_cancelled:
                    # v1: a cancelled turn is answered with its stop reason, never an error
                    self.reply(pend.ctx, {"stopReason": "cancelled"})
                    return
                self.reply_error(pend.ctx, REQUEST_CANCELLED, "prompt cancelled before acceptance")
                return
            self.accept(s, pend)
        finally:
            if pend in s.pending:
                s.pending.remove(pend)
            pend.settled.set()

    def plan_for(self: Agent, text: str) -> TurnPlan:
        return plan_for(text, self.seed, self.forced)

    def accept(self: Agent, s: Session, pend: PendingPrompt) -> None:
        """Accept a prompt: respond, report the user message, start or join the turn."""
        plan = self.plan_for(pend.text)
        msg_id = s.new_id("msg_user")
        msg_id = self.fault.user_message_id(s, msg_id)
        result: dict[str, Any] = {}
        if self.design.result == "meta":
            result["_meta"] = {"acpModel/promptIndex": pend.index}
        if self.sends_receipts:
            result["messageId"] = self.fault.receipt_id(msg_id)  # the receipt
        turn = s.turn
        joining = turn is not None
        dropped = self.fault.drops_busy_prompt() and joining and pend.busy_at_read
        answer = self.fault.answers_prompt(pend)
        if self.protocol == 1:  # v1: no acknowledgement, no echo; the turn's end answers it
            if answer:
                s.v1_prompts.append(pend.ctx)
            if turn is not None:
                if not turn.cancelled:
                    turn.add(plan)
            else:
                self.start_turn(s, plan, cancelled=pend.session_cancelled)
            return
        if self.fault.errors_after_insertion(s, pend):  # inserted, then an error answer
            self.user_message(s, pend.blocks, msg_id, whole=True)
            self.reply_error(pend.ctx, -32603, "the model failed")
            if turn is None:
                self.start_turn(s, plan, cancelled=pend.session_cancelled)
            return
        early = self.design.order == "message-first"
        if answer and not early:
            self.reply(pend.ctx, result)
        if not dropped and self.fault.reports_user_message(pend):
            self.user_message(s, pend.blocks, msg_id)
        if not dropped:
            if turn is not None:
                if not turn.cancelled:
                    turn.add(plan)  # joins the running work, no second `running`
            else:
                self.start_turn(s, plan, cancelled=pend.session_cancelled)
        if answer and early:
            self.reply(pend.ctx, result)
        if self.fault.answers_twice():
            self.reply(pend.ctx, result)

    def user_message(self: Agent, s: Session, blocks: list[Any], msg_id: str,
                     whole: bool = False) -> None:
        s.user_messages += 1
        style = self.design.messages
        chunked = not whole and (style == "chunks"
                                 or (style == "mixed" and s.user_messages % 2 == 0))
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


def plan_for(text: str, seed: int, forced: dict[str, bool]) -> TurnPlan:
    """The turn the fake model plays for a prompt (tests use it to pick prompts)."""
    return plan_turn(text, seed, **{k: bool(v) for k, v in forced.items()})


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
