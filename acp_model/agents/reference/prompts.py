"""Prompts: validation, acceptance (response, user message) and the turn they start or join."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_model.agents.reference.faults import PromptHooks
from acp_model.agents.reference.host import Host
from acp_model.agents.reference.state import PendingPrompt, Session
from acp_model.agents.reference.wire import (
    INVALID_PARAMS,
    REQUEST_CANCELLED,
    Ctx,
    RpcFailure,
    object_params,
)
from acp_model.agents.reference.work import Work, wait, wait_first
from acp_model.agents.turns import TurnPlan, plan_turn, prompt_text

_KNOWN_BLOCKS = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": ("resource",),
}


class Prompts:
    """``session/prompt`` from the request to the turn: read, held, accepted or cancelled."""

    def __init__(self, host: Host, work: Work, accept_timing: tuple[float, float],
                 session: Callable[[dict[str, Any]], Session], hooks: PromptHooks) -> None:
        self.host = host
        self.hooks = hooks  # where a planted bug changes what happens to a prompt
        self.work = work
        self.accept_timing = accept_timing  # (base, span) seconds before a prompt is accepted
        self.session = session  # the open session a request names (-32602 otherwise)

    def on_prompt(self, ctx: Ctx, params: Any) -> None:
        p = object_params(params)
        s = self.session(p)
        if s.closing:
            raise RpcFailure(INVALID_PARAMS, "session is closing")
        blocks = p.get("prompt")
        if not isinstance(blocks, list):
            raise RpcFailure(INVALID_PARAMS, "prompt must be an array of content blocks")
        for block in blocks:
            _check_block(block)
        s.prompts_read += 1
        index = s.prompts_read
        code = self.hooks.check_prompt(s, index)
        if code is not None:
            raise RpcFailure(code, "method not found: session/prompt")
        busy = s.turn is not None and not s.turn.cancelled
        if busy and self.hooks.ignores_busy_prompt():
            return  # never answered, never processed
        if busy and self.host.design.busy == "reject":
            raise RpcFailure(INVALID_PARAMS, "session already has foreground work")
        pend = PendingPrompt(ctx, blocks, prompt_text(blocks), index, busy)
        if busy and self.host.design.busy in ("queue", "queue-reject"):
            s.queued.append(pend)  # held unanswered until the running turn has ended
            self.hooks.prompt_held(self.host, s, pend)
            return
        s.pending.append(pend)
        self.host.spawn(self._accept(s, pend))

    def release_queued(self, s: Session) -> None:
        """The turn ended: the prompts held behind it are accepted now, in order."""
        queued, s.queued = s.queued, []
        for pend in queued:
            s.pending.append(pend)
            self.host.spawn(self._accept(s, pend))

    def cancel_queued(self, s: Session) -> None:
        """A cancel: under ``busy=queue-reject`` the held prompts are rejected; a planted bug
        drops them unanswered; otherwise they outlive the cancel (RULES.md A-10 d)."""
        if self.hooks.drops_queued_on_cancel():
            s.queued.clear()
        elif self.host.design.busy == "queue-reject" or (self.host.sends_receipts
                                                    and not self.hooks.keeps_held_prompts()):
            # the newer revision: a cancel also cancels the prompts not yet inserted (and an
            # agent that answers prompts with receipts is taken for one, by clients and by
            # `--spec auto`, so it keeps that revision's promise)
            queued, s.queued = s.queued, []
            for pend in queued:
                self.host.reply_error(pend.ctx, REQUEST_CANCELLED, "prompt cancelled while held")

    def withdraw_queued(self, s: Session, request_id: Any) -> None:
        """$/cancel_request for a held prompt: rejected with -32800 (CANCEL-14)."""
        for pend in list(s.queued):
            if pend.ctx.request_id == request_id and type(pend.ctx.request_id) is type(
                    request_id):
                s.queued.remove(pend)
                if self.hooks.answers_withdrawn():
                    self.host.reply_error(pend.ctx, REQUEST_CANCELLED, "prompt withdrawn")

    def _accept_delay(self, pend: PendingPrompt) -> float:
        base, span = self.accept_timing
        plan = self.plan_for(pend.text)
        delay = base + span * plan.accept_jitter
        if self.host.design.pending_cancel == "reject":
            delay = max(delay, 0.03)  # a window a cancel can land in, in every timing
        return delay

    async def _accept(self, s: Session, pend: PendingPrompt) -> None:
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
            if pend.request_cancelled and not self.hooks.answers_withdrawn():
                return
            if (
                pend.request_cancelled
                or s.closing
                or (pend.session_cancelled and self.host.design.pending_cancel == "reject")
            ):
                if self.host.protocol == 1 and not pend.request_cancelled:
                    # v1: a cancelled turn is answered with its stop reason, never an error
                    self.host.reply(pend.ctx, {"stopReason": "cancelled"})
                    return
                self.host.reply_error(pend.ctx, REQUEST_CANCELLED,
                                      "prompt cancelled before acceptance")
                return
            self.accept(s, pend)
        finally:
            if pend in s.pending:
                s.pending.remove(pend)
            pend.settled.set()

    def plan_for(self, text: str) -> TurnPlan:
        return plan_for(text, self.host.seed, self.host.forced)

    def accept(self, s: Session, pend: PendingPrompt) -> None:
        """Accept a prompt: respond, report the user message, start or join the turn."""
        plan = self.plan_for(pend.text)
        msg_id = self.hooks.user_message_id(s, s.new_id("msg_user"))
        answer = self.hooks.answers_prompt(pend)
        if self.host.protocol == 1:
            self._accept_v1(s, pend, plan, msg_id, answer=answer)
        elif self.hooks.errors_after_insertion(s, pend):  # inserted, then an error answer
            self.user_message(s, pend.blocks, msg_id, whole=True)
            self.host.reply_error(pend.ctx, -32603, "the model failed")
            if s.turn is None:
                self.work.start_turn(s, plan, cancelled=pend.session_cancelled)
        else:
            self._accept_v2(s, pend, plan, msg_id, answer=answer)

    def _accept_v1(self, s: Session, pend: PendingPrompt, plan: TurnPlan, msg_id: str, *,
                   answer: bool) -> None:
        """v1: no acknowledgement, no echo; the turn's end answers it (the prompt is still
        the conversation's: session/load replays it)."""
        s.history[msg_id] = {"sessionUpdate": "user_message", "content": list(pend.blocks)}
        if answer:
            s.v1_prompts.append(pend.ctx)
        self._work_on(s, pend, plan)

    def _accept_v2(self, s: Session, pend: PendingPrompt, plan: TurnPlan, msg_id: str, *,
                   answer: bool) -> None:
        """The response (before or after the user message, as the design's ``order``
        says), the user message, the work."""
        result = self._response(pend, msg_id)
        dropped = self.hooks.drops_busy_prompt() and s.turn is not None and pend.busy_at_read
        early = self.host.design.order == "message-first"
        if answer and not early:
            self.host.reply(pend.ctx, result)
        if not dropped and self.hooks.reports_user_message(pend):
            self.user_message(s, pend.blocks, msg_id)
        if not dropped:
            self._work_on(s, pend, plan)
        if answer and early:
            self.host.reply(pend.ctx, result)
        if self.hooks.answers_twice():
            self.host.reply(pend.ctx, result)

    def _response(self, pend: PendingPrompt, msg_id: str) -> dict[str, Any]:
        """``{}``, with the receipt of the newer revision and the design's ``_meta``."""
        result: dict[str, Any] = {}
        if self.host.design.result == "meta":
            result["_meta"] = {"acpModel/promptIndex": pend.index}
        if self.host.sends_receipts:
            result["messageId"] = self.hooks.receipt_id(msg_id)  # the receipt
        return result

    def _work_on(self, s: Session, pend: PendingPrompt, plan: TurnPlan) -> None:
        """Join the running work (A-01: no second ``running``), or start a turn."""
        turn = s.turn
        if turn is None:
            self.work.start_turn(s, plan, cancelled=pend.session_cancelled)
        elif not turn.cancelled:
            turn.add(plan)

    def user_message(self, s: Session, blocks: list[Any], msg_id: str,
                     whole: bool = False) -> None:
        s.user_messages += 1
        style = self.host.design.messages
        chunked = not whole and (style == "chunks"
                                 or (style == "mixed" and s.user_messages % 2 == 0))
        if not chunked or not blocks:
            self.host.update(s, {"sessionUpdate": "user_message", "messageId": msg_id,
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
            self.host.update(s, {"sessionUpdate": "user_message_chunk", "messageId": msg_id,
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
