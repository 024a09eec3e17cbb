"""Deterministic generator of large, conforming multi-session traces (for the benchmark).

Turns interleave across sessions and include permissions (allow / reject), cancels during
work and during permissions, tool calls, plans, chunks and usage. Every generated trace is
expected to pass ``acp-model check`` with no violation (a test keeps it honest).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from acp_model.trace.builder import TraceBuilder


def _turn(t: TraceBuilder, sid: str, rid: int, rng: random.Random, n: int) -> Iterator[None]:
    """One prompt turn, yielding between messages so sessions interleave."""
    t.prompt(sid, rid, text=f"task {n}")
    yield
    t.accepted(rid)
    t.user_message(sid, f"{sid}-u{n}")
    t.running(sid)
    yield
    t.update(sid, {"sessionUpdate": "plan_update", "plan": {
        "type": "items", "planId": f"{sid}-plan{n}",
        "entries": [{"content": "step", "priority": "high", "status": "in_progress"}]}})
    mid = f"{sid}-a{n}"
    for k in range(rng.randint(2, 8)):
        t.agent_message(sid, mid, f"chunk {k} ", chunk=True)
        yield
    tool = f"{sid}-t{n}"
    t.tool(sid, tool, "pending", title="Edit file", kind="edit",
           locations=[{"path": f"/work/file{n}.py"}])
    cancel = rng.random() < 0.2
    ask = rng.random() < 0.5
    if ask:
        pid = rid * 10 + 1
        t.permission(sid, pid, tool)
        t.requires_action(sid)
        yield
        if cancel:
            t.cancel(sid)
            t.answer(pid, "cancelled")
            t.tool(sid, tool, "cancelled")
            t.idle(sid, "cancelled")
            return
        allow = rng.random() < 0.7
        t.answer(pid, "allow" if allow else "reject")
        t.running(sid)
        if not allow:
            t.tool(sid, tool, "failed")
            t.idle(sid, "end_turn")
            return
    t.tool(sid, tool, "in_progress")
    for _ in range(rng.randint(1, 4)):
        t.tool_chunk(sid, tool, "output line")
        yield
    if cancel:
        t.cancel(sid)
        yield
        t.tool(sid, tool, "cancelled")
        t.idle(sid, "cancelled")
        return
    t.tool(sid, tool, "completed")
    t.usage(sid, used=1000 + n, size=200000)
    t.idle(sid, rng.choice(["end_turn", "end_turn", "end_turn", "max_tokens"]))


def generate(messages: int = 200_000, sessions: int = 4, seed: int = 7) -> TraceBuilder:
    """A conforming trace with at least ``messages`` records."""
    rng = random.Random(seed)
    t = TraceBuilder().handshake()
    sids = [f"sess{k}" for k in range(sessions)]
    for sid in sids:
        t.new_session(sid)
    active: dict[str, Iterator[None]] = {}
    counter = 0
    rid = 1000
    while len(t.records) < messages or active:
        for sid in sids:
            if sid not in active and len(t.records) < messages:
                counter += 1
                rid += 1
                active[sid] = _turn(t, sid, rid, rng, counter)
        sid = rng.choice(list(active))
        try:
            next(active[sid])
        except StopIteration:
            del active[sid]
    return t
