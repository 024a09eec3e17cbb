"""Per-method schema validation, the reserved-value checks and the generated benchmark trace."""

from __future__ import annotations

from typing import Any

import pytest

from acp_model.model import messages as checks
from acp_model.oracle import validate as validation
from acp_model.spec import schema
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.trace.builder import TraceBuilder
from benchmarks.gen_trace import generate
from tests.helpers import S, assert_clean, base, check, update_findings


def test_method_table_comes_from_the_schema_annotations() -> None:
    table = schema.method_table()
    assert table["session/update"].params_def == "UpdateSessionNotification"
    assert table["session/update"].directions == frozenset({"a2c"})
    assert table["session/prompt"].result_def == "PromptResponse"
    assert table["session/prompt"].directions == frozenset({"c2a"})
    assert table["session/cancel"].notification
    assert table["$/cancel_request"].directions == frozenset({"c2a", "a2c"})


def test_open_enum_values_are_read_from_the_schema() -> None:
    assert schema.known_values("stop_reason") == {"end_turn", "max_tokens", "max_turn_requests",
                                                  "refusal", "cancelled"}
    assert {"running", "idle", "requires_action"} == schema.known_values("state")
    assert "tool_call_update" in schema.known_values("session_update")
    assert schema.is_reserved("stop_reason", "done")
    assert not schema.is_reserved("stop_reason", "_vendor")
    assert not schema.is_reserved("stop_reason", None)


@pytest.mark.parametrize(("def_name", "instance", "where"), [
    ("UpdateSessionNotification",
     {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                                   "content": {"type": "text", "text": "x"}}},
     "update/messageId"),
    ("UpdateSessionNotification",
     {"sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": 1.5, "size": 3}},
     "update/used"),
    ("UpdateSessionNotification",
     {"sessionId": "s", "update": {"sessionUpdate": "state_update", "state": "idle",
                                   "stopReason": 5}},
     "update/stopReason"),
    ("RequestPermissionRequest", {"sessionId": "s", "title": "t", "options": []}, "options"),
    ("PromptRequest", {"sessionId": "s"}, "prompt"),
])
def test_precise_diagnostics_name_the_field(def_name: str, instance: dict, where: str) -> None:
    problems = validation.validate(def_name, instance)
    assert problems, "expected a schema failure"
    assert problems[0].path == where, problems


def test_valid_messages_have_no_problems_and_are_not_mutated() -> None:
    init = {"protocolVersion": 2, "info": {"name": "a", "version": "1"}}
    assert validation.validate("InitializeResponse", init) == []
    assert "capabilities" not in init  # the schema default {} is never written back


def test_schema_accepts_what_our_explicit_checks_reject() -> None:
    params = {"sessionId": "s", "update": {"sessionUpdate": "state_update", "state": "idle",
                                           "stopReason": "done"}}
    assert validation.validate("UpdateSessionNotification", params) == []
    assert [f[0].rule for f in update_findings(params["update"]).found] == ["STOP-03"]
    usage = {"sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": 1,
                                          "size": 2, "cost": {"amount": 1, "currency": "XYZ"}}}
    assert validation.validate("UpdateSessionNotification", usage) == []
    assert [f[0].rule for f in update_findings(usage["update"]).found] == ["USAGE-04"]


@pytest.mark.parametrize(("path", "ok"), [("/a/b", True), ("C:\\x", True), ("\\\\srv\\s", True),
                                          ("a/b", False), ("", False), ("./x", False)])
def test_absolute_paths(path: str, ok: bool) -> None:
    assert checks.is_absolute_path(path) is ok


def test_generated_benchmark_trace_is_conforming() -> None:
    assert_clean(check(generate(messages=3000, sessions=3, seed=3)))


# --- the schema's own tolerance (x-deserialize-* annotations) ---------------------------------

def _annotations(rev: str) -> set[str]:
    """Every x-deserialize-* key the revision's schema uses."""
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            found.update(k for k in node if k.startswith("x-deserialize-"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema.load_schema(rev))
    return found


@pytest.mark.parametrize("rev", ["seed", "sdk-2.4.0", "v1"])
def test_every_deserializer_annotation_of_the_schemas_is_understood(rev: str) -> None:
    assert _annotations(rev) <= {t.annotation for t in validation.Tolerance}


def test_the_annotation_kinds_the_schemas_use_are_all_tested() -> None:
    used = set().union(*(_annotations(r) for r in ("seed", "sdk-2.4.0", "v1")))
    tested = {kind.annotation for kind, *_ in _TOLERATED}
    assert used == tested


SDK = DEFAULT.parse(["SPEC=sdk-2.4.0"])
V1 = DEFAULT.parse(["SPEC=v1"])


def _commands_without_type(t: TraceBuilder) -> TraceBuilder:
    return t.update(S, {"sessionUpdate": "available_commands_update",
                        "availableCommands": [{"name": "plan", "description": "Plan"},
                                              {"type": "command", "name": "go",
                                               "description": "Go"}]})


def _tool_kind_not_a_string(t: TraceBuilder) -> TraceBuilder:
    t = t.prompt(S, 10).accepted(10, {"messageId": "u1"}).user_message(S, "u1").running(S)
    return t.tool(S, "t1", "pending", kind=5, title="Edit").tool(S, "t1", "completed") \
        .idle(S, "end_turn")


def _terminal_args_null(t: TraceBuilder) -> TraceBuilder:
    return t.rpc.request("a2c", "terminal/create", {"sessionId": S, "command": "ls", "args": None},
                         "term-1").rpc.result("c2a", "term-1", {"terminalId": "x"})


# (kind, readings, trace, the item or field the warning names, what it says)
_TOLERATED = [
    (validation.Tolerance.SKIP_ITEM, SDK,
     lambda: _commands_without_type(base()), "update.availableCommands[0]", "'type' is required"),
    (validation.Tolerance.DEFAULT_ON_ERROR, SDK,
     lambda: _tool_kind_not_a_string(base()), "update.kind", "5 is not of type 'string'"),
    (validation.Tolerance.DEFAULT_ON_NULL, V1,
     lambda: _terminal_args_null(TraceBuilder().v1.handshake(client_caps={"terminal": True})
                                 .v1.new_session(S)), "args",
     "None is not of type 'array'"),
]


@pytest.mark.parametrize(("kind", "readings", "make", "where", "what"), _TOLERATED,
                         ids=[k.value for k, *_ in _TOLERATED])
def test_a_part_the_schema_tolerates_is_one_warning_naming_it(
        kind: validation.Tolerance, readings: Readings, make: Any, where: str, what: str
) -> None:
    report = check(make(), readings)
    assert report["verdict"] == "pass", report["violations"]
    [warning] = report["violations"]
    assert warning["rule"] == "ACPM-SCHEMA-TOLERATED"
    assert warning["level"] == "warn"
    assert f"{where}: {what}" in warning["message"]
    assert kind.annotation in warning["message"]


def test_the_same_fault_outside_a_tolerant_field_keeps_its_level() -> None:
    # the prompt's content blocks carry no x-deserialize annotation: a broken block fails
    report = check(base().prompt(S, 10, blocks=[{"type": "text"}]).accepted(10), SDK)
    schema_failures = [v for v in report["violations"] if v["rule"] == "ACPM-SCHEMA"]
    assert [v["level"] for v in schema_failures] == ["fail"]
    assert "prompt/0/text: 'text' is required" in schema_failures[0]["message"]
    assert "closest branch: 'text'" in schema_failures[0]["message"]


def test_a_tolerated_part_and_a_real_fault_in_one_message_are_reported_apart() -> None:
    problems = validation.validate("UpdateSessionNotification", {
        "sessionId": "s", "update": {"sessionUpdate": "tool_call_update", "toolCallId": 5,
                                     "kind": 5}}, "sdk-2.4.0")
    assert {(p.path, p.tolerated) for p in problems} == {
        ("update/kind", validation.Tolerance.DEFAULT_ON_ERROR), ("update/toolCallId", None)}


def test_without_the_tolerance_the_schema_failure_was_a_must() -> None:
    # the same notification under the seed, whose AvailableCommand does not require a type
    assert check(_commands_without_type(base()))["violations"] == []


@pytest.mark.parametrize("update", [{"sessionUpdate": ["state_update"]},
                                    {"sessionUpdate": "state_update", "state": ["idle"]},
                                    {"sessionUpdate": "plan_update", "plan": {"type": ["x"]}}])
def test_a_tag_that_is_no_string_narrows_nothing(update: dict[str, Any]) -> None:
    """A union's tag is any JSON value on the wire: a list or an object is no branch's tag
    (the schema step read it as a key and raised, a traceback for an agent's bad message)."""
    params = {"sessionId": "s", "update": update}
    assert validation.schema_rules_exercised("session/update", "UpdateSessionNotification",
                                             params)
    assert validation.validate("UpdateSessionNotification", params)


@pytest.mark.parametrize("validate", [True, False], ids=["validated", "unvalidated"])
@pytest.mark.parametrize(("update", "judge"), [
    ({"sessionUpdate": ["state_update"]}, "ACPM-SCHEMA"),
    ({"sessionUpdate": "state_update", "state": ["idle"]}, "ACPM-SCHEMA"),
    ({"sessionUpdate": {"a": 1}, "messageId": ["m"]}, "ACPM-SCHEMA"),
    ({"sessionUpdate": "tool_call_update", "toolCallId": ["t"], "status": ["x"]},
     "ACPM-SCHEMA"),
    # the seed's schema has no messageId on a chunk: its own rule judges it, validated
    ({"sessionUpdate": "agent_message_chunk", "messageId": {"x": 1},
      "content": {"type": "text", "text": "hi"}}, "MSG-01")])
def test_an_update_keyed_on_a_list_or_object_is_judged_not_raised(
        update: dict[str, Any], judge: str, validate: bool) -> None:
    """A session/update of a known session whose kind, message id, tool call id, state or
    status is a list or an object: the model reads nothing from it (it raised a TypeError
    in the conversation, the classification or the view); the schema (or the field's own
    rule) judges it."""
    from acp_model.oracle.monitor import Monitor
    from benchmarks.gen_trace import generate

    monitor = Monitor(validate=validate)
    records = generate(30, 1).records
    for record in records[:12]:
        monitor.feed(record)
    sid = next(r.msg["result"]["sessionId"] for r in records[:12]
               if isinstance(r.msg.get("result"), dict) and "sessionId" in r.msg["result"])
    monitor.feed({"dir": "a2c", "msg": {"jsonrpc": "2.0", "method": "session/update",
                                       "params": {"sessionId": sid, "update": update}}})
    monitor.finish()
    rules = {v.rule for v in monitor.violations}
    assert (judge in rules) is validate, rules
