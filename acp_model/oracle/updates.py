"""What every ``session/update`` of one kind gets under one connection's revision, built once
from the declarations: the plan of a kind.

A ``session/update`` is most of what an agent sends (83% of the benchmark's trace). Each layer
the router hands it to used to look its kind's row up again (the single-message checks, the
translator, the classification, the reducer, the view's checks). The plan asks each of them
once per kind (:func:`build`) and keeps their answers: the checks of every update, of its kind
and of its parts (:func:`~acp_model.model.messages.update_checks`), the view's checks of its
kind (:func:`~acp_model.model.reducers.view_checks`), the kind the model reads it as and its
row (:meth:`~acp_model.oracle.dialects.V2.read_as`), whether the translator hears of it
(:meth:`~acp_model.oracle.dialects.V2.moved_by`), its classifier
(:func:`~acp_model.oracle.wire.classifier`) and its reducer. Each rule stays where it is
decided; the plan holds references to it, not copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_model.model import classify, messages, reducers, views, wire_table
from acp_model.model.messages import Entry
from acp_model.oracle import wire
from acp_model.oracle.dialects import Dialect


@dataclass(frozen=True, slots=True)
class UpdatePlan:
    """The plan of one update kind (a kind the wire table lacks shares one plan)."""

    checks: messages.Plan | None  # the single-message checks (None: none reads it)
    view_checks: Entry  # the view's checks of its kind (the view before it)
    replayed_view_checks: Entry  # the same where a replay judged a messageId's reuse
    states: bool  # it reports the session's state
    read_as: str | None  # the kind the model reads it as (v1: a first report is an upsert)
    translated: bool  # the translator hears of it (v1's turn content)
    classify: classify.Classify  # its event and payload, as the translator reads the row
    reduce: views.Reduce  # how the client's view takes it in
    rev: str

    def check(self, update: dict[str, Any]) -> messages.Findings:
        """What the single-message checks find in an update of this kind."""
        found = messages.Findings(rev=self.rev)
        if self.checks is not None:
            messages.run_update_checks(self.checks, update, self.rev, found)
        return found


class Plans(dict[str | None, UpdatePlan]):
    """A connection's plans by kind, each built on its first update (``plans[kind]``; None:
    a kind that is not a string). The kinds the wire table lacks share one plan, so an agent
    inventing kinds grows nothing."""

    def __init__(self, rev: str, dialect: Dialect) -> None:
        super().__init__()
        self.rev, self.dialect = rev, dialect

    def __missing__(self, kind: str | None) -> UpdatePlan:
        if kind is not None and kind not in wire_table.updates():
            return self[None]
        plan = self[kind] = build(self.rev, self.dialect, kind)
        return plan


def build(rev: str, dialect: Dialect, kind: Any) -> UpdatePlan:
    """The plan of ``kind`` (as the agent sent it) under ``rev`` and ``dialect``."""
    rows = wire_table.updates()
    row = rows.get(kind) if isinstance(kind, str) else None
    read_as = dialect.read_as(row) if row is not None else None
    model_row = rows.get(read_as) if read_as is not None else row
    return UpdatePlan(
        checks=messages.update_checks(rev, kind),
        view_checks=reducers.view_checks(rev, kind),
        replayed_view_checks=reducers.view_checks(rev, kind, family=False),
        states=row is not None and kind in wire_table.state_kinds(),
        read_as=read_as, translated=dialect.moved_by(row),
        classify=wire.classifier(model_row, dialect.event_of),
        reduce=model_row.reduce if model_row is not None and model_row.reduce is not None
        else _kept, rev=rev)


def _kept(view: views.SessionView, update: dict[str, Any]) -> views.SessionView:
    """The reducer of a kind the view keeps nothing of."""
    return view
