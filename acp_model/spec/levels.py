"""The verdict vocabulary every layer shares: what breaking a rule costs.

It sits with the rules because a rule's strength (MUST, SHOULD) and a reading's choice decide
it; the model's checks produce it and the reports count it, so both import it from here.
"""

from __future__ import annotations

from enum import StrEnum


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
