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
decided; the plan holds references to it, not copies. What its steps run is counted by their
tallies (:class:`~acp_model.oracle.store.StepTally`: the kind's entry, each part found, the view's
checks), one ``n += 1`` per update: the report's "exercised" counts are derived from them when
it asks, and an update that breaks nothing makes no findings object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp_model.model import classify, messages, reducers, replay, views, wire_table
from acp_model.model.check import CheckMeta
from acp_model.model.messages import Entry
from acp_model.model.parts import Locate
from acp_model.model.replay_order import table as replay_order_table
from acp_model.oracle import said, wire
from acp_model.oracle.advertised import AdvertisedUse
from acp_model.oracle.conversation import Conversations
from acp_model.oracle.dialects import Dialect, Translator, Updated
from acp_model.oracle.machines import Machines
from acp_model.oracle.reopens import Reopens
from acp_model.oracle.rpc import OpenRequest, Rpc
from acp_model.oracle.said import Said
from acp_model.oracle.shapes import ShapeJudge
from acp_model.oracle.store import StepTally, ViolationStore


@dataclass(frozen=True, slots=True)
class PartStep:
    """A part an update kind carries that some check reads (its row's ``parts``, compiled from
    :func:`~acp_model.model.messages.update_checks`): where to find it, the checks reading it
    (each part found counted by ``tally``) and the parts it carries in turn."""

    locate: Locate
    entry: Entry
    tally: StepTally
    parts: tuple[PartStep, ...]


def _found_in_parts(steps: tuple[PartStep, ...], value: Any, where: str,
                    ctx: messages.FindingContext, found: messages.Findings | None
                    ) -> messages.Findings | None:
    """What the checks of the parts ``value`` carries find (messages.run_plan's traversal,
    each part counted by its step's tally instead of logged)."""
    for step in steps:
        for path, carried in step.locate(value, where):
            step.tally.n += 1
            if step.entry:
                found = messages.found_by(step.entry, found, ctx.rev, carried, path, ctx)
            if step.parts:
                found = _found_in_parts(step.parts, carried, path, ctx, found)
    return found


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
    ctx: messages.FindingContext  # what its checks read besides the update (the revision's)
    # the checks of the kind alone (``messages.kind_checks``) and, for a kind of the wire
    # table, what they found in it, decided when the plan was built (``kind_once``; the kinds
    # the table lacks share a plan: theirs run on every update)
    kind_entry: Entry
    kind_found: tuple[tuple[CheckMeta, str, str], ...]
    kind_once: bool
    # ``checks`` compiled: the kind's entry, counted per update by ``tally``, and its parts
    entry: Entry
    parts: tuple[PartStep, ...]
    tally: StepTally
    # the updates whose view checks ran (``view_checks``, ``replayed_view_checks``)
    view_tally: StepTally
    replayed_view_tally: StepTally

    def check(self, update: dict[str, Any]) -> messages.Findings | None:
        """What the single-message checks find in an update of this kind (None: nothing, and
        its kind carries no part some check reads)."""
        self.tally.n += 1
        if not self.kind_once:
            found = messages.found_by(self.kind_entry, None, self.rev,
                                      update.get("sessionUpdate"), _WHERE, self.ctx)
        else:  # (a Findings of its own for each update: a report adds to it)
            found = messages.Findings(list(self.kind_found), rev=self.rev) \
                if self.kind_found else None
        if self.entry:
            found = messages.found_by(self.entry, found, self.rev, update, _WHERE, self.ctx)
        return _found_in_parts(self.parts, update, _WHERE, self.ctx, found) if self.parts \
            else found

    def check_view(self, before: views.SessionView, sent: dict[str, Any], reused: bool
                   ) -> messages.Findings | None:
        """What the view's checks find in an update of this kind as sent (``before``: the
        view before it; ``reused``: a replay judged its messageId's reuse, SESS-08)."""
        if reused:
            self.replayed_view_tally.n += 1
            return messages.found_by(self.replayed_view_checks, None, self.rev, before, sent)
        self.view_tally.n += 1
        return messages.found_by(self.view_checks, None, self.rev, before, sent)


_WHERE = "params/update"  # where an update's checks find it


class Plans(dict[str | None, UpdatePlan]):
    """A connection's plans by kind, each built on its first update (``plans[kind]``; None:
    a kind that is not a string). The kinds the wire table lacks share one plan, so an agent
    inventing kinds grows nothing."""

    def __init__(self, rev: str, dialect: Dialect, store: ViolationStore | None = None) -> None:
        super().__init__()
        self.rev, self.dialect, self.store = rev, dialect, store

    def __missing__(self, kind: str | None) -> UpdatePlan:
        if kind is not None and kind not in wire_table.updates():
            return self[None]
        plan = self[kind] = build(self.rev, self.dialect, kind, self.store)
        return plan


def build(rev: str, dialect: Dialect, kind: Any, store: ViolationStore | None = None
          ) -> UpdatePlan:
    """The plan of ``kind`` (as the agent sent it) under ``rev`` and ``dialect``; its tally
    counted in ``store``'s exercised rules (None: counted nowhere)."""
    def tally(*groups: messages.Entry) -> StepTally:
        kept = tuple(group for group in groups if group)
        return store.tally(kept) if store is not None else StepTally(kept)

    checks = messages.update_checks(rev, kind)
    entry, parts = checks if checks is not None else (None, ())
    ctx = messages.FindingContext.of(rev)
    kind_entry = messages.kind_checks(rev)
    kind_once = isinstance(kind, str) and kind in wire_table.updates()
    decided = messages.found_by(kind_entry, None, rev, kind, _WHERE, ctx) if kind_once \
        else None

    def steps(carried: tuple[tuple[Locate, messages.Plan], ...]) -> tuple[PartStep, ...]:
        return tuple(PartStep(locate, sub[0] or (), tally(sub[0] or ()), steps(sub[1]))
                     for locate, sub in carried)

    seen, replayed = reducers.view_checks(rev, kind), reducers.view_checks(rev, kind,
                                                                           family=False)
    rows = wire_table.updates()
    row = rows.get(kind) if isinstance(kind, str) else None
    read_as = dialect.read_as(row) if row is not None else None
    model_row = rows.get(read_as) if read_as is not None else row
    return UpdatePlan(
        checks=checks, view_checks=seen, replayed_view_checks=replayed,
        states=row is not None and kind in wire_table.state_kinds(),
        read_as=read_as, translated=dialect.moved_by(row),
        classify=wire.classifier(model_row, dialect.event_of),
        reduce=model_row.reduce if model_row is not None and model_row.reduce is not None
        else _kept, rev=rev, ctx=ctx, kind_entry=kind_entry,
        kind_found=tuple(decided.found) if decided is not None else (), kind_once=kind_once,
        entry=entry or (), parts=steps(parts), tally=tally(kind_entry, entry or ()),
        view_tally=tally(seen), replayed_view_tally=tally(replayed))


def _kept(view: views.SessionView, update: dict[str, Any]) -> views.SessionView:
    """The reducer of a kind the view keeps nothing of."""
    return view


class UpdateRoute:
    """Where a connection's ``session/update`` goes (the router's handler of the method): its
    kind's plan (its checks, the model's reading of it), the watchers of the reopens and the
    conversation around it, and its session's machine."""

    def __init__(self, rev: str, rpc: Rpc, store: ViolationStore, machines: Machines,
                 shapes: ShapeJudge, translator: Translator, reopens: Reopens,
                 conversations: Conversations, uses: AdvertisedUse,
                 unknown_session: Callable[[int, Any, str], None]) -> None:
        self.rev, self.rpc, self.store, self.machines, self.shapes = rev, rpc, store, machines, \
            shapes
        self.translate, self.reopens, self.conversations = translator, reopens, conversations
        self.uses, self._unknown_session = uses, unknown_session
        # the checks of where a reopen's history comes, that judge under this revision
        self._replay_order = replay_order_table(rev)
        # sessionUpdate kind -> its plan (None: the kinds the wire table lacks), built on use
        self._plans = Plans(rev, translator.dialect, store)
        # the updates no reopen is around: each ran the replay-order checks, which hold there
        self._quiet = store.tally((self._replay_order,))

    def route(self, direction: str, params: dict[str, Any], sid: Any, idx: int, what: str
              ) -> None:
        """One ``session/update`` (its params an object) of session ``sid`` (the handler of
        the method's row: ``what`` names the method, the update's kind names it better)."""
        update = params.get("update")
        if not isinstance(update, dict):  # nothing to check, classify or reduce
            if not isinstance(sid, str) or sid not in self.machines.sessions:
                self._unknown_session(idx, sid, Said((said.UPDATE, None, idx)))
            return
        kind = update.get("sessionUpdate")
        plan = self._plans[kind if isinstance(kind, str) else None]
        what = Said((said.UPDATE, kind, idx))
        found = plan.check(update)
        if found is not None:
            self.shapes.findings(found, idx, what, sid if isinstance(sid, str) else None)
        if not isinstance(sid, str) or sid not in self.machines.sessions:
            self._unknown_session(idx, sid, what)
            return
        if not classify.keyed_fields_readable(update):  # judged by the schema alone
            return
        self.conversations.update(sid, update, idx)
        # the client's open reopens (session/load, session/resume): what the replay watchers
        # scan, found in one pass (none is open while a session just works)
        requests = [r for r in self.rpc.open["c2a"].values() if r.method in replay.REOPENING]
        if requests and plan.states:
            replay.state_reported(requests, sid)
        sent = update  # as the agent sent it (v1's tool_call is read as an upsert below)
        replaying = replay.replaying(requests, sid) if requests else None
        reused = replaying is not None and self.store.run(
            replay.replayed_ids_unique, idx, replaying.replayed, update, session=sid)
        busy = self.machines.busy(sid) if self.reopens.around(sid, requests) else None
        history = bool(requests) and replay.replayed_history(requests, sid, kind, bool(busy))
        self.uses.update(sid, update, kind, idx, history=bool(history))
        self._place(sid, update, idx, requests, busy)
        if plan.translated:
            self.machines.derived(sid, self.translate(Updated(sid, kind, bool(history), idx,
                                                              what)))
        if plan.read_as is not None:
            update = {**update, "sessionUpdate": plan.read_as}
        before = self.machines.views[sid]
        event, ev, what = wire.classified(plan.classify, idx, update, before, what)
        if replaying is not None:
            ev.replayed = True
        self.machines.views[sid] = plan.reduce(before, update)
        found = plan.check_view(before, sent, bool(reused))
        if found is not None:
            self.shapes.findings(found, idx, what, sid)
        if not history:  # replayed history: the client's view takes it in, the machine not
            self.machines.session_event(sid, event, ev, what)

    def _place(self, sid: str, update: dict[str, Any], idx: int, requests: list[OpenRequest],
               busy: bool | None) -> None:
        """The replay-order checks of an update, where it stands against the reopens around
        it. Where none is (``busy`` None: not asked), its position is quiet
        (``Position.quiet``): each check holds, and only its message id is remembered."""
        if busy is None:
            self.reopens.noted(sid, update)
            self._quiet.n += 1
            return
        at = self.reopens.position(sid, update, requests, busy)
        self.store.run_entry(self._replay_order, idx, at, session=sid)
