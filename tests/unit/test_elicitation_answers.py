"""The fuzz client's answers to elicitation/create: each action of the schema in turn, an
accept filled in to fit the requested form."""

from __future__ import annotations

from typing import Any

from acp_model.fuzzing.services import ClientServices, form_value
from acp_model.oracle.validate import precise_valid
from acp_model.spec import schema


def test_a_form_is_filled_in_within_what_each_field_allows() -> None:
    assert form_value({"type": "string", "minLength": 12}) == "acp-modelxxx"
    assert form_value({"type": "string", "enum": ["b", "c"]}) == "b"
    assert form_value({"type": "string", "oneOf": [{"const": "x", "title": "X"}]}) == "x"
    assert form_value({"type": "integer", "minimum": 3}) == 3
    assert form_value({"type": "boolean"}) is True
    assert form_value({"type": "array", "minItems": 2,
                       "items": {"type": "string", "enum": ["a", "b", "c"]}}) == ["a", "b"]


def test_the_actions_come_in_turn_and_each_answer_fits_the_schema(tmp_path: Any) -> None:
    services = ClientServices({"elicitation": True}, str(tmp_path), lambda *a, **k: None)
    params = {"sessionId": "s1", "mode": "form", "message": "Which?", "requestedSchema": {
        "type": "object", "properties": {"branch": {"type": "string"},
                                         "force": {"type": "boolean"}}}}
    answers = [services.elicit(params) for _ in range(4)]
    assert [a["action"] for a in answers] == ["accept", "decline", "cancel", "accept"]
    assert answers[0]["content"] == {"branch": "acp-model", "force": True}
    spec = schema.method_table("sdk-2.4.0")["elicitation/create"]
    for answer in answers:
        assert precise_valid(str(spec.result_def), answer, "sdk-2.4.0"), answer
    url = {"sessionId": "s1", "mode": "url", "elicitationId": "e1", "url": "https://x.test/"}
    assert ClientServices({"elicitation": True}, str(tmp_path),
                          lambda *a, **k: None).elicit(url) == {"action": "accept"}
