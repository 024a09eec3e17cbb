"""Decoding each message once into a typed record (msgspec) against parsing it into dicts and
walking them (orjson): issue 51 asks which the profile favours before the router is rebuilt on
either (``bench_check.py`` reports both).

Both sides read the same facts the router's layers read off every message: the direction,
the method, the id, the session, the update kind, its message id, tool call id, status, state
and stop reason, and the first content block's type. The typed side decodes a trace line into
:class:`Line` in one C pass (a tagged union of the update kinds the benchmark's trace holds;
a real decoder would generate the structs from each revision's schema and fall back to a dict
for the kinds no schema defines); the dict side is ``orjson.loads`` and ``dict.get`` with the
``isinstance`` guards the layers need. msgspec is a measurement dependency only
(``pip install msgspec``): without it the typed rows are left out.
"""

from __future__ import annotations

from typing import Any

try:
    import msgspec
except ImportError:  # a measurement only: bench_check.py leaves the rows out
    msgspec = None  # type: ignore[assignment]

from collections.abc import Callable

import orjson

Facts = tuple[Any, ...]
DICT_READS = "orjson parse + the router's reads (dict walking)"
TYPED_READS = "msgspec typed decode + the router's reads"


def decoders() -> dict[str, Callable[[bytes], Any]]:
    """The decoders measured, by the name of their row (msgspec's only when installed)."""
    out: dict[str, Callable[[bytes], Any]] = {"orjson parse, dropped": orjson.loads,
                                              DICT_READS: dict_facts}
    if msgspec is not None:
        out["msgspec typed decode, dropped"] = typed_decode
        out[TYPED_READS] = typed_facts
    return out


def dict_facts(line: bytes) -> Facts:
    """Parse with orjson and walk the dicts, as the router's layers do (once here)."""
    rec = orjson.loads(line)
    msg = rec.get("msg")
    if not isinstance(msg, dict):
        return (rec.get("dir"),)
    params = msg.get("params")
    sid = params.get("sessionId") if isinstance(params, dict) else None
    update = params.get("update") if isinstance(params, dict) else None
    if not isinstance(update, dict):
        return (rec.get("dir"), msg.get("method"), msg.get("id"), sid)
    content = update.get("content")
    first = content[0] if isinstance(content, list) and content else content
    block = first.get("type") if isinstance(first, dict) else None
    return (rec.get("dir"), msg.get("method"), msg.get("id"), sid, update.get("sessionUpdate"),
            update.get("messageId"), update.get("toolCallId"), update.get("status"),
            update.get("state"), update.get("stopReason"), block)


if msgspec is not None:
    class Block(msgspec.Struct):
        type: str
        text: str | None = None

    class Base(msgspec.Struct, tag_field="sessionUpdate"):
        pass

    class StateUpdate(Base, tag="state_update"):
        state: str
        stopReason: str | None = None

    class UserMessage(Base, tag="user_message"):
        messageId: str | None = None
        content: list[Block] | None = None

    class AgentChunk(Base, tag="agent_message_chunk"):
        messageId: str | None = None
        content: Block | None = None

    class ToolUpdate(Base, tag="tool_call_update"):
        toolCallId: str
        status: str | None = None
        title: str | None = None
        kind: str | None = None

    class ToolChunk(Base, tag="tool_call_content_chunk"):
        toolCallId: str
        content: Any = None

    class PlanUpdate(Base, tag="plan_update"):
        plan: Any = None

    class UsageUpdate(Base, tag="usage_update"):
        used: int | None = None
        size: int | None = None
        cost: Any = None

    Update = StateUpdate | UserMessage | AgentChunk | ToolUpdate | ToolChunk | PlanUpdate \
        | UsageUpdate

    class Params(msgspec.Struct):
        sessionId: str | None = None
        update: Update | None = None
        prompt: Any = None
        toolCall: Any = None
        options: Any = None
        cwd: str | None = None
        protocolVersion: int | None = None
        capabilities: Any = None
        info: Any = None
        requestId: Any = None

    class Message(msgspec.Struct):
        jsonrpc: str | None = None
        id: int | str | None = None
        method: str | None = None
        params: Params | None = None
        result: Any = None
        error: Any = None

    class Line(msgspec.Struct):
        dir: str
        msg: Message

    _DECODER = msgspec.json.Decoder(Line)

    def typed_facts(line: bytes) -> Facts:
        """Decode into :class:`Line` in one pass and read attributes."""
        rec = _DECODER.decode(line)
        msg = rec.msg
        params = msg.params
        if params is None or params.update is None:
            return (rec.dir, msg.method, msg.id, params.sessionId if params else None)
        update = params.update
        content = getattr(update, "content", None)
        first = content[0] if isinstance(content, list) and content else content
        return (rec.dir, msg.method, msg.id, params.sessionId, type(update).__name__,
                getattr(update, "messageId", None), getattr(update, "toolCallId", None),
                getattr(update, "status", None), getattr(update, "state", None),
                getattr(update, "stopReason", None), getattr(first, "type", None))

    def typed_decode(line: bytes) -> Any:
        """The typed decode alone (no reads)."""
        return _DECODER.decode(line)
