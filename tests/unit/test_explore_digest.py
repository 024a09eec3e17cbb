"""The explored graph is pinned: a speed-up of the explorer may not change a state, an edge, a
refusal or a property verdict (the brief of issue 40). ``benchmarks/explore_digest.py``
hashes them; two small explorations are compared here with the digests the explorer gave
before its speed-ups (``tests/data/explore-digests.json``). The wider comparison (about twenty
cases, minutes) is ``explore_digest.py --save`` on the old code and ``--compare`` on the new.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.explore_digest import digests

PINNED = Path(__file__).resolve().parents[2] / "tests" / "data" / "explore-digests.json"
REGENERATE = ("if the graph was meant to change, rewrite the pins with: python "
              "benchmarks/explore_digest.py --only pinned-perms,pinned-two --save "
              "tests/data/explore-digests.json")


@pytest.mark.parametrize("case", ["pinned-perms", "pinned-two"])
def test_graph_and_verdicts_match_the_pinned_digests(case: str) -> None:
    pinned = json.loads(PINNED.read_text())[case]
    got, _ = digests(case)
    assert got["size"] == pinned["size"], REGENERATE  # states/transitions/refusals first
    assert got["graph"] == pinned["graph"], REGENERATE
    assert got["verdicts"] == pinned["verdicts"], REGENERATE
