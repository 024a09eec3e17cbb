"""Per-method schema validation, the reserved-value checks and the generated benchmark trace."""

from __future__ import annotations

import pytest

from acp_model.model import messages as checks
from acp_model.oracle import validate as validation
from acp_model.spec import schema
from benchmarks.gen_trace import generate
from tests.helpers import assert_clean, check


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
    assert [f[0].rule for f in checks.session_update(params).found] == ["STOP-03"]
    usage = {"sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": 1,
                                          "size": 2, "cost": {"amount": 1, "currency": "XYZ"}}}
    assert validation.validate("UpdateSessionNotification", usage) == []
    assert [f[0].rule for f in checks.session_update(usage).found] == ["USAGE-04"]


@pytest.mark.parametrize(("path", "ok"), [("/a/b", True), ("C:\\x", True), ("\\\\srv\\s", True),
                                          ("a/b", False), ("", False), ("./x", False)])
def test_absolute_paths(path: str, ok: bool) -> None:
    assert checks.is_absolute_path(path) is ok


def test_generated_benchmark_trace_is_conforming() -> None:
    assert_clean(check(generate(messages=3000, sessions=3, seed=3)))
