"""The vendored ACP v2 JSON schemas as data: methods (``x-method`` / ``x-side``) and open enums.

One schema per revision (``spec/data/<revision>/schema.json``, see ``revisions.py``); every
function takes the revision and defaults to the seed's.

The schema's root accepts almost anything (extension messages are empty schemas and params are
not bound to methods), so the oracle validates per method and per direction: ``method_table``
finds the ``$def`` of each request, notification and result from the schema's own annotations.
``known_values`` reads the values an open enum defines, so nothing here lists them by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import orjson

from acp_model.spec.revisions import REVISIONS, SEED

SCHEMA_URI = "urn:acp:v2:schema"
__all__ = ["SEED", "MethodSpec", "defined_elsewhere", "foreign_values", "is_reserved",
           "known_values", "load_schema", "method_table", "null_request_ids"]


# x-side names the side that *handles* a method; the sender is the other side.
_SIDE_TO_DIRECTION = {"agent": "c2a", "client": "a2c"}


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """Where a method's params and result are defined, and which way it travels."""

    method: str
    directions: frozenset[str]
    params_def: str | None
    result_def: str | None
    notification: bool


@cache
def load_schema(rev: str = SEED) -> dict[str, Any]:
    if rev not in REVISIONS:
        raise KeyError(f"no vendored schema for revision {rev!r}")
    data = resources.files("acp_model.spec").joinpath("data", rev, "schema.json").read_bytes()
    return orjson.loads(data)


@cache
def method_table(rev: str = SEED) -> dict[str, MethodSpec]:
    """Method name -> its defs, built from the schema's own annotations."""
    defs = load_schema(rev)["$defs"]
    found: dict[str, dict[str, Any]] = {}
    for name, body in defs.items():
        method = body.get("x-method")
        if method is None:
            continue
        entry = found.setdefault(method, {"side": body.get("x-side")})
        if name.endswith("Request"):
            entry["params"] = name
        elif name.endswith("Notification"):
            entry["params"] = name
            entry["notification"] = True
        elif name.endswith("Response"):
            entry["result"] = name
    table: dict[str, MethodSpec] = {}
    for method, entry in found.items():
        side = entry["side"]
        directions = (frozenset({"c2a", "a2c"}) if side == "protocol"
                      else frozenset({_SIDE_TO_DIRECTION[side]}))
        table[method] = MethodSpec(method, directions, entry.get("params"), entry.get("result"),
                                   bool(entry.get("notification")))
    return table


def _branch_values(def_name: str, discriminator: str | None, rev: str) -> frozenset[str]:
    """The values a union defines (v2 writes ``anyOf``, v1 ``oneOf``; a revision without the
    definition defines none)."""
    body = load_schema(rev)["$defs"].get(def_name, {})
    values: set[str] = set()
    for branch in body.get("anyOf", []) + body.get("oneOf", []):
        if "const" in branch:
            values.add(branch["const"])
        elif discriminator is not None:
            prop = branch.get("properties", {}).get(discriminator, {})
            if "const" in prop:
                values.add(prop["const"])
    return frozenset(values)


# Open enums and tagged unions whose unknown non-"_" values are reserved (ENUM-01/02). The
# newer revision has no StopReason def: its stop reasons are IdleStateUpdate's branches.
_OPEN_ENUMS: dict[str, tuple[str, str | None]] = {
    "stop_reason": ("StopReason", None),
    "state": ("StateUpdate", "state"),
    "session_update": ("SessionUpdate", "sessionUpdate"),
    "tool_status": ("ToolCallStatus", None),
    "tool_kind": ("ToolKind", None),
    "tool_content": ("ToolCallContent", "type"),
    "content_block": ("ContentBlock", "type"),
    "plan_type": ("PlanUpdateContent", "type"),
    "plan_priority": ("PlanEntryPriority", None),
    "plan_status": ("PlanEntryStatus", None),
    "option_kind": ("PermissionOptionKind", None),
    "outcome": ("RequestPermissionOutcome", "outcome"),
    "subject": ("RequestPermissionSubject", "type"),
    "auth_method": ("AuthMethod", "type"),
    "mcp_transport": ("McpServer", "type"),
}


@cache
def known_values(enum: str, rev: str = SEED) -> frozenset[str]:
    """The values a revision's schema defines for an open enum (read from the schema itself)."""
    def_name, discriminator = _OPEN_ENUMS[enum]
    if enum == "stop_reason" and def_name not in load_schema(rev)["$defs"]:
        def_name, discriminator = "IdleStateUpdate", "stopReason"
    return _branch_values(def_name, discriminator, rev)


@cache
def null_request_ids(rev: str = SEED) -> bool:
    """May a request id be ``null`` in this revision? (the seed's ``RequestId`` admits it, as
    base JSON-RPC does; sdk-2.4.0's: "Unlike base JSON-RPC, it MUST NOT be null")."""
    return any(branch.get("type") == "null"
               for branch in load_schema(rev)["$defs"]["RequestId"].get("anyOf", []))


@cache
def foreign_values(enum: str, rev: str = SEED) -> frozenset[str]:
    """The values of an open enum that other revisions of ``rev``'s protocol define and ``rev``
    does not: what :func:`defined_elsewhere` can name (read once, so judging a message looks
    a value up in one set)."""
    protocol = REVISIONS[rev].protocol
    others: set[str] = set()
    for name, other in REVISIONS.items():
        if name != rev and other.protocol == protocol:
            others |= known_values(enum, name)
    return frozenset(others - known_values(enum, rev))


def defined_elsewhere(enum: str, value: object, rev: str = SEED) -> tuple[str, ...]:
    """The other revisions of the same protocol version whose schema defines ``value`` for an
    open enum (``compaction_update`` under the seed: sdk-2.4.0's). Such a value is one of the
    "future ACP variants" the text reserves unknown values for, not an invention."""
    if not isinstance(value, str) or value not in foreign_values(enum, rev) \
            or value.startswith("_"):
        return ()
    protocol = REVISIONS[rev].protocol
    return tuple(name for name, other in REVISIONS.items()
                 if name != rev and other.protocol == protocol
                 and value in known_values(enum, name))


def is_reserved(enum: str, value: object, rev: str = SEED) -> bool:
    """True for a string the schema accepts only through its fallback, that lacks ``_`` and
    that no other revision of the same protocol defines."""
    return isinstance(value, str) and value not in _defined_somewhere(enum, rev) \
        and not value.startswith("_")


@cache
def _defined_somewhere(enum: str, rev: str) -> frozenset[str]:
    """The values ``rev`` or another revision of its protocol defines (one set lookup per
    judged value)."""
    return known_values(enum, rev) | foreign_values(enum, rev)


def _properties(node: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The properties a schema node declares, its ``$ref`` / ``allOf`` followed."""
    if not isinstance(node, dict):
        return {}
    out = dict(node.get("properties") or {})
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        out = {**_properties(defs.get(ref.removeprefix("#/$defs/")), defs), **out}
    for part in node.get("allOf") or ():
        out = {**_properties(part, defs), **out}
    return out


def omitted_defaults(def_name: str, instance: Any, rev: str = SEED) -> tuple[str, ...]:
    """The fields of ``instance`` (a ``$defs`` type) that it leaves out and the schema gives a
    default (``clientCapabilities``, ``clientCapabilities.fs`` ...), as dotted paths: what a
    receiver must take as that default, not refuse."""
    defs = load_schema(rev)["$defs"]
    out: list[str] = []

    def walk(node: Any, value: Any, path: str) -> None:
        for name, prop in _properties(node, defs).items():
            where = f"{path}{name}"
            if isinstance(value, dict) and name in value:
                walk(prop, value[name], f"{where}.")
            elif isinstance(prop, dict) and "default" in prop:
                out.append(where)

    walk(defs.get(def_name), instance, "")
    return tuple(out)
