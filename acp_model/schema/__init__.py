"""Validation of wire messages against the vendored official ACP v2 JSON schema.

The schema's root accepts almost anything (extension messages are empty schemas and params are
not bound to methods), so we validate per method and per direction, using the ``x-method`` and
``x-side`` annotations to find the ``$def`` of each request, notification and result.

Fast path: fastjsonschema, compiled lazily per ``$def`` (``use_default=False`` so the logged
message is never mutated, formats not asserted, as Draft 2020-12 treats ``format`` as an
annotation). Only when that rejects a message do we ask jsonschema for a precise diagnosis,
dispatching tagged unions (``sessionUpdate``, ``state``) to their branch first so the error names
the field that is wrong rather than "not valid under any of the given schemas".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import orjson

SCHEMA_URI = "urn:acp:v2:schema"

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


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """A precise schema failure: JSON path inside the checked object and a readable message."""

    path: str
    message: str
    def_name: str


@cache
def load_schema() -> dict[str, Any]:
    data = resources.files("acp_model.schema").joinpath("schema.json").read_bytes()
    return orjson.loads(data)


@cache
def load_meta() -> dict[str, Any]:
    data = resources.files("acp_model.schema").joinpath("meta.json").read_bytes()
    return orjson.loads(data)


@cache
def method_table() -> dict[str, MethodSpec]:
    """Method name -> its defs, built from the schema's own annotations."""
    defs = load_schema()["$defs"]
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


def _branch_values(def_name: str, discriminator: str | None) -> frozenset[str]:
    body = load_schema()["$defs"][def_name]
    values: set[str] = set()
    for branch in body.get("anyOf", []):
        if "const" in branch:
            values.add(branch["const"])
        elif discriminator is not None:
            prop = branch.get("properties", {}).get(discriminator, {})
            if "const" in prop:
                values.add(prop["const"])
    return frozenset(values)


# Open enums and tagged unions whose unknown non-"_" values are reserved (ENUM-01/02).
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
}


@cache
def known_values(enum: str) -> frozenset[str]:
    """The values the stable schema defines for an open enum (read from the schema itself)."""
    def_name, discriminator = _OPEN_ENUMS[enum]
    return _branch_values(def_name, discriminator)


def is_reserved(enum: str, value: object) -> bool:
    """True for a string the schema accepts only through its fallback and that lacks ``_``."""
    return isinstance(value, str) and not value.startswith("_") and value not in known_values(enum)


# ---------------------------------------------------------------------------------------
# Validators
# ---------------------------------------------------------------------------------------

Validator = Callable[[Any], bool]


@cache
def fast_validator(def_name: str) -> Validator:
    """A compiled fastjsonschema validator for one ``$def`` that returns True/False."""
    import fastjsonschema

    defs = load_schema()["$defs"]
    compiled = fastjsonschema.compile({"$defs": defs, "$ref": f"#/$defs/{def_name}"},
                                      use_default=False, use_formats=False)
    error = fastjsonschema.JsonSchemaException

    def check(instance: Any) -> bool:
        try:
            compiled(instance)
        except error:
            return False
        return True

    return check


@cache
def _precise_validator(def_name: str) -> Any:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resource = Resource.from_contents(load_schema())
    registry = Registry().with_resource(SCHEMA_URI, resource)
    return Draft202012Validator({"$ref": f"{SCHEMA_URI}#/$defs/{def_name}"}, registry=registry)


@cache
def _branch_defs(def_name: str, discriminator: str) -> dict[str, str]:
    """Tag value -> the ``$def`` its branch refers to (for precise diagnostics)."""
    out: dict[str, str] = {}
    for branch in load_schema()["$defs"][def_name].get("anyOf", []):
        tag = branch.get("properties", {}).get(discriminator, {}).get("const")
        refs = [part.get("$ref", "") for part in branch.get("allOf", [])]
        if tag is not None and refs and refs[0].startswith("#/$defs/"):
            out[tag] = refs[0].removeprefix("#/$defs/")
    return out


def _narrow(def_name: str, instance: Any, path: tuple[str, ...]) -> tuple[str, Any, tuple]:
    """Follow tagged unions down to the branch the message claims to be."""
    if def_name == "UpdateSessionNotification" and isinstance(instance, dict):
        update = instance.get("update")
        if isinstance(update, dict):
            target = _branch_defs("SessionUpdate", "sessionUpdate").get(update.get("sessionUpdate"))
            if target is not None:
                if target == "StateUpdate":
                    state_def = _branch_defs("StateUpdate", "state").get(update.get("state"))
                    if state_def is not None:
                        return state_def, update, (*path, "update")
                plan = update.get("plan")
                if target == "PlanUpdate" and isinstance(plan, dict):
                    plan_def = _branch_defs("PlanUpdateContent", "type").get(plan.get("type"))
                    if plan_def is not None:
                        return plan_def, plan, (*path, "update", "plan")
                return target, update, (*path, "update")
    return def_name, instance, path


def diagnose(def_name: str, instance: Any) -> list[SchemaProblem]:
    """Precise reasons why ``instance`` fails ``def_name`` (empty when it is valid)."""
    from jsonschema.exceptions import best_match

    narrowed, sub, prefix = _narrow(def_name, instance, ())
    validator = _precise_validator(narrowed)
    errors = list(validator.iter_errors(sub))
    if not errors and narrowed != def_name:  # the branch is fine; the envelope is not
        narrowed, sub, prefix = def_name, instance, ()
        errors = list(_precise_validator(def_name).iter_errors(instance))
    if not errors:
        return []
    best = best_match(errors)
    problems = [best, *[e for e in errors if e is not best]][:3]
    out = []
    for err in problems:
        parts = [str(p) for p in (*prefix, *err.absolute_path)]
        if err.validator == "required" and isinstance(err.instance, dict):
            parts += [k for k in err.validator_value if k not in err.instance][:1]
        where = "/".join(parts) or "(root)"
        out.append(SchemaProblem(where, _shorten(err.message), narrowed))
    return out


def _shorten(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate(def_name: str, instance: Any) -> list[SchemaProblem]:
    """Fast check; precise problems only when the fast check fails."""
    if fast_validator(def_name)(instance):
        return []
    problems = diagnose(def_name, instance)
    # The fast validator asserts nothing jsonschema would not, so disagreement means a bug here.
    return problems or [SchemaProblem("(root)", "rejected by the compiled validator", def_name)]
