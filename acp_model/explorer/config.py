"""Configurations: the models of all sessions, their shared context and the observers, and
their canonical keys (sessions are interchangeable, trace indices only matter by rank)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from acp_model.explorer.action import Move
from acp_model.explorer.bounds import SESSION_IDS
from acp_model.model import snapshot
from acp_model.model.context import Context
from acp_model.model.session import SessionModel
from acp_model.model.vocab import WORK, Answer, Event, StopReason
from acp_model.spec.readings import Readings


@dataclass(frozen=True, slots=True)
class Observer:
    """What the properties watch, computed from the event stream alone (not from the model).

    ``work_cancels``: trace indices of cancels sent while the session reported work, since that
    work began (property b). ``cancelled``: the client stopped something on this session at some
    point (a cancel, a prompt withdrawn with ``$/cancel_request``, a refused permission, which
    the newer revision lets stop the work), the least a `cancelled` stop reason needs
    (property e). Deliberately cruder than the model: how
    many cancelled idles one cancel explains (the work, plus prompts it caught unaccepted,
    RULES.md A-10) is the model's business; the observer only states what no reading disputes.
    """

    work_cancels: tuple[int, ...] = ()
    cancelled: bool = False


def _clone_model(m: SessionModel, ctx: Context) -> SessionModel:
    """A full copy bound to ``ctx`` (generated from the model's fields, see model.snapshot)."""
    return snapshot.clone(m, ctx)


def _share_model(m: SessionModel, ctx: Context) -> SessionModel:
    """A shallow copy bound to a new context, for the sessions an event does not touch (the
    stored original is never mutated, so sharing its parts is safe; see model.snapshot)."""
    return snapshot.share(m, ctx)


@dataclass(slots=True)
class _Base:
    """A stored configuration's key parts, reused for the keys of its successors."""

    frontier: int
    rank: dict[int, int]  # joint ranks of the unread indices
    unread: list[set[int]]
    keys: tuple[Any, ...]

    @property
    def any_unread(self) -> bool:
        return bool(self.rank)


_UNCOMPACTED = -2  # below every horizon (the read frontiers start at -1)


class Config:
    """One concrete configuration: what a node of the graph stands for. ``compacted``: per
    session, the horizon its permission book was last compacted at (``SessionModel.horizon``;
    the explorer asks a book it shares whether it compacts only once the horizon moved)."""

    __slots__ = ("compacted", "ctx", "models", "next_idx", "obs")

    def __init__(self, ctx: Context, models: list[SessionModel], obs: list[Observer],
                 next_idx: int, compacted: list[int] | None = None) -> None:
        self.ctx = ctx
        self.models = models
        self.obs = obs
        self.next_idx = next_idx
        self.compacted = [_UNCOMPACTED] * len(models) if compacted is None else compacted

    @classmethod
    def initial(cls, model_cls: type[SessionModel], sessions: int, readings: Readings
                ) -> Config:
        ctx = Context(readings=readings)
        models = [model_cls(SESSION_IDS[i], ctx) for i in range(sessions)]
        return cls(ctx, models, [Observer() for _ in models], 0)

    def derive(self, touched: int | None, clone: Callable[[Any, Any], Any] | None = None
               ) -> Config:
        """The configuration after an event of session ``touched`` (None: of no session);
        ``clone``: how to copy the touched session's model (default: a full copy; the
        explorer passes one that copies only the parts the event writes)."""
        ctx = self.ctx.derive()
        copy = clone or _clone_model
        if touched == 0 and len(self.models) == 1:  # the common case, on every edge
            return Config(ctx, [copy(self.models[0], ctx)], list(self.obs), self.next_idx,
                          list(self.compacted))
        models = [copy(m, ctx) if i == touched else _share_model(m, ctx)
                  for i, m in enumerate(self.models)]
        return Config(ctx, models, list(self.obs), self.next_idx, list(self.compacted))

    def _session_held(self, j: int, canon: bool = True) -> set[int]:
        idx = snapshot.indices(self.models[j], canon)
        idx.update(self.obs[j].work_cancels)
        return idx

    def _session_unread(self, j: int, canon: bool = True) -> set[int]:
        f = self.ctx.frontier
        return {i for i in self._session_held(j, canon) if i > f}

    def unread(self, canon: bool = True) -> list[int]:
        out: set[int] = set()
        for j in range(len(self.models)):
            out |= self._session_unread(j, canon)
        return sorted(out)

    def _session_key(self, j: int, joint: dict[int, int], held: set[int] | None = None,
                     canon: bool = True) -> tuple[Any, ...]:
        obs = self.obs[j]
        rank = snapshot.session_ranks(self._session_held(j, canon) if held is None else held,
                                      self.ctx.frontier, joint)
        return (snapshot.snapshot(self.models[j], rank, canon),
                tuple([rank[i] for i in obs.work_cancels]), obs.cancelled)

    def session_keys(self, canon: bool = True) -> list[tuple[Any, ...]]:
        """Per session: snapshot and observer (see :func:`snapshot.session_ranks
        <acp_model.model.snapshot.session_ranks>` for how indices rank)."""
        joint = {i: n for n, i in enumerate(self.unread(canon))}
        return [self._session_key(j, joint, canon=canon) for j in range(len(self.models))]

    def canonical(self, base: _Base | None = None, touched: int | None = None,
                  canon: bool = True) -> tuple[tuple[Any, ...], tuple[int, ...]]:
        """Key up to renaming sessions (they are interchangeable) and the order used:
        ``order[j]`` is the session of this configuration at canonical position ``j``.

        ``base`` (the parent's keys, ranks and unread sets) saves the snapshots of untouched
        sessions when the event only appended a new, highest index and the frontier stayed:
        their ranks are then unchanged. ``canon=False``: the snapshots without the model's
        ``canon`` methods (see :func:`snapshot.compiled
        <acp_model.model.snapshot.compiled>`).
        """
        if len(self.models) == 1:  # the common case: no renaming, one rank
            return (self._single_key(canon),), (0,)
        joint = self._reused_ranks(base, touched, canon)
        if joint is not None and base is not None and touched is not None:
            keys = list(base.keys)
            keys[touched] = self._session_key(touched, joint, canon=canon)
        else:
            keys = self.session_keys(canon)
        try:
            order = tuple(sorted(range(len(keys)), key=keys.__getitem__))
        except TypeError:  # an unset or dead index (None) against a rank at one place
            order = tuple(sorted(range(len(keys)), key=lambda j: _total(keys[j])))
        return tuple(keys[j] for j in order), order

    def _single_key(self, canon: bool = True) -> tuple[Any, ...]:
        """:meth:`_session_key` of the only session (see :func:`single_key`)."""
        _, snap, indices = snapshot.compiled(type(self.models[0]), canon, bool(self.ctx.product))
        return single_key(self, snap, indices)

    def _reused_ranks(self, base: _Base | None, touched: int | None, canon: bool = True
                      ) -> dict[int, int] | None:
        """The parent's joint ranks extended by the touched session's new unread indices, when
        the frontier stayed and they are all above the parent's (None: rank afresh)."""
        if base is None or touched is None or self.ctx.frontier != base.frontier:
            return None
        now = self._session_unread(touched, canon)
        if not base.unread[touched] <= now:
            return None  # an index was dropped: ranks above it move
        extra = sorted(now - base.unread[touched])
        if not extra:
            return base.rank
        if base.rank and extra[0] < max(base.rank):
            return None
        rank = dict(base.rank)
        for i in extra:
            rank[i] = len(rank)
        return rank

    def base(self, keys: tuple[Any, ...], canon: bool = True) -> _Base:
        unread = [self._session_unread(j, canon) for j in range(len(self.models))]
        all_unread = sorted(set().union(*unread))
        return _Base(self.ctx.frontier, {i: n for n, i in enumerate(all_unread)}, unread, keys)

    def reorder(self, order: tuple[int, ...]) -> None:
        if order != tuple(range(len(order))):
            self.models = [self.models[j] for j in order]
            self.obs = [self.obs[j] for j in order]
            self.compacted = [self.compacted[j] for j in order]


def _total(value: Any) -> Any:
    """``value`` ordered with None below everything else, at any depth: the sessions' keys
    hold None for an index unset or dead (``snapshot``) where another session's holds its
    rank. It orders every two keys the plain comparison can as that does (None meets None
    as equal), so a configuration's sessions come in the same order whichever way they were
    sorted (``Config.canonical`` tries the plain order first: most keys never meet so)."""
    if value is None:
        return (0,)
    if type(value) is tuple:
        return (1, tuple([_total(v) for v in value]))
    return (1, value)


@dataclass(slots=True)
class SingleRanks:
    """A stored one-session configuration's ranks, reused for its successors' keys: a
    successor that kept the frontier and every index, and at most added the next one (above
    all, unread), ranks them alike (see :func:`single_key`)."""

    frontier: int
    held: set[int]
    rank: dict[int, int]
    held_next: set[int]  # ``held`` and the next trace index
    rank_next: dict[int, int]
    any_unread: bool  # an index above the frontier (the configuration can ``sync``)

    @classmethod
    def of(cls, cfg: Config, indices: Callable[..., set[int]]) -> SingleRanks:
        held = _single_held(cfg, indices)
        return cls.ranked(cfg, held, _single_rank(held, cfg.ctx.frontier))

    @classmethod
    def ranked(cls, cfg: Config, held: set[int], rank: dict[int, int]) -> SingleRanks:
        """From the indices ``cfg`` holds and their ranks (its key made them already)."""
        n = cfg.next_idx
        unread = len(held) - sum(1 for i in held if i <= cfg.ctx.frontier)
        return cls(cfg.ctx.frontier, held, rank, held | {n}, {**rank, n: unread}, unread > 0)


    def of_held(self, held: set[int], cfg: Config) -> dict[int, int]:
        """The ranks of the indices ``cfg`` (a successor) holds, ``held`` its model's (the
        observer's added here): these ranks when they still hold (see :func:`single_key`)."""
        wc = cfg.obs[0].work_cancels
        if wc:
            held.update(wc)
        f = cfg.ctx.frontier
        if self.frontier == f:
            if held == self.held:
                return self.rank
            if held == self.held_next:
                return self.rank_next
        return _single_rank(held, f)


def _single_held(cfg: Config, indices: Callable[..., set[int]]) -> set[int]:
    held = indices(cfg.models[0])
    if cfg.obs[0].work_cancels:
        held.update(cfg.obs[0].work_cancels)
    return held


def _single_rank(held: set[int], frontier: int) -> dict[int, int]:
    ordered = sorted(held)
    read = bisect.bisect_right(ordered, frontier)
    return {i: k - read for k, i in enumerate(ordered)}


def _ranks(held: set[int], cfg: Config, prior: SingleRanks | None) -> dict[int, int]:
    """The ranks of the indices ``cfg``'s model holds (``held``, the observer's added here),
    ``prior``'s when they still hold (see :func:`single_key`)."""
    if prior is not None:
        return prior.of_held(held, cfg)
    wc = cfg.obs[0].work_cancels
    if wc:
        held.update(wc)
    return _single_rank(held, cfg.ctx.frontier)


def single_key(cfg: Config, snap: Callable[..., Any], indices: Callable[..., set[int]],
               prior: SingleRanks | None = None) -> tuple[Any, ...]:
    """The key of a one-session configuration's session, in one pass: its read indices rank
    by their order below zero and its unread ones from zero up, so one sorted list gives both
    (``session_ranks`` over ``joint_ranks`` would give the same ranks). ``snap`` and
    ``indices`` are the model class's generated functions (:func:`snapshot.compiled
    <acp_model.model.snapshot.compiled>`), which the explorer looks up once per run;
    ``prior``, the predecessor's ranks, saves sorting when they still hold."""
    return single_key_ranked(cfg, snap, indices, prior)[0]


def single_key_ranked(cfg: Config, snap: Callable[..., Any], indices: Callable[..., set[int]],
                      prior: SingleRanks | None = None
                      ) -> tuple[tuple[Any, ...], dict[int, int]]:
    """:func:`single_key` and the ranks it used (their keys: every index held, so the
    configuration's :class:`SingleRanks` follow from them, :meth:`SingleRanks.ranked`)."""
    m = cfg.models[0]
    obs = cfg.obs[0]
    wc = obs.work_cancels
    rank = _ranks(indices(m), cfg, prior)
    return (snap(m, rank), tuple([rank[i] for i in wc]) if wc else (), obs.cancelled), rank


def single_key_keyed(cfg: Config, keyed: Callable[..., Any], prior: SingleRanks
                     ) -> tuple[tuple[Any, ...], dict[int, int]]:
    """:func:`single_key_ranked` through the model's generated ``keyed`` (:func:`snapshot.keyed
    <acp_model.model.snapshot.keyed>`: indices, ranks and snapshot in one call), for a context
    that judges by one reading."""
    obs = cfg.obs[0]
    wc = obs.work_cancels
    snap, rank = keyed(cfg.models[0], prior.of_held, cfg)
    return (snap, tuple([rank[i] for i in wc]) if wc else (), obs.cancelled), rank


def obligations(m: SessionModel, readings: Readings) -> list[str]:
    """The rules a session still owes at this point (empty: quiescent).

    The model's own ``obligations()``, which is also what ``Monitor.finish`` judges at the
    end of a trace. ``readings`` is kept for callers; the model carries its readings.
    """
    return [o.check.rule for o in m.obligations()]


# Plain references to the members the observers compare on every edge (an enum member read
# through its class goes through the enum type's __getattr__ hook, several times slower).
_CANCEL, _WITHDRAW, _ANSWER, _IDLE = (Event.CANCEL, Event.PROMPT_CANCEL_REQUEST,
                                      Event.PERMISSION_ANSWER, Event.IDLE_REPORTED)
_ALLOW = Answer.ALLOW


def _observe(obs: Observer, src_state: str, action: Move, idx: int) -> Observer:
    e = action.event
    if e == _CANCEL:
        wc = (*obs.work_cancels, idx) if src_state in WORK else obs.work_cancels
        return Observer(wc, True)
    if e == _WITHDRAW or (e == _ANSWER and action.arg[1] != _ALLOW):
        return Observer(obs.work_cancels, True)
    if e == _IDLE and src_state in WORK:
        return Observer((), obs.cancelled)
    return obs


# the rule a stop reason missing where work ends breaks: a MUST in the seed, a SHOULD in
# sdk-2.4.0 (an idle without one is then allowed, with its warning)
STOP_REASON_RULE = "STATE-03"


def _edge_breaks(obs: Observer, src_state: str, action: Move, frontier: int,
                 warned: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Edge properties (b) and (e), judged by the observers, for an edge the model allowed
    (``warned``: the rules it warned)."""
    if action.event != _IDLE:
        return ()
    out = []
    reason = action.arg
    if src_state in WORK:
        if reason != StopReason.CANCELLED and any(i <= frontier for i in obs.work_cancels):
            out.append("b")
        if reason is None and STOP_REASON_RULE not in warned:
            out.append("e")  # allowed with no word from the rule that asks for a reason
    if reason == StopReason.CANCELLED and not obs.cancelled:
        out.append("e")
    return tuple(out)


def _label(cfg: Config) -> str:
    """Compact node label: per session, the state and the records the model holds."""
    parts = []
    f = cfg.ctx.frontier
    for m in cfg.models:
        bits = [m.state]
        if m.queue.prompts:
            bits.append("p:" + "".join(p.status[0] for p in m.queue.prompts))
        if m.cancel_book.cancels:
            bits.append("c:" + "".join(c.status + ("r" if c.idx <= f else "")
                                       for c in m.cancel_book.cancels))
        if m.perm_book.perms:
            bits.append("q:" + "".join(p.state[0] for p in m.perm_book.perms.values()))
        parts.append(" ".join(bits))
    return " | ".join(parts)


def _info(cfg: Config, rs: Sequence[Readings]) -> dict[str, Any]:
    return {"states": tuple(m.state for m in cfg.models), "label": _label(cfg),
            "obligations": [tuple(sorted({o for m in cfg.models for o in obligations(m, r)}))
                            for r in rs]}
