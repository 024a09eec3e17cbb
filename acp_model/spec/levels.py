"""The verdict vocabulary every layer shares: what breaking a rule costs.

It sits with the rules because a rule's strength (MUST, SHOULD) and a reading's choice decide
it; the model's checks produce it and the reports count it, so both import it from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any


class Level(StrEnum):
    """What a failing check does: its rule's strength decides (``rule``), or a reading does;
    a violation carries the outcome (``fail`` or ``warn``)."""

    RULE = "rule"
    FAIL = "fail"
    WARN = "warn"
    OFF = "off"


class Standing(StrEnum):
    """Where a fuzz run's counterexample was seen (``report.json``'s ``standing``): a fresh
    agent process showed it, or only a long-lived shared one did and no fresh-process replay
    reproduced it, which is reported at :attr:`Level.WARN`, not as a failure."""

    FRESH = "fresh"
    SHARED_ONLY = "shared-only"


def standing_of(measured: tuple[int, int], fresh: tuple[int, int], seen_fresh: bool
                ) -> Standing | None:
    """Where a counterexample stands: ``measured`` (hits, runs) of the reported program's own
    fresh-process replays, ``fresh`` (hits, runs) of every fresh-process replay (minimizing's
    trials of other programs included), ``seen_fresh``: the run showed it in its process's
    first example. Once the reported program was measured, its own replays decide: a program
    that reproduced only during minimizing (a race won once, or another program) and in none
    of the replays that measured it is not one a maintainer can make happen again, and its
    proof is the shared process's (codex-acp v1's CANCEL-07 of the s9 matrix: 0/6 held, 0/6
    free). None: never replayed."""
    hits = measured[0] if measured[1] else fresh[0]
    if hits or seen_fresh:
        return Standing.FRESH
    return Standing.SHARED_ONLY if fresh[1] else None


def reported_standing(ce: Mapping[str, Any]) -> Standing | None:
    """A ``report.json`` counterexample's standing as :func:`standing_of` decides it now (a
    report written before the reported program's own replays decided says ``fresh`` for one
    that reproduced only during minimizing; ``seen_fresh``: absent in such a report)."""
    stored = ce.get("standing")
    if stored != Standing.FRESH:
        return Standing(stored) if stored else None
    measured = (int(ce.get("reproduced") or 0) + int(ce.get("free_reproduced") or 0),
                int(ce.get("replays") or 0) + int(ce.get("free_replays") or 0))
    return standing_of(measured, (1, 1), bool(ce.get("seen_fresh")))
