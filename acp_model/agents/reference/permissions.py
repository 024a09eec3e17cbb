"""Permission requests: asking, judging the answer, and what a cancel does to the open ones.

A client that advertised form elicitation (v2) is asked every second time with an
``elicitation/create`` tied to the tool call instead: a form with one yes/no field, whose
answer counts as the permission outcome it stands for (accept with yes: allowed; accept with
no, or decline: rejected; cancel or any other action: cancelled). A cancel withdraws such a
request always (sdk-2.4.0: "Agents SHOULD cancel pending elicitations no longer needed by
cancelled work")."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp_model.agents.reference.faults import PermissionHooks
from acp_model.agents.reference.host import Host
from acp_model.agents.reference.state import PermWait, Session, Turn
from acp_model.agents.reference.v1 import permission_params as v1_permission_params
from acp_model.agents.turns import ToolSpec

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


class Permissions:
    """The agent's permission requests: the ids it hands out and the turns waiting on them."""

    def __init__(self, host: Host, hooks: PermissionHooks) -> None:
        self.host = host
        self.hooks = hooks  # where a planted bug changes what a request or an answer does
        self.waiters: dict[int, PermWait] = {}  # request id -> the tool call waiting on it
        self.next_request_id = 0

    def ask(self, turn: Turn, tool_id: str, tool: ToolSpec) -> PermWait:
        host, s = self.host, turn.session
        rid = self.next_request_id
        self.next_request_id += 1
        future: asyncio.Future[tuple[str, Any]] = asyncio.get_running_loop().create_future()
        waiting = PermWait(rid, turn, tool_id, tool, future,
                           elicit=host.elicits and host.protocol == 2 and rid % 2 == 1)
        self.waiters[rid] = waiting
        turn.pending_perms[rid] = waiting
        if waiting.elicit:
            host.send({"jsonrpc": "2.0", "id": rid, "method": "elicitation/create",
                       "params": elicitation_params(s.id, tool_id, tool.title)})
            return waiting
        params = {
            "sessionId": s.id,
            "title": f"Allow: {tool.title}?",
            "description": f"The agent wants to {tool.kind} {s.abs_path(tool.path)}.",
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": tool_id}},
            "options": self.hooks.permission_options(PERMISSION_OPTIONS),
        }
        if host.protocol == 1:  # v1's shape (reference/v1.py)
            params = v1_permission_params(params)
        host.send({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission",
                   "params": params})  # fmt: skip
        early = self.hooks.early_answer(host, waiting)
        if early is not None:
            future.set_result(early)
        return waiting

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
        return self.hooks.decision(decision)

    def handle_response(self, msg: dict[str, Any]) -> None:
        rid = msg.get("id")
        pw = self.waiters.pop(rid, None) if type(rid) is int else None
        if pw is None:
            log.info("ignoring response to unknown or stale request id %r", rid)
            self.hooks.stray_answer(self.host, msg)
            return
        answer = ("error", msg["error"]) if "error" in msg else ("result", msg.get("result"))
        turn = pw.turn
        if pw.future.done():  # the turn was cancelled; the answer changes nothing
            turn.late_answers.discard(rid)
            if not turn.late_answers:
                turn.late_answered.set()
            self.hooks.late_answer(self.host, pw)
            return
        turn.pending_perms.pop(rid, None)
        pw.future.set_result(as_permission(answer) if pw.elicit else answer)

    def wait_for_answers(self) -> float:
        """How long a cancelled turn waits for the answers to its permission requests."""
        return WAIT if self.host.design.perm_cancel == "wait" else 0.0

    def withdraw(self, s: Session, turn: Turn) -> None:
        """A cancel reached a turn: its open requests stop counting, now or after a grace,
        withdrawn on the wire or not, as the design's ``perm_cancel`` says (A-11, A-14)."""
        host = self.host
        perms = list(turn.pending_perms.values())
        turn.pending_perms.clear()
        if not perms:
            return
        style = host.design.perm_cancel
        # alternate: stop waiting, and every second time also withdraw
        announce = (s.cancels_with_perms % 2 == 1 if style == "alternate"
                    else style == "withdraw")
        s.cancels_with_perms += 1
        announce = self.hooks.withdraw(announce)
        listening = style in ("wait", "grace") or self.hooks.keeps_listening()
        for waiting in perms:
            if waiting.elicit:  # never needed again: withdrawn now, its answer ignored
                self.waiters.pop(waiting.request_id, None)
                if self.hooks.withdraws_elicitation():
                    host.send({"jsonrpc": "2.0", "method": "$/cancel_request",
                               "params": {"requestId": waiting.request_id}})  # fmt: skip
                continue
            if listening:
                turn.late_answers.add(waiting.request_id)
            else:
                self.waiters.pop(waiting.request_id, None)
            if announce:
                host.send({"jsonrpc": "2.0", "method": "$/cancel_request",
                           "params": {"requestId": waiting.request_id}})  # fmt: skip
        if style == "grace":  # the answers may still come in for a moment
            asyncio.get_running_loop().call_later(GRACE, _stop_waiting, perms)
        else:
            _stop_waiting(perms)


def elicitation_params(sid: str, tool_id: str, title: str) -> dict[str, Any]:
    """A form elicitation tied to the tool call it asks about."""
    return {"sessionId": sid, "toolCallId": tool_id, "mode": "form",
            "message": f"Allow: {title}?",
            "requestedSchema": {"type": "object", "required": ["approve"], "properties": {
                "approve": {"type": "boolean", "title": "Run it"}}}}


def as_permission(answer: tuple[str, Any]) -> tuple[str, Any]:
    """An elicitation's answer as the permission outcome it stands for."""
    kind, payload = answer
    if kind == "error":
        return answer
    action = payload.get("action") if isinstance(payload, dict) else None
    content = payload.get("content") if isinstance(payload, dict) else None
    if action == "accept" and isinstance(content, dict) and content.get("approve") is True:
        option = "allow-once"
    elif action in ("accept", "decline"):
        option = "reject-once"
    else:  # cancel, and any action the agent does not understand (the schema's MUST)
        return ("result", {"outcome": {"outcome": "cancelled"}})
    return ("result", {"outcome": {"outcome": "selected", "optionId": option}})


def _stop_waiting(perms: list[PermWait]) -> None:
    for waiting in perms:
        if not waiting.future.done():
            waiting.future.set_result(CANCELLED_BY_AGENT)
