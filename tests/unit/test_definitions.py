"""Definitions fail loudly: a bad @check, a missing guard or action, a name clash, a drifted
vocabulary are errors when the code is loaded, never a silently different verdict."""

from __future__ import annotations

from typing import Any

import pytest
from statemachine import State, StateMachine

from acp_model.model.check import DefinitionError, allowance, check, declare
from acp_model.model.connection import ConnectionLifecycle, ConnectionModel
from acp_model.model.engine import LibraryEngine, TableEngine, compile_machine, guard, guards
from acp_model.model.lifecycle import SessionLifecycle
from acp_model.model.session import SessionModel
from acp_model.model.vocab import ConnEvent, ConnState, Event, Role
from acp_model.model.vocab import State as SessionState
from acp_model.spec.readings import DEFAULT


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"rule_id": "NOPE-01"}, "not in the catalogue"),
    ({"rule_id": "CANCEL-07", "reading": "A-99", "levels": {"x": "fail"}}, "not defined"),
    ({"rule_id": "CANCEL-07", "reading": "A-11", "levels": {"sometimes": "fail"}},
     "has no value 'sometimes'"),
    ({"rule_id": "CANCEL-07", "reading": "A-11", "levels": {"sent": "loud"}},
     "level 'loud'"),
    ({"rule_id": "CANCEL-07", "levels": {"sent": "fail"}}, "need the reading"),
    ({"rule_id": "CANCEL-07", "reading": "A-11"}, "changes nothing"),
])
def test_a_bad_check_is_rejected_when_applied(kwargs: dict[str, Any], message: str) -> None:
    rule_id = kwargs.pop("rule_id")
    with pytest.raises(DefinitionError, match=message):
        @check(rule_id, role=Role.GUARD, **kwargs)
        def guard(self: Any, ev: Any) -> bool:
            """Doc."""
            return True


def test_a_bad_allowance_or_declaration_is_rejected() -> None:
    with pytest.raises(DefinitionError, match="NOPE-02"):
        @allowance("STATE-04", "NOPE-02")
        def action(self: Any, ev: Any) -> None:
            pass
    with pytest.raises(DefinitionError, match="NOPE-03"):
        declare("NOPE-03", "x", "Doc.", module=__name__, role=Role.OBLIGATION)


class _Model:
    state: str = "a"

    @check("STATE-03", role=Role.GUARD)
    def guarded(self, ev: Any) -> bool:
        """Doc."""
        return True

    def untagged(self, ev: Any) -> bool:
        return True

    def act(self, ev: Any) -> None:
        pass


def _machine(**transition: Any) -> type[StateMachine]:
    class M(StateMachine):
        a = State(initial=True)
        b = State()
        go = a.to(b, **transition) | b.to(a)

    return M


class _Other:
    @check("STATE-03", role=Role.GUARD)
    def elsewhere(self, ev: Any) -> bool:
        """Doc."""
        return True


@pytest.mark.parametrize(("transition", "message"), [
    ({"cond": "guarded"}, "guard 'guarded' is named by a string; name it by reference"),
    ({"cond": guards(_Other.elsewhere)}, "_Other.elsewhere is a method of 0 of it"),
    ({"on": "missing_action"}, "action 'missing_action' is not a method"),
])
def test_compile_machine_names_what_is_missing(transition: dict[str, Any], message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        compile_machine(_machine(**transition), _Model)


def test_a_guard_reference_names_a_tagged_guard() -> None:
    with pytest.raises(DefinitionError, match="not tagged with @check"):
        guard(_Model.untagged)

    @check("STATE-03", role=Role.FINDING, reads=["plan"])
    def finding(plan: Any) -> None:
        """Doc."""

    with pytest.raises(DefinitionError, match="is a guard"):
        guard(finding)


class _Part:
    @check("STATE-03", role=Role.GUARD)
    def refuses(self, ev: Any) -> bool:
        """Doc."""
        return ev != "bad"


class _Holder:
    PARTS = ("part",)
    part: _Part

    def __init__(self) -> None:
        self.state = "a"
        self.part = _Part()


def test_a_guard_reference_runs_its_check_on_the_part_holding_it_in_both_engines() -> None:
    """The table and python-statemachine reach the same function through the reference: on
    the model itself, or on the part (a field) whose class defines it."""
    table = compile_machine(_machine(cond=guards(_Part.refuses)), _Holder)
    assert [c.name for c in table.transitions[("a", "go")].checks] == ["refuses"]
    for engine in (TableEngine(table, DEFAULT), LibraryEngine(table, DEFAULT)):
        model = _Holder()
        assert engine.fire(model, "go", "good") == [] and model.state == "b"
        assert engine.fire(model, "go", None) == [] and model.state == "a"
        refused = engine.fire(model, "go", "bad")
        assert [c.name for c, _ in refused] == ["refuses"] and model.state == "b", engine


class _Lenient(_Part):
    @check("STATE-03", role=Role.GUARD)
    def refuses(self, ev: Any) -> bool:
        """Doc."""
        return True


class _LenientHolder(_Holder):
    part: _Lenient


def test_a_part_that_overrides_the_referenced_guard_runs_its_override() -> None:
    """A mutant model swaps a part for a subclass: the reference names the check, the part's
    class decides the method, as a call would."""
    table = compile_machine(_machine(cond=guards(_Part.refuses)), _LenientHolder)
    model = _LenientHolder()
    model.part = _Lenient()
    assert TableEngine(table, DEFAULT).fire(model, "go", "bad") == []


def test_a_model_member_named_like_an_event_is_rejected() -> None:
    class Clash(_Model):
        @check("STATE-03", role=Role.GUARD)
        def go(self, ev: Any) -> bool:
            """Doc."""
            return True

    with pytest.raises(DefinitionError, match="go name both an event and a member"):
        compile_machine(_machine(cond=guards(Clash.guarded), on="act"), Clash)


def test_convention_callbacks_are_rejected() -> None:
    class Implicit(_Model):
        def on_go(self) -> None:
            pass

    with pytest.raises(DefinitionError, match="on_go would run by naming convention"):
        compile_machine(_machine(cond=guards(Implicit.guarded)), Implicit)


def test_the_vocabulary_matches_the_machines() -> None:
    session = compile_machine(SessionLifecycle, SessionModel)
    assert set(session.events) == set(Event)
    assert set(session.states) == set(SessionState)
    conn = compile_machine(ConnectionLifecycle, ConnectionModel)
    assert set(conn.events) == set(ConnEvent)
    assert set(conn.states) == set(ConnState)


def test_the_table_is_read_only() -> None:
    table = compile_machine(SessionLifecycle, SessionModel)
    with pytest.raises(TypeError):
        table.transitions[("idle", "prompt")] = None  # type: ignore[index]
