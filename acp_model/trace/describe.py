"""One-line descriptions of wire messages (counterexamples, sequence diagrams, notebooks)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from acp_model.trace.format import Record, parse_record


def _short(value: Any, limit: int = 48) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _update_summary(update: Any) -> str:
    if not isinstance(update, dict):
        return "session/update (no update object)"
    kind = update.get("sessionUpdate")
    parts = [str(kind)]
    if kind == "state_update":
        parts.append(str(update.get("state")))
        if "stopReason" in update:
            parts.append(f"stopReason={update['stopReason']}")
    for key in ("messageId", "toolCallId", "status", "title"):
        if key in update:
            parts.append(f"{key}={_short(update[key], 24)}")
    content = update.get("content")
    if isinstance(content, dict) and content.get("type") == "text":
        parts.append(repr(_short(content.get("text", ""), 24)))
    return " ".join(parts)


def describe(msg: Any, methods: dict[Any, str] | None = None) -> str:
    """One line for a wire message; ``methods`` maps request ids to their method names."""
    if isinstance(msg, list):
        return "batch [" + "; ".join(describe(m, methods) for m in msg) + "]"
    if not isinstance(msg, dict):
        return f"non-object {type(msg).__name__}"
    method = msg.get("method")
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    sid = params.get("sessionId")
    where = f" [{_short(sid, 16)}]" if sid is not None else ""
    if method == "session/update":
        return f"session/update{where} {_update_summary(params.get('update'))}"
    if method == "session/prompt":
        blocks = params.get("prompt")
        kinds = ",".join(str(b.get("type")) for b in blocks if isinstance(b, dict)) \
            if isinstance(blocks, list) else "?"
        return f"session/prompt id={msg.get('id')}{where} ({kinds})"
    if method == "session/request_permission":
        what = params.get("title")  # v2; v1 names only the tool call it guards
        if what is None and isinstance(params.get("toolCall"), dict):
            what = f"toolCall {params['toolCall'].get('toolCallId')}"
        return f"session/request_permission id={msg.get('id')}{where} {_short(what)}"
    if method == "$/cancel_request":
        return f"$/cancel_request requestId={params.get('requestId')}"
    if method is not None:
        ident = f" id={msg['id']}" if "id" in msg else ""
        return f"{method}{ident}{where}"
    req = (methods or {}).get(msg.get("id"), "?")
    if "error" in msg:
        err = msg["error"] if isinstance(msg["error"], dict) else {}
        return f"error id={msg.get('id')} ({req}) {err.get('code')} {_short(err.get('message'))}"
    result = msg.get("result")
    if req == "session/request_permission" and isinstance(result, dict):
        return f"result id={msg.get('id')} ({req}) outcome={_short(result.get('outcome'))}"
    if req == "session/new" and isinstance(result, dict):
        return f"result id={msg.get('id')} (session/new) sessionId={result.get('sessionId')}"
    return f"result id={msg.get('id')} ({req}) {_short(result, 40)}"


def summarize(records: Iterable[Record | dict[str, Any]]) -> list[tuple[str, str]]:
    """(direction, one-line description) for each record, responses named by their request."""
    sent: dict[str, dict[Any, str]] = {"c2a": {}, "a2c": {}}  # request id -> method, by sender
    out: list[tuple[str, str]] = []
    for rec in records:
        r = rec if isinstance(rec, Record) else parse_record(rec)
        if r.raw is not None:
            out.append((r.dir, f"unparseable line ({r.note or 'not-json'}): {_short(r.raw)}"))
            continue
        for m in r.msg if isinstance(r.msg, list) else [r.msg]:
            if isinstance(m, dict) and "method" in m and "id" in m:
                sent[r.dir][m["id"]] = m["method"]
        out.append((r.dir, describe(r.msg, sent["a2c" if r.dir == "c2a" else "c2a"])))
    return out
