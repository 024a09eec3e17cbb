"""The abstract alphabet: which events to try in a configuration, their payloads, and their
concrete JSON-RPC form (so every witness can be re-checked with ``acp-model check``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from acp_model.explorer.action import Action
from acp_model.explorer.bounds import (
    CUSTOM_STATE,
    PERM_OPTIONS,
    REJECT_CODE,
    SESSION_IDS,
    SYNC,
    TOOL_IDS,
    Bounds,
)
from acp_model.model import wire_table
from acp_model.model.context import frontier_after
from acp_model.model.events import Ev
from acp_model.model.vocab import Answer, Event, PermState, PromptStatus
from acp_model.model.wire_table import Writer
from acp_model.trace.builder import TraceBuilder

if TYPE_CHECKING:
    from acp_model.explorer.config import Config


# The same few hundred actions recur in every configuration: one object each (an Action is
# frozen), made once instead of on every edge.
_action = lru_cache(maxsize=None, typed=True)(Action)


def actions(cfg: Config, bounds: Bounds) -> list[Action]:  # noqa: C901
    """Every abstract event worth trying in this configuration (legal or not)."""
    out: list[Action] = []
    if cfg.unread():
        out.append(_action(None, SYNC))
    for s, m in enumerate(cfg.models):
        obs = cfg.obs[s]
        pending = [k for k, p in enumerate(m.queue.prompts) if p.status == PromptStatus.PENDING]
        accepted = sum(1 for p in m.queue.prompts if p.status == PromptStatus.ACCEPTED)
        perms = list(m.perm_book.perms.values())
        # client
        if len(m.queue.prompts) < bounds.max_prompts:
            out.append(_action(s, Event.PROMPT))
        if max(len(m.cancel_book.cancels), len(obs.work_cancels)) < bounds.max_cancels:
            out.append(_action(s, Event.CANCEL))
        if pending and not bounds.lean:
            out.append(_action(s, Event.PROMPT_CANCEL_REQUEST, pending[0]))
        for k, perm in enumerate(perms):
            if perm.state == PermState.ANSWERED:
                continue
            for answer in (Answer.ALLOW, Answer.REJECT, Answer.CANCELLED):
                out.append(_action(s, Event.PERMISSION_ANSWER, (k, answer)))
            if perm.state == PermState.WITHDRAWN:
                out.append(_action(s, Event.PERMISSION_ANSWER, (k, Answer.ERROR)))
        # agent
        for k in pending:
            out.append(_action(s, Event.PROMPT_ACCEPTED, k))
            if not bounds.lean:
                out.append(_action(s, Event.PROMPT_REJECTED, k))
        if accepted or (m.queue.early_user_messages < len(pending) and not bounds.lean):
            out.append(_action(s, Event.USER_MESSAGE))
        out.append(_action(s, Event.RUNNING_REPORTED))
        out.append(_action(s, Event.REQUIRES_ACTION_REPORTED))
        if bounds.custom:
            out.append(_action(s, Event.CUSTOM_REPORTED))
        for reason in bounds.reasons:
            out.append(_action(s, Event.IDLE_REPORTED, reason))
        tools = m.perm_book.tools
        known = [t for t in TOOL_IDS if t in tools]
        fresh = [TOOL_IDS[len(tools)]] if len(tools) < bounds.max_tools else []
        if len(perms) < bounds.max_permissions:
            for tool in (known + fresh) or [None]:
                out.append(_action(s, Event.PERMISSION_REQUEST, tool))
        for k, perm in enumerate(perms):
            if perm.state == "open":
                out.append(_action(s, Event.PERMISSION_WITHDRAWN, k))
        for tool in known + fresh:
            for status in bounds.tool_statuses:
                out.append(_action(s, Event.TOOL_UPDATE, (tool, status)))
        if not bounds.lean:
            out.append(_action(s, Event.OUTPUT))
    return out


def make_event(cfg: Config, action: Action) -> tuple[Ev, int]:
    """The payload of ``action`` in ``cfg`` and the read frontier once it happened.

    A prompt response proves the agent read everything up to that prompt (FIFO stdio), the
    abstract ``sync`` stands for any client request answered at once (as in ``monitor``).
    """
    idx = cfg.next_idx
    if action.event == SYNC:
        return Ev(idx), idx
    payload = _PAYLOADS.get(action.event)
    ev = Ev(idx) if payload is None else \
        payload(cfg.models[action.session], action.arg, idx)  # type: ignore[index]
    if action.event in _RESPONSES:
        p = cfg.models[action.session].queue.prompts[action.arg]  # type: ignore[index]
        return ev, frontier_after(cfg.ctx.frontier, p.idx)
    return ev, cfg.ctx.frontier


def _tool_update(m: Any, a: Any, idx: int) -> Ev:
    first = a[0] not in m.perm_book.tools
    return Ev(idx, tool_call_id=a[0], status=a[1], update="update", has_title=first,
              first_report=first)


def _perm_answer(m: Any, a: Any, idx: int) -> Ev:
    return Ev(idx, id=list(m.perm_book.perms.values())[a[0]].id, answer=a[1],
              error_code=-32800 if a[1] == Answer.ERROR else None)


# The payload of each event kind from (model, action argument, trace index); a kind not listed
# carries none. A table rather than a chain of comparisons: it is asked on every edge.
_PAYLOADS: dict[str, Callable[[Any, Any, int], Ev]] = {
    Event.PROMPT: lambda m, a, idx: Ev(idx, id=idx),
    Event.PROMPT_CANCEL_REQUEST: lambda m, a, idx: Ev(idx, id=m.queue.prompts[a].id),
    Event.PROMPT_REJECTED: lambda m, a, idx: Ev(idx, id=m.queue.prompts[a].id,
                                                error_code=REJECT_CODE),
    Event.PROMPT_ACCEPTED: lambda m, a, idx: Ev(idx, id=m.queue.prompts[a].id, result_keys=()),
    Event.PERMISSION_ANSWER: _perm_answer,
    Event.PERMISSION_WITHDRAWN: lambda m, a, idx: Ev(idx,
                                                     id=list(m.perm_book.perms.values())[a].id),
    Event.PERMISSION_REQUEST: lambda m, a, idx: Ev(idx, id=idx, tool_call_id=a,
                                                   options=PERM_OPTIONS),
    Event.TOOL_UPDATE: _tool_update,
    Event.IDLE_REPORTED: lambda m, a, idx: Ev(idx, reason=a),
    Event.USER_MESSAGE: lambda m, a, idx: Ev(idx, message_id=f"u{idx}", new_message=True),
    Event.OUTPUT: lambda m, a, idx: Ev(idx, update="agent_message"),
}
# A prompt's response proves the agent read everything up to that prompt.
_RESPONSES = frozenset({Event.PROMPT_ACCEPTED, Event.PROMPT_REJECTED})


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


def _w_prompt(tb: TraceBuilder, write: Writer, sid: str, a: Any, ev: Ev,
              ids: dict[Any, Any]) -> None:
    ids[ev.id] = rid = tb.log.fresh_id()
    write(tb, sid, rid)


def _w_answer(tb: TraceBuilder, write: Writer, sid: str, a: Any, ev: Ev,
              ids: dict[Any, Any]) -> None:
    if a[1] == Answer.ERROR:
        tb.answer_error(ids[ev.id], -32800)
    else:
        write(tb, ids[ev.id], a[1])


def _w_accepted(tb: TraceBuilder, write: Writer, sid: str, a: Any, ev: Ev,
                ids: dict[Any, Any]) -> None:
    rid = ids[ev.id]
    write(tb, rid, {"messageId": _receipt(ids, sid, rid)} if ids.get(RECEIPTS) else None)


def _w_permission(tb: TraceBuilder, write: Writer, sid: str, a: Any, ev: Ev,
                  ids: dict[Any, Any]) -> None:
    ids[ev.id] = rid = f"perm-{tb.log.fresh_id()}"
    write(tb, sid, rid, a)


def _w_tool(tb: TraceBuilder, write: Writer, sid: str, a: Any, ev: Ev,
            ids: dict[Any, Any]) -> None:
    extra = {"title": f"Tool {a[0]}"} if ev.has_title else {}
    write(tb, sid, a[0], a[1], **extra)


# The arguments each event's builder method (its wire_table.FORMS row's ``write``) takes from
# the abstract event; an event not listed is written with the session alone.
_WRITE_ARGS: dict[str, Callable[[TraceBuilder, Writer, str, Any, Ev, dict[Any, Any]], None]] = {
    Event.PROMPT: _w_prompt,
    Event.PROMPT_CANCEL_REQUEST: lambda tb, w, sid, a, ev, ids: w(tb, "c2a", ids[ev.id]),
    Event.PERMISSION_ANSWER: _w_answer,
    Event.PROMPT_ACCEPTED: _w_accepted,
    Event.PROMPT_REJECTED: lambda tb, w, sid, a, ev, ids: w(tb, ids[ev.id], REJECT_CODE),
    Event.USER_MESSAGE: lambda tb, w, sid, a, ev, ids: w(tb, sid,
                                                         _message_id(ids, sid, ev.message_id)),
    Event.CUSTOM_REPORTED: lambda tb, w, sid, a, ev, ids: w(tb, sid, CUSTOM_STATE),
    Event.IDLE_REPORTED: lambda tb, w, sid, a, ev, ids: w(tb, sid, a),
    Event.PERMISSION_REQUEST: _w_permission,
    Event.PERMISSION_WITHDRAWN: lambda tb, w, sid, a, ev, ids: w(tb, "a2c", ids[ev.id]),
    Event.TOOL_UPDATE: _w_tool,
}


def _concrete(tb: TraceBuilder, act: Action, ev: Ev, ids: dict[Any, Any]) -> None:
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


def alphabet(bounds: Bounds) -> set[str]:
    """The machine events the explorer tries under these bounds (each form's gate, and the
    lean alphabet's forms when ``bounds.lean``)."""
    return {form.event for form in wire_table.FORMS
            if (form.gate is None or getattr(bounds, form.gate.value))
            and (form.lean or not bounds.lean)}
