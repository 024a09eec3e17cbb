"""Reachable-state exploration of the session lifecycle, properties over it, and reading diffs.

The graph is computed by *running the oracle's own model*: ``SessionModel`` instances driven by
``TableEngine`` over the ``Table`` that ``compile_machine`` derives from ``SessionLifecycle``. The
explorer adds no protocol knowledge of its own except two things that are not the protocol:

* an abstract alphabet (which wire events to try in a state, with fresh ids and indices), kept
  finite by :class:`Bounds`;
* small *observers* that watch the event stream to judge the properties independently of the
  model's bookkeeping. A property that merely re-read the model's own records could never catch
  a model that forgot to record something (e.g. a ``cancel`` action that does nothing).

Nodes are canonical configurations: every session's ``SessionModel.snapshot`` with trace indices
ranked jointly over all sessions (they share one read frontier), plus the observers' state. The
read frontier advances exactly as in ``monitor``: a prompt response proves the agent read
everything up to that prompt, and the abstract ``sync`` event stands for any client request the
agent answers at once. Because trace indices only matter relative to each other and to the
frontier, equal keys have equal futures and the exploration is exact within its bounds.

Every edge can be replayed into a concrete JSON-RPC trace with ``TraceBuilder`` (see
:meth:`Exploration.witness`), so anything the explorer claims can be re-checked with
``acp-model check``.
"""

from __future__ import annotations

import functools
import gc
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from acp_model.engine import Table, TableEngine, compile_machine
from acp_model.lifecycle import (
    AGENT_EVENTS,
    WORK,
    Context,
    Ev,
    SessionLifecycle,
    SessionModel,
)
from acp_model.readings import DEFAULT, READING_DEFS, Readings
from acp_model.rules import RULES, catalogue
from acp_model.trace import Record
from acp_model.tracebuilder import TraceBuilder

SESSION_IDS = ("s1", "s2", "s3")
TOOL_IDS = ("t1", "t2", "t3")
# The options TraceBuilder.permission offers, so abstract and concrete answers classify alike.
PERM_OPTIONS = {"allow": "allow_once", "reject": "reject_once"}
CUSTOM_STATE = "_paused"
REJECT_CODE = -32603
SYNC = "sync"
MISSING = "NO-TRANSITION"  # pseudo rule: the machine has no transition for (state, event)


@dataclass(frozen=True, slots=True)
class Bounds:
    """What keeps the extended state finite (counts are per session) and which optional parts
    of the alphabet are tried. Defaults depend on the number of sessions (:meth:`default`):
    the graph grows roughly with the power of the session count."""

    sessions: int = 1
    max_prompts: int = 1  # prompts held by the model: sent and their work not yet ended
    max_permissions: int = 1  # permission requests held (answered ones are forgotten when
    #                            nothing can read them any more, see _compact)
    max_cancels: int = 1  # cancels held by the model (or watched by the observer)
    max_tools: int = 0  # distinct toolCallIds; a permission request guards one when > 0
    custom: bool = True  # try custom (``_x``) foreground states
    reasons: tuple[str | None, ...] = (None, "end_turn", "cancelled")
    tool_statuses: tuple[str, ...] = ("in_progress", "completed", "cancelled")
    lean: bool = False  # core alphabet only: no output, no $/cancel_request, no rejection,
    #                     no user message before the prompt response

    @classmethod
    def default(cls, sessions: int = 1, **overrides: Any) -> Bounds:
        """Bounds that explore in about a second for 1 session and under 30 s for 2 (see
        ``benchmarks/bench_explore.py``); ``None`` overrides are ignored."""
        base: dict[str, Any] = {"sessions": sessions}
        if sessions >= 2:
            base.update(max_permissions=0, custom=False)
        if sessions >= 3:
            base.update(reasons=("end_turn", "cancelled"), lean=True)
        base.update({k: v for k, v in overrides.items() if v is not None})
        if "reasons" in base:
            base["reasons"] = tuple(base["reasons"])
        return cls(**base)

    def __post_init__(self) -> None:
        if not 1 <= self.sessions <= len(SESSION_IDS):
            raise ValueError(f"sessions must be 1..{len(SESSION_IDS)}, got {self.sessions}")
        if not 0 <= self.max_tools <= len(TOOL_IDS):
            raise ValueError(f"max tools must be 0..{len(TOOL_IDS)}, got {self.max_tools}")
        for name in ("max_prompts", "max_permissions", "max_cancels"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name.replace('_', ' ')} must be >= 0")

    def to_json(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "max_prompts": self.max_prompts,
                "max_permissions": self.max_permissions, "max_cancels": self.max_cancels,
                "max_tools": self.max_tools, "custom_states": self.custom,
                "reasons": list(self.reasons), "tool_statuses": list(self.tool_statuses),
                "lean": self.lean}

    def describe(self) -> str:
        return (f"{self.sessions} session(s); per session at most {self.max_prompts} prompt(s), "
                f"{self.max_permissions} permission request(s), {self.max_cancels} cancel(s), "
                f"{self.max_tools} tool call(s); custom states "
                f"{'on' if self.custom else 'off'}; idle reasons "
                f"{', '.join(str(r) for r in self.reasons)}"
                + ("; lean alphabet" if self.lean else ""))


@dataclass(frozen=True, slots=True)
class Action:
    """One abstract event. ``arg`` is canonical (positions, tool ids, reasons), never a raw id,
    so an action taken from one configuration applies to every configuration with the same key.
    """

    session: int | None  # None: connection level (sync)
    event: str
    arg: Any = None

    @property
    def party(self) -> str:
        return "agent" if self.event in AGENT_EVENTS else "client"

    @property
    def payload(self) -> str:
        e, a = self.event, self.arg
        if a is None:
            return "none" if e == "idle_reported" else ""
        if e in ("prompt_accepted", "prompt_rejected", "prompt_cancel_request"):
            return f"p{a}"
        if e == "permission_withdrawn":
            return f"q{a}"
        if e == "permission_answer":
            return f"q{a[0]}={a[1]}"
        if e == "tool_update":
            return f"{a[0]}={a[1]}"
        return str(a)

    @property
    def label(self) -> str:
        who = "" if self.session is None else f"{SESSION_IDS[self.session]} "
        payload = self.payload
        return f"{who}{self.event}" + (f"({payload})" if payload else "")

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "session": None if self.session is None
                else SESSION_IDS[self.session], "party": self.party, "event": self.event,
                "payload": self.payload}


# ------------------------------------------------------------------------------------------
# Configurations: the models of all sessions, their shared context, the observers
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Observer:
    """What the properties watch, computed from the event stream alone (not from the model).

    ``work_cancels``: trace indices of cancels sent while the session reported work, since that
    work began (property b). ``cancelled``: a cancel was sent on this session at some point, the
    least a `cancelled` stop reason needs (property e). Deliberately cruder than the model: how
    many cancelled idles one cancel explains (the work, plus prompts it caught unaccepted,
    RULES.md A-10) is the model's business; the observer only states what no reading disputes.
    """

    work_cancels: tuple[int, ...] = ()
    cancelled: bool = False


def _clone_model(m: SessionModel, ctx: Context) -> SessionModel:
    """The model's own copy, bound to ``ctx`` (deepcopy costs ~80 µs per model)."""
    return m.clone(ctx)


def _share_model(m: SessionModel, ctx: Context) -> SessionModel:
    """A shallow copy bound to a new context, for the sessions an event does not touch (the
    stored original is never mutated, so sharing its lists is safe)."""
    c = object.__new__(type(m))
    c.__dict__.update(m.__dict__)
    c.ctx = ctx
    return c


_EV_SLOTS = ("answer", "error_code", "has_title", "id", "idx", "kind", "message_id", "options",
             "reason", "result_keys", "status", "tool_call_id")


def _ev(idx: int, **fields: Any) -> Ev:
    """``Ev(idx, **fields)`` without the per-field pops of its constructor (hot path)."""
    if Ev.__slots__ != _EV_SLOTS:  # Ev changed: take the safe road
        return Ev(idx, **fields)
    e = object.__new__(Ev)
    e.idx = idx
    e.answer = e.error_code = e.has_title = e.id = e.kind = e.message_id = e.options = \
        e.reason = e.result_keys = e.status = e.tool_call_id = None
    for name, value in fields.items():
        setattr(e, name, value)
    return e


@dataclass(slots=True)
class _Base:
    """A stored configuration's key parts, reused for the keys of its successors."""

    frontier: int
    rank: dict[int, int]
    unread: list[set[int]]
    keys: tuple[Any, ...]


class Config:
    """One concrete configuration: what a node of the graph stands for."""

    __slots__ = ("ctx", "models", "next_idx", "obs")

    def __init__(self, ctx: Context, models: list[SessionModel], obs: list[Observer],
                 next_idx: int) -> None:
        self.ctx = ctx
        self.models = models
        self.obs = obs
        self.next_idx = next_idx

    @classmethod
    def initial(cls, model_cls: type[SessionModel], sessions: int, readings: Readings
                ) -> Config:
        ctx = Context(readings=readings)
        models = [model_cls(SESSION_IDS[i], ctx) for i in range(sessions)]
        return cls(ctx, models, [Observer() for _ in models], 0)

    def derive(self, touched: int | None) -> Config:
        old = self.ctx
        ctx = Context(old.readings, old.frontier, old.session_advertised)
        models = [_clone_model(m, ctx) if i == touched else _share_model(m, ctx)
                  for i, m in enumerate(self.models)]
        return Config(ctx, models, list(self.obs), self.next_idx)

    def _session_unread(self, j: int) -> set[int]:
        f = self.ctx.frontier
        idx = self.models[j].indices()
        idx.update(self.obs[j].work_cancels)
        return {i for i in idx if i > f}

    def unread(self) -> list[int]:
        out: set[int] = set()
        for j in range(len(self.models)):
            out |= self._session_unread(j)
        return sorted(out)

    def _session_key(self, j: int, rank: dict[int, int]) -> tuple[Any, ...]:
        f = self.ctx.frontier
        obs = self.obs[j]
        return (self.models[j].snapshot(rank),
                tuple([-1 if i <= f else rank[i] for i in obs.work_cancels]), obs.cancelled)

    def session_keys(self) -> list[tuple[Any, ...]]:
        """Per session: snapshot and observer, indices ranked jointly over all sessions
        (they share one read frontier; read indices collapse to -1)."""
        rank = {i: n for n, i in enumerate(self.unread())}
        return [self._session_key(j, rank) for j in range(len(self.models))]

    def canonical(self, base: _Base | None = None, touched: int | None = None
                  ) -> tuple[tuple[Any, ...], tuple[int, ...]]:
        """Key up to renaming sessions (they are interchangeable) and the order used:
        ``order[j]`` is the session of this configuration at canonical position ``j``.

        ``base`` (the parent's keys, ranks and unread sets) saves the snapshots of untouched
        sessions when the event only appended a new, highest index and the frontier stayed:
        their ranks are then unchanged.
        """
        if len(self.models) == 1:  # the common case: no renaming, one rank
            rank = {i: n for n, i in enumerate(sorted(self._session_unread(0)))}
            return (self._session_key(0, rank),), (0,)
        keys: list[tuple[Any, ...]] | None = None
        if base is not None and touched is not None and self.ctx.frontier == base.frontier:
            now = self._session_unread(touched)
            if base.unread[touched] <= now:
                rank = base.rank
                extra = now - base.unread[touched]
                if extra:
                    rank = dict(rank)
                    for i in sorted(extra):
                        rank[i] = len(rank)
                keys = list(base.keys)
                keys[touched] = self._session_key(touched, rank)
        if keys is None:
            keys = self.session_keys()
        if len(keys) == 1:
            return (keys[0],), (0,)
        order = tuple(sorted(range(len(keys)), key=keys.__getitem__))
        return tuple(keys[j] for j in order), order

    def base(self, keys: tuple[Any, ...]) -> _Base:
        unread = [self._session_unread(j) for j in range(len(self.models))]
        all_unread = sorted(set().union(*unread))
        return _Base(self.ctx.frontier, {i: n for n, i in enumerate(all_unread)}, unread,
                     keys)

    def reorder(self, order: tuple[int, ...]) -> None:
        if order != tuple(range(len(order))):
            self.models = [self.models[j] for j in order]
            self.obs = [self.obs[j] for j in order]


def obligations(m: SessionModel, readings: Readings) -> list[str]:
    """The rules a session still owes at this point (empty: quiescent).

    The model's own ``obligations()``, which is also what ``Monitor.finish`` judges at the
    end of a trace. ``readings`` is kept for callers; the model carries its readings.
    """
    return [rule for rule, _, _ in m.obligations()]


# ------------------------------------------------------------------------------------------
# The abstract alphabet
# ------------------------------------------------------------------------------------------

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
        return _ev(idx), idx
    m = cfg.models[action.session]  # type: ignore[index]
    if e == "prompt":
        return _ev(idx, id=idx), frontier
    if e in ("prompt_accepted", "prompt_rejected", "prompt_cancel_request"):
        p = m.prompts[a]
        if e == "prompt_cancel_request":
            return _ev(idx, id=p.id), frontier
        frontier = max(frontier, p.idx)
        if e == "prompt_rejected":
            return _ev(idx, id=p.id, error_code=REJECT_CODE), frontier
        return _ev(idx, id=p.id, result_keys=()), frontier
    if e == "permission_answer":
        perm = list(m.perms.values())[a[0]]
        return _ev(idx, id=perm.id, answer=a[1],
                   error_code=-32800 if a[1] == "error" else None), frontier
    if e == "permission_withdrawn":
        return _ev(idx, id=list(m.perms.values())[a].id), frontier
    if e == "permission_request":
        return _ev(idx, id=idx, tool_call_id=a, options=PERM_OPTIONS), frontier
    if e == "tool_update":
        return _ev(idx, tool_call_id=a[0], status=a[1], kind="update",
                   has_title=a[0] not in m.tools), frontier
    if e == "idle_reported":
        return _ev(idx, reason=a), frontier
    if e == "user_message":
        return _ev(idx, message_id=f"u{idx}"), frontier
    if e == "output":
        return _ev(idx, kind="agent_message"), frontier
    return _ev(idx), frontier


def _observe(obs: Observer, src_state: str, action: Action, idx: int) -> Observer:
    if action.event == "cancel":
        wc = (*obs.work_cancels, idx) if src_state in WORK else obs.work_cancels
        return Observer(wc, True)
    if action.event == "idle_reported" and src_state in WORK:
        return Observer((), obs.cancelled)
    return obs


def _edge_breaks(obs: Observer, src_state: str, action: Action, frontier: int) -> tuple[str, ...]:
    """Edge properties (b) and (e), judged by the observers, for an edge the model allowed."""
    if action.event != "idle_reported":
        return ()
    out = []
    reason = action.arg
    if src_state in WORK:
        if reason != "cancelled" and any(i <= frontier for i in obs.work_cancels):
            out.append("b")
        if reason is None:
            out.append("e")
    if reason == "cancelled" and not obs.cancelled:
        out.append("e")
    return tuple(out)


# ------------------------------------------------------------------------------------------
# Exploration
# ------------------------------------------------------------------------------------------

@dataclass(slots=True)
class Edge:
    """An allowed event from ``src`` to ``dst``. ``action.session`` is a canonical position of
    ``src``; ``order`` maps canonical positions of ``dst`` to positions after the event (None:
    unchanged)."""

    src: int
    dst: int
    action: Action
    src_state: str  # control state of the acting session before the event
    allowed: int  # bit i set: allowed under readings[i]
    warns: tuple[tuple[str, ...], ...]  # per reading: rules failing at warn level
    breaks: tuple[str, ...] = ()  # properties this edge violates (under readings[0])
    order: tuple[int, ...] | None = None


@dataclass(slots=True)
class Refusal:
    """An attempted event refused under at least one reading (rules per reading)."""

    src: int
    action: Action
    src_state: str
    rules: tuple[tuple[str, ...], ...]  # per reading: rules failing at fail level ((): allowed)


class ExplorationTooLarge(RuntimeError):
    """The bounds admit more configurations than ``max_states``."""


@dataclass
class Exploration:
    """The reachable graph of one exploration, with everything needed to replay witnesses."""

    table: Table
    model_cls: type[SessionModel]
    bounds: Bounds
    readings: tuple[Readings, ...]
    keys: list[tuple[Any, ...]]
    depth: list[int]
    parent: list[Edge | None]
    info: list[dict[str, Any]]  # per node: states, label, obligations per reading
    edges: list[Edge]
    refusals: list[Refusal]
    seconds: float = 0.0
    compact: bool = True
    _graph: nx.MultiDiGraph | None = field(default=None, repr=False)

    @property
    def nodes(self) -> int:
        return len(self.keys)

    def counts(self) -> dict[str, int]:
        return {"states": self.nodes, "transitions": len(self.edges),
                "refused": len(self.refusals)}

    @property
    def graph(self) -> nx.MultiDiGraph:
        """Nodes: configuration ids with ``label``, ``states``, ``depth``, ``quiescent``;
        edges keyed by action label with ``event``, ``payload``, ``session``, ``party``,
        ``warnings``, ``allowed``, ``source_state``. Refused attempts: :attr:`refusals`.
        """
        if self._graph is None:
            g = nx.MultiDiGraph(bounds=self.bounds.to_json(),
                                readings=[r.changed() for r in self.readings])
            for n in range(self.nodes):
                inf = self.info[n]
                g.add_node(n, label=inf["label"], states=inf["states"], depth=self.depth[n],
                           quiescent=not inf["obligations"][0])
            g.add_edges_from(
                (e.src, e.dst, e.action.label,
                 {"event": e.action.event, "payload": e.action.payload,
                  "session": None if e.action.session is None else SESSION_IDS[e.action.session],
                  "party": e.action.party, "warnings": e.warns[0], "allowed": e.allowed,
                  "source_state": e.src_state})
                for e in self.edges)
            self._graph = g
        return self._graph

    # --- paths and witnesses ------------------------------------------------------------
    def path_to(self, node: int) -> list[Edge]:
        """Shortest edge path from the initial configuration (the BFS tree)."""
        out = []
        while (e := self.parent[node]) is not None:
            out.append(e)
            node = e.src
        return out[::-1]

    def edge(self, src: int, action: Action) -> Edge | None:
        for e in self.out_edges(src):
            if e.action == action:
                return e
        return None

    def out_edges(self, src: int) -> list[Edge]:
        adj = getattr(self, "_adj", None)
        if adj is None:
            adj = {}
            for e in self.edges:
                adj.setdefault(e.src, []).append(e)
            self._adj = adj
        return adj.get(src, [])

    def replay(self, path: Sequence[Edge], last: Action | None = None,
               readings: Readings | None = None) -> tuple[Config, list[Action], TraceBuilder,
                                                          list[int]]:
        """Re-run a path (and optionally one more, possibly refused, action) from scratch.

        Returns the configuration reached, the actions with real session numbers, the concrete
        trace and the record index of each step. Refused steps are fired all the same, as the
        monitor does.
        """
        readings = readings or self.readings[0]
        engine = TableEngine(self.table, readings)
        cfg = Config.initial(self.model_cls, self.bounds.sessions, readings)
        tb = TraceBuilder().handshake()
        for s in range(self.bounds.sessions):
            tb.new_session(SESSION_IDS[s])
        ids: dict[Any, Any] = {}
        phys = list(range(self.bounds.sessions))  # canonical position -> real session
        done: list[Action] = []
        at: list[int] = []
        steps: list[tuple[Action, tuple[int, ...] | None]] = [(e.action, e.order) for e in path]
        if last is not None:
            steps.append((last, None))
        for act, order in steps:
            real = act if act.session is None else Action(phys[act.session], act.event, act.arg)
            src_state = cfg.models[real.session].state if real.session is not None else ""
            ev, frontier = make_event(cfg, real)
            at.append(len(tb.records))
            _concrete(tb, real, ev, ids)
            cfg.ctx.frontier = frontier
            if real.session is not None:
                m = cfg.models[real.session]
                if (m.state, real.event) in self.table.transitions:
                    engine.fire(m, real.event, ev)
                    if self.compact:
                        _compact(m)
                cfg.obs[real.session] = _observe(cfg.obs[real.session], src_state, real,
                                                 ev.idx)
            cfg.next_idx += 1
            done.append(real)
            if order is not None:
                phys = [phys[j] for j in order]
        return cfg, done, tb, at

    def witness(self, path: Sequence[Edge], last: Action | None = None, *,
                complete: bool = False, readings: Readings | None = None) -> Witness:
        """Events and the equivalent concrete trace. ``last`` is the event the witness is about
        (when it is an allowed edge, pass it as the last element of ``path`` instead).
        ``complete`` appends the shortest help-free way back to a quiescent configuration, so
        the trace passes ``acp-model check`` unless the offending step broke a rule."""
        path = list(path)
        offending = len(path) if last is not None else (len(path) - 1 if path else None)
        if complete and last is None and path:
            r = self.readings.index(readings) if readings in self.readings else 0
            path += _settle_path(self, path[-1].dst, r) or []
        _, done, tb, at = self.replay(path, last, readings)
        return Witness(done, tb.records, at, offending)


@dataclass
class Witness:
    """A path of abstract events and the concrete JSON-RPC records that realise it."""

    steps: list[Action]
    records: list[Record]
    at: list[int]  # record index of each step
    offending: int | None = None  # step index of the event the witness is about

    @property
    def index(self) -> int | None:
        """Record index of the offending step (what a checker violation points at)."""
        return None if self.offending is None else self.at[self.offending]

    def to_json(self) -> dict[str, Any]:
        return {"events": [a.label for a in self.steps], "offending_step": self.offending,
                "offending_record": self.index,
                "trace": [r.to_json() for r in self.records]}


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
        tb.accepted(ids[ev.id])
    elif e == "prompt_rejected":
        tb.rejected(ids[ev.id], REJECT_CODE)
    elif e == "user_message":
        tb.user_message(sid, ev.message_id)
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


def _label(cfg: Config) -> str:
    """Compact node label: per session, the state and the records the model holds."""
    parts = []
    f = cfg.ctx.frontier
    for m in cfg.models:
        bits = [m.state]
        if m.prompts:
            bits.append("p:" + "".join(p.status[0] for p in m.prompts))
        if m.cancels:
            bits.append("c:" + "".join(c.status + ("r" if c.idx <= f else "")
                                       for c in m.cancels))
        if m.perms:
            bits.append("q:" + "".join(p.state[0] for p in m.perms.values()))
        parts.append(" ".join(bits))
    return " | ".join(parts)


def _info(cfg: Config, rs: Sequence[Readings]) -> dict[str, Any]:
    return {"states": tuple(m.state for m in cfg.models), "label": _label(cfg),
            "obligations": [tuple(sorted({o for m in cfg.models for o in obligations(m, r)}))
                            for r in rs]}


def _gc_paused(func: Callable[..., Exploration]) -> Callable[..., Exploration]:
    """Run without the cyclic garbage collector: exploration allocates hundreds of thousands
    of long-lived, acyclic tuples that each full collection would rescan (~4% of the time)."""

    @functools.wraps(func)
    def paused(*args: Any, **kwargs: Any) -> Exploration:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return paused


@_gc_paused
def explore(sessions: int = 1, max_prompts: int | None = None,
            max_permissions: int | None = None, max_cancels: int | None = None,
            max_tools: int | None = None, readings: Readings | Sequence[Readings] = DEFAULT,
            machine: type = SessionLifecycle, model: type[SessionModel] = SessionModel,
            *, bounds: Bounds | None = None, custom: bool | None = None,
            reasons: Sequence[str | None] | None = None, max_states: int = 1_000_000,
            compact: bool = True, table: Table | None = None,
            progress: Callable[[int, int], None] | None = None) -> Exploration:
    """Breadth-first reachable configurations of ``sessions`` sessions of ``machine``/``model``.

    ``readings`` may be a sequence: the exploration is then a product that follows an edge when
    any reading allows it and records which ones do (``Edge.allowed``); :func:`diff_readings`
    compares two readings on one graph that way (actions never depend on readings, only
    checks do). Bounds left ``None`` take :meth:`Bounds.default` for the session count.
    ``table`` overrides the one compiled from ``machine``/``model`` (tests remove transitions
    that way: subclassing a python-statemachine class would alter the parent's states).
    ``progress(done, found)`` is called every few thousand states.
    """
    if bounds is None:
        bounds = Bounds.default(sessions, max_prompts=max_prompts,
                                max_permissions=max_permissions, max_cancels=max_cancels,
                                max_tools=max_tools, custom=custom, reasons=reasons)
    sessions = bounds.sessions
    rs = (readings,) if isinstance(readings, Readings) else tuple(readings)
    if not rs:
        raise ValueError("at least one Readings is needed")
    if table is None:
        table = compile_machine(machine, model)
    transitions = table.transitions
    engines = [TableEngine(table, r) for r in rs]
    n_r = len(rs)
    full = (1 << n_r) - 1
    no_warns = tuple(() for _ in rs)
    ident = tuple(range(sessions))
    t0 = time.perf_counter()

    root = Config.initial(model, sessions, rs[0])
    key0, _ = root.canonical()
    keys = [key0]
    index = {key0: 0}
    depth = [0]
    parent: list[Edge | None] = [None]
    info = [_info(root, rs)]
    edges: list[Edge] = []
    refusals: list[Refusal] = []
    queue: deque[tuple[int, Config]] = deque([(0, root)])
    done = 0
    while queue:
        u, cfg = queue.popleft()
        done += 1
        base = cfg.base(keys[u]) if sessions > 1 else None
        if progress is not None and done % 5000 == 0:
            progress(done, len(keys))
        for act in actions(cfg, bounds):
            s = act.session
            ev, frontier = make_event(cfg, act)
            warns = no_warns
            breaks: tuple[str, ...] = ()
            if s is None:
                new = cfg.derive(None)
                new.ctx.frontier = frontier
                mask = full
                src_state = ""
            else:
                src_state = cfg.models[s].state
                if (src_state, act.event) not in transitions:
                    refusals.append(Refusal(u, act, src_state, tuple((MISSING,)
                                                                     for _ in rs)))
                    continue
                # judge on the stored configuration (checks are pure), copy only if allowed
                ctx = cfg.ctx
                before = ctx.frontier
                ctx.frontier = frontier
                mask = 0
                m = cfg.models[s]
                if n_r == 1:  # the common case, without the per-reading lists
                    ok, failures = engines[0].allowed(m, act.event, ev)
                    ctx.frontier = before
                    if not failures:
                        mask = 1
                    else:
                        mask = 1 if ok else 0
                        warns = (tuple(sorted({c.rule for c, lv in failures
                                               if lv == "warn"})),)
                        if not ok:
                            refusals.append(Refusal(u, act, src_state, (tuple(sorted(
                                {c.rule for c, lv in failures if lv == "fail"})),)))
                            continue
                    fails = None
                else:
                    fails = []
                    wl = []
                    for i in range(n_r):
                        ctx.readings = rs[i]
                        ok, failures = engines[i].allowed(m, act.event, ev)
                        if ok:
                            mask |= 1 << i
                        if failures:
                            fails.append(tuple(sorted({c.rule for c, lv in failures
                                                       if lv == "fail"})))
                            wl.append(tuple(sorted({c.rule for c, lv in failures
                                                    if lv == "warn"})))
                        else:
                            fails.append(())
                            wl.append(())
                    ctx.frontier = before
                    ctx.readings = rs[0]
                    warns = tuple(wl)
                    if mask != full:
                        refusals.append(Refusal(u, act, src_state, tuple(fails)))
                    if not mask:
                        continue
                new = cfg.derive(s)
                new.ctx.frontier = frontier
                m = new.models[s]
                if mask & 1:
                    engines[0].apply(m, act.event, ev)
                else:
                    first = (mask & -mask).bit_length() - 1
                    new.ctx.readings = rs[first]
                    engines[first].apply(m, act.event, ev)
                    new.ctx.readings = rs[0]
                new.obs[s] = _observe(cfg.obs[s], src_state, act, ev.idx)
                if compact:
                    _compact(m)
                if mask & 1:
                    breaks = _edge_breaks(cfg.obs[s], src_state, act, frontier)
                    if act.event == "idle_reported" and src_state in WORK \
                            and act.arg is not None and m.state == "idle" \
                            and not _prompt_ok(engines[0], new, s):
                        breaks = (*breaks, "d")
            new.next_idx += 1
            k, order = new.canonical(base, s)
            identity = order == ident
            v = index.get(k)
            if v is None:
                v = len(keys)
                if v >= max_states:
                    raise ExplorationTooLarge(
                        f"more than {max_states} states within {bounds.to_json()}; "
                        "tighten the bounds")
                new.reorder(order)
                index[k] = v
                keys.append(k)
                depth.append(depth[u] + 1)
                info.append(_info(new, rs))
                queue.append((v, new))
                e = Edge(u, v, act, src_state, mask, warns, breaks,
                         None if identity else order)
                parent.append(e)
            else:
                e = Edge(u, v, act, src_state, mask, warns, breaks, None if identity else order)
            edges.append(e)
    exp = Exploration(table, model, bounds, rs, keys, depth, parent, info, edges, refusals,
                      compact=compact)
    exp.seconds = time.perf_counter() - t0
    return exp


def _compact(m: SessionModel) -> None:
    """Forget answered permission requests no check can read any more.

    The model keeps every permission record for the monitor's sake; a record that is answered,
    owes no requires_action report (STATE-05) and guards no tool call (PERM-11, STATE-06) only
    appears in the snapshot, so forgetting it (with the model's own ``forget_permission``)
    merges configurations with equal futures and lets permission requests repeat within a
    bound on those *held*. ``tests/test_explore.py`` checks the merge against
    ``compact=False``.
    """
    for pid, perm in list(m.perms.items()):
        if perm.state == "answered" and not perm.unreported_block \
                and not any(t.perm == pid for t in m.tools.values()):
            m.forget_permission(pid)


def _prompt_ok(engine: TableEngine, cfg: Config, s: int) -> bool:
    """Property (d): would the model accept a new prompt here? (asked, never fired)"""
    idx = cfg.next_idx + 1
    ok, _ = engine.allowed(cfg.models[s], "prompt", _ev(idx, id=idx))
    return ok


# ------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------

PROPERTIES = {
    "a": "every reachable state can return to a quiescent idle with agent events and the "
         "client's own obligations (permission answers) only: no deadlock, no livelock",
    "b": "once the agent provably read a cancel sent during work, every idle ending that work "
         "says cancelled (an unread cancel may race with another stop reason), and the agent "
         "can still end it so",
    "c": "every state and every (state, event) transition of the machine is reachable, and "
         "the machine has a transition for every (state, event)",
    "d": "the idle that ends a turn accepts a new prompt",
    "e": "stop reasons only where the rules put them: cancelled only while a cancel is "
         "outstanding, and every idle that ends reported work carries a reason",
}


PROPERTY_NAMES = {"a": "every state can settle (no deadlock / livelock)",
                  "b": "a read cancel ends the work with cancelled",
                  "c": "every state and transition reachable",
                  "d": "the idle ending a turn accepts a prompt",
                  "e": "stop reasons only where the rules put them"}


@dataclass
class PropertyResult:
    id: str
    holds: bool
    summary: str
    checked: int
    violations: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": PROPERTY_NAMES[self.id],
                "statement": PROPERTIES[self.id], "holds": self.holds,
                "summary": self.summary, "checked": self.checked,
                "violations": self.violations, **self.details}


_HELP_FREE = frozenset(AGENT_EVENTS) | {"permission_answer"}


def _settle_path(exp: Exploration, start: int, r: int = 0) -> list[Edge] | None:
    """Shortest help-free path from ``start`` to a quiescent node under readings[r]."""
    seen: dict[int, Edge | None] = {start: None}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        if not exp.info[u]["obligations"][r]:
            path = []
            while (e := seen[u]) is not None:
                path.append(e)
                u = e.src
            return path[::-1]
        for e in exp.out_edges(u):
            if e.allowed >> r & 1 and e.action.event in _HELP_FREE and e.dst not in seen:
                seen[e.dst] = e
                queue.append(e.dst)
    return None


def _violation(exp: Exploration, what: str, path: list[Edge], **extra: Any) -> dict[str, Any]:
    return {"what": what, **extra, "witness": exp.witness(path).to_json()}


def check_properties(exp: Exploration, limit: int = 3) -> list[PropertyResult]:
    """Judge properties (a)-(e) on the graph under its first readings."""
    idle_edges = sum(1 for e in exp.edges if e.action.event == "idle_reported" and e.allowed & 1)
    results = [_prop_a(exp, limit), _prop_b(exp, limit), _prop_c(exp, limit)]
    for pid, what in (("d", "after this idle the model refuses a new prompt"),
                      ("e", "a stop reason where the rules put none (or none where they "
                            "require one)")):
        bad = sorted((e for e in exp.edges if pid in e.breaks), key=lambda e: exp.depth[e.src])
        results.append(PropertyResult(
            pid, not bad, f"{len(bad)} of {idle_edges} idle transitions break it" if bad
            else f"{idle_edges} idle transitions checked", idle_edges,
            [_violation(exp, what, [*exp.path_to(e.src), e]) for e in bad[:limit]]))
    return results


def _prop_a(exp: Exploration, limit: int) -> PropertyResult:
    rev: dict[int, list[int]] = {}
    for e in exp.edges:
        if e.allowed & 1 and e.action.event in _HELP_FREE:
            rev.setdefault(e.dst, []).append(e.src)
    good = {n for n in range(exp.nodes) if not exp.info[n]["obligations"][0]}
    quiescent = len(good)
    _close_backwards(good, rev)
    stuck = sorted((n for n in range(exp.nodes) if n not in good), key=lambda n: exp.depth[n])
    viol = [_violation(exp, "no help-free way back to a quiescent idle from here",
                       exp.path_to(n), state=exp.info[n]["label"],
                       owes=list(exp.info[n]["obligations"][0])) for n in stuck[:limit]]
    return PropertyResult("a", not stuck, f"{len(stuck)} of {exp.nodes} states cannot settle"
                          if stuck else f"all {exp.nodes} states can settle "
                          f"({quiescent} quiescent)", exp.nodes, viol,
                          {"stuck_states": len(stuck), "quiescent_states": quiescent})


def _prop_b(exp: Exploration, limit: int) -> PropertyResult:
    bad = sorted((e for e in exp.edges if "b" in e.breaks), key=lambda e: exp.depth[e.src])
    viol = [_violation(exp, "work ended without cancelled after the agent provably read a "
                       "cancel sent during it", [*exp.path_to(e.src), e]) for e in bad[:limit]]
    # Ending it with cancelled must stay possible from every such state (help-free).
    read_cancel = set()
    for n, key in enumerate(exp.keys):
        for s, (_, wc, *_) in enumerate(key):
            if -1 in wc and exp.info[n]["states"][s] in WORK:
                read_cancel.add((n, s))
    can_cancel = _can_reach_cancelled_idle(exp)
    blocked = sorted((n for n, s in read_cancel if (n, s) not in can_cancel),
                     key=lambda n: exp.depth[n])
    viol += [_violation(exp, "the agent can no longer end the cancelled work with cancelled",
                        exp.path_to(n)) for n in blocked[:limit]]
    holds = not bad and not blocked
    summary = (f"{len(read_cancel)} state(s) with a read cancel checked" if holds else
               f"{len(bad)} non-cancelled idle(s) after a read cancel, {len(blocked)} state(s) "
               "that cannot end with cancelled")
    return PropertyResult("b", holds, summary, len(read_cancel), viol)


def _can_reach_cancelled_idle(exp: Exploration) -> set[tuple[int, int]]:
    """(node, canonical session) pairs with a help-free path to an idle(cancelled) of that
    session ending work (sessions are tracked through canonical reorderings)."""
    good: set[tuple[int, int]] = set()
    rev: dict[tuple[int, int], list[tuple[int, int]]] = {}
    n_s = exp.bounds.sessions
    for e in exp.edges:
        if not e.allowed & 1 or e.action.event not in _HELP_FREE:
            continue
        if e.action.event == "idle_reported" and e.action.arg == "cancelled" \
                and e.src_state in WORK:
            good.add((e.src, e.action.session))  # type: ignore[arg-type]
        order = e.order or tuple(range(n_s))
        for j in range(n_s):  # canonical position j of dst is position order[j] of src
            rev.setdefault((e.dst, j), []).append((e.src, order[j]))
    _close_backwards(good, rev)
    return good


def _close_backwards(good: set[Any], rev: dict[Any, list[Any]]) -> None:
    """Add to ``good`` everything from which some edge path (``rev`` reversed) reaches it."""
    queue = deque(good)
    while queue:
        v = queue.popleft()
        for u in rev.get(v, ()):
            if u not in good:
                good.add(u)
                queue.append(u)


def _prop_c(exp: Exploration, limit: int) -> PropertyResult:
    table = exp.table
    legal: set[tuple[str, str]] = set()
    for e in exp.edges:
        if e.action.session is not None and e.allowed & 1:
            legal.add((e.src_state, e.action.event))
    refused: dict[tuple[str, str], tuple[Refusal, set[str]]] = {}
    for rf in exp.refusals:
        if rf.rules[0]:
            key = (rf.src_state, rf.action.event)
            if key in refused:
                refused[key][1].update(rf.rules[0])
            else:
                refused[key] = (rf, set(rf.rules[0]))
    reached = {s for inf in exp.info for s in inf["states"]}
    tried = alphabet(exp.bounds)
    # what the bounds leave out: events never tried, states only those events enter
    explorable = {table.initial}
    grow = True
    while grow:
        grow = False
        for (src, ev), tr in table.transitions.items():
            if src in explorable and ev in tried and tr.target not in explorable:
                explorable.add(tr.target)
                grow = True
    in_scope = [k for k in table.transitions if k[0] in explorable and k[1] in tried]
    out_of_scope = [k for k in table.transitions if k not in set(in_scope)]
    unreached = [s for s in table.states if s in explorable and s not in reached]
    events = list(dict.fromkeys([*table.events, *_ALPHABET_EVENTS]))
    missing = [(s, e) for s in table.states for e in events if (s, e) not in table.transitions]
    never = [k for k in in_scope if k not in legal and k not in refused]
    only_refused = [k for k in in_scope if k not in legal and k in refused]
    viol: list[dict[str, Any]] = []
    viol += [{"what": f"state {s!r} is never reached"} for s in unreached]
    viol += [{"what": f"no transition for {e!r} in state {s!r}: the monitor could not follow "
              "such a message"} for s, e in missing]
    viol += [{"what": f"transition {s}:{e} is never attempted within the bounds"}
             for s, e in never]
    violation_only = []
    for key in only_refused:
        rf, rules = refused[key]
        violation_only.append({
            "transition": f"{key[0]}:{key[1]}", "refused_by": sorted(rules),
            "witness": exp.witness(exp.path_to(rf.src), rf.action).to_json()})
    holds = not unreached and not missing and not never
    total = len(table.transitions)
    summary = (f"{len(legal)} of {total} transitions legal somewhere, "
               f"{len(only_refused)} violation-only (always refused), {len(never)} never "
               f"attempted, {len(missing)} missing, {len(out_of_scope)} outside the bounds' "
               f"alphabet; {len(reached)} of {len(table.states)} states reached")
    return PropertyResult("c", holds, summary, total, viol[: limit * 10], {
        "outside_alphabet": [f"{s}:{e}" for s, e in out_of_scope],
        "legal_transitions": sorted(f"{s}:{e}" for s, e in legal),
        "violation_only": violation_only,
        "never_attempted": [f"{s}:{e}" for s, e in never],
        "missing_transitions": [f"{s}:{e}" for s, e in missing],
        "unreached_states": unreached})


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


# ------------------------------------------------------------------------------------------
# Reading diffs
# ------------------------------------------------------------------------------------------

def parse_diff(spec: str, base: Readings = DEFAULT) -> list[tuple[Readings, Readings]]:
    """``A-01=join,forbid`` -> one pair; ``A-11`` -> the default against each other value.

    Raises ``ValueError`` (``ReadingError``) with a message for the user on bad input.
    """
    from acp_model.readings import ReadingError, lookup

    name, sep, values = spec.partition("=")
    d = lookup(name)
    if sep:
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if len(vals) != 2:
            raise ReadingError(f"--diff {spec!r}: give exactly two values, e.g. "
                               f"{d.id}={','.join(list(d.values)[:2])}")
        for v in vals:
            if v not in d.values:
                raise ReadingError(f"reading {d.id} ({d.slug}) has no value {v!r}; choose "
                                   f"from: {', '.join(d.values)}")
        if vals[0] == vals[1]:
            raise ReadingError(f"--diff {spec!r}: the two values are the same")
        pairs = [(vals[0], vals[1])]
    else:
        pairs = [(d.default, v) for v in d.values if v != d.default]
    return [(base.parse([f"{d.id}={a}"]), base.parse([f"{d.id}={b}"])) for a, b in pairs]


def _reading_name(r: Readings, other: Readings) -> str:
    changed = {k: v for k, v in r.values if dict(other.values)[k] != v}
    return ", ".join(f"{k}={v}" for k, v in changed.items()) or "(same)"


def diff_readings(a: Readings, b: Readings, *, limit: int = 4, **kw: Any) -> dict[str, Any]:
    """Where two readings part: transitions one allows and the other refuses, and states only
    one of them reaches, each with its shortest witness: a path both readings allow, then the
    differing event, then (for transitions) the shortest way back to quiescence under the
    reading that allows it. The witness trace therefore passes ``acp-model check`` under the
    allowing reading and fails, at the differing event, under the refusing one.
    """
    exp = explore(readings=(a, b), **kw)
    name_a, name_b = _reading_name(a, b), _reading_name(b, a)
    both = _bfs_tree(exp, 3)
    groups: dict[tuple[int, str, str, tuple[str, ...]], list[Refusal]] = {}
    for rf in exp.refusals:
        ra, rb = rf.rules
        if bool(ra) == bool(rb) or rf.src not in both:
            continue
        allowing = 0 if not ra else 1
        key = (allowing, f"{rf.src_state}:{rf.action.event}", rf.action.payload,
               tuple(rb or ra))
        groups.setdefault(key, []).append(rf)
    items = []
    for key in sorted(groups):
        rfs = groups[key]
        best = min(rfs, key=lambda rf: (len(both[rf.src]), rf.src))
        allowing, transition, payload, rules = key
        edge = exp.edge(best.src, best.action)
        assert edge is not None  # allowed under one reading, so it was followed
        w = exp.witness([*both[best.src], edge], complete=True, readings=exp.readings[allowing])
        items.append({
            "allowed_by": (name_a, name_b)[allowing], "refused_by": (name_b, name_a)[allowing],
            "transition": transition, "payload": payload, "rules": list(rules),
            "occurrences": len(rfs), "witness": w.to_json()})
    only = {}
    for bit, name in ((1, name_a), (2, name_b)):
        mine, other = _bfs_tree(exp, bit), _bfs_tree(exp, 3 - bit)
        nodes = sorted((n for n in mine if n not in other), key=lambda n: (len(mine[n]), n))
        only[name] = {"states": len(nodes), "examples": [
            {"state": exp.info[n]["label"],
             "witness": exp.witness(mine[n], readings=exp.readings[bit - 1]).to_json()}
            for n in nodes[:limit]]}
    return {"a": name_a, "b": name_b, "bounds": exp.bounds.to_json(), "states": exp.nodes,
            "transitions": len(exp.edges), "seconds": round(exp.seconds, 3),
            "differences": items, "only_reachable": only, "exploration": exp}


def _bfs_tree(exp: Exploration, mask: int) -> dict[int, list[Edge]]:
    """Shortest paths over the edges allowed by every reading in ``mask``."""
    paths: dict[int, list[Edge]] = {0: []}
    queue = deque([0])
    while queue:
        u = queue.popleft()
        for e in exp.out_edges(u):
            if e.allowed & mask == mask and e.dst not in paths:
                paths[e.dst] = [*paths[u], e]
                queue.append(e.dst)
    return paths


def each_reading(base: Readings = DEFAULT, **kw: Any) -> list[dict[str, Any]]:
    """Explore under every value of every reading (one change from ``base`` at a time)."""
    rows = []
    for d in READING_DEFS.values():
        for value in d.values:
            r = base.parse([f"{d.id}={value}"])
            exp = explore(readings=r, **kw)
            props = check_properties(exp, limit=1)
            rows.append({"reading": f"{d.id}={value}", "default": value == d.default,
                         **exp.counts(), "seconds": round(exp.seconds, 3),
                         "properties": {p.id: p.holds for p in props},
                         "failed": {p.id: p.summary for p in props if not p.holds}})
    return rows


# ------------------------------------------------------------------------------------------
# Doc-vs-schema contradictions
# ------------------------------------------------------------------------------------------

# RULES.md §6.3, summarised: (id, where the sources disagree, catalogue rules concerned).
CONTRADICTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("C-01", "stop reason on the idle that ends work: MUST in the lifecycle page, SHOULD in "
             "the schema's IdleStateUpdate", ("STATE-03",)),
    ("C-02", "idle(cancelled) after a cancel: MUST in the docs, SHOULD in the schema's "
             "cancel notification and stop reason texts", ("CANCEL-06",)),
    ("C-03", "running after requires_action: MUST in lifecycle §3, SHOULD in §5",
     ("STATE-06",)),
    ("C-04", "baseline session methods: 4 in AgentCapabilities.session, 7 elsewhere",
     ("INIT-10",)),
    ("C-05", "tool kind switch_mode: in the schema, not in the docs", ("TOOL-15",)),
    ("C-06", "ToolCallLocation.line: minimum 0 in the schema, 1-based in the docs",
     ("TOOL-19",)),
    ("C-07", "cancelled permission answers: error -32800 in the cancellation diagram, the "
             "cancelled outcome everywhere else", ("CANCEL-04",)),
    ("C-08", "plan update fallback rejects the reserved file/markdown types", ("PLAN-04",)),
    ("C-09", "initialize capabilities: MUST in the docs, optional in the schema",
     ("INIT-03",)),
    ("C-10", "several initialize examples omit the required info", ("INIT-09",)),
    ("C-11", "§5 lets tools use client capabilities v2 no longer defines", ()),
    ("C-12", "the lifecycle diagram draws two idles on the cancel path", ("ACPM-ONE-STOP",)),
    ("C-13", "v1 notification type names in the docs vs the v2 schema names", ()),
)


# Contradictions the model resolves with a reading instead of a strength.
CONTRADICTION_READINGS = {"C-07": "A-14", "C-12": "A-05"}


def contradictions(*, explore_kw: dict[str, Any] | None = None, limit: int = 2
                   ) -> dict[str, Any]:
    """The doc-vs-schema strength contradictions in the catalogue and what they change.

    For rules with ``alt_strength`` the model's behaviour under ``STRENGTH=docs`` and
    ``STRENGTH=schema`` is compared on one graph (the rule turns from a failure into a warning).
    """
    rules = [r for r in catalogue() if r.alt_strength]
    strength = {r.id: {"docs": r.strength, "schema": r.alt_strength, "source": r.alt_source}
                for r in rules}
    kw = dict(explore_kw or {})
    diff = diff_readings(DEFAULT.parse(["STRENGTH=docs"]), DEFAULT.parse(["STRENGTH=schema"]),
                         limit=limit, **kw)
    diff.pop("exploration", None)
    effect: dict[str, list[dict[str, Any]]] = {}
    for item in diff["differences"]:
        for rid in item["rules"]:
            effect.setdefault(rid, []).append(item)
    table = compile_machine(SessionLifecycle, SessionModel)
    session_rules: dict[str, set[str]] = {}
    for (_, event), tr in table.transitions.items():
        for c in tr.checks:
            session_rules.setdefault(c.rule, set()).add(event)
    tried = alphabet(Bounds.default(**{k: v for k, v in kw.items() if k in (
        "sessions", "max_prompts", "max_permissions", "max_cancels", "max_tools", "custom",
        "reasons")})) if "bounds" not in kw else alphabet(kw["bounds"])
    out = []
    for cid, text, rids in CONTRADICTIONS:
        notes = []
        for rid in rids:
            if rid in effect:
                continue
            if RULES[rid].kind == "liveness":
                notes.append(f"{rid}: a liveness obligation, judged at the end of a trace "
                             "(a failure under docs, a warning under schema)")
            elif rid not in session_rules:
                notes.append(f"{rid}: checked outside the session machine (schema, "
                             "connection or message checks)")
            elif not session_rules[rid] & tried:
                notes.append(f"{rid}: its transitions are outside these bounds' alphabet")
            elif rid in strength:
                notes.append(f"{rid}: no transition changes verdict within these bounds")
        if cid in CONTRADICTION_READINGS:
            notes.append(f"a reading choice rather than a strength: explore --diff "
                         f"{CONTRADICTION_READINGS[cid]}")
        out.append({"id": cid, "conflict": text, "rules": list(rids), "note": "; ".join(notes),
                    "strengths": {rid: strength[rid] for rid in rids if rid in strength},
                    "model_effect": [
                        {"transition": it["transition"], "payload": it["payload"],
                         "rule": rid, "witness": it["witness"]}
                        for rid in rids for it in effect.get(rid, [])[:limit]]})
    undocumented = [rid for rid in strength if not any(rid in c[2] for c in CONTRADICTIONS)]
    return {"contradictions": out, "alt_strength_rules": strength,
            "alt_strength_without_contradiction": undocumented, "bounds": diff["bounds"]}


# ------------------------------------------------------------------------------------------
# Coverage of fuzz / check reports
# ------------------------------------------------------------------------------------------

def _find(doc: Any, key: str, kind: type) -> Iterable[Any]:
    """Every value of type ``kind`` stored under ``key`` anywhere in a JSON report."""
    if isinstance(doc, dict):
        if isinstance(doc.get(key), kind):
            yield doc[key]
        for k, v in doc.items():
            if k != key:
                yield from _find(v, key, kind)
    elif isinstance(doc, list):
        for v in doc:
            yield from _find(v, key, kind)


def coverage(reports: Sequence[dict[str, Any]], exp: Exploration | None = None
             ) -> dict[str, Any]:
    """Which model transitions (and lifecycle rules) the given reports exercised.

    A report is any JSON from ``acp-model check`` or the fuzzer: every ``"transitions":
    {"state:event": n}`` object in it is summed, and every ``rules`` entry's ``exercised``.
    With an exploration, unexercised transitions are split into reachable (a test gap) and
    never legal in the model.
    """
    table = exp.table if exp is not None else compile_machine(SessionLifecycle, SessionModel)
    seen: dict[str, int] = {}
    rule_seen: dict[str, int] = {}
    for doc in reports:
        for counts in _find(doc, "transitions", dict):
            for k, n in counts.items():
                if isinstance(n, int):
                    seen[k] = seen.get(k, 0) + n
        for rules in _find(doc, "rules", list):
            for r in rules:
                if isinstance(r, dict) and isinstance(r.get("exercised"), int):
                    rule_seen[r["id"]] = rule_seen.get(r["id"], 0) + r["exercised"]
    model = [f"{s}:{e}" for s, e in table.transitions]
    exercised = {k: seen[k] for k in model if seen.get(k)}
    unknown = sorted(k for k in seen if k not in set(model))
    legal = None
    if exp is not None:
        legal = {f"{e.src_state}:{e.action.event}" for e in exp.edges
                 if e.action.session is not None and e.allowed & 1}
    gaps = [k for k in model if k not in exercised and (legal is None or k in legal)]
    never_legal = [k for k in model if k not in exercised and legal is not None
                   and k not in legal]
    lifecycle_rules = sorted({c.rule for c in table.check_names().values()})
    return {
        "transitions": len(model), "exercised": exercised,
        "not_exercised_reachable": gaps, "not_exercised_never_legal": never_legal,
        "unknown": unknown,
        "rules_not_exercised": [r for r in lifecycle_rules if not rule_seen.get(r)]
        if rule_seen else None,
        "ratio": round(len(exercised) / len(model), 3) if model else 0.0,
    }


__all__ = ["CONTRADICTIONS", "PROPERTIES", "PROPERTY_NAMES", "Action", "Bounds", "Config",
           "Edge", "Exploration", "ExplorationTooLarge", "PropertyResult", "Refusal", "Witness",
           "actions", "alphabet", "check_properties", "contradictions", "coverage",
           "diff_readings", "each_reading", "explore", "make_event", "obligations",
           "parse_diff"]
