"""Breadth-first reachable configurations of the session model (the exploration itself).

See the package docstring of :mod:`acp_model.explorer` for what the explorer adds to the model.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from acp_model.explorer.action import Move
from acp_model.explorer.alphabet import RECEIPTS, _concrete, make_event, plan, planned_actions
from acp_model.explorer.bounds import MISSING, SESSION_IDS, Bounds
from acp_model.explorer.config import (
    _IDLE,
    Config,
    SingleRanks,
    _Base,
    _edge_breaks,
    _info,
    _observe,
    single_key_keyed,
    single_key_ranked,
)
from acp_model.explorer.writes import transition_writes
from acp_model.model import snapshot
from acp_model.model.engine import Failure, Table, TableEngine, compile_machine
from acp_model.model.events import Payload
from acp_model.model.lifecycle import SessionLifecycle
from acp_model.model.session import SessionModel
from acp_model.model.vocab import AGENT_EVENTS, WORK, Event, Level
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.trace.builder import TraceBuilder
from acp_model.trace.format import Record


@dataclass(slots=True)
class Edge:
    """An allowed event from ``src`` to ``dst``. ``action.session`` is a canonical position of
    ``src``; ``order`` maps canonical positions of ``dst`` to positions after the event (None:
    unchanged)."""

    src: int
    dst: int
    action: Move
    src_state: str  # control state of the acting session before the event
    allowed: int  # bit i set: allowed under readings[i]
    warns: tuple[tuple[str, ...], ...]  # per reading: rules failing at warn level
    breaks: tuple[str, ...] = ()  # properties this edge violates (under readings[0])
    order: tuple[int, ...] | None = None


@dataclass(slots=True)
class Refusal:
    """An attempted event refused under at least one reading (rules per reading)."""

    src: int
    action: Move
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

    def edge(self, src: int, action: Move) -> Edge | None:
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

    def replay(self, path: Sequence[Edge], last: Move | None = None,
               readings: Readings | None = None) -> tuple[Config, list[Move], TraceBuilder,
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
        # Receipts when a revision that requires them is explored (each witness must pass
        # check under the readings that allow it).
        ids: dict[Any, Any] = {RECEIPTS: any(r.revision != "seed" for r in self.readings)}
        phys = list(range(self.bounds.sessions))  # canonical position -> real session
        done: list[Move] = []
        at: list[int] = []
        steps: list[tuple[Move, tuple[int, ...] | None]] = [(e.action, e.order) for e in path]
        if last is not None:
            steps.append((last, None))
        for act, order in steps:
            real = act if act.session is None else Move(phys[act.session], act.event, act.arg)
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
                        m.compact()
                cfg.obs[real.session] = _observe(cfg.obs[real.session], src_state, real,
                                                 ev.idx)
            cfg.next_idx += 1
            done.append(real)
            if order is not None:
                phys = [phys[j] for j in order]
        return cfg, done, tb, at

    def witness(self, path: Sequence[Edge], last: Move | None = None, *,
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

    steps: list[Move]
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


def explore(sessions: int = 1, max_prompts: int | None = None,
            max_permissions: int | None = None, max_cancels: int | None = None,
            max_tools: int | None = None, readings: Readings | Sequence[Readings] = DEFAULT,
            machine: type = SessionLifecycle, model: type[SessionModel] = SessionModel,
            *, bounds: Bounds | None = None, custom: bool | None = None,
            reasons: Sequence[str | None] | None = None, max_states: int = 1_000_000,
            compact: bool = True, table: Table | None = None,
            progress: Callable[[int, int], None] | None = None, canon: bool = True
            ) -> Exploration:
    """Breadth-first reachable configurations of ``sessions`` sessions of ``machine``/``model``.

    ``readings`` may be a sequence: the exploration is then a product that follows an edge when
    any reading allows it and records which ones do (``Edge.allowed``); :func:`diff_readings`
    compares two readings on one graph that way (actions never depend on readings, only
    checks do). Bounds left ``None`` take :meth:`Bounds.default` for the session count.
    ``table`` overrides the one compiled from ``machine``/``model`` (tests remove transitions
    that way: subclassing a python-statemachine class would alter the parent's states).
    ``progress(done, found)`` is called every few thousand states. ``canon=False`` keys
    configurations by every value the model holds, without the model's ``canon`` methods (the
    fields it states dead in a configuration): a larger graph with the same verdicts, which
    the tests compare against.
    """
    if bounds is None:
        bounds = Bounds.default(sessions, max_prompts=max_prompts,
                                max_permissions=max_permissions, max_cancels=max_cancels,
                                max_tools=max_tools, custom=custom, reasons=reasons)
    rs = (readings,) if isinstance(readings, Readings) else tuple(readings)
    if not rs:
        raise ValueError("at least one Readings is needed")
    if table is None:
        table = compile_machine(machine, model)
    t0 = time.perf_counter()
    search = _Search(table, model, bounds, rs, max_states, compact, canon)
    with _collector_paused():
        search.run(progress)
    exp = Exploration(table, model, bounds, rs, search.keys, search.depth, search.parent,
                      search.info, search.edges, search.refusals, compact=compact)
    exp.seconds = time.perf_counter() - t0
    return exp


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while one exploration runs, as it was afterwards.

    An exploration keeps hundreds of thousands of long-lived objects (edges, keys) and frees
    its transient copies by reference counting; each full collection rescanned all that was
    kept (bench_explore's one session: ~1,100 collections, 2 s of a 13-14 s run, measured with
    ``gc.callbacks``). The previous setting comes back on return and on error.

    The objects made meanwhile all stay counted in the youngest generation, so the first
    allocation after re-enabling would scan every one of them (about a tenth of a second of
    the one-session run); they move to the oldest generation first (freeze, then unfreeze:
    two list splices), where only a full collection looks at them, as it would have anyway.
    Skipped when the program froze objects itself (unfreezing would release its own).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


class _Search:
    """The state of one breadth-first exploration: the nodes found, their edges and refusals."""

    def __init__(self, table: Table, model: type[SessionModel], bounds: Bounds,
                 rs: tuple[Readings, ...], max_states: int, compact: bool,
                 canon: bool = True) -> None:
        self.table, self.bounds, self.rs, self.canon = table, bounds, rs, canon
        self.max_states, self.compact = max_states, compact
        self.engines = [TableEngine(table, r) for r in rs]
        self.full = (1 << len(rs)) - 1
        # per engine and failing checks (by identity: the engine's plan holds them): the rules
        self.ruled: dict[tuple[int, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.no_warns: tuple[tuple[str, ...], ...] = tuple(() for _ in rs)
        self.ident = tuple(range(bounds.sessions))
        self.missing = tuple((MISSING,) for _ in rs)
        self.single = bounds.sessions == 1
        self.plan = plan(bounds)
        _, self.snap, self.indices = snapshot.compiled(model, canon, len(rs) > 1)
        # one reading: a successor's key in one generated call (a product keys per reading)
        self.keyed = snapshot.keyed(model, canon) if len(rs) == 1 else None
        self.ranks: dict[int, SingleRanks] = {}  # per queued node: the ranks its key made
        # Copy on write: per (state, event), a copy of the model that copies the parts the
        # event's actions write and shares the rest with the stored original, and whether
        # that includes the permission book (compaction writes it too).
        writes = transition_writes(table)
        self.copiers = {key: snapshot.copier(model, parts) for key, parts in writes.items()}
        self.book_copied = {key: "perm_book" in parts for key, parts in writes.items()}
        self.copy_book = snapshot.copier(model, frozenset({"perm_book"}))
        root = Config.initial(model, bounds.sessions, rs[0])
        if len(rs) > 1:  # keys exact under each reading (Context.product)
            root.ctx.product = rs
        key0, _ = root.canonical(canon=canon)
        self.keys = [key0]
        self.index = {key0: 0}
        self.depth = [0]
        self.parent: list[Edge | None] = [None]
        self.info = [_info(root, rs)]
        self.edges: list[Edge] = []
        self.refusals: list[Refusal] = []
        self.queue: deque[tuple[int, Config]] = deque([(0, root)])

    def run(self, progress: Callable[[int, int], None] | None) -> None:
        queue, done = self.queue, 0
        while queue:
            u, cfg = queue.popleft()
            done += 1
            if progress is not None and done % 5000 == 0:
                progress(done, len(self.keys))
            self._expand(u, cfg)

    def _expand(self, u: int, cfg: Config) -> None:
        """Try every action of the alphabet on the stored configuration ``u``."""
        transitions, refusals, missing = self.table.transitions, self.refusals, self.missing
        base: _Base | SingleRanks = (self.ranks.pop(u, None) or SingleRanks.of(
            cfg, self.indices)) if self.single else cfg.base(self.keys[u], self.canon)
        for act in planned_actions(cfg, self.bounds, self.plan, base.any_unread):
            s = act.session
            if s is None:
                _, frontier = make_event(cfg, act)
                new = cfg.derive(None)
                new.ctx.frontier = frontier
                new.next_idx += 1
                self._add(u, new, Edge(u, 0, act, "", self.full, self.no_warns), base)
                continue
            src_state = cfg.models[s].state
            if (src_state, act.event) not in transitions:  # no event payload needed
                refusals.append(Refusal(u, act, src_state, missing))
                continue
            ev, frontier = make_event(cfg, act)
            mask, warns, fails = self._judge(cfg, s, act, ev, frontier)
            if fails is not None:
                refusals.append(Refusal(u, act, src_state, fails))
            if mask:
                new, breaks = self._successor(cfg, s, act, ev, frontier, mask, warns[0])
                self._add(u, new, Edge(u, 0, act, src_state, mask, warns, breaks), base)

    def _judge(self, cfg: Config, s: int, act: Move, ev: Payload, frontier: int
               ) -> tuple[int, tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...] | None]:
        """Which readings allow ``act``, judged on the stored configuration (checks are pure:
        the copy waits until one does): the mask, the warnings per reading, and the failing
        rules per reading when some reading refuses it (None: none does)."""
        ctx, m, engines = cfg.ctx, cfg.models[s], self.engines
        before = ctx.frontier
        ctx.frontier = frontier
        if len(engines) == 1:  # the common case, without the per-reading lists
            ok, failures = engines[0].allowed(m, act.event, ev)
            ctx.frontier = before
            if not failures:
                return 1, self.no_warns, None
            warns, fails = self._ruled(0, failures)
            return (1, (warns,), None) if ok else (0, (warns,), (fails,))
        mask, wl, fl = 0, [], []
        for i, engine in enumerate(engines):
            ctx.readings = self.rs[i]
            ok, failures = engine.allowed(m, act.event, ev)
            if ok:
                mask |= 1 << i
            warns, fails = self._ruled(i, failures) if failures else ((), ())
            wl.append(warns)
            fl.append(fails)
        ctx.frontier = before
        ctx.readings = self.rs[0]
        return mask, tuple(wl), (tuple(fl) if mask != self.full else None)

    def _ruled(self, i: int, failures: list[Failure]
               ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """:func:`_rules` of engine ``i``'s failures, worked out once per set of failing
        checks (a check's level and rule are fixed per engine; a few dozen sets recur on
        tens of thousands of refused or warned events)."""
        key = (i, *[id(c) for c, _ in failures])
        out = self.ruled.get(key)
        if out is None:
            out = self.ruled[key] = _rules(self.engines[i], failures)
        return out

    def _successor(self, cfg: Config, s: int, act: Move, ev: Payload, frontier: int, mask: int,
                   warned: tuple[str, ...] = ()) -> tuple[Config, tuple[str, ...]]:
        """The configuration after an allowed ``act`` (under the first reading that allows
        it) and the edge properties it breaks under readings[0] (``warned``: the rules it
        warned under readings[0])."""
        src_state = cfg.models[s].state
        key = (src_state, act.event)
        new = cfg.derive(s, self.copiers[key])
        new.ctx.frontier = frontier
        m = new.models[s]
        if mask & 1:
            self.engines[0].apply(m, act.event, ev)
        else:
            first = (mask & -mask).bit_length() - 1
            new.ctx.readings = self.rs[first]
            self.engines[first].apply(m, act.event, ev)
            new.ctx.readings = self.rs[0]
        new.obs[s] = _observe(cfg.obs[s], src_state, act, ev.idx)
        if self.compact:  # a shared book is copied first, and only when it forgets something
            horizon = m.horizon()
            if self.book_copied[key]:
                m.compact()
            elif cfg.compacted[s] != horizon and m.compacts():  # compaction is idempotent at
                m = new.models[s] = self.copy_book(m, new.ctx)  # a horizon: a shared book
                m.compact()                                   # compacted there forgets nothing
            new.compacted[s] = horizon
        breaks: tuple[str, ...] = ()
        if mask & 1 and act.event == _IDLE:  # the edge properties judge idles alone
            breaks = _edge_breaks(cfg.obs[s], src_state, act, frontier, warned)
            if src_state in WORK and act.arg is not None and m.state == "idle" \
                    and not _prompt_ok(self.engines[0], new, s):
                breaks = (*breaks, "d")
        new.next_idx += 1
        return new, breaks

    def _add(self, u: int, new: Config, e: Edge, base: _Base | SingleRanks) -> None:
        """Record edge ``e`` from ``u`` to ``new``'s node, a new one if its key is new
        (``base``: the key parts of ``u`` its successors may reuse)."""
        if isinstance(base, SingleRanks):  # Config.canonical's common case: no renaming
            single, rank = single_key_keyed(new, self.keyed, base) if self.keyed \
                else single_key_ranked(new, self.snap, self.indices, base)
            k = (single,)
        else:
            k, order = new.canonical(base, e.action.session, self.canon)
            if order != self.ident:
                e.order = order
        v = self.index.get(k)
        if v is None:
            v = len(self.keys)
            if v >= self.max_states:
                raise ExplorationTooLarge(
                    f"more than {self.max_states} states within {self.bounds.to_json()}; "
                    "tighten the bounds")
            if self.single:  # its expansion reuses the ranks its key made
                self.ranks[v] = SingleRanks.ranked(new, set(rank), rank)
            else:
                new.reorder(order)
            self.index[k] = v
            self.keys.append(k)
            self.depth.append(self.depth[u] + 1)
            self.info.append(_info(new, self.rs))
            self.queue.append((v, new))
            self.parent.append(e)
        e.dst = v
        self.edges.append(e)


def _rules(engine: TableEngine, failures: list[Failure]
           ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The rules of failing checks, (warnings, failures), sorted."""
    return (tuple(sorted({engine.rule_of(c) for c, lv in failures if lv == Level.WARN})),
            tuple(sorted({engine.rule_of(c) for c, lv in failures if lv == Level.FAIL})))


def _prompt_ok(engine: TableEngine, cfg: Config, s: int) -> bool:
    """Property (d): would the model accept a new prompt here? (asked, never fired)"""
    idx = cfg.next_idx + 1
    ok, _ = engine.allowed(cfg.models[s], Event.PROMPT, Payload(idx, id=idx))
    return ok


# the agent's events and the client's own obligations: its answers to what the agent asked
_HELP_FREE = frozenset(AGENT_EVENTS) | {Event.PERMISSION_ANSWER, Event.ELICITATION_ANSWER}


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



