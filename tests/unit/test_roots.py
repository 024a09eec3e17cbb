"""One root, one failure: a rule declared a special case of another on the same request
(``declare(narrows=True)``: of the obligation its request's row owes) is read in one place,
``wire_table.roots``; minimizing's hit test and a
run's failures follow it (s8 cause I: kilo v1's unanswered prompts, reported as CANCEL-14)."""

from __future__ import annotations

from typing import Any

import pytest

from acp_model.fuzzing.actions import Action, CancelPromptRequest, NewSession, Prompt
from acp_model.fuzzing.recorder import Found, Recorder
from acp_model.fuzzing.replay import Shows
from acp_model.model.check import DefinitionError, declare
from acp_model.model.vocab import Level, Role
from acp_model.model.wire_table import roots
from acp_model.oracle.monitor import Violation


def test_the_declared_narrowings_are_the_ones_the_texts_support() -> None:
    assert roots("CANCEL-14", "session/prompt") == {"PROMPT-04"}
    assert roots("CANCEL-14", "session/request_permission") == {"PERM-12"}
    assert roots("CANCEL-04", "session/request_permission") == {"PERM-12"}
    assert roots("CANCEL-14", None) == roots("PROMPT-04", "session/prompt") == frozenset()
    # a request no row owes more than ACPM-ANSWER's: no broader rule (no text pairs them)
    assert roots("CANCEL-14", "elicitation/create") == frozenset()


def test_a_narrowing_names_what_it_adds_and_only_a_narrowing_does() -> None:
    for narrows, circumstance in ((True, ""), (False, "x")):
        with pytest.raises(DefinitionError):
            declare("CANCEL-14", "test_narrowing", "Test.", module=__name__,
                    role=Role.OBLIGATION, narrows=narrows, circumstance=circumstance)


def _v(rule: str, index: int) -> Violation:
    return Violation(rule, Level.FAIL, "MUST", index, "x")


RECORDS: list[dict[str, Any]] = [
    {"dir": "c2a", "msg": {"jsonrpc": "2.0", "id": 1, "method": "session/prompt"}},
    {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 0, "method": "session/request_permission"}},
]


def test_the_broad_rule_reproduces_the_narrow_one_on_a_request_of_the_same_method() -> None:
    prompt = Shows("CANCEL-14", "session/prompt")
    assert prompt.hit([_v("PROMPT-04", 0)], RECORDS) == _v("PROMPT-04", 0)
    assert prompt.hit([_v("PROMPT-04", 0), _v("CANCEL-14", 0)], RECORDS) == _v("CANCEL-14", 0)
    assert prompt.hit([_v("PERM-12", 1)], RECORDS) is None  # another method's broad rule
    assert Shows("CANCEL-14", "session/request_permission").hit(
        [_v("PROMPT-04", 0)], RECORDS) is None
    assert Shows("CANCEL-14").hit([_v("PROMPT-04", 0)], RECORDS) is None  # no method: exact
    assert Shows("PROMPT-04", "session/prompt").hit([_v("CANCEL-14", 0)], RECORDS) is None


def _found(rule: str, actions: list[Action]) -> Found:
    return Found(rule, _v(rule, 0), actions, RECORDS, 0, [actions], 0.0, 0.0)


def test_a_failure_re_rooted_under_a_rule_the_run_also_found_is_one_failure() -> None:
    short = [NewSession(), Prompt(0, [{"type": "text", "text": "a"}])]
    narrow = _found("CANCEL-14", [*short, CancelPromptRequest(0)])
    assert narrow.method == "session/prompt"
    narrow.reroot(_v("PROMPT-04", 0))
    narrow.actions = short
    broad = _found("PROMPT-04", [*short, *short])
    kept = _found("CANCEL-04", short)
    recorder = Recorder(found={"CANCEL-14": narrow, "PROMPT-04": broad, "CANCEL-04": kept})
    recorder.one_root()
    assert sorted(recorder.found) == ["CANCEL-04", "PROMPT-04"]
    one = recorder.found["PROMPT-04"]
    assert one.actions == short and one.seen == 2
    assert one.notes == ["first seen as CANCEL-14; the program without the withdrawal "
                         "($/cancel_request) shows it, so the root is PROMPT-04"]
    alone = Recorder(found={"CANCEL-14": _found("CANCEL-14", short)})
    alone.found["CANCEL-14"].reroot(_v("PROMPT-04", 0))
    alone.one_root()
    assert list(alone.found) == ["PROMPT-04"]
