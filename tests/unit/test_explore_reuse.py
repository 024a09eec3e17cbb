"""What the explorer's search reuses instead of recomputing per edge or per node is what it
would have recomputed (issue 51 step 6): a node's ranks are those its key made, and a
permission book it shares, unchanged, at the horizon it was compacted at forgets nothing."""

from __future__ import annotations

from typing import Any

import pytest

from acp_model.explorer import Bounds, explore
from acp_model.explorer import search as search_mod
from acp_model.explorer.config import (
    Config,
    SingleRanks,
    _single_held,
    _single_rank,
    single_key_keyed,
)
from acp_model.model import snapshot
from acp_model.model.session import SessionModel

# one session with a permission request answered and forgotten (compaction), and a cancel
BOUNDS = Bounds(custom=False, lean=True, reasons=("end_turn", "cancelled"))


def test_a_node_is_expanded_with_the_ranks_its_key_made(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """Every node but the first is ranked once, when it is keyed; its expansion gets those
    ranks, the same as ranking it afresh."""
    ranked = SingleRanks.of.__func__  # type: ignore[attr-defined]
    calls = []

    def of(cls: type[SingleRanks], cfg: Config, indices: Any) -> SingleRanks:
        calls.append(cfg)
        return ranked(cls, cfg, indices)

    expand = search_mod._Search._expand
    compared = []

    def checked(self: Any, u: int, cfg: Config) -> None:
        kept = self.ranks.get(u)
        if kept is not None:
            assert kept == ranked(SingleRanks, cfg, self.indices), u
            compared.append(u)
        expand(self, u, cfg)

    monkeypatch.setattr(SingleRanks, "of", classmethod(of))
    monkeypatch.setattr(search_mod._Search, "_expand", checked)
    exp = explore(bounds=BOUNDS)
    assert len(compared) == exp.nodes - 1
    assert len(calls) == 1  # the initial configuration, keyed before the search


def test_a_shared_book_is_asked_to_compact_only_once_its_horizon_moved(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After every edge the acting session's book forgets nothing more at its horizon (what
    makes skipping the question exact), and the question is asked on fewer edges than there
    are: a book the event did not write, compacted at the same horizon, is not asked."""
    asked = []
    compacts = SessionModel.compacts

    def counted(self: SessionModel) -> bool:
        asked.append(self)
        return compacts(self)

    successor = search_mod._Search._successor
    edges = []

    def checked(self: Any, cfg: Config, s: int, *args: Any) -> Any:
        new, breaks = successor(self, cfg, s, *args)
        m = new.models[s]
        assert new.compacted[s] == m.horizon()
        assert not (m.perm_book.perms and m.perm_book.forgettable(m.horizon()))
        edges.append(s)
        return new, breaks

    monkeypatch.setattr(SessionModel, "compacts", counted)
    monkeypatch.setattr(search_mod._Search, "_successor", checked)
    explore(bounds=BOUNDS)
    forgot = sum(1 for m in asked if compacts(m))
    assert forgot, "the bounds must make the explorer forget a request"
    assert len(asked) < len(edges) // 2


def test_sessions_whose_keys_meet_none_against_a_rank_are_ordered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sessions' keys may hold, at their first difference, None (an index unset or
    dead) against a rank: `explore --sessions 2 --max-permissions 1` met a permission answer
    read in one session and unread in the other, and sorting the sessions raised TypeError.
    They are ordered with None first, as the plain order would tie None with None."""
    from acp_model.spec.readings import DEFAULT

    cfg = Config.initial(SessionModel, 2, DEFAULT)
    dead = ((("idle", ((0, "answered", None),)), (), False))
    live = ((("idle", ((0, "answered", 3),)), (), False))
    monkeypatch.setattr(Config, "session_keys", lambda self, canon=True: [live, dead])
    key, order = cfg.canonical()
    assert order == (1, 0)
    assert key == (dead, live)
    monkeypatch.setattr(Config, "session_keys", lambda self, canon=True: [dead, live])
    assert cfg.canonical() == ((dead, live), (0, 1))


def test_every_successor_keyed_in_one_call_has_the_key_made_afresh(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The search keys a successor through the generated ``keyed`` (indices, the parent's
    ranks when they still hold, and the snapshot in one call, ``snapshot.keyed``): on every
    edge of a run that key and its ranks are those made from scratch (``Config.canonical``,
    the ranks of the indices held), so the faster key cannot drift from the reference."""
    keyed = []

    def checked(cfg: Config, fused: Any, prior: SingleRanks) -> Any:
        key, rank = single_key_keyed(cfg, fused, prior)
        fresh, _ = cfg.canonical()
        assert (key,) == fresh
        held = _single_held(cfg, snapshot.compiled(SessionModel)[2])
        assert rank == _single_rank(held, cfg.ctx.frontier)
        keyed.append(cfg)
        return key, rank

    monkeypatch.setattr(search_mod, "single_key_keyed", checked)
    exp = explore(bounds=BOUNDS)
    assert len(keyed) == len(exp.edges)
