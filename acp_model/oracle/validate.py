"""Validation of wire messages against the vendored ACP v2 JSON schema, per method and direction.

Fast path: jsonschema-rs (or fastjsonschema, ``ACPM_VALIDATOR``), compiled lazily per
``$def`` (never mutating the logged message, formats not asserted, as Draft 2020-12 treats
``format`` as an annotation). Only when that rejects a message do we ask jsonschema for a
precise diagnosis, dispatching tagged unions (``sessionUpdate``, ``state``) to their branch
first so the error names the field that is wrong rather than "not valid under any of the
given schemas".

The schema's own tolerance is part of the revision: a property annotated
``x-deserialize-skip-invalid-items`` tells a deserializer to drop an invalid item,
``x-deserialize-default-on-error`` to replace an invalid value by its default and
``x-deserialize-default-on-null`` to read ``null`` as the default. A message a client that
follows the schema accepts that way is a warning naming the item and the field
(:data:`SCHEMA_TOLERATED`), not a failure; every other schema failure keeps its rule's level.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

from acp_model.model.check import CheckMeta, declare
from acp_model.model.vocab import Reads, Role
from acp_model.spec.rules import RULES
from acp_model.spec.schema import SCHEMA_URI, SEED, load_schema
from acp_model.trace.methods import Method


class Tolerance(StrEnum):
    """The ``x-deserialize-*`` annotations a revision's schema puts on properties."""

    SKIP_ITEM = "skip-invalid-items"
    DEFAULT_ON_ERROR = "default-on-error"
    DEFAULT_ON_NULL = "default-on-null"

    @property
    def annotation(self) -> str:
        return f"x-deserialize-{self.value}"


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """A precise schema failure: JSON path inside the checked object and a readable message.

    ``tolerated``: the annotation by which a deserializer that follows the schema accepts the
    message anyway (the item is skipped, the field defaulted); ``None`` for a real failure.
    """

    path: str
    message: str
    def_name: str
    tolerated: Tolerance | None = None


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
            tag = update.get("sessionUpdate")  # (any JSON value: a list is no tag)
            target = branches.get(tag) if isinstance(tag, str) else None
            if target is not None:
                if target == "StateUpdate":
                    state = update.get("state")
                    state_def = _branch_defs("StateUpdate", "state", rev).get(state) \
                        if isinstance(state, str) else None
                    if state_def is not None:
                        return state_def, update, (*path, "update")
                plan = update.get("plan")
                if target == "PlanUpdate" and isinstance(plan, dict):
                    kind = plan.get("type")
                    plan_def = _branch_defs("PlanUpdateContent", "type", rev).get(kind) \
                        if isinstance(kind, str) else None
                    if plan_def is not None:
                        return plan_def, plan, (*path, "update", "plan")
                return target, update, (*path, "update")
    return def_name, instance, path


def diagnose(def_name: str, instance: Any, rev: str = SEED) -> list[SchemaProblem]:
    """Precise reasons why ``instance`` fails ``def_name`` (empty when it is valid): the parts
    the schema's deserializer annotations tolerate first (each a warning), then the failures,
    each at the field that fails and in the union branch closest to validating."""
    narrowed, sub, prefix = _narrow(def_name, instance, (), rev)
    errors = list(_precise_validator(narrowed, rev).iter_errors(sub))
    if not errors and narrowed != def_name:  # the branch is fine; the envelope is not
        narrowed, sub, prefix = def_name, instance, ()
        errors = list(_precise_validator(def_name, rev).iter_errors(instance))
    if not errors:
        return []
    out: list[SchemaProblem] = []
    failing = [err for err in errors if not _add_tolerated(out, err, narrowed, sub, prefix, rev)]
    if failing:
        _add_failures(out, failing, narrowed, prefix, rev)
    return out[:6]


def _add_tolerated(out: list[SchemaProblem], err: Any, narrowed: str, sub: Any,
                   prefix: tuple[Any, ...], rev: str) -> bool:
    """Add the parts of ``err`` the schema's deserializer tolerates (each once); False when
    it tolerates none: then ``err`` is a failure."""
    found = _tolerated(err, narrowed, sub, rev)
    if found is None:
        return False
    for tol in found:
        where = _pointer((*prefix, *tol.at))
        if not any(p.path == where for p in out):
            out.append(SchemaProblem(where, tol.describe(prefix), narrowed, tol.kind))
    return True


def _add_failures(out: list[SchemaProblem], failing: list[Any], narrowed: str,
                  prefix: tuple[Any, ...], rev: str) -> None:
    """The failures, best match first, each at the field that fails and in the union branch
    closest to validating; at most three."""
    from jsonschema.exceptions import best_match

    best = best_match(failing)
    for err in [best, *[e for e in failing if e is not best]]:
        leaf, branches = _closest(err, narrowed, rev)
        parts = [str(p) for p in (*prefix, *leaf.absolute_path)]
        if leaf.validator == "required" and isinstance(leaf.instance, dict):
            parts += [k for k in leaf.validator_value if k not in leaf.instance][:1]
        where = "/".join(parts) or "(root)"
        # One root cause, one problem: a failure at or above a path already reported (the
        # union around a bad field, "not valid under any of the given schemas") is that
        # same failure seen from its parent.
        if any(_within(p.path, where) for p in out if p.tolerated is None):
            continue
        text = _message(leaf)
        if branches:
            text += f" (closest branch: {' > '.join(branches)})"
        out.append(SchemaProblem(where, _shorten(text), narrowed))
        if sum(p.tolerated is None for p in out) == 3:
            break


# --- the schema's tolerance (x-deserialize-* annotations) ------------------------------------

@dataclass(frozen=True, slots=True)
class _Tolerated:
    """One part of a message a deserializer following the schema skips or defaults."""

    kind: Tolerance
    path: tuple[Any, ...]  # the item skipped or the field defaulted
    field: tuple[Any, ...]  # the failing field inside it
    message: str
    at: tuple[Any, ...] = ()  # the failing field's whole path (a missing one's name included)

    def describe(self, prefix: tuple[Any, ...]) -> str:
        what = _dotted((*prefix, *self.path))
        inner = _dotted(self.field) if self.field else ""
        reason = f"{inner}: {self.message}" if inner else self.message
        action = {Tolerance.SKIP_ITEM: "skip this item",
                  Tolerance.DEFAULT_ON_ERROR: "read this field as its default",
                  Tolerance.DEFAULT_ON_NULL: "read null here as the default"}[self.kind]
        return _shorten(f"{what}: {reason} (the schema tells a deserializer to {action}: "
                        f"{self.kind.annotation})")


_STRUCTURAL = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_ONE_STEP = frozenset({"items", "additionalProperties", "unevaluatedItems",
                       "unevaluatedProperties", "contains", "propertyNames"})
_SUBSCHEMA = frozenset({"not", "if", "then", "else"})


def _walk(def_name: str, schema_path: Any, rev: str
          ) -> tuple[list[tuple[int, frozenset[Tolerance], bool]], dict[str, Any], list[str]]:
    """Follow an error's schema path from ``def_name`` (jsonschema leaves the ``$ref`` hops
    out of it) and return the annotated properties it passes, as (instance depth, annotations,
    whether the path then enters the property's items), the node it ends at, and the union
    branches it took (named by title, tag or definition)."""
    defs = load_schema(rev)["$defs"]
    node: dict[str, Any] = defs[def_name]
    keys = list(schema_path)
    depth = 0
    found: list[tuple[int, frozenset[Tolerance], bool]] = []
    branches: list[str] = []
    i = 0
    while i < len(keys):
        key = keys[i]
        while isinstance(node, dict) and key not in node and "$ref" in node:
            node = defs[str(node["$ref"]).rsplit("/", 1)[-1]]
        if not isinstance(node, dict) or key not in node:
            break
        if key in ("properties", "patternProperties") and i + 1 < len(keys):
            node = node[key][keys[i + 1]]
            depth += 1
            kinds = frozenset(t for t in Tolerance if node.get(t.annotation) is True)
            if kinds:
                found.append((depth, kinds, i + 2 < len(keys) and keys[i + 2] == "items"))
            i += 2
        elif key in _STRUCTURAL and i + 1 < len(keys):
            if key != "allOf":
                branches.append(_branch_name(node[key][keys[i + 1]], key, keys[i + 1]))
            node = node[key][keys[i + 1]]
            depth += key == "prefixItems"
            i += 2
        elif key in _ONE_STEP:
            node = node[key]
            depth += 1
            i += 1
        elif key in _SUBSCHEMA:
            node = node[key]
            i += 1
        else:
            break  # a keyword that judges (required, type, const, ...)
    return found, node, branches


def _branch_name(branch: Any, key: str, index: Any) -> str:
    if isinstance(branch, dict):
        if "$ref" in branch:
            return str(branch["$ref"]).rsplit("/", 1)[-1]
        for prop in (branch.get("properties") or {}).values():
            if isinstance(prop, dict) and "const" in prop:
                return repr(prop["const"])
        if "title" in branch:
            return str(branch["title"])
        if "type" in branch:
            return f"type {branch['type']}"
    return f"{key}[{index}]"


def _tolerated(err: Any, def_name: str, instance: Any, rev: str) -> list[_Tolerated] | None:
    """The deserializer tolerances that accept the part ``err`` is about, or ``None`` when a
    client following the schema rejects the message over it. A union is accepted when one of
    its branches fails only in tolerated parts (the fewest)."""
    if err.validator in ("anyOf", "oneOf") and err.context:
        by_branch: dict[Any, list[Any]] = {}
        for sub in err.context:
            by_branch.setdefault(sub.relative_schema_path[0], []).append(sub)
        options = []
        for subs in by_branch.values():
            parts = [_tolerated(s, def_name, instance, rev) for s in subs]
            if all(p is not None for p in parts):
                options.append([t for p in parts if p is not None for t in p])
        if options:
            return min(options, key=len)
    found, _, _ = _walk(def_name, err.absolute_schema_path, rev)
    path = tuple(err.absolute_path)
    for depth, kinds, into_items in reversed(found):  # the innermost annotation decides
        if Tolerance.SKIP_ITEM in kinds and into_items and len(path) > depth:
            return [_Tolerated(Tolerance.SKIP_ITEM, path[:depth + 1],
                               _field(err, path[depth + 1:]), _message(err), _at(err))]
        if Tolerance.DEFAULT_ON_ERROR in kinds and len(path) >= depth:
            return [_Tolerated(Tolerance.DEFAULT_ON_ERROR, path[:depth],
                               _field(err, path[depth:]), _message(err), _at(err))]
        if Tolerance.DEFAULT_ON_NULL in kinds and len(path) == depth and err.instance is None:
            return [_Tolerated(Tolerance.DEFAULT_ON_NULL, path[:depth], (), _message(err),
                               _at(err))]
    return None


def _field(err: Any, rest: tuple[Any, ...]) -> tuple[Any, ...]:
    """The failing field below an item or a defaulted field (a missing one is named by the
    message)."""
    return rest


def _at(err: Any) -> tuple[Any, ...]:
    """The failing field's whole path, a missing required property's name included."""
    path = tuple(err.absolute_path)
    if err.validator == "required" and isinstance(err.instance, dict):
        path += tuple([k for k in err.validator_value if k not in err.instance][:1])
    return path


def _closest(err: Any, def_name: str, rev: str) -> tuple[Any, list[str]]:
    """Down a failing union to the branch closest to validating (fewest failures, the deepest
    first), and the failure that keeps it from validating; with the branches taken."""
    leaf = err
    while leaf.validator in ("anyOf", "oneOf") and leaf.context:
        from jsonschema.exceptions import best_match

        by_branch: dict[Any, list[Any]] = {}
        for sub in leaf.context:
            by_branch.setdefault(sub.relative_schema_path[0], []).append(sub)
        subs = min(by_branch.values(),
                   key=lambda es: (len(es), -max(len(e.absolute_path) for e in es),
                                   any(e.validator == "const" for e in es)))
        if all(e.validator == "type" and e.absolute_path == leaf.absolute_path for e in subs):
            break  # the value has a type no branch takes: no branch is closer than another
        leaf = best_match(subs)
    if leaf is err:
        return err, []
    _, _, branches = _walk(def_name, leaf.absolute_schema_path, rev)
    return leaf, branches


def _message(err: Any) -> str:
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = [k for k in err.validator_value if k not in err.instance][:1]
        if missing:
            return f"{missing[0]!r} is required"
    return _shorten(err.message, 160)


def _dotted(parts: tuple[Any, ...]) -> str:
    """``update.availableCommands[0].type``: a path as a reader writes it."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def _pointer(parts: tuple[Any, ...]) -> str:
    return "/".join(str(p) for p in parts) or "(root)"


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


def accepted_by(def_name: str, instance: Any, rev: str) -> tuple[str, ...]:
    """The other revisions of ``rev``'s protocol version whose schema accepts ``instance``
    as ``def_name`` (the message is a shape of theirs)."""
    from acp_model.spec.revisions import REVISIONS

    protocol = REVISIONS[rev].protocol
    return tuple(name for name, other in REVISIONS.items()
                 if name != rev and other.protocol == protocol
                 and def_name in load_schema(name)["$defs"]
                 and fast_validator(def_name, name)(instance))


# --- which rule a schema failure breaks -------------------------------------------------------

def _schema(rule_id: str, name: str, doc: str) -> CheckMeta:
    return declare(rule_id, name, doc, module=__name__, role=Role.FINDING,
                   reads=(Reads.REQUEST, Reads.NOTIFICATION, Reads.RESPONSE))


SCHEMA_VALID = _schema("ACPM-SCHEMA", "schema_valid",
                       "Every message validates against the v2 schema definition for its method "
                       "and direction.")
SCHEMA_TOLERATED = _schema("ACPM-SCHEMA-TOLERATED", "schema_tolerated",
                           "Every part of a message validates, including the items and fields "
                           "the schema tells a deserializer to skip or default.")

# (method, a key on the failing path, the rule the schema states there, branch defs it covers)
_SCHEMA_RULES: tuple[tuple[str, str, CheckMeta, frozenset[str]], ...] = (
    (Method.INITIALIZE, "info", _schema("INIT-09", "schema_info", "Both peers identify themselves "
                                   "in info with a name and a version."),
     frozenset({"InitializeResponse", "InitializeRequest"})),
    (Method.INITIALIZE, "capabilities", _schema("INIT-07", "schema_capabilities", "Capability "
                                           "markers are objects, never booleans."),
     frozenset({"InitializeResponse", "InitializeRequest"})),
    (Method.UPDATE, "messageId", _schema("MSG-01", "schema_message_id", "Every message "
                                            "update and chunk carries a messageId."),
     frozenset({"ContentChunk", "UserMessage", "AgentMessage", "AgentThought"})),
    (Method.UPDATE, "planId", _schema("PLAN-02", "schema_plan_id", "Every plan has a type "
                                         "and a planId."), frozenset({"PlanItems"})),
    (Method.UPDATE, "used", _schema("USAGE-02", "schema_usage_used", "usage_update used and "
                                       "size are present, non-negative integers."),
     frozenset({"UsageUpdate"})),
    (Method.UPDATE, "size", _schema("USAGE-02", "schema_usage_size", "usage_update used and "
                                       "size are present, non-negative integers."),
     frozenset({"UsageUpdate"})),
    (Method.UPDATE, "currency", _schema("USAGE-04", "schema_currency", "cost.currency is "
                                           "an ISO 4217 code (three capitals)."),
     frozenset({"UsageUpdate"})),
    (Method.UPDATE, "line", _schema("TOOL-19", "schema_location_line", "A tool call "
                                       "location's line is a line number (1-based in the "
                                       "newer revision)."),
     frozenset({"ToolCallUpdate"})),
    (Method.PERMISSION, "options",
     _schema("PERM-02", "schema_permission_options", "A permission request has at least one "
             "option with optionId, name and kind."), frozenset({"RequestPermissionRequest"})),
    (Method.PROMPT, "messageId",
     _schema("SDK-RECEIPT-01", "schema_receipt", "The prompt response is a receipt naming the "
             "inserted user message."), frozenset({"PromptResponse"})),
    (Method.PERMISSION, "title",
     _schema("PERM-02", "schema_permission_title", "A permission request has a title."),
     frozenset({"RequestPermissionRequest"})),
)


def problem_rule(method: str, problem: SchemaProblem, rev: str = SEED) -> CheckMeta:
    """The rule a schema problem breaks: the rule the revision states for that field (a MUST
    of its text stays one, tolerated or not); else a part the schema's deserializer
    annotations tolerate breaks ACPM-SCHEMA-TOLERATED (a warning), any other ACPM-SCHEMA."""
    meta = schema_rule(method, problem.path, rev)
    if problem.tolerated is not None and meta is SCHEMA_VALID:
        return SCHEMA_TOLERATED
    return meta


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
    out = [SCHEMA_VALID, SCHEMA_TOLERATED]
    for m, _, meta, defs in _SCHEMA_RULES:
        if m == method and defs & seen and meta.rule not in {o.rule for o in out} \
                and RULES[meta.rule].applies(rev):
            out.append(meta)
    return tuple(out)
