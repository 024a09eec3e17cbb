"""What a ``session/update`` is to the session machine: the event it stands for and its payload
(a wire-table row's ``classify``; no rules here; the oracle names the message, lazily).

What the checks need to know of an update is extracted once, here, with the facts only the
client's view knows (is this messageId new, was this tool call ever reported) read off the view
*before* the update is applied. Which function a kind takes is its row's column, so nothing
here names a kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_model.model.events import Payload, content_key, text_key
from acp_model.model.views import SessionView, tool_status_after
from acp_model.model.vocab import STATE_EVENTS, Event

Classified = tuple[Event, Payload]  # (event, payload)
Classify = Callable[[int, dict[str, Any], SessionView], Classified]  # (index, update, view before)

# The fields of an update the model keys on (its kind, the message and tool call it names,
# the state and status it reports): a scalar or absent in every revision's schema.
KEYED_FIELDS = ("sessionUpdate", "toolCallId", "messageId", "state", "status", "stopReason")


def keyed_fields_readable(update: dict[str, Any]) -> bool:
    """Whether every field the model keys on is a scalar or absent. A list or an object there
    leaves nothing the model can read: such an update does not move it (it once raised); the
    checks of the message alone, run before, judge it (ACPM-SCHEMA under validation, or the
    field's own rule, e.g. MSG-01 for a messageId)."""
    for f in KEYED_FIELDS:  # (not all(genexpr): no generator per update)
        value = update.get(f)
        # the exact types JSON decodes to first (a set lookup), the isinstance walk only for
        # another (an enum member of the fuzzer's, a subclass)
        if type(value) not in _JSON_SCALARS and not isinstance(value, _SCALARS):
            return False
    return True


_SCALARS = (str, int, float, bool, type(None))
_JSON_SCALARS = frozenset(_SCALARS)
# The events an update most often is, read once: an enum member read off its class costs
# about 150 ns in CPython 3.11 (``EnumType.__getattr__`` keeps the lookup off the attribute
# cache), and one of these is read for every update a trace holds.
_OUTPUT, _TOOL_UPDATE, _CUSTOM = Event.OUTPUT, Event.TOOL_UPDATE, Event.CUSTOM_REPORTED


def output(idx: int, update: dict[str, Any], view: SessionView) -> Classified:
    """Plain output: no payload beyond its kind."""
    return _OUTPUT, Payload(idx, update=update.get("sessionUpdate"))


def state_event(state: Any) -> Event:
    """The event a ``state_update`` of this state becomes (another state: a custom one)."""
    return STATE_EVENTS.get(state, _CUSTOM)


def state(idx: int, update: dict[str, Any], view: SessionView) -> Classified:
    """A reported state: its event by the state, an idle's stop reason."""
    value = update.get("state")
    reason = update.get("stopReason") if value == "idle" else None
    return state_event(value), Payload(idx, reason=reason)


def _user(idx: int, update: dict[str, Any], view: SessionView, key: Any) -> Classified:
    mid = update.get("messageId")
    known = view.messages.get(mid) if isinstance(mid, str) else None
    return Event.USER_MESSAGE, Payload(idx, message_id=mid, new_message=known is None
                                  or known.family != "user", content_key=key,
                                  text_key=text_key(update.get("content")))


def user_message(idx: int, update: dict[str, Any], view: SessionView) -> Classified:
    """A whole user message: whether its messageId is new, and its content's key (what a
    prompt's echo is matched by)."""
    return _user(idx, update, view, content_key(update.get("content")))


def user_message_chunk(idx: int, update: dict[str, Any], view: SessionView) -> Classified:
    """A user message chunk: whether its messageId is new (a chunk's block is no echo key)."""
    return _user(idx, update, view, None)


def _tool(idx: int, update: dict[str, Any], view: SessionView, part: str, status: Any
          ) -> Classified:
    tid = update.get("toolCallId")
    return _TOOL_UPDATE, Payload(idx, tool_call_id=tid, status=status, update=part,
                                 has_title=bool(update.get("title")),
                                 first_report=tid not in view.tools)


def tool_fields(idx: int, update: dict[str, Any], view: SessionView) -> Classified:
    """A tool call's field patches: the status the client then shows, its first report."""
    return _tool(idx, update, view, "update", tool_status_after(view, update))


def tool_chunk(idx: int, update: dict[str, Any], view: SessionView) -> Classified:
    """A tool call's appended content: no status."""
    return _tool(idx, update, view, "chunk", None)
