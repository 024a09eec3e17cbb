"""Classification: a wire message becomes a machine event with its payload (no rules here).

A ``session/update`` is read by its kind's wire-table row, as the revision's translator reads
the row: the row's ``classify`` extracts the payload (``model.classify``), with the facts only
the client's view knows read off the view *before* the update is applied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_model.model import classify
from acp_model.model.events import Payload
from acp_model.model.views import SessionView
from acp_model.model.vocab import Event
from acp_model.model.wire_table import Update
from acp_model.oracle.said import Said


def _as_written(row: Update) -> Event:
    return row.event


def _state_update(state: Any, reason: Any, idx: int) -> str:
    return f"state_update {state}" + (f" (stopReason {reason!r})" if state == "idle"
                                       else "") + f" #{idx}"


def classifier(row: Update | None, reading: Callable[[Update], Event] = _as_written
               ) -> classify.Classify:
    """How an update of ``row``'s kind is classified as the revision's translator ``reading``
    reads the row (None: a kind the table lacks): chosen once per kind (``oracle.updates``)."""
    if row is None or row.classify is None or reading(row) == Event.OUTPUT:
        return classify.output
    return row.classify


def classified(fn: classify.Classify, idx: int, update: dict[str, Any], view: SessionView,
               what: Said) -> tuple[Event, Payload, Said]:
    """The event and payload ``fn`` (:func:`classifier`) reads off ``update`` and the view
    before it, and a short name (``what``; a state's names its state, formatted only when a
    violation reads it)."""
    event, ev = fn(idx, update, view)
    if fn is classify.state and event != Event.OUTPUT:
        return event, ev, Said((_state_update, update.get("state"), ev.reason, idx))
    return event, ev, what


def permission_request(idx: int, req_id: Any, params: Any) -> Payload:
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
    return Payload(idx, id=req_id, tool_call_id=tool_id, options=options)
