"""Running the lifecycle machines: a transition table derived from the python-statemachine class.

python-statemachine is the single source of truth: :func:`compile_machine` reads the states,
events, guards (named by reference: :func:`guard`) and actions off the class (the same
introspection the explorer and the diagrams use) and builds a lookup table.
:class:`TableEngine` interprets that table, calling the very same check and action methods on
the model; it exists only because the library's SCXML engine costs ~70 µs per event, too
slow for checking large traces. :class:`LibraryEngine` runs the real machine and must agree
with the table (tested on random event sequences).

A transition always happens: failing checks are reported (as failures or warnings, depending on
the rule's strength and the readings) and the machine then follows what the wire said.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, update_wrapper
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from statemachine import StateMachine
from statemachine.exceptions import TransitionNotAllowed

from acp_model.model.check import CheckMeta, DefinitionError, allows_of, meta_of
from acp_model.model.vocab import Level, Role
from acp_model.spec.readings import Readings


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """A guard of a transition: the check's metadata and the function to call."""

    meta: CheckMeta
    func: Callable[[Any, Any], bool]
    proof: Callable[[Any, Any], Any] | None = None  # the evidence ``meta.evidence`` names

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def rule(self) -> str:
        return self.meta.rule

    @property
    def doc(self) -> str:
        return self.meta.doc

    @property
    def reading(self) -> str | None:
        return self.meta.reading

    def level(self, readings: Readings) -> Level:
        """``fail``, ``warn`` or ``off`` for this check under the given readings."""
        return self.meta.level(readings)


@dataclass(frozen=True, slots=True)
class TransitionSpec:
    source: str
    event: str
    target: str
    internal: bool
    checks: tuple[CheckSpec, ...]
    actions: tuple[str, ...]
    funcs: tuple[Callable[[Any, Any], None], ...]  # the actions, called as (model, ev)
    allows: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Table:
    """Everything a machine class says, in plain data."""

    machine: type[StateMachine]
    model: type
    initial: str
    states: tuple[str, ...]
    state_names: dict[str, str]
    events: tuple[str, ...]
    transitions: Mapping[tuple[str, str], TransitionSpec]  # read-only: the table is shared

    def check_names(self) -> dict[str, CheckSpec]:
        out: dict[str, CheckSpec] = {}
        for tr in self.transitions.values():
            for c in tr.checks:
                out[c.name] = c
        return out


@cache
def _owners(model: type) -> tuple[tuple[str | None, type], ...]:
    """Where a name the machine uses is looked up: the model class, then the classes of its
    ``PARTS`` (attributes holding its books and views, ``SessionModel.PARTS``)."""
    parts = getattr(model, "PARTS", ())
    hints = typing.get_type_hints(model) if parts else {}
    out: list[tuple[str | None, type]] = [(None, model)]
    for part in parts:
        view = getattr(model, part, None)  # a view's class attribute is its class
        cls = view if isinstance(view, type) else hints.get(part)
        if not isinstance(cls, type):
            raise DefinitionError(f"{model.__name__}: part {part!r} is neither a view nor a "
                                  "field")
        out.append((part, cls))
    return tuple(out)


def _found(model: type, name: str) -> list[tuple[str | None, Callable[..., Any]]]:
    return [(part, f) for part, cls in _owners(model)
            if callable(f := getattr(cls, name, None))]


def _on_part(model: type, part: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` of a part, called as ``(model, ev)`` (the engine's convention), with the
    tags ``@check`` / ``@allowance`` put on ``func``. A view is made straight from the model
    (what its class attribute does, one call less on every guard)."""
    view = getattr(model, part, None)
    get = view if isinstance(view, type) else attrgetter(part)

    def call(model: Any, ev: Any) -> Any:
        return func(get(model), ev)

    return update_wrapper(call, func)


def _member(machine: type[StateMachine], model: type, name: str, what: str) -> Callable[..., Any]:
    """The function ``name`` as ``(model, ev)``: a method of the model or of exactly one of its
    parts (python-statemachine calls every listener that has the name)."""
    found = _found(model, name)
    if not found:
        raise DefinitionError(f"{machine.__name__}: {what} {name!r} is not a method of "
                              f"{model.__name__} or of its parts")
    if len(found) > 1:
        raise DefinitionError(f"{machine.__name__}: {what} {name!r} is defined by "
                              f"{', '.join(p or model.__name__ for p, _ in found)}: name it once")
    part, func = found[0]
    return func if part is None else _on_part(model, part, func)


GUARD = "__acpm_guard__"  # on a guard reference: the check it names


@cache
def guard(fn: Callable[..., bool]) -> Callable[[Any, Any], bool]:
    """A machine's guard named by reference (``cond=guard(CancelRules.cancel_honoured)``):
    ``fn`` as python-statemachine calls a callable condition, ``(model, ev)``, run on the part
    of the model that holds it. No name is looked up: the compiler and the library both reach
    ``fn`` through this reference, so a typo fails at import and an editor finds the check."""
    if meta_of(fn).role is not Role.GUARD:
        raise DefinitionError(f"{fn.__qualname__}: a machine's condition is a guard "
                              f"(@check(role=GUARD)), not a {meta_of(fn).role}")
    held: dict[type, Callable[[Any, Any], Any]] = {}  # model class -> fn on its part

    def call(model: Any, ev: Any) -> bool:
        on = held.get(type(model))
        if on is None:
            on = held[type(model)] = _holder(type(model), fn)
        return bool(on(model, ev))

    call.__name__, call.__qualname__, call.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    setattr(call, GUARD, fn)
    return call


def guards(*fns: Callable[..., bool]) -> list[Callable[[Any, Any], bool]]:
    """The conditions of a transition, each a guard by reference (:func:`guard`)."""
    return [guard(fn) for fn in fns]


def _holder(model: type, fn: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    """``fn`` as ``(model, ev)``: a method of the model, or of the one part whose class holds
    it (found by identity in the class's hierarchy, not by name). A part of a subclass that
    overrides ``fn`` runs its override, as a method call would (a mutant model swaps a part)."""
    found = [(part, cls) for part, cls in _owners(model)
             if any(vars(k).get(fn.__name__) is fn for k in cls.__mro__)]
    if len(found) != 1:
        raise DefinitionError(f"{model.__name__}: {fn.__qualname__} is a method of "
                              f"{len(found)} of it and its parts, not one")
    part, cls = found[0]
    own = getattr(cls, fn.__name__)
    return own if part is None else _on_part(model, part, own)


def _guard_of(machine: type[StateMachine], model: type, spec: Any) -> Callable[[Any, Any], Any]:
    fn = getattr(spec.func, GUARD, None)
    if fn is None:
        raise DefinitionError(f"{machine.__name__}: guard {str(spec)!r} is named by a string; "
                              "name it by reference (cond=guard(Part.check))")
    return _holder(model, fn)


@cache
def compile_machine(machine: type[StateMachine], model: type) -> Table:
    """Derive the transition table from a python-statemachine class.

    Fails loudly, as python-statemachine does for its own definitions: a guard named by a
    string, an action that is not a method of the model, a guard without ``@check``, or a
    model method that shares a name with an event (python-statemachine resolves names on the
    machine first, so the two engines would call different code).
    """
    transitions: dict[tuple[str, str], TransitionSpec] = {}
    states = []
    names = {}
    initial = ""
    event_names = {str(e) for s in machine.states for t in s.transitions for e in t.events}
    clash = sorted(n for n in event_names if any(hasattr(c, n) for _, c in _owners(model)))
    if clash:
        raise DefinitionError(f"{machine.__name__}: {', '.join(clash)} name both an event and "
                              f"a member of {model.__name__} or of its parts")
    for state in machine.states:
        states.append(state.id)
        names[state.id] = state.name
        if state.initial:
            initial = state.id
        for t in state.transitions:
            checks = []
            for spec in t.cond:
                func = _guard_of(machine, model, spec)
                meta = meta_of(func)
                proof = None if meta.evidence is None else \
                    _member(machine, model, meta.evidence, f"evidence of {meta.name}")
                checks.append(CheckSpec(meta, func, proof))
            actions = tuple(str(a) for a in t.on if not a.is_convention)
            funcs = tuple(_member(machine, model, a, "action") for a in actions)
            implicit = [str(a) for a in (*t.on, *t.cond) if a.is_convention
                        and _found(model, str(a))]
            if implicit:  # the library would call them, the table would not
                raise DefinitionError(f"{machine.__name__}: {', '.join(implicit)} would run "
                                      "by naming convention; name actions explicitly (on=)")
            allows = tuple(r for f in funcs for r in allows_of(f))
            for ev in t.events:
                key = (state.id, str(ev))
                if key in transitions:
                    raise ValueError(f"{machine.__name__}: two transitions for {key}; the model "
                                     "requires exactly one per (state, event)")
                transitions[key] = TransitionSpec(state.id, str(ev), t.target.id, t.internal,
                                                  tuple(checks), actions, funcs, allows)
    events = tuple(dict.fromkeys(e for _, e in transitions))
    return Table(machine, model, initial, tuple(states), names, events,
                 MappingProxyType(transitions))


Failure = tuple[CheckSpec, str]  # (check, "fail" | "warn")


class _Step:
    """What firing one (state, event) does under an engine's readings, and how often it fired
    (counted on the step itself: one lookup of the pair per event, not three)."""

    __slots__ = ("actions", "allows", "checks", "n", "target")

    def __init__(self, target: str, checks: tuple[tuple[CheckSpec, str], ...],
                 actions: tuple[Callable[[Any, Any], None], ...], allows: tuple[str, ...]
                 ) -> None:
        self.target, self.checks, self.actions, self.allows = target, checks, actions, allows
        self.n = 0


class TableEngine:
    """Fast interpreter of a :class:`Table` under fixed readings."""

    def __init__(self, table: Table, readings: Readings) -> None:
        self.table = table
        self.readings = readings
        self._plan: dict[tuple[str, str], _Step] = {}
        self._rules = {c.name: c.meta.rule_for(readings) for c in table.check_names().values()}
        # The proofs of the last fire's failures, stated before its actions ran (checks read
        # the state the event met): check name -> (text, [(index, role)]) or None.
        self.evidence: dict[str, Any] = {}
        for key, tr in table.transitions.items():
            active = tuple((c, c.level(readings)) for c in tr.checks)
            active = tuple(a for a in active if a[1] != Level.OFF)
            self._plan[key] = _Step(tr.target, active, tr.funcs, tr.allows)

    @property
    def transitions(self) -> dict[tuple[str, str], int]:
        """(state, event) -> times fired, for the pairs that fired."""
        return {key: step.n for key, step in self._plan.items() if step.n}

    @property
    def exercised(self) -> dict[str, int]:
        """How often each rule's checks ran and its allowances applied: derived when asked
        from the transitions fired (a transition runs the same checks every time), so
        firing counts nothing per check."""
        out: dict[str, int] = {}
        for step in self._plan.values():
            n = step.n
            if not n:
                continue
            for chk, _ in step.checks:
                rule = self._rules[chk.name]
                out[rule] = out.get(rule, 0) + n
            for rule_id in step.allows:
                out[rule_id] = out.get(rule_id, 0) + n
        return out

    def rule_of(self, chk: CheckSpec) -> str:
        """The rule a failure of ``chk`` is reported under with this engine's readings."""
        return self._rules[chk.name]

    def fire(self, model: Any, event: str, ev: Any) -> list[Failure]:
        """Apply one event; return the failing checks with their level."""
        step = self._plan[(model.state, event)]
        step.n += 1
        failures: list[Failure] = []
        for check in step.checks:  # a loop, not a comprehension: no frame made on every event
            if not check[0].func(model, ev):
                failures.append(check)
        if failures:
            self._state_evidence(model, ev, failures)
        elif self.evidence:  # (no dict made on every event that fails nothing)
            self.evidence = {}
        for action in step.actions:  # apply(), written out: this runs on every event
            action(model, ev)
        model.state = step.target
        return failures

    def _state_evidence(self, model: Any, ev: Any, failures: list[Failure]) -> None:
        self.evidence = {c.name: c.proof(model, ev)
                         for c, _ in failures if c.proof is not None} if failures else {}

    def apply(self, model: Any, event: str, ev: Any) -> None:
        """The actions and target of an event already judged by :meth:`allowed` (checks are
        pure, so running them again could not change the outcome); nothing is counted."""
        step = self._plan[(model.state, event)]
        for action in step.actions:
            action(model, ev)
        model.state = step.target

    def allowed(self, model: Any, event: str, ev: Any) -> tuple[bool, list[Failure]]:
        """Would the model accept this event without a failure? (no state change)."""
        failures = [(c, lv) for c, lv in self._plan[(model.state, event)].checks
                    if not c.func(model, ev)]
        if not failures:
            return True, failures
        return (not any(lv == Level.FAIL for _, lv in failures), failures)


class LibraryEngine(TableEngine):
    """Runs the real python-statemachine machine; refusals are classified via the table."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the library machine that drives each model, kept here rather than on the model, and
        # dropped with this engine: keyed by identity (models are dataclasses, compared by
        # value); a machine holds its model, so no other model can take over its id meanwhile
        self._machines: dict[int, StateMachine] = {}

    def _machine(self, model: Any) -> StateMachine:
        sm = self._machines.get(id(model))
        if sm is None:
            parts = [getattr(model, p) for p in getattr(self.table.model, "PARTS", ())]
            sm = self._machines[id(model)] = self.table.machine(model=model, listeners=parts)
        return sm

    def fire(self, model: Any, event: str, ev: Any) -> list[Failure]:
        sm = self._machine(model)
        step = self._plan[(model.state, event)]
        checks = step.checks
        step.n += 1
        try:
            sm.send(event, ev=ev)
            self.evidence = {}
            return []
        except TransitionNotAllowed:
            failures = [(c, lv) for c, lv in checks if not c.func(model, ev)]
            self._state_evidence(model, ev, failures)
            self.apply(model, event, ev)
            return failures
