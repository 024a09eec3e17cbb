"""``bench_explore.py``'s bound on what a coarser exact key could merge: the bisimulation
classes of an exploration's graph, on hand-made graphs whose classes are known, and on a real
exploration, where the classes must be a bisimulation that keeps what the verdicts read."""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace
from typing import Any

from acp_model.explorer import Bounds, explore
from benchmarks.bench_explore import bisimulation


def graph(edges: list[tuple[int, int, str]], owes: dict[int, tuple[str, ...]] | None = None
          ) -> Any:
    """An exploration's shape with ``edges`` (src, dst, action label), every edge allowed with
    nothing broken, every state ``idle`` owing ``owes[n]`` (default nothing)."""
    owes = owes or {}
    n = 1 + max(max(s, d) for s, d, _ in edges)
    return SimpleNamespace(
        nodes=n, refusals=[],
        edges=[SimpleNamespace(src=s, dst=d, action=SimpleNamespace(label=a, event=a), allowed=1,
                               warns=((),), breaks=(), src_state="idle") for s, d, a in edges],
        info=[{"states": ("idle",), "label": "idle", "obligations": [owes.get(u, ())]}
              for u in range(n)],
        keys=[(((), (), False),) for _ in range(n)])


def classes(block: list[int]) -> list[set[int]]:
    out: dict[int, set[int]] = defaultdict(set)
    for u, b in enumerate(block):
        out[b].add(u)
    return sorted(out.values(), key=min)


def test_alike_branches_merge() -> None:
    # 0 -a-> 1 -b-> 3 and 0 -c-> 2 -b-> 4: 1 and 2 have the same futures, so have 3 and 4
    block = bisimulation(graph([(0, 1, "a"), (0, 2, "c"), (1, 3, "b"), (2, 4, "b")]))
    assert classes(block) == [{0}, {1, 2}, {3, 4}]


def test_a_difference_downstream_splits() -> None:
    # as above, but 4 owes a rule: 3 and 4 differ, and so, one step earlier, do 1 and 2
    block = bisimulation(graph([(0, 1, "a"), (0, 2, "c"), (1, 3, "b"), (2, 4, "b")],
                               owes={4: ("STATE-01",)}))
    assert classes(block) == [{0}, {1}, {2}, {3}, {4}]


def test_a_real_exploration_merges_only_what_verdicts_cannot_tell_apart() -> None:
    exp = explore(bounds=Bounds(custom=False, lean=True, reasons=("end_turn", "cancelled")))
    block = bisimulation(exp)
    assert len(set(block)) < exp.nodes  # this graph has states its verdicts cannot tell apart
    moves: dict[int, dict[str, int]] = defaultdict(dict)
    for e in exp.edges:
        moves[e.src][e.action.label] = block[e.dst]
    refused: dict[int, set[Any]] = defaultdict(set)
    for r in exp.refusals:
        refused[r.src].add((r.action.label, r.rules))
    first: dict[int, int] = {}
    for u, b in enumerate(block):
        v = first.setdefault(b, u)
        assert exp.info[u]["obligations"] == exp.info[v]["obligations"]
        assert exp.info[u]["states"] == exp.info[v]["states"]
        assert refused[u] == refused[v]
        assert moves[u] == moves[v]  # the same actions, into the same classes
