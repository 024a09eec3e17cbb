"""Permission requests, their answers, and what a cancel does to a session's work."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from acp_model.agents.reference.state import PermWait, Session, Turn
from acp_model.agents.reference.v1 import permission_params as v1_permission_params
from acp_model.agents.turns import ToolSpec

if TYPE_CHECKING:
    from acp_model.agents.reference.agent import Agent

log = logging.getLogger("acp_model.agents.reference")

PERMISSION_OPTIONS = [
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"},
]
ALLOW_OPTIONS = frozenset({"allow-once", "allow-always"})
CANCELLED_BY_AGENT = ("cancelled-by-agent", None)
GRACE = 0.05  # perm_cancel=grace: how long answers still count after a cancel
WAIT = 1.0  # perm_cancel=wait: how long the cancelled turn waits for the answers


class PermissionsMixin:
    """Asking, judging the answer, and cancelling (part of :class:`Agent`)."""

    def ask_permission(self: Agent, turn: Turn, tool_id: str, tool: ToolSpec) -> PermWait:
        s = turn.session
        rid = self.next_request_id
        self.next_request_id += 1
        future: asyncio.Future[tuple[str, Any]] = asyncio.get_running_loop().create_future()
        waiting = PermWait(rid, turn, tool_id, tool, future)
        self.perm_waiters[rid] = waiting
        turn.pending_perms[rid] = waiting
        params = {
            "sessionId": s.id,
            "title": f"Allow: {tool.title}?",
            "description": f"The agent wants to {tool.kind} {s.abs_path(tool.path)}.",
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": tool_id}},
            "options": self.fault.permission_options(PERMISSION_OPTIONS),
        }
        if self.protocol == 1:  # v1's shape (reference/v1.py)
            params = v1_permission_params(params)
        self.send({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission",
                   "params": params})  # fmt: skip
        early = self.fault.early_answer(self, waiting)
        if early is not None:
            future.set_result(early)
        return waiting

    def judge(self: Agent, answer: tuple[str, Any]) -> str:
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
        return self.fault.decision(decision)

    def handle_response(self: Agent, msg: dict[str, Any]) -> None:
        rid = msg.get("id")
        pw = self.perm_waiters.pop(rid, None) if type(rid) is int else None
        if pw is None:
            log.info("ignoring response to unknown or stale request id %r", rid)
            self.fault.stray_answer(self, msg)
            return
        answer = ("error", msg["error"]) if "error" in msg else ("result", msg.get("result"))
        turn = pw.turn
        if pw.future.done():  # the turn was cancelled; the answer changes nothing
            turn.late_answers.discard(rid)
            if not turn.late_answers:
                turn.late_answered.set()
            self.fault.late_answer(self, pw)
            return
        turn.pending_perms.pop(rid, None)
        pw.future.set_result(answer)

    def wait_for_answers(self: Agent) -> float:
        """How long a cancelled turn waits for the answers to its permission requests."""
        return WAIT if self.design.perm_cancel == "wait" else 0.0

    # ------------------------------------------------------------------ cancel

    def cancel_session(self: Agent, s: Session) -> None:
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
        self.cancel_queued(s)
        if turn.cancelled:
            return  # a second cancel changes nothing
        turn.cancelled = True
        turn.cancel_event.set()
        self.fault.turn_cancelled(s)
        perms = list(turn.pending_perms.values())
        turn.pending_perms.clear()
        if not perms:
            return
        style = self.design.perm_cancel
        # alternate: stop waiting, and every second time also withdraw
        announce = (s.cancels_with_perms % 2 == 1 if style == "alternate"
                    else style == "withdraw")
        s.cancels_with_perms += 1
        announce = self.fault.withdraw(announce)
        listening = style in ("wait", "grace") or self.fault.keeps_listening()
        for waiting in perms:
            if listening:
                turn.late_answers.add(waiting.request_id)
            else:
                self.perm_waiters.pop(waiting.request_id, None)
            if announce:
                self.send({"jsonrpc": "2.0", "method": "$/cancel_request",
                           "params": {"requestId": waiting.request_id}})  # fmt: skip
        if style == "grace":  # the answers may still come in for a moment
            asyncio.get_running_loop().call_later(GRACE, _stop_waiting, perms)
        else:
            _stop_waiting(perms)


def _stop_waiting(perms: list[PermWait]) -> None:
    for waiting in perms:
        if not waiting.future.done():
            waiting.future.set_result(CANCELLED_BY_AGENT)
