"""The reference agent's v1 dialect: what its v2 output becomes when the client asked for v1.

The agent's logic is one (prompts, turns, permissions, planted bugs); only the wire differs.
In v1 a turn has no state reports and no acknowledgement: the prompt is answered when its turn
ends, with the stop reason. So the agent's v2 output is rewritten at the edge:

* ``state_update`` running / requires_action: not sent; the idle that ends a turn answers the
  turn's prompts with ``{"stopReason": ...}`` (a reason v1 does not define, such as "error",
  becomes an internal error response);
* the user message is not echoed; whole messages become chunks;
* a tool call's first report is ``tool_call`` (with a title), later ones ``tool_call_update``;
  a tool content chunk becomes an update of the tool's content; ``cancelled`` (not a v1 tool
  status) becomes ``failed``;
* ``plan_update`` becomes ``plan``; the permission request carries its ``toolCall`` at the root.
"""

from __future__ import annotations

from typing import Any

from acp_model.agents.reference.wire import AGENT_INFO, EXTENSIONS

PROTOCOL_V1 = 1
STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
CAPABILITIES = {"loadSession": True,
                "promptCapabilities": {"image": True, "audio": True, "embeddedContext": True},
                "sessionCapabilities": {"close": {}, "resume": {}}, "_meta": EXTENSIONS}


def initialize_result() -> dict[str, Any]:
    return {"protocolVersion": PROTOCOL_V1, "agentCapabilities": CAPABILITIES,
            "agentInfo": AGENT_INFO, "authMethods": []}


def translate(update: dict[str, Any], reported: set[str]) -> list[dict[str, Any]]:
    """The v1 updates one v2 update becomes (``reported``: tool call ids already reported,
    kept per session by the caller)."""
    kind = update.get("sessionUpdate")
    if kind in ("state_update", "user_message", "user_message_chunk") or (
            isinstance(kind, str) and kind.startswith("_")):
        return []  # no state reports, no echo, and v1's update kinds are closed
    if kind in ("agent_message", "agent_thought"):
        blocks = update.get("content") or []
        return [{"sessionUpdate": f"{kind}_chunk", "content": block}
                for block in blocks if isinstance(block, dict)]
    if kind in ("agent_message_chunk", "agent_thought_chunk"):
        return [{"sessionUpdate": kind, "content": update.get("content")}]
    if kind == "tool_call_update":
        tid = update.get("toolCallId")
        out = {k: v for k, v in update.items() if k != "_meta"}
        if out.get("status") == "cancelled":
            out["status"] = "failed"
        if tid not in reported:
            reported.add(tid)
            out["sessionUpdate"] = "tool_call"
            out.setdefault("title", "tool")
        return [out]
    if kind == "tool_call_content_chunk":
        return [{"sessionUpdate": "tool_call_update", "toolCallId": update.get("toolCallId"),
                 "content": [update.get("content")]}]
    if kind == "plan_update":
        plan = update.get("plan") or {}
        entries = [{k: e[k] for k in ("content", "priority", "status") if k in e}
                   for e in plan.get("entries") or [] if isinstance(e, dict)]
        return [{"sessionUpdate": "plan", "entries": entries}]
    return [update]


def permission_params(params: dict[str, Any]) -> dict[str, Any]:
    subject = params.get("subject") or {}
    tool = subject.get("toolCall") if isinstance(subject, dict) else None
    return {"sessionId": params.get("sessionId"), "toolCall": tool or {},
            "options": params.get("options")}
