"""The payload of one classified wire event (:class:`Payload`), what the checks and actions read."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields
from typing import Any

import orjson


def content_key(content: Any) -> str | None:
    """A digest of message content: a prompt and the user message that inserts it compare
    equal (SDK-PROMPT-02 needs to know that a reported user message is that prompt's)."""
    if not isinstance(content, list) or not content:
        return None
    raw = orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(raw, digest_size=8).hexdigest()


def text_key(content: Any) -> str | None:
    """A digest of the first text block of message content (a content block or a list): a
    prompt and a user message or chunk that inserts it compare equal, whether the agent
    reports the message whole or in chunks."""
    text = first_text(content)
    return None if text is None else hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def first_text(content: Any) -> str | None:
    """The first non-empty text block of message content (a content block or a list), whole:
    what :func:`text_key` digests, kept where a replay may render it with more around it."""
    blocks = content if isinstance(content, list) else [content]
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text" \
                and isinstance(block.get("text"), str) and block["text"]:
            return str(block["text"])
    return None


@dataclass(slots=True)
class Payload:
    """Payload of one classified wire event; every field but ``idx`` is optional.

    ``idx`` is the event's trace index (the record the violation points at). The oracle fills
    the fields from the wire message, the explorer from its abstract alphabet.
    """

    idx: int = -1
    id: Any = None  # request id (prompts, permission requests and answers)
    answer: str | None = None  # permissions.Answer of a permission response
    error_code: int | None = None
    has_title: bool | None = None  # tool_call_update carries a title
    update: str | None = None  # the sessionUpdate; "update" / "chunk" for tool events
    message_id: str | None = None
    new_message: bool | None = None  # the client view had no message with this id yet
    options: dict[str, Any] | None = None  # optionId -> kind of a permission request
    reason: str | None = None  # stopReason of an idle
    result_keys: tuple[str, ...] | None = None  # keys of a prompt's success result
    status: str | None = None  # tool call status the update sets
    tool_call_id: str | None = None
    first_report: bool | None = None  # the client view had no tool call with this id yet
    content_key: str | None = None  # digest of a prompt's or whole user message's content
    text_key: str | None = None  # digest of the first text of a prompt or user message
    version: Any = None  # protocolVersion an initialize result names (any JSON value)
    # an idle that may be its prompt's refusal rather than the end of work it ran: an error
    # answered a prompt whose work showed nothing (no stop reason says which)
    maybe_refusal: bool | None = None
    # sent while a reopen that replays the session's history was open: a tool status it sets
    # may be the history's, no proof that the tool ran now (PERM-11)
    replayed: bool | None = None

    def __repr__(self) -> str:
        body = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                         if getattr(self, f.name) is not None)
        return f"Payload({body})"
