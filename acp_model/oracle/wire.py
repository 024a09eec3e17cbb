"""Classification: a wire message becomes a machine event with its payload (no rules here).

What the checks need to know about a ``session/update`` or a permission request is extracted
once, here: the event it stands for, the fields of its :class:`~acp_model.model.events.Ev`,
and the facts only the client's view knows (is this messageId new, was this tool call ever
reported) read off the view *before* the update is applied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_model.model import wire_table
from acp_model.model.events import Ev, content_key, text_key
from acp_model.model.reducers import SessionView, tool_status_after
from acp_model.model.vocab import Event
from acp_model.model.wire_table import Update
from acp_model.oracle import said
from acp_model.oracle.said import Said


def _as_written(row: Update) -> Event:
    return row.event


def _state_update(state: Any, reason: Any, idx: int) -> str:
    return f"state_update {state}" + (f" (stopReason {reason!r})" if state == "idle"
                                       else "") + f" #{idx}"


def session_update(idx: int, update: dict[str, Any], view: SessionView,
                   reading: Callable[[Update], Event] = _as_written, what: Said | None = None
                   ) -> tuple[Event, Ev, Said]:
    """The event a ``session/update`` payload stands for (its kind's row of
    :data:`~acp_model.model.wire_table.UPDATES`, as the revision's translator ``reading``
    reads it: v1 reads a user message as replayed history, ``oracle.dialects``), its payload
    and a short name (``what``, when the caller has made it; formatted only when a violation
    reads it)."""
    name = update.get("sessionUpdate")
    what = what if what is not None else Said((said.UPDATE, name, idx))
    row = wire_table.updates().get(name) if isinstance(name, str) else None
    event = Event.OUTPUT if row is None else reading(row)
    if event == Event.OUTPUT:
        return Event.OUTPUT, Ev(idx, update=name), what
    if name == "state_update":
        state = update.get("state")
        reason = update.get("stopReason") if state == "idle" else None
        return wire_table.state_event(state), Ev(idx, reason=reason), \
            Said((_state_update, state, reason, idx))
    if event == Event.USER_MESSAGE:
        mid = update.get("messageId")
        known = view.messages.get(mid) if isinstance(mid, str) else None
        key = content_key(update.get("content")) if name == "user_message" else None
        return Event.USER_MESSAGE, Ev(idx, message_id=mid, new_message=known is None
                                      or known.family != "user", content_key=key,
                                      text_key=text_key(update.get("content"))), what
    if event == Event.TOOL_UPDATE and row is not None:
        tid = update.get("toolCallId")
        status = tool_status_after(view, update) if name == "tool_call_update" else None
        return Event.TOOL_UPDATE, Ev(idx, tool_call_id=tid, status=status,
                                     update=row.tool, has_title=bool(update.get("title")),
                                     first_report=tid not in view.tools), what
    return Event.OUTPUT, Ev(idx, update=name), what


def permission_request(idx: int, req_id: Any, params: Any) -> Ev:
    """The payload of a ``session/request_permission``: its tool call and its options."""
    subject = params.get("subject") if isinstance(params, dict) else None
    tool_id = None
    if isinstance(params, dict) and isinstance(params.get("toolCall"), dict):  # v1's shape
        tool_id = params["toolCall"].get("toolCallId")
    elif isinstance(subject, dict):
        tool = subject.get("toolCall")
        tool_id = tool.get("toolCallId") if isinstance(tool, dict) else \
            subject.get("toolCallId")
    options = {}
    for opt in (params.get("options") or []) if isinstance(params, dict) else []:
        if isinstance(opt, dict) and isinstance(opt.get("optionId"), str):
            options[opt["optionId"]] = opt.get("kind")
    return Ev(idx, id=req_id, tool_call_id=tool_id, options=options)
