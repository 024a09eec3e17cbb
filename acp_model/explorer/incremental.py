"""One session's successors, made from what changed: copy on write, keys kept up to date.

Every edge of the exploration needs its successor's key, and nine in ten lead to a known
configuration. A successor shares the parts of its stored predecessor that the event's
actions cannot change (``snapshot.writes_of``: the parts each action names) and copies the
others (``snapshot.copy_on_write``); compaction runs only when the permission book changed or
the horizon it is judged at moved (otherwise it would remove nothing). Its key reuses the
predecessor's snapshot slices (``snapshot.slices``) for every part that neither changed nor
reads what changed, as long as the trace indices keep their ranks (the frontier stayed and no
index left, at most the event's own was added at the top); otherwise every slice is ranked
afresh. ``verify`` recomputes every key from scratch, and checks that no shared part changed.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import Any

from acp_model.explorer.config import Config, SingleRanks, _single_held, _single_rank
from acp_model.model import snapshot
from acp_model.model.engine import Table

PERM_BOOK = "perm_book"  # the part compaction changes


class IncrementalMismatch(AssertionError):
    """``verify``: a key kept up to date differs from one built afresh, or a shared part
    changed (an action writes a part ``snapshot.writes_of`` does not see)."""


class OneSession:
    """What the one-session search keeps to make successors cheaply: each node's slices."""

    def __init__(self, table: Table, model_cls: type, snap: Callable[..., Any],
                 indices: Callable[..., set[int]], *, verify: bool = False) -> None:
        self.table, self.model_cls = table, model_cls
        cut = snapshot.slices(model_cls)
        self.names, self.funcs, self.reads = cut.names, cut.funcs, cut.reads
        self.snap, self.indices, self.verify = snap, indices, verify
        self.writes: dict[tuple[str, str], frozenset[str]] = {}
        self.nodes: list[tuple[tuple[Any, ...], ...]] = []  # per node: its snapshot by part
        # per node: the horizon its permission book was compacted at (a successor of sync is
        # not compacted: the book it shares may lag behind its own horizon)
        self.compacted: list[int] = []

    def root(self, cfg: Config) -> tuple[Any, ...]:
        """The first node's key (its slices kept)."""
        ranks = SingleRanks.of(cfg, self.indices)
        slices = tuple(f(cfg.models[0], ranks.rank) for f in self.funcs)
        self.nodes.append(slices)
        self.compacted.append(_horizon(cfg))
        return self._key(cfg, slices, ranks.rank)

    def added(self, slices: tuple[tuple[Any, ...], ...], compacted: int) -> None:
        """A new node: its slices and its book's compaction horizon."""
        self.nodes.append(slices)
        self.compacted.append(compacted)

    def derive(self, cfg: Config, event: str, frontier: int) -> tuple[Config, frozenset[str]]:
        """The configuration an event of the only session starts from: a new context at
        ``frontier``, the parts the event may change copied, the others shared; and those
        parts' names."""
        m = cfg.models[0]
        writes = self.writes.get((m.state, event))
        if writes is None:
            actions = self.table.transitions[(m.state, event)].actions
            writes = self.writes[(m.state, event)] = snapshot.writes_of(self.model_cls, actions)
        ctx = cfg.ctx.derive()
        ctx.frontier = frontier
        return Config(ctx, [snapshot.copy_on_write(type(m), writes)(m, ctx)], list(cfg.obs),
                      cfg.next_idx), writes

    def compact(self, u: int, new: Config, writes: frozenset[str]
                ) -> tuple[frozenset[str], int]:
        """Compaction where it can remove something: the book changed, or the horizon it is
        judged at is not the one node ``u``'s book was compacted at. Returns the parts changed
        and the horizon the book is now compacted at."""
        m = new.models[0]
        horizon = _horizon(new)
        if not m.perm_book.perms or (PERM_BOOK not in writes
                                     and self.compacted[u] == horizon):
            return writes, horizon
        if PERM_BOOK not in writes:
            m = new.models[0] = snapshot.copy_on_write(type(m), frozenset({PERM_BOOK}))(
                m, new.ctx)
            writes |= {PERM_BOOK}
        m.compact()
        return writes, horizon

    def key(self, u: int, cfg: Config, new: Config, writes: frozenset[str],
            base: SingleRanks) -> tuple[tuple[Any, ...], tuple[tuple[Any, ...], ...]]:
        """The key of ``new``, a successor of node ``u`` (stored as ``cfg``) whose parts
        ``writes`` were copied, and its slices (kept with the node when it is new)."""
        m = new.models[0]
        held = _single_held(new, self.indices)
        frontier = new.ctx.frontier
        if frontier == base.frontier and held == base.held:
            rank = base.rank
        elif frontier == base.frontier and held == base.held_next:
            rank = base.rank_next
        else:
            rank = _single_rank(held, frontier)
            slices = tuple(f(m, rank) for f in self.funcs)
            return self._checked(u, cfg, new, slices, rank, base), slices
        dirty = set(writes)
        if m.state != cfg.models[0].state:
            dirty.add("state")
        if new.ctx.probable != cfg.ctx.probable:
            dirty.add("ctx")
        parent = self.nodes[u]
        slices = tuple(f(m, rank) if "*" in reads or not reads.isdisjoint(dirty) else old
                       for f, reads, old in zip(self.funcs, self.reads, parent, strict=True))
        return self._checked(u, cfg, new, slices, rank, base), slices

    def _key(self, cfg: Config, slices: tuple[tuple[Any, ...], ...],
             rank: dict[int, int]) -> tuple[Any, ...]:
        wc = cfg.obs[0].work_cancels
        return ((tuple(chain.from_iterable(slices)),
                 tuple([rank[i] for i in wc]) if wc else (), cfg.obs[0].cancelled),)

    def _checked(self, u: int, cfg: Config, new: Config, slices: tuple[tuple[Any, ...], ...],
                 rank: dict[int, int], base: SingleRanks) -> tuple[Any, ...]:
        key = self._key(new, slices, rank)
        if self.verify:
            fresh = self.snap(new.models[0], rank)
            if key[0][0] != fresh:
                raise IncrementalMismatch(f"kept {key[0][0]} != afresh {fresh}")
            if self.snap(cfg.models[0], base.rank) != tuple(chain.from_iterable(self.nodes[u])):
                raise IncrementalMismatch(f"node {u} changed: a shared part was written")
        return key


def _horizon(cfg: Config) -> int:
    """What compaction judges settled permission requests against (``SessionModel.compact``)."""
    return max(cfg.ctx.probable, cfg.ctx.frontier)
