"""What one message's shape breaks: the schema of its method and direction, and the
single-message checks (:mod:`acp_model.model.messages`), with the revision fit.

A message in the shape of another revision is reported once per shape and counted after that
(:class:`~acp_model.oracle.fit.RevisionFit`, the report header); a flood of invalid messages of
one definition is diagnosed up to a cap and counted past it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from acp_model.model import messages
from acp_model.model.check import meta_of
from acp_model.model.messages import Findings
from acp_model.oracle import validate as validation
from acp_model.oracle.fit import RevisionFit, shape_path
from acp_model.oracle.store import ViolationStore
from acp_model.spec import revisions

MAX_DIAGNOSES_PER_DEF = 2000  # a diagnosis costs ~0.1 ms; past this, a flood is only counted
_OTHER_REVISION = meta_of(messages.variants_of_another_revision)  # counted in the fit


def problem_shape(problems: list[validation.SchemaProblem]) -> str:
    """The fields a message fails at, as one shape (item indices left out)."""
    return ", ".join(sorted({shape_path(p.path) for p in problems}))


class ShapeJudge:
    """Schema validation and single-message findings of one connection, and its revision fit."""

    def __init__(self, rev: str, store: ViolationStore, *, validate: bool = True) -> None:
        self.rev = rev
        self.validate = validate
        self.store = store
        self.fit = RevisionFit(rev)  # shapes of another revision (the report header)
        self._diagnosed: dict[str, int] = {}  # definition -> messages diagnosed
        # definition -> its compiled validator (one dict lookup per message)
        self._validators: dict[str, validation.Validator] = {}

    def schema(self, def_name: str | None, instance: Any, idx: int, what: str,
               method: str) -> None:
        if def_name is None or not self.validate:
            return
        self.store.ran(validation.schema_rules_exercised(method, def_name, instance, self.rev))
        valid = self._validators.get(def_name)
        if valid is None:
            valid = self._validators[def_name] = validation.fast_validator(def_name, self.rev)
        if valid(instance):  # the common case: nothing to diagnose
            return
        if self._diagnosed.get(def_name, 0) >= MAX_DIAGNOSES_PER_DEF:
            # A flood of invalid messages of one definition: the rule each breaks is only
            # known from a diagnosis, and reporting it under another (ACPM-SCHEMA) would make
            # one cause two failures. The first thousands were reported; the rest are counted.
            self.store.suppressed += 1
            return
        problems = validation.validate(def_name, instance, self.rev)
        if problems:
            self._diagnosed[def_name] = self._diagnosed.get(def_name, 0) + 1
            follows = validation.accepted_by(def_name, instance, self.rev)
            if follows:
                # a shape of another revision: reported once per shape, counted after that
                shape = f"{def_name} at {problem_shape(problems)}"
                if not self.fit.note(shape, follows, idx):
                    return
                problems = [dataclasses.replace(
                    p, message=f"{p.message} [the shape of {' and '.join(follows)}: "
                               "later messages of this shape are counted in the revision fit, "
                               "not reported again]") for p in problems]
        for problem in problems:
            verb = "does not match" if problem.tolerated is None else \
                "has a part the deserializer tolerates in"
            self.store.report(validation.problem_rule(method, problem, self.rev), idx,
                              f"{what} {verb} the schema ({problem.def_name}) at "
                              f"{problem.path}: {problem.message}")

    def valid(self, def_name: str | None, instance: Any) -> bool:
        """Does ``instance`` validate against ``def_name`` (True when nothing validates)?"""
        if def_name is None or not self.validate:
            return True
        valid = self._validators.get(def_name)
        if valid is None:
            valid = self._validators[def_name] = validation.fast_validator(def_name, self.rev)
        return bool(valid(instance))

    def findings(self, findings: Findings, idx: int, what: str,
                 session: str | None = None) -> None:
        self.store.ran(*findings.ran)
        for meta, path, text in findings.found:
            if meta == _OTHER_REVISION and not self.fit.note(
                    text.split(" is not a", 1)[0],
                    tuple(r for r in revisions.NAMES if r in text and r != self.rev), idx):
                continue  # a value of another revision: once per value, counted after that
            self.store.report(meta, idx, f"{what}: {text} (at {path})", session=session)
