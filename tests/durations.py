"""Durations as data: every run writes what each test took, and the next run schedules from it.

The file (``.test-durations`` at the repository root, ``{node id: seconds}`` as pytest-split
writes it; ``ACPM_TEST_DURATIONS`` names another) is merged, not replaced: a run of a few
tests keeps the others' figures. Collection puts the modules with the longest recorded total
first (a module's tests stay together, so its fixtures are set up once per worker), which with
``--dist worksteal`` leaves no long module to start last on a busy worker. Unknown tests
count as the median. A clone that has no file of its own yet (CI's clean clone) schedules from
the snapshot checked in at ``tests/data/durations.json`` (``make durations-snapshot`` refreshes
it from the local file).
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import pytest

ENV = "ACPM_TEST_DURATIONS"
SNAPSHOT = Path("tests") / "data" / "durations.json"


def durations_path(config: pytest.Config) -> Path:
    return Path(os.environ.get(ENV) or config.rootpath / ".test-durations")


def read_durations(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, int | float)} \
        if isinstance(data, dict) else {}


class Durations:
    """Collects each test's setup + call + teardown time; writes the merged file at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.writes = not hasattr(config, "workerinput")  # an xdist worker only orders
        self.path = durations_path(config)
        self.known = read_durations(self.path) or read_durations(config.rootpath / SNAPSHOT)
        self.seen: dict[str, float] = {}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if not self.known:
            return
        typical = statistics.median(self.known.values())
        module_total: dict[str, float] = {}
        for item in items:
            module = item.nodeid.split("::", 1)[0]
            module_total[module] = module_total.get(module, 0.0) + \
                self.known.get(item.nodeid, typical)
        order = {m: n for n, m in enumerate(sorted(module_total, key=lambda m: -module_total[m]))}
        items.sort(key=lambda item: order[item.nodeid.split("::", 1)[0]])  # stable within

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seen[report.nodeid] = self.seen.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.writes or not self.seen:
            return
        merged = {**(read_durations(self.path) or self.known),
                  **{k: round(v, 3) for k, v in self.seen.items()}}
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(dict(sorted(merged.items())), indent=0) + "\n",
                       encoding="utf-8")
        tmp.replace(self.path)


def configure(config: pytest.Config) -> None:
    """Register everywhere: the workers order their (identical) collections from the file,
    the controller, which receives every report, writes it."""
    config.pluginmanager.register(Durations(config), "acpm-durations")
