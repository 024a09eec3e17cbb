"""Validation of wire messages against the vendored ACP v2 JSON schema, per method and direction.

Fast path: jsonschema-rs (or fastjsonschema, ``ACPM_VALIDATOR``), compiled lazily per
``$def`` (never mutating the logged message, formats not asserted, as Draft 2020-12 treats
``format`` as an annotation). Only when that rejects a message do we ask jsonschema for a
precise diagnosis, dispatching tagged unions (``sessionUpdate``, ``state``) to their branch
first so the error names the field that is wrong rather than "not valid under any of the
given schemas".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from acp_model.model.check import CheckMeta, declare
from acp_model.model.vocab import Role
from acp_model.spec.rules import RULES
from acp_model.spec.schema import SCHEMA_URI, SEED, load_schema


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """A precise schema failure: JSON path inside the checked object and a readable message."""

    path: str
    message: str
    def_name: str


Validator = Callable[[Any], bool]


BACKENDS = ("jsonschema-rs", "fastjsonschema")


@cache
def backend() -> str:
    """The compiled validator in use: jsonschema-rs (Rust, about 30 times faster here), or
    fastjsonschema with ``ACPM_VALIDATOR=fastjsonschema``; the differential test
    (``tests/oracle/test_validators_agree.py``) shows both agree with jsonschema."""
    import os

    name = os.environ.get("ACPM_VALIDATOR", BACKENDS[0])
    if name not in BACKENDS:
        raise ValueError(f"ACPM_VALIDATOR={name!r}: choose {' or '.join(BACKENDS)}")
    return name


def fast_validator(def_name: str, rev: str = SEED) -> Validator:
    """A compiled validator for one ``$def`` that returns True/False."""
    return compiled_validator(def_name, rev, backend())


@cache
def compiled_validator(def_name: str, rev: str, name: str) -> Validator:
    schema = {"$defs": load_schema(rev)["$defs"], "$ref": f"#/$defs/{def_name}"}
    if name == "jsonschema-rs":
        import jsonschema_rs

        return jsonschema_rs.Draft202012Validator(schema, validate_formats=False).is_valid
    import fastjsonschema

    compiled = fastjsonschema.compile(schema, use_default=False, use_formats=False)
    error = fastjsonschema.JsonSchemaException

    def check(instance: Any) -> bool:
        try:
            compiled(instance)
        except error:
            return False
        return True

    return check


def precise_valid(def_name: str, instance: Any, rev: str = SEED) -> bool:
    """jsonschema's verdict (the reference the compiled validators are tested against)."""
    return bool(_precise_validator(def_name, rev).is_valid(instance))


@cache
def _precise_validator(def_name: str, rev: str) -> Any:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resource = Resource.from_contents(load_schema(rev))
    registry = Registry().with_resource(SCHEMA_URI, resource)
    return Draft202012Validator({"$ref": f"{SCHEMA_URI}#/$defs/{def_name}"}, registry=registry)


@cache
def _branch_defs(def_name: str, discriminator: str, rev: str) -> dict[str, str]:
    """Tag value -> the ``$def`` its branch refers to (for precise diagnostics)."""
    out: dict[str, str] = {}
    for branch in load_schema(rev)["$defs"][def_name].get("anyOf", []):
        tag = branch.get("properties", {}).get(discriminator, {}).get("const")
        refs = [part.get("$ref", "") for part in branch.get("allOf", [])]
        if tag is not None and refs and refs[0].startswith("#/$defs/"):
            out[tag] = refs[0].removeprefix("#/$defs/")
    return out


def _narrow(def_name: str, instance: Any, path: tuple[str, ...], rev: str
            ) -> tuple[str, Any, tuple]:
    """Follow tagged unions down to the branch the message claims to be."""
    if def_name == "UpdateSessionNotification" and isinstance(instance, dict):
        update = instance.get("update")
        if isinstance(update, dict):
            branches = _branch_defs("SessionUpdate", "sessionUpdate", rev)
            target = branches.get(update.get("sessionUpdate"))
            if target is not None:
                if target == "StateUpdate":
                    state_def = _branch_defs("StateUpdate", "state", rev).get(update.get("state"))
                    if state_def is not None:
                        return state_def, update, (*path, "update")
                plan = update.get("plan")
                if target == "PlanUpdate" and isinstance(plan, dict):
                    plan_def = _branch_defs("PlanUpdateContent", "type", rev).get(plan.get("type"))
                    if plan_def is not None:
                        return plan_def, plan, (*path, "update", "plan")
                return target, update, (*path, "update")
    return def_name, instance, path


def diagnose(def_name: str, instance: Any, rev: str = SEED) -> list[SchemaProblem]:
    """Precise reasons why ``instance`` fails ``def_name`` (empty when it is valid)."""
    from jsonschema.exceptions import best_match

    narrowed, sub, prefix = _narrow(def_name, instance, (), rev)
    validator = _precise_validator(narrowed, rev)
    errors = list(validator.iter_errors(sub))
    if not errors and narrowed != def_name:  # the branch is fine; the envelope is not
        narrowed, sub, prefix = def_name, instance, ()
        errors = list(_precise_validator(def_name, rev).iter_errors(instance))
    if not errors:
        return []
    best = best_match(errors)
    out: list[SchemaProblem] = []
    for err in [best, *[e for e in errors if e is not best]]:
        parts = [str(p) for p in (*prefix, *err.absolute_path)]
        if err.validator == "required" and isinstance(err.instance, dict):
            parts += [k for k in err.validator_value if k not in err.instance][:1]
        where = "/".join(parts) or "(root)"
        # One root cause, one problem: a failure at or above a path already reported (the
        # union around a bad field, "not valid under any of the given schemas") is that same
        # failure seen from its parent.
        if any(_within(p.path, where) for p in out):
            continue
        out.append(SchemaProblem(where, _shorten(err.message), narrowed))
        if len(out) == 3:
            break
    return out


def _within(path: str, ancestor: str) -> bool:
    """``path`` is ``ancestor`` or lies below it (``(root)`` contains everything)."""
    return ancestor == "(root)" or path == ancestor or path.startswith(ancestor + "/")


def _shorten(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate(def_name: str, instance: Any, rev: str = SEED) -> list[SchemaProblem]:
    """Fast check; precise problems only when the fast check fails."""
    if fast_validator(def_name, rev)(instance):
        return []
    problems = diagnose(def_name, instance, rev)
    # The fast validator asserts nothing jsonschema would not, so disagreement means a bug here.
    return problems or [SchemaProblem("(root)", "rejected by the compiled validator", def_name)]


# --- which rule a schema failure breaks -------------------------------------------------------

def _schema(rule_id: str, name: str, doc: str) -> CheckMeta:
    return declare(rule_id, name, doc, module=__name__, role=Role.FINDING)


SCHEMA_VALID = _schema("ACPM-SCHEMA", "schema_valid",
                       "Every message validates against the v2 schema definition for its method "
                       "and direction.")

# (method, a key on the failing path, the rule the schema states there, branch defs it covers)
_SCHEMA_RULES: tuple[tuple[str, str, CheckMeta, frozenset[str]], ...] = (
    ("initialize", "info", _schema("INIT-09", "schema_info", "Both peers identify themselves "
                                   "in info with a name and a version."),
     frozenset({"InitializeResponse", "InitializeRequest"})),
    ("initialize", "capabilities", _schema("INIT-07", "schema_capabilities", "Capability "
                                           "markers are objects, never booleans."),
     frozenset({"InitializeResponse", "InitializeRequest"})),
    ("session/update", "messageId", _schema("MSG-01", "schema_message_id", "Every message "
                                            "update and chunk carries a messageId."),
     frozenset({"ContentChunk", "UserMessage", "AgentMessage", "AgentThought"})),
    ("session/update", "planId", _schema("PLAN-02", "schema_plan_id", "Every plan has a type "
                                         "and a planId."), frozenset({"PlanItems"})),
    ("session/update", "used", _schema("USAGE-02", "schema_usage_used", "usage_update used and "
                                       "size are present, non-negative integers."),
     frozenset({"UsageUpdate"})),
    ("session/update", "size", _schema("USAGE-02", "schema_usage_size", "usage_update used and "
                                       "size are present, non-negative integers."),
     frozenset({"UsageUpdate"})),
    ("session/update", "currency", _schema("USAGE-04", "schema_currency", "cost.currency is "
                                           "an ISO 4217 code (three capitals)."),
     frozenset({"UsageUpdate"})),
    ("session/update", "line", _schema("TOOL-19", "schema_location_line", "A tool call "
                                       "location's line is a line number (1-based in the "
                                       "newer revision)."),
     frozenset({"ToolCallUpdate"})),
    ("session/request_permission", "options",
     _schema("PERM-02", "schema_permission_options", "A permission request has at least one "
             "option with optionId, name and kind."), frozenset({"RequestPermissionRequest"})),
    ("session/prompt", "messageId",
     _schema("SDK-RECEIPT-01", "schema_receipt", "The prompt response is a receipt naming the "
             "inserted user message."), frozenset({"PromptResponse"})),
    ("session/request_permission", "title",
     _schema("PERM-02", "schema_permission_title", "A permission request has a title."),
     frozenset({"RequestPermissionRequest"})),
)


def schema_rule(method: str, path: str, rev: str = SEED) -> CheckMeta:
    """The most specific catalogued rule of the revision for a schema failure (ACPM-SCHEMA
    otherwise)."""
    parts = path.split("/")
    for m, key, meta, _ in _SCHEMA_RULES:
        if m == method and key in parts and RULES[meta.rule].applies(rev):
            return meta
    return SCHEMA_VALID


def schema_rules_exercised(method: str, def_name: str, instance: Any, rev: str = SEED
                           ) -> tuple[CheckMeta, ...]:
    """The rules a validation of ``instance`` against ``def_name`` judges (report counts)."""
    branch, _, _ = _narrow(def_name, instance, (), rev)
    return _rules_for(method, def_name, branch, rev)


@cache
def _rules_for(method: str, def_name: str, branch: str, rev: str) -> tuple[CheckMeta, ...]:
    """(cached: the monitor asks once per message)"""
    seen = {def_name, branch}
    out = [SCHEMA_VALID]
    for m, _, meta, defs in _SCHEMA_RULES:
        if m == method and defs & seen and meta.rule not in {o.rule for o in out} \
                and RULES[meta.rule].applies(rev):
            out.append(meta)
    return tuple(out)
