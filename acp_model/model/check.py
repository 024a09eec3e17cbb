"""How a rule is decided: the ``@check`` tag, its validated metadata, and strength -> level.

Every verdict the project can report comes from a function tagged with :func:`check` (or from a
:func:`liveness` / :func:`process` declaration for what is judged at the end or from the agent
process). The tag stores one frozen :class:`CheckMeta` on the function and in :data:`CHECKS`,
and is validated when applied, the way python-statemachine rejects a bad definition at class
creation: an unknown rule ID, reading or level, or a level for a value the reading does not
have, is an error at import time, never a silently different verdict. The oracle reports a
violation only through a ``CheckMeta`` (``ViolationStore.report`` takes no bare rule IDs), so
"where is rule X decided" is answered by ``grep '"X"'`` and by the rule map the docs site
generates from :data:`CHECKS` (docs/design.md). A single-message check also names the message
kinds it reads (``reads``, :class:`~acp_model.model.vocab.Reads`): :func:`dispatch` builds the
table the monitor hands messages through from those declarations alone.

:func:`level_of` is the one place a rule's strength becomes ``fail`` / ``warn`` / ``off``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from acp_model.model.vocab import Level, Reads, Role
from acp_model.spec.readings import READING_DEFS, Readings
from acp_model.spec.rules import BLOCKING, RULES

F = TypeVar("F", bound=Callable[..., Any])

MARK = "__acpm_check__"
ALLOWS = "__acpm_allows__"


class DefinitionError(ValueError):
    """A check, allowance or machine that names something that does not exist."""


@dataclass(frozen=True, slots=True)
class CheckMeta:
    """One decision of a rule: which rule, how readings change its consequence, where it is."""

    name: str  # the function (or declaration) name
    rule: str
    module: str  # where it is decided (the rule map)
    role: Role
    doc: str  # what is expected, from the docstring (violation texts say it)
    reading: str | None = None
    levels: tuple[tuple[str, Level | str], ...] = ()  # reading value -> level or rule ID
    evidence: str | None = None  # name of the model method that states the proof
    fixed: Level | None = None  # a level below the rule's own (a probable violation warns)
    reads: tuple[Reads, ...] = ()  # the message kinds a finding judges (a guard: none)
    # this obligation is a special case of the one its request's wire-table row owes (the
    # row's ``owed``: CANCEL-14 of PROMPT-04 for a withdrawn prompt): ``wire_table.roots``
    narrows: bool = False
    circumstance: str = ""  # what it adds to the broader rule ("the withdrawal")

    def _choice(self, readings: Readings) -> Level | str:
        if self.reading is None:
            return Level.RULE
        return dict(self.levels).get(readings[self.reading], Level.RULE)

    def rule_for(self, readings: Readings) -> str:
        """The rule a failure is reported under: a strict reading may name its own rule
        (``A-05.forbid``), so a failure never carries a rule weaker than its consequence."""
        choice = self._choice(readings)
        return choice if choice not in set(Level) else self.rule

    def level(self, readings: Readings) -> Level:
        """``fail``, ``warn`` or ``off`` for this check under the given readings."""
        if not RULES[self.rule].applies(readings["SPEC"]):
            return Level.OFF  # a revision that does not state the rule judges nothing by it
        choice = self._choice(readings)
        if choice in set(Level) and choice is not Level.RULE:
            own = Level(choice)
        else:
            own = level_of(self.rule_for(readings), readings)
        # a fixed level only lowers: a rule a reading makes a MAY (off) stays off
        return own if self.fixed is None or SEVERITY[own] <= SEVERITY[self.fixed] else self.fixed


SEVERITY = {Level.OFF: 0, Level.WARN: 1, Level.FAIL: 2}  # how much a level costs

CHECKS: dict[str, CheckMeta] = {}  # "module.name" -> meta, every decision of the project
READERS: dict[str, Callable[..., Any]] = {}  # "module.name" -> a check declaring ``reads``

DISABLED_ENV = "ACP_MODEL_DISABLED_RULES"
"""Test-only: comma-separated rule IDs whose violations the monitor drops. The suite's sweep
(tests/rule_sweep.py) switches one rule off at a time to show that some test then fails: the
proof that no rule lost its test."""


def _disabled_from_env() -> frozenset[str]:
    ids = frozenset(p.strip() for p in os.environ.get(DISABLED_ENV, "").split(",") if p.strip())
    unknown = sorted(ids - set(RULES))
    if unknown:  # a typo would switch nothing off and prove nothing: refuse it
        print(f"{DISABLED_ENV}: {', '.join(unknown)} not in the rule catalogue", file=sys.stderr)
        raise SystemExit(2)
    return ids


DISABLED: frozenset[str] = _disabled_from_env()


def is_disabled(meta: CheckMeta, rule_id: str) -> bool:
    """Is this decision switched off by the test-only hook (its own rule or the one it is
    reported under)?"""
    return bool(DISABLED) and (meta.rule in DISABLED or rule_id in DISABLED)


@contextlib.contextmanager
def rules_disabled(*rule_ids: str) -> Iterator[None]:
    """Switch rules off within this process (and its children, through the environment)."""
    global DISABLED
    saved, saved_env = DISABLED, os.environ.get(DISABLED_ENV)
    DISABLED = frozenset(rule_ids)
    os.environ[DISABLED_ENV] = ",".join(rule_ids)
    try:
        yield
    finally:
        DISABLED = saved
        if saved_env is None:
            os.environ.pop(DISABLED_ENV, None)
        else:
            os.environ[DISABLED_ENV] = saved_env


def level_of(rule_id: str, readings: Readings) -> Level:
    """A rule's own consequence: MUST / MUST NOT fail, SHOULD / SHOULD NOT warn, MAY is off."""
    rule = RULES[rule_id]
    if not rule.applies(readings["SPEC"]):
        return Level.OFF
    strength = rule.strength_under(readings)
    if strength in BLOCKING:
        return Level.FAIL
    return Level.WARN if strength in ("SHOULD", "SHOULD NOT") else Level.OFF


def summary(doc: str | None) -> str:
    """A docstring up to its first blank line, on one line: the "expected" text of violations
    (a first line alone can stop mid-sentence)."""
    paragraph = inspect.cleandoc(doc or "").split("\n\n", 1)[0]
    return " ".join(paragraph.split())


def _validate(where: str, rule_id: str, reading: str | None,
              levels: Mapping[str, str] | None) -> tuple[tuple[str, Level | str], ...]:
    if rule_id not in RULES:
        raise DefinitionError(f"{where}: rule {rule_id!r} is not in the catalogue")
    if levels and reading is None:
        raise DefinitionError(f"{where}: levels need the reading they depend on")
    if reading is None:
        return ()
    if reading not in READING_DEFS:
        raise DefinitionError(f"{where}: reading {reading!r} is not defined")
    values = READING_DEFS[reading].values
    out: list[tuple[str, Level | str]] = []
    for value, lv in (levels or {}).items():
        if value not in values:
            raise DefinitionError(f"{where}: reading {reading} has no value {value!r} "
                                  f"(values: {', '.join(values)})")
        if lv in RULES:
            out.append((value, lv))  # under this value, the failure is that rule's
            continue
        try:
            out.append((value, Level(lv)))
        except ValueError:
            raise DefinitionError(f"{where}: level {lv!r} is neither one of "
                                  f"{', '.join(Level)} nor a catalogued rule") from None
    if not out:
        raise DefinitionError(f"{where}: a reading without levels changes nothing")
    return tuple(out)


def _reads(where: str, reads: Iterable[Reads | str], role: Role) -> tuple[Reads, ...]:
    kinds = (reads,) if isinstance(reads, str) else tuple(reads)
    if kinds and role is not Role.FINDING:
        raise DefinitionError(f"{where}: only a finding (role=FINDING) reads message kinds "
                              "(a guard runs where its machine names it)")
    if not kinds and role is Role.FINDING:
        raise DefinitionError(f"{where}: a finding declares the message kinds it reads "
                              f"(reads=..., kinds: {', '.join(Reads)})")
    out: list[Reads] = []
    for kind in kinds:
        try:
            out.append(Reads(kind))
        except ValueError:
            raise DefinitionError(f"{where}: reads {kind!r}, which is no message kind "
                                  f"(kinds: {', '.join(Reads)})") from None
    if len(set(out)) != len(out):
        raise DefinitionError(f"{where}: reads a message kind twice")
    return tuple(out)


def _role_fits(where: str, fn: Callable[..., Any], role: Role) -> None:
    """A guard is a method ``(self, ev)`` of a machine part; any other role is no guard."""
    if role not in (Role.GUARD, Role.FINDING):
        raise DefinitionError(f"{where}: @check decides guards and findings; a {role} is "
                              "declared with declare()")
    params = list(inspect.signature(fn).parameters)
    if (role is Role.GUARD) != (params == ["self", "ev"]):
        raise DefinitionError(f"{where}: a guard, and only a guard, is a method (self, ev) "
                              f"(role={role}, parameters {params})")


def readers(module: str) -> dict[Reads, tuple[Callable[..., Any], ...]]:
    """The dispatch table of ``module``'s single-message checks: message kind -> the checks
    that read it, in definition order (built from the ``reads`` declarations alone)."""
    table: dict[Reads, list[Callable[..., Any]]] = {}
    for fn in READERS.values():  # in definition order
        meta = meta_of(fn)
        if meta.module == module:
            for kind in meta.reads:
                table.setdefault(kind, []).append(fn)
    return {kind: tuple(fns) for kind, fns in table.items()}


Dispatch = dict[Reads, tuple[tuple[Callable[..., Any], CheckMeta], ...]]


def _judges_under(meta: CheckMeta, rev: str) -> bool:
    """Does the check judge anything under revision ``rev`` (its rule stated there, its level
    for that revision not off)?"""
    if not RULES[meta.rule].applies(rev):
        return False
    return meta.reading != "SPEC" or dict(meta.levels).get(rev) is not Level.OFF


@functools.cache
def dispatch(module: str, rev: str) -> Dispatch:
    """:func:`readers` under one revision: the checks of rules ``rev`` does not state, or that
    the revision's own level turns off (``reading="SPEC"``), are left out, and so are kinds no
    check then reads (built once per module and revision)."""
    table = {kind: tuple((fn, meta_of(fn)) for fn in fns if _judges_under(meta_of(fn), rev))
             for kind, fns in readers(module).items()}
    return {kind: pairs for kind, pairs in table.items() if pairs}


@functools.cache
def dispatch_everywhere(rev: str) -> Dispatch:
    """:func:`dispatch` over every module's checks: for the kinds several modules' checks read
    with one signature (an answer, judged by its request's kind: ``model.answering``). Built
    once per revision, from the declarations alone."""
    table: dict[Reads, list[tuple[Callable[..., Any], CheckMeta]]] = {}
    for fn in READERS.values():  # in definition order
        meta = meta_of(fn)
        if _judges_under(meta, rev):
            for kind in meta.reads:
                table.setdefault(kind, []).append((fn, meta))
    return {kind: tuple(pairs) for kind, pairs in table.items()}


def _register(meta: CheckMeta) -> CheckMeta:
    key = f"{meta.module}.{meta.name}"
    if key in CHECKS and CHECKS[key] != meta:
        raise DefinitionError(f"{key}: defined twice")
    CHECKS[key] = meta
    return meta


def circumstance(rule_id: str) -> str:
    """What a rule that narrows another adds to it ("" : it narrows none)."""
    return next((m.circumstance for m in CHECKS.values()
                 if m.rule == rule_id and m.circumstance), "")


def check(rule_id: str, *, role: Role, reading: str | None = None,
          levels: Mapping[str, str] | None = None, evidence: str | None = None,
          level: Level | None = None, reads: Iterable[Reads | str] = ()) -> Callable[[F], F]:
    """Tag a function as the decision of ``rule_id``.

    ``role`` has no default, so no decision is labelled by accident. ``role=GUARD``: a pure
    predicate guarding machine transitions, ``(model, ev) -> bool`` (the machine that names it
    declares where it runs). ``role=FINDING``: a check returning ``None`` when the rule holds,
    else a text saying what is wrong (or yielding ``(path, text)`` findings). ``reading`` and
    ``levels`` say how a reading changes the consequence of a failure (``rule``: the rule's
    own strength; a rule ID: report under that rule, the one a strict reading adds).
    ``evidence`` names the model method that states which messages prove a failure
    (race-dependent checks: what the agent had provably read). ``level`` caps the consequence
    (``warn``: a probable violation, stated as an inference, never a failure). ``reads``: the
    message kinds (:class:`~acp_model.model.vocab.Reads`) a FINDING judges; the monitor hands
    it those and no others (:func:`readers`), so adding a check is one decorated function.
    """
    if level is not None and level not in (Level.WARN, Level.OFF):
        raise DefinitionError(f"check {rule_id}: a fixed level only lowers (warn or off)")

    def mark(fn: F) -> F:
        where = f"{fn.__module__}.{fn.__qualname__}"
        _role_fits(where, fn, role)
        lv = _validate(where, rule_id, reading, levels)
        kinds = _reads(where, reads, role)
        meta = _register(CheckMeta(fn.__name__, rule_id, fn.__module__, role, summary(fn.__doc__),
                                   reading, lv, evidence, level, kinds))
        setattr(fn, MARK, meta)
        if kinds:
            READERS[f"{meta.module}.{meta.name}"] = fn
        return fn

    return mark


def declare(rule_id: str, name: str, doc: str, *, module: str, role: Role,
            reading: str | None = None, levels: Mapping[str, str] | None = None,
            reads: Iterable[Reads | str] = (),
            narrows: bool = False, circumstance: str = "") -> CheckMeta:
    """A decision that is not a function of its own: a liveness obligation the model hands to
    the monitor, a fact the fuzzer judges from the agent process, or a finding another engine
    decides (the schema's, with the message kinds it reads). ``narrows``: this obligation is
    a special case of the one its request's row owes (``wire_table.roots``), in the
    ``circumstance`` it adds."""
    where = f"{module}.{name}"
    lv = _validate(where, rule_id, reading, levels)
    if narrows != bool(circumstance):
        raise DefinitionError(f"{where}: a narrowing obligation names the circumstance it "
                              "adds, and only such a one")
    return _register(CheckMeta(name, rule_id, module, role, summary(doc), reading, lv,
                               reads=_reads(where, reads, role), narrows=narrows,
                               circumstance=circumstance))


def meta_of(fn: Callable[..., Any]) -> CheckMeta:
    """The metadata ``@check`` stored on ``fn`` (a clear error when it is untagged)."""
    meta = getattr(fn, MARK, None)
    if meta is None:
        raise DefinitionError(f"{getattr(fn, '__qualname__', fn)!r} is not tagged with @check")
    return meta


WATCHES = "__acpm_watches__"
WATCHERS: dict[str, tuple[Reads, ...]] = {}  # "module.qualname" -> the kinds it watches


def watches(*kinds: Reads) -> Callable[[F], F]:
    """Tag a watcher: a function that keeps a connection's facts from the messages of
    ``kinds`` (what a session/close leaves behind, where a replay stands), with no rule of its
    own; what it finds is reported through the declared checks it calls. The router runs it
    on those kinds only, so no undeclared work runs on every message (a test reads the
    router's calls against these tags)."""
    if not kinds or not all(isinstance(kind, Reads) for kind in kinds):
        raise DefinitionError(f"watches{kinds!r}: name the message kinds it watches (Reads)")

    def mark(fn: F) -> F:
        setattr(fn, WATCHES, kinds)
        WATCHERS[f"{fn.__module__}.{fn.__qualname__}"] = kinds
        return fn

    return mark


def allowance(*rule_ids: str) -> Callable[[F], F]:
    """Tag an action with the rules it exercises without judging them: MAY rules (counted,
    never reported), liveness obligations it discharges, definitions a reducer applies."""

    def mark(fn: F) -> F:
        for rule_id in rule_ids:
            if rule_id not in RULES:
                raise DefinitionError(f"{fn.__module__}.{fn.__qualname__}: rule {rule_id!r} "
                                      "is not in the catalogue")
        setattr(fn, ALLOWS, tuple(rule_ids))
        return fn

    return mark


def allows_of(fn: Callable[..., Any]) -> tuple[str, ...]:
    return getattr(fn, ALLOWS, ())


def reading_of_warning(check_name: str | None, readings: Readings) -> str | None:
    """The reading whose chosen value makes the check ``check_name`` warn, if any.

    Such a warning reports behaviour the text leaves open (``A-10=any`` warns on a held
    prompt that outlives a cancel); a correct agent may show it. A SHOULD or a probable
    violation warns for another reason and is not covered.
    """
    for meta in CHECKS.values():
        if meta.name == check_name and meta.reading is not None and meta.fixed is None:
            choice = dict(meta.levels).get(readings[meta.reading], Level.RULE)
            if choice == Level.WARN:
                return meta.reading
    return None
