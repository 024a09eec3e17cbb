"""The tiers, Hypothesis profiles, durations kept as data (tests/durations.py) and the rule
sweep's options (tests/rule_sweep.py).

A test's tier is its directory, and its markers come from the path (no module-level marks):

* ``tests/unit``: pure Python, no process (model, catalogue, explorer, renderers, docs);
* ``tests/oracle``: the oracle on recorded or built traces;
* ``tests/live``: agent processes, fuzz runs, pytest in pytest (marked ``slow``);
* ``tests/external``: real agents, SDK example agents, browsers, services (``external``).

``make test-fast`` runs the first two (a test there that still fuzzes for seconds keeps its
own ``slow`` mark and is left to ``make test``); ``make test`` runs all four.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests import durations, rule_sweep
from tests.rule_sweep import pytest_addoption

__all__ = ["pytest_addoption", "pytest_configure"]

# The processes the tests start (pytest in pytest, notebooks, scripts) skip the installed
# Hypothesis plugins (hypofuzz, trio) as the acp-model command does: none is used.
os.environ.setdefault("HYPOTHESIS_NO_PLUGINS", "1")

settings.register_profile("acpm-dev", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("acpm-ci", deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("acpm-ci" if os.environ.get("CI") else "acpm-dev")


TESTS = Path(__file__).resolve().parent
TIERS: dict[str, tuple[str, ...]] = {
    "unit": (), "oracle": (), "live": ("slow",), "external": ("external",),
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Markers from the path: the tier's own, and ``slow`` / ``external`` where it says so."""
    for item in items:
        try:
            tier = Path(item.path).resolve().relative_to(TESTS).parts[0]
        except ValueError:
            continue  # collected from elsewhere (notebooks under --nbmake, fuzz/)
        for marker in (tier, *TIERS.get(tier, ())) if tier in TIERS else ():
            item.add_marker(marker)


def pytest_configure(config: pytest.Config) -> None:
    durations.configure(config)
    rule_sweep.pytest_configure(config)
