"""The abstract alphabet: which events to try in a configuration, their payloads, and their
concrete JSON-RPC form (so every witness can be re-checked with ``acp-model check``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from acp_model.explorer.action import Move
from acp_model.explorer.arguments import ARGUMENTS, Offered
from acp_model.explorer.bounds import CUSTOM_STATE, SESSION_IDS, SYNC, Bounds
from acp_model.model import wire_table
from acp_model.model.context import frontier_after
from acp_model.model.events import Payload
from acp_model.model.session import SessionModel
from acp_model.model.vocab import Answer, Event
from acp_model.model.wire_table import Gate, Over, Writer
from acp_model.trace.builder import TraceBuilder

if TYPE_CHECKING:
    from acp_model.explorer.config import Config, Observer


# The same few hundred actions recur in every configuration: one object each (a Move is
# frozen), made once instead of on every edge.
_action = lru_cache(maxsize=None, typed=True)(Move)


# How much of what a gate bounds a session holds (a form that ``spends`` is tried below it).
_HELD: dict[Gate, Callable[[SessionModel, Observer], int]] = {
    Gate.PROMPTS: lambda m, obs: len(m.queue.prompts),
    Gate.CANCELS: lambda m, obs: max(len(m.cancel_book.cancels), len(obs.work_cancels)),
    Gate.PERMISSIONS: lambda m, obs: sum(not p.elicitation for p in m.perm_book.perms.values()),
    Gate.ELICITATIONS: lambda m, obs: sum(p.elicitation for p in m.perm_book.perms.values()),
}


_Limit = tuple[Callable[[SessionModel, "Observer"], int], int]


@dataclass(frozen=True, slots=True)
class _Try:
    """Forms next to each other in the table that range over the same argument, tried argument
    by argument. ``limits``: per event, what a session holds of its bound and the bound, for
    the events that spend it (None: none of them does); ``plain``: per session, the actions of
    forms without argument and limit, made once."""

    args: Offered
    events: tuple[str, ...]
    limits: tuple[_Limit | None, ...] | None
    plain: tuple[tuple[Move, ...], ...] | None


@cache
def plan(bounds: Bounds) -> tuple[_Try, ...]:
    """What a session tries under ``bounds``: the table's forms in its order (the gated and
    lean ones left out, see :func:`alphabet`), grouped by argument."""
    groups: list[tuple[Over, list[str], list[_Limit | None]]] = []
    for form in wire_table.FORMS:
        if not _in_alphabet(form, bounds):
            continue
        if not groups or groups[-1][0] != form.over:
            groups.append((form.over, [], []))
        groups[-1][1].append(form.event)
        groups[-1][2].append((_HELD[form.gate], getattr(bounds, form.gate.value))
                             if form.spends and form.gate else None)
    out = []
    for over, events, limits in groups:
        plain = None if over != Over.NOTHING or any(limits) else tuple(
            tuple(_action(s, e, None) for e in events) for s in range(bounds.sessions))
        out.append(_Try(ARGUMENTS[over].offered, tuple(events),
                        tuple(limits) if any(limits) else None, plain))
    return tuple(out)


def actions(cfg: Config, bounds: Bounds, unread: bool | None = None) -> list[Move]:
    """Every abstract event worth trying in this configuration (legal or not): each form of the
    wire table with each argument its kind offers (``wire_table.Over``). ``unread``: whether it
    holds an index the agent has not provably read (None: asked of ``cfg``; the search knows it
    from the ranks it keeps)."""
    return planned_actions(cfg, bounds, plan(bounds), unread)


def planned_actions(cfg: Config, bounds: Bounds, steps: tuple[_Try, ...],
                    unread: bool | None = None) -> list[Move]:
    """:func:`actions` with ``steps``, the :func:`plan` of ``bounds``, looked up once by the caller
    (the search asks for every configuration; the lookup hashes the bounds)."""
    out: list[Move] = []
    if cfg.unread() if unread is None else unread:
        out.append(_action(None, SYNC))
    for s, m in enumerate(cfg.models):
        obs = cfg.obs[s]
        for step in steps:
            if step.plain is not None:
                out += step.plain[s]
                continue
            events: Sequence[str] = step.events
            if step.limits is not None:
                events = [e for e, lim in zip(events, step.limits, strict=True)
                          if lim is None or lim[0](m, obs) < lim[1]]
            if events:
                out += [_action(s, e, a) for a in step.args(m, bounds) for e in events]
    return out


def make_event(cfg: Config, action: Move) -> tuple[Payload, int]:
    """The payload of ``action`` in ``cfg`` and the read frontier once it happened.

    A prompt response proves the agent read everything up to that prompt (FIFO stdio), the
    abstract ``sync`` stands for any client request answered at once (as in ``monitor``).
    """
    idx = cfg.next_idx
    if action.event == SYNC:
        return Payload(idx), idx
    payload = _PAYLOADS.get(action.event)
    ev = Payload(idx) if payload is None else \
        payload(cfg.models[action.session], action.arg, idx)  # type: ignore[index]
    if action.event in _RESPONSES:
        p = cfg.models[action.session].queue.prompts[action.arg]  # type: ignore[index]
        return ev, frontier_after(cfg.ctx.frontier, p.idx)
    return ev, cfg.ctx.frontier


def _payload(form: wire_table.Form) -> Callable[[SessionModel, Any, int], Payload] | None:
    """The payload of ``form``'s event from (model, argument, trace index): its fixed fields,
    its argument's and its new request id (None: it carries none). Made once per form: it is
    asked on every edge."""
    fixed = {f.name: v for f in dataclass_fields(Payload) if f.name != "idx"
             and (v := getattr(form.fixed, f.name)) is not None} if form.fixed else {}
    fill, opens = ARGUMENTS[form.over].fill, form.opens
    if fill is None:
        return None if not opens and not fixed else \
            lambda m, a, idx: Payload(idx, idx if opens else None, **fixed)
    if not opens and not fixed:  # the common case: the argument's fields alone
        def filled(m: SessionModel, a: Any, idx: int) -> Payload:
            ev = Payload(idx)
            fill(ev, m, a, idx)
            return ev
        return filled

    def payload(m: SessionModel, a: Any, idx: int) -> Payload:
        ev = Payload(idx, idx if opens else None, **fixed)
        fill(ev, m, a, idx)
        return ev
    return payload


_PAYLOADS = {form.event: p for form in wire_table.FORMS if (p := _payload(form)) is not None}
# An agent's response to a client request proves it read everything up to that request: the
# forms that are such a response (the table's ``answered`` of a client's request) name their
# request by its prompt's position (``Over.PENDING``).
_RESPONSES = frozenset(e for m in wire_table.MESSAGES if m.request and m.sender == wire_table.C2A
                       for e in m.answered if e in wire_table.forms())


RECEIPTS = "_receipts"  # key of ``ids``: answer prompts with messageId receipts


def _receipt(ids: dict[Any, Any], sid: str, rid: Any) -> str:
    """The messageId a prompt's receipt names: the oldest user message of the session no
    receipt named yet (the message came first), else a new one its user message will echo."""
    unclaimed = ids.setdefault(("unclaimed", sid), [])
    if unclaimed:
        return unclaimed.pop(0)
    mid = f"msg-{rid}"
    ids.setdefault(("owed", sid), []).append(mid)
    return mid


def _message_id(ids: dict[Any, Any], sid: str, abstract: Any) -> Any:
    """The concrete id of an abstract user message id: a receipt's when one is owed."""
    if not ids.get(RECEIPTS):
        return abstract
    key = ("msg", sid, abstract)
    if abstract is None or key not in ids:
        owed = ids.setdefault(("owed", sid), [])
        if owed:
            mid = owed.pop(0)
        else:
            mid = f"msg-{sid}-{len(ids)}"
            ids.setdefault(("unclaimed", sid), []).append(mid)
        if abstract is None:
            return mid
        ids[key] = mid
    return ids[key]


def _w_prompt(tb: TraceBuilder, write: Writer, sid: str, a: Any, ev: Payload,
              ids: dict[Any, Any]) -> None:
    ids[ev.id] = rid = tb.log.fresh_id()
    write(tb, sid, rid)


def _w_answer(tb: TraceBuilder, write: Writer, sid: str, a: Any, ev: Payload,
              ids: dict[Any, Any]) -> None:
    if a[1] == Answer.ERROR:
        tb.answer_error(ids[ev.id], -32800)
    else:
        write(tb, ids[ev.id], a[1])


def _w_accepted(tb: TraceBuilder, write: Writer, sid: str, a: Any, ev: Payload,
                ids: dict[Any, Any]) -> None:
    rid = ids[ev.id]
    write(tb, rid, {"messageId": _receipt(ids, sid, rid)} if ids.get(RECEIPTS) else None)


def _w_permission(tb: TraceBuilder, write: Writer, sid: str, a: Any, ev: Payload,
                  ids: dict[Any, Any]) -> None:
    ids[ev.id] = rid = f"perm-{tb.log.fresh_id()}"
    write(tb, sid, rid, a)


def _w_elicitation(tb: TraceBuilder, write: Writer, sid: str, a: Any, ev: Payload,
                   ids: dict[Any, Any]) -> None:
    ids[ev.id] = rid = f"elicit-{tb.log.fresh_id()}"
    write(tb, sid, rid)


def _w_tool(tb: TraceBuilder, write: Writer, sid: str, a: Any, ev: Payload,
            ids: dict[Any, Any]) -> None:
    extra = {"title": f"Tool {a[0]}"} if ev.has_title else {}
    write(tb, sid, a[0], a[1], **extra)


# The arguments each event's builder method (its wire_table.FORMS row's ``write``) takes from
# the abstract event; an event not listed is written with the session alone.
_Write = Callable[[TraceBuilder, Writer, str, Any, Payload, dict[Any, Any]], None]
_WRITE_ARGS: dict[str, _Write] = {
    Event.PROMPT: _w_prompt,
    Event.PROMPT_CANCEL_REQUEST: lambda tb, w, sid, a, ev, ids: w(tb, "c2a", ids[ev.id]),
    Event.PERMISSION_ANSWER: _w_answer,
    Event.ELICITATION_ANSWER: lambda tb, w, sid, a, ev, ids: w(tb, ids[ev.id], a[1]),
    Event.PROMPT_ACCEPTED: _w_accepted,
    Event.PROMPT_REJECTED: lambda tb, w, sid, a, ev, ids: w(tb, ids[ev.id], ev.error_code),
    Event.USER_MESSAGE: lambda tb, w, sid, a, ev, ids: w(tb, sid,
                                                         _message_id(ids, sid, ev.message_id)),
    Event.CUSTOM_REPORTED: lambda tb, w, sid, a, ev, ids: w(tb, sid, CUSTOM_STATE),
    Event.IDLE_REPORTED: lambda tb, w, sid, a, ev, ids: w(tb, sid, a),
    Event.PERMISSION_REQUEST: _w_permission,
    Event.PERMISSION_WITHDRAWN: lambda tb, w, sid, a, ev, ids: w(tb, "a2c", ids[ev.id]),
    Event.ELICITATION_REQUEST: _w_elicitation,
    Event.TOOL_UPDATE: _w_tool,
}


def _concrete(tb: TraceBuilder, act: Move, ev: Payload, ids: dict[Any, Any]) -> None:
    """Append the wire records for one abstract event (its form: ``wire_table.FORMS``)."""
    if act.session is None:
        tb.sync()
        return
    form = wire_table.forms().get(act.event)
    if form is None:  # pragma: no cover - the alphabet is the table's
        raise ValueError(f"no concrete form for {act.label}")
    sid = SESSION_IDS[act.session]
    how = _WRITE_ARGS.get(act.event)
    if how is None:
        form.write(tb, sid)
    else:
        how(tb, form.write, sid, act.arg, ev, ids)


# the explorer's alphabet: every event of the wire table's forms, in their order
_ALPHABET_EVENTS = tuple(form.event for form in wire_table.FORMS)


def _in_alphabet(form: wire_table.Form, bounds: Bounds) -> bool:
    return (form.gate is None or bool(getattr(bounds, form.gate.value))) \
        and (form.lean or not bounds.lean)


def alphabet(bounds: Bounds) -> set[str]:
    """The machine events the explorer tries under these bounds (each form's gate, and the
    lean alphabet's forms when ``bounds.lean``)."""
    return {form.event for form in wire_table.FORMS if _in_alphabet(form, bounds)}
