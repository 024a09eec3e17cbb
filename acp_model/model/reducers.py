"""Client-side views of a session, as pure functions: ``new_view = reduce(view, update)``.

These are the merge rules the lifecycle text defines (RULES.md section 3): message upserts and
chunks keyed by ``messageId`` (MSG-03..MSG-10), tool calls keyed by ``toolCallId`` (TOOL-03..
TOOL-09), plans replaced wholesale per ``planId`` (PLAN-07) and usage snapshots. Inputs are never
mutated: every call returns a new view (frozen dataclasses holding fresh dict copies).

Key distinction, easy to get wrong: a *missing* field leaves the value alone, ``null`` clears it,
``[]`` clears content too, and a concrete array replaces everything (including chunk-appended
content). The seed's example: [A] then chunk B gives [A, B]; then [C] gives [C].
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

MESSAGE_FAMILY = {
    "user_message": "user", "user_message_chunk": "user",
    "agent_message": "agent", "agent_message_chunk": "agent",
    "agent_thought": "thought", "agent_thought_chunk": "thought",
}
_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class Message:
    family: str
    content: tuple[Any, ...] = ()
    meta: Any = None  # message-level _meta (chunk _meta never lands here, MSG-09)


@dataclass(frozen=True, slots=True)
class ToolCall:
    title: Any = None
    kind: Any = "other"
    status: Any = "pending"
    content: tuple[Any, ...] = ()
    locations: tuple[Any, ...] = ()
    raw_input: Any = None
    raw_output: Any = None
    meta: Any = None


@dataclass(frozen=True, slots=True)
class Usage:
    used: int
    size: int
    cost: Any = None


@dataclass(frozen=True, slots=True)
class SessionView:
    """What a client would render for one session."""

    messages: dict[str, Message] = field(default_factory=dict)
    order: tuple[str, ...] = ()  # message ids in first-seen order
    tools: dict[str, ToolCall] = field(default_factory=dict)
    plans: dict[str, Any] = field(default_factory=dict)
    usage: Usage | None = None
    state: str | None = None
    stop_reason: Any = None


def _content_patch(current: tuple[Any, ...], update: dict[str, Any], key: str = "content"
                   ) -> tuple[Any, ...]:
    """Omitted keeps, null or [] clears, an array replaces (MSG-04..06, TOOL-05)."""
    if key not in update:
        return current
    value = update[key]
    if value is None:
        return ()
    if isinstance(value, list):
        return tuple(value)
    return current  # not an array: the schema rejects it; keep the last good content


def _meta_patch(current: Any, update: dict[str, Any]) -> Any:
    return update.get("_meta", current)


def reduce_message(messages: dict[str, Message], update: dict[str, Any]) -> dict[str, Message]:
    """Apply one message upsert or chunk; returns a new mapping."""
    kind = update.get("sessionUpdate", "")
    family = MESSAGE_FAMILY.get(kind)
    mid = update.get("messageId")
    if family is None or not isinstance(mid, str):
        return messages
    current = messages.get(mid) or Message(family)
    if kind.endswith("_chunk"):
        block = update.get("content")
        new = replace(current, content=(*current.content, block)) if block is not None \
            else current
    else:
        new = replace(current, content=_content_patch(current.content, update),
                      meta=_meta_patch(current.meta, update))
    out = dict(messages)
    out[mid] = new
    return out


_TOOL_FIELDS = {"title": "title", "kind": "kind", "status": "status", "rawInput": "raw_input",
                "rawOutput": "raw_output"}


def reduce_tool_call(tools: dict[str, ToolCall], update: dict[str, Any]) -> dict[str, ToolCall]:
    """Apply a tool_call_update (field patches) or a tool_call_content_chunk (append)."""
    tid = update.get("toolCallId")
    if not isinstance(tid, str):
        return tools
    current = tools.get(tid) or ToolCall()
    if update.get("sessionUpdate") == "tool_call_content_chunk":
        item = update.get("content")
        new = replace(current, content=(*current.content, item)) if item is not None \
            else current
    else:
        changes: dict[str, Any] = {}
        for wire, attr in _TOOL_FIELDS.items():
            if wire in update:
                changes[attr] = update[wire]  # null unsets; a value replaces (TOOL-04)
        changes["content"] = _content_patch(current.content, update)
        changes["locations"] = _content_patch(current.locations, update, "locations")
        changes["meta"] = _meta_patch(current.meta, update)
        new = replace(current, **changes)
    out = dict(tools)
    out[tid] = new
    return out


def reduce_plan(plans: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Each plan_update replaces that plan wholesale (never merged, PLAN-07)."""
    plan = update.get("plan")
    if not isinstance(plan, dict) or not isinstance(plan.get("planId"), str):
        return plans
    out = dict(plans)
    out[plan["planId"]] = plan
    return out


def reduce_usage(usage: Usage | None, update: dict[str, Any]) -> Usage | None:
    """A snapshot: used and size replace; cost object replaces, null clears, omitted keeps."""
    used, size = update.get("used"), update.get("size")
    if not isinstance(used, int) or not isinstance(size, int):
        return usage
    cost = usage.cost if usage is not None else None
    if "cost" in update:
        cost = update["cost"]
    return Usage(used, size, cost)


def reduce_session(view: SessionView, update: dict[str, Any]) -> SessionView:
    """Route one ``session/update`` payload to the reducer that owns it."""
    kind = update.get("sessionUpdate")
    if kind in MESSAGE_FAMILY:
        mid = update.get("messageId")
        order = view.order if mid in view.messages or not isinstance(mid, str) \
            else (*view.order, mid)
        return replace(view, messages=reduce_message(view.messages, update), order=order)
    if kind in ("tool_call_update", "tool_call_content_chunk"):
        return replace(view, tools=reduce_tool_call(view.tools, update))
    if kind == "plan_update":
        return replace(view, plans=reduce_plan(view.plans, update))
    if kind == "usage_update":
        return replace(view, usage=reduce_usage(view.usage, update))
    if kind == "state_update":
        state = update.get("state")
        reason = update.get("stopReason") if state == "idle" else view.stop_reason
        return replace(view, state=state, stop_reason=reason)
    return view


def apply_permission_subject(view: SessionView, params: dict[str, Any]) -> SessionView:
    """A tool_call subject of a permission request patches the tool call like an update
    (PERM-04 / A-24); the request's own title and description never do (PERM-03)."""
    subject = params.get("subject")
    if isinstance(subject, dict) and subject.get("type") == "tool_call":
        tool = subject.get("toolCall")
        if isinstance(tool, dict):
            return replace(view, tools=reduce_tool_call(view.tools, tool))
    return view


def rendered_text(message: Message) -> str:
    """Concatenated text of a message's text blocks (handy in tests and notebooks)."""
    return "".join(b.get("text", "") for b in message.content
                   if isinstance(b, dict) and b.get("type") == "text")
