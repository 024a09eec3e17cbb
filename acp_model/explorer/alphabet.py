"""The abstract alphabet: which events to try in a configuration, their payloads, and their
concrete JSON-RPC form (so every witness can be re-checked with ``acp-model check``)."""

from __future__ import annotations

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
from acp_model.model.context import frontier_after
from acp_model.model.events import Ev
from acp_model.model.vocab import AGENT_EVENTS
from acp_model.trace.builder import TraceBuilder

if TYPE_CHECKING:
    from acp_model.explorer.config import Config


def actions(cfg: Config, bounds: Bounds) -> list[Action]:
    """Every abstract event worth trying in this configuration (legal or not)."""
    out: list[Action] = []
    if cfg.unread():
        out.append(Action(None, SYNC))
    for s, m in enumerate(cfg.models):
        obs = cfg.obs[s]
        pending = [k for k, p in enumerate(m.prompts) if p.status == "pending"]
        accepted = sum(1 for p in m.prompts if p.status == "accepted")
        perms = list(m.perms.values())
        # client
        if len(m.prompts) < bounds.max_prompts:
            out.append(Action(s, "prompt"))
        if max(len(m.cancels), len(obs.work_cancels)) < bounds.max_cancels:
            out.append(Action(s, "cancel"))
        if pending and not bounds.lean:
            out.append(Action(s, "prompt_cancel_request", pending[0]))
        for k, perm in enumerate(perms):
            if perm.state == "answered":
                continue
            for answer in ("allow", "reject", "cancelled"):
                out.append(Action(s, "permission_answer", (k, answer)))
            if perm.state == "withdrawn":
                out.append(Action(s, "permission_answer", (k, "error")))
        # agent
        for k in pending:
            out.append(Action(s, "prompt_accepted", k))
            if not bounds.lean:
                out.append(Action(s, "prompt_rejected", k))
        if accepted or (m.early_user_messages < len(pending) and not bounds.lean):
            out.append(Action(s, "user_message"))
        out.append(Action(s, "running_reported"))
        out.append(Action(s, "requires_action_reported"))
        if bounds.custom:
            out.append(Action(s, "custom_reported"))
        for reason in bounds.reasons:
            out.append(Action(s, "idle_reported", reason))
        known = [t for t in TOOL_IDS if t in m.tools]
        fresh = [TOOL_IDS[len(m.tools)]] if len(m.tools) < bounds.max_tools else []
        if len(perms) < bounds.max_permissions:
            for tool in (known + fresh) or [None]:
                out.append(Action(s, "permission_request", tool))
        for k, perm in enumerate(perms):
            if perm.state == "open":
                out.append(Action(s, "permission_withdrawn", k))
        for tool in known + fresh:
            for status in bounds.tool_statuses:
                out.append(Action(s, "tool_update", (tool, status)))
        if not bounds.lean:
            out.append(Action(s, "output"))
    return out


def make_event(cfg: Config, action: Action) -> tuple[Ev, int]:
    """The payload of ``action`` in ``cfg`` and the read frontier once it happened.

    A prompt response proves the agent read everything up to that prompt (FIFO stdio), the
    abstract ``sync`` stands for any client request answered at once (as in ``monitor``).
    """
    idx = cfg.next_idx
    frontier = cfg.ctx.frontier
    e, a = action.event, action.arg
    if e == SYNC:
        return Ev(idx), idx
    m = cfg.models[action.session]  # type: ignore[index]
    if e == "prompt":
        return Ev(idx, id=idx), frontier
    if e in ("prompt_accepted", "prompt_rejected", "prompt_cancel_request"):
        p = m.prompts[a]
        if e == "prompt_cancel_request":
            return Ev(idx, id=p.id), frontier
        frontier = frontier_after(frontier, p.idx)
        if e == "prompt_rejected":
            return Ev(idx, id=p.id, error_code=REJECT_CODE), frontier
        return Ev(idx, id=p.id, result_keys=()), frontier
    if e == "permission_answer":
        perm = list(m.perms.values())[a[0]]
        return Ev(idx, id=perm.id, answer=a[1],
                   error_code=-32800 if a[1] == "error" else None), frontier
    if e == "permission_withdrawn":
        return Ev(idx, id=list(m.perms.values())[a].id), frontier
    if e == "permission_request":
        return Ev(idx, id=idx, tool_call_id=a, options=PERM_OPTIONS), frontier
    if e == "tool_update":
        first = a[0] not in m.tools
        return Ev(idx, tool_call_id=a[0], status=a[1], kind="update", has_title=first,
                  first_report=first), frontier
    if e == "idle_reported":
        return Ev(idx, reason=a), frontier
    if e == "user_message":
        return Ev(idx, message_id=f"u{idx}", new_message=True), frontier
    if e == "output":
        return Ev(idx, kind="agent_message"), frontier
    return Ev(idx), frontier


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


def _concrete(tb: TraceBuilder, act: Action, ev: Ev, ids: dict[Any, Any]) -> None:
    """Append the wire records for one abstract event."""
    if act.session is None:
        tb.sync()
        return
    sid = SESSION_IDS[act.session]
    e, a = act.event, act.arg
    if e == "prompt":
        ids[ev.id] = rid = tb.fresh_id()
        tb.prompt(sid, rid)
    elif e == "cancel":
        tb.cancel(sid)
    elif e == "prompt_cancel_request":
        tb.cancel_request("c2a", ids[ev.id])
    elif e == "permission_answer":
        if a[1] == "error":
            tb.answer_error(ids[ev.id], -32800)
        else:
            tb.answer(ids[ev.id], a[1])
    elif e == "prompt_accepted":
        rid = ids[ev.id]
        tb.accepted(rid, {"messageId": _receipt(ids, sid, rid)} if ids.get(RECEIPTS) else None)
    elif e == "prompt_rejected":
        tb.rejected(ids[ev.id], REJECT_CODE)
    elif e == "user_message":
        tb.user_message(sid, _message_id(ids, sid, ev.message_id))
    elif e == "running_reported":
        tb.running(sid)
    elif e == "requires_action_reported":
        tb.requires_action(sid)
    elif e == "custom_reported":
        tb.state(sid, CUSTOM_STATE)
    elif e == "idle_reported":
        tb.idle(sid, a)
    elif e == "permission_request":
        ids[ev.id] = rid = f"perm-{tb.fresh_id()}"
        tb.permission(sid, rid, a)
    elif e == "permission_withdrawn":
        tb.cancel_request("a2c", ids[ev.id])
    elif e == "tool_update":
        extra = {"title": f"Tool {a[0]}"} if ev.has_title else {}
        tb.tool(sid, a[0], a[1], **extra)
    elif e == "output":
        tb.agent_message(sid)
    else:  # pragma: no cover - the alphabet above is closed
        raise ValueError(f"no concrete form for {act.label}")


_ALPHABET_EVENTS = ("prompt", "cancel", "prompt_cancel_request", "permission_answer",
                    *AGENT_EVENTS)


def alphabet(bounds: Bounds) -> set[str]:
    """The machine events the explorer tries under these bounds."""
    out = set(_ALPHABET_EVENTS)
    if not bounds.custom:
        out.discard("custom_reported")
    if not bounds.max_permissions:
        out -= {"permission_request", "permission_withdrawn", "permission_answer"}
    if not bounds.max_tools:
        out.discard("tool_update")
    if not bounds.max_prompts:
        out -= {"prompt", "prompt_accepted", "prompt_rejected", "prompt_cancel_request"}
    if not bounds.max_cancels:
        out.discard("cancel")
    if bounds.lean:
        out -= {"output", "prompt_cancel_request", "prompt_rejected"}
    return out
