"""One-line descriptions of wire messages (counterexamples, sequence diagrams, notebooks)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from acp_model.trace.format import Record, parse_record
from acp_model.trace.methods import Method


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


Line = Callable[[dict[str, Any], dict[str, Any], str], str]
ResultLine = Callable[[dict[str, Any], dict[str, Any]], str]
# The line of a method, and of its result, that says more than its name and ids: each function
# below names its method once. The wire table (acp_model.model.wire_table, a layer above) reads
# its rows' ``line`` and ``result_line`` from here.
LINES: dict[str, Line] = {}
RESULT_LINES: dict[str, ResultLine] = {}


def _line(method: str) -> Callable[[Line], Line]:
    def named(fn: Line) -> Line:
        LINES[method] = fn
        return fn
    return named


def _result_line(method: str) -> Callable[[ResultLine], ResultLine]:
    def named(fn: ResultLine) -> ResultLine:
        RESULT_LINES[method] = fn
        return fn
    return named


@_line(Method.UPDATE)
def update_line(msg: dict[str, Any], params: dict[str, Any], where: str) -> str:
    return f"session/update{where} {_update_summary(params.get('update'))}"


@_line(Method.PROMPT)
def prompt_line(msg: dict[str, Any], params: dict[str, Any], where: str) -> str:
    blocks = params.get("prompt")
    kinds = ",".join(str(b.get("type")) for b in blocks if isinstance(b, dict)) \
        if isinstance(blocks, list) else "?"
    return f"session/prompt id={msg.get('id')}{where} ({kinds})"


@_line(Method.PERMISSION)
def permission_line(msg: dict[str, Any], params: dict[str, Any], where: str) -> str:
    what = params.get("title")  # v2; v1 names only the tool call it guards
    if what is None and isinstance(params.get("toolCall"), dict):
        what = f"toolCall {params['toolCall'].get('toolCallId')}"
    return f"session/request_permission id={msg.get('id')}{where} {_short(what)}"


@_line(Method.CANCEL_REQUEST)
def cancel_request_line(msg: dict[str, Any], params: dict[str, Any], where: str) -> str:
    return f"$/cancel_request requestId={params.get('requestId')}"


@_result_line(Method.PERMISSION)
def outcome_line(msg: dict[str, Any], result: dict[str, Any]) -> str:
    return f"result id={msg.get('id')} (session/request_permission) " \
        f"outcome={_short(result.get('outcome'))}"


@_result_line(Method.NEW_SESSION)
def session_id_line(msg: dict[str, Any], result: dict[str, Any]) -> str:
    return f"result id={msg.get('id')} (session/new) sessionId={result.get('sessionId')}"


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
    line = LINES.get(method) if isinstance(method, str) else None
    if line is not None:
        return line(msg, params, where)
    if method is not None:
        ident = f" id={msg['id']}" if "id" in msg else ""
        return f"{method}{ident}{where}"
    req = (methods or {}).get(msg.get("id"), "?")
    if "error" in msg:
        err = msg["error"] if isinstance(msg["error"], dict) else {}
        # "id null" and no id member at all are two things a reader must tell apart (RPC-09)
        ident = ("no id member" if "id" not in msg else "id null" if msg["id"] is None
                 else f"id={msg['id']}")
        return f"error {ident} ({req}) {err.get('code')} {_short(err.get('message'))}"
    result = msg.get("result")
    result_line = RESULT_LINES.get(req) if isinstance(req, str) else None
    if result_line is not None and isinstance(result, dict):
        return result_line(msg, result)
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
