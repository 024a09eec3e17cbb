"""Per-method validation of agent->client messages against the vendored v2 schema.

The schema's root accepts almost anything (params are not bound to methods), so each message is
validated against the ``$defs`` that carry its ``x-method``: request/notification params
against ``*Request`` / ``*Notification``, results against the ``*Response`` of the method of
the client request they answer, errors against ``Error``. A few sender-side checks the schema
cannot express (non-``_`` unknown enum values, absolute paths) are added on top.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

import acp_model

SCHEMA_PATH = Path(acp_model.__file__).parent / "spec" / "data" / "seed" / "schema.json"
_URI = "urn:acp-model:schema:v2"

KNOWN_UPDATES = {
    "user_message_chunk", "user_message", "agent_message_chunk", "agent_message",
    "agent_thought_chunk", "agent_thought", "state_update", "tool_call_content_chunk",
    "tool_call_update", "terminal_update", "terminal_output_chunk", "plan_update",
    "available_commands_update", "config_option_update", "session_info_update", "usage_update",
}  # fmt: skip
KNOWN_STATES = {"running", "idle", "requires_action"}
KNOWN_STOP_REASONS = {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
KNOWN_TOOL_STATUS = {"pending", "in_progress", "completed", "failed", "cancelled"}
KNOWN_TOOL_KINDS = {
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other",
}  # fmt: skip
KNOWN_TOOL_CONTENT = {"content", "diff", "terminal"}


@functools.cache
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


@functools.cache
def _registry() -> Registry:
    resource = Resource.from_contents(_schema(), default_specification=DRAFT202012)
    return Registry().with_resource(_URI, resource)


@functools.cache
def validator(def_name: str) -> Draft202012Validator:
    """A validator for ``$defs/<def_name>`` that resolves the schema's internal refs."""
    if def_name not in _schema()["$defs"]:
        raise KeyError(def_name)
    return Draft202012Validator({"$ref": f"{_URI}#/$defs/{def_name}"}, registry=_registry())


@functools.cache
def method_defs() -> dict[str, dict[str, str]]:
    """method -> {"params": def name, "result": def name} from the x-method annotations."""
    table: dict[str, dict[str, str]] = {}
    for name, body in _schema()["$defs"].items():
        method = body.get("x-method") if isinstance(body, dict) else None
        if not method:
            continue
        slot = "result" if name.endswith("Response") else "params"
        table.setdefault(method, {})[slot] = name
    return table


def _errors(def_name: str, instance: Any) -> list[str]:
    return [
        f"{def_name}: {e.message[:200]} at {list(e.absolute_path)}"
        for e in validator(def_name).iter_errors(instance)
    ]


def _is_abs(path: Any) -> bool:
    return isinstance(path, str) and (path.startswith("/") or path[1:3] in (":\\", ":/"))


def _open_value(value: Any, known: set[str], what: str) -> list[str]:
    if value is None or not isinstance(value, str):
        return []
    if value in known or value.startswith("_"):
        return []
    return [f"unknown non-_ {what} {value!r}"]


def sender_checks(update: dict[str, Any]) -> list[str]:
    """Rules the schema cannot check on one SessionUpdate (ENUM-02, STOP-03, TOOL-19, A-27)."""
    problems: list[str] = []
    kind = update.get("sessionUpdate")
    problems += _open_value(kind, KNOWN_UPDATES, "sessionUpdate")
    if kind == "state_update":
        problems += _open_value(update.get("state"), KNOWN_STATES, "state")
        problems += _open_value(update.get("stopReason"), KNOWN_STOP_REASONS, "stopReason")
    if kind == "tool_call_update":
        problems += _open_value(update.get("status"), KNOWN_TOOL_STATUS, "tool status")
        problems += _open_value(update.get("kind"), KNOWN_TOOL_KINDS, "tool kind")
        for loc in update.get("locations") or []:
            if isinstance(loc, dict) and not _is_abs(loc.get("path")):
                problems.append(f"relative tool location {loc.get('path')!r}")
        for item in update.get("content") or []:
            if isinstance(item, dict):
                problems += _open_value(item.get("type"), KNOWN_TOOL_CONTENT, "tool content type")
    if kind == "tool_call_content_chunk":
        item = update.get("content")
        if isinstance(item, dict):
            problems += _open_value(item.get("type"), KNOWN_TOOL_CONTENT, "tool content type")
    return problems


def check_agent_messages(records: Iterable[dict[str, Any]]) -> list[str]:
    """Problems in what the agent sent (empty list = every a2c message is valid)."""
    methods = method_defs()
    client_requests: dict[Any, str] = {}
    problems: list[str] = []
    for n, record in enumerate(records):
        where = f"record {n}"
        if "msg" not in record:
            if record.get("dir") == "a2c":
                problems.append(f"{where}: unparseable agent output ({record.get('error')})")
            continue
        msgs = record["msg"] if isinstance(record["msg"], list) else [record["msg"]]
        for msg in msgs:
            if not isinstance(msg, dict):
                if record["dir"] == "a2c":
                    problems.append(f"{where}: non-object message {msg!r:.80}")
                continue
            if record["dir"] == "c2a":
                if "method" in msg and "id" in msg:
                    client_requests[_key(msg["id"])] = msg["method"]
                continue
            problems += [f"{where}: {p}" for p in _check_one(msg, methods, client_requests)]
    return problems


def _key(request_id: Any) -> tuple[str, Any]:
    """A hashable key that keeps 1 and "1" (and garbage ids) apart."""
    hashable = request_id is None or isinstance(request_id, str | int | float)
    return (type(request_id).__name__, request_id if hashable else repr(request_id))


def _check_one(
    msg: dict[str, Any], methods: dict[str, dict[str, str]], client_requests: dict[Any, str]
) -> list[str]:
    if msg.get("jsonrpc") != "2.0":
        return ["missing jsonrpc 2.0"]
    if "method" in msg:
        method = msg["method"]
        defs = methods.get(method)
        if defs is None or "params" not in defs:
            return [] if str(method).startswith("_") else [f"unknown method {method!r}"]
        problems = _errors(defs["params"], msg.get("params"))
        if method == "session/update" and isinstance(msg.get("params"), dict):
            update = msg["params"].get("update")
            if isinstance(update, dict):
                problems += sender_checks(update)
        return problems
    if "result" in msg and "error" in msg:
        return ["response with both result and error"]
    if "error" in msg:
        return _errors("Error", msg["error"])
    if "result" not in msg:
        return ["neither request, notification nor response"]
    method = client_requests.get(_key(msg.get("id")))
    if method is None:
        return [f"result for unknown request id {msg.get('id')!r}"]
    result_def = methods.get(method, {}).get("result")
    return _errors(result_def, msg["result"]) if result_def else []
