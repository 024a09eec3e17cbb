"""Validation of wire messages against the vendored ACP v2 JSON schema, per method and direction.

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
from typing import Any

from acp_model.spec.schema import SCHEMA_URI, load_schema


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """A precise schema failure: JSON path inside the checked object and a readable message."""

    path: str
    message: str
    def_name: str


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
