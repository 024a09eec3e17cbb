"""The durations file: merged on write, and the modules with the longest total run first."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.durations import Durations, read_durations


def _plugin(tmp_path: Path, known: dict[str, float]) -> Durations:
    path = tmp_path / ".test-durations"
    path.write_text(json.dumps(known))
    config: Any = SimpleNamespace(rootpath=tmp_path)
    return Durations(config)


def test_the_longest_module_runs_first_and_keeps_its_order(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path, {"a.py::x": 1.0, "a.py::y": 1.0, "b.py::z": 5.0})
    items: Any = [SimpleNamespace(nodeid=n) for n in ("a.py::x", "a.py::y", "b.py::z", "c.py::new")]
    plugin.pytest_collection_modifyitems(items)
    assert [i.nodeid for i in items] == ["b.py::z", "a.py::x", "a.py::y", "c.py::new"]


def test_a_run_merges_its_figures_into_the_file(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path, {"a.py::x": 1.0, "b.py::z": 5.0})
    for phase in (0.5, 2.0, 0.25):  # setup, call, teardown
        plugin.pytest_runtest_logreport(SimpleNamespace(nodeid="b.py::z", duration=phase))
    plugin.pytest_sessionfinish(SimpleNamespace())
    assert read_durations(tmp_path / ".test-durations") == {"a.py::x": 1.0, "b.py::z": 2.75}


def test_a_clone_without_its_own_file_schedules_from_the_checked_in_snapshot(
        tmp_path: Path) -> None:
    snapshot = tmp_path / "tests" / "data" / "durations.json"
    snapshot.parent.mkdir(parents=True)
    snapshot.write_text(json.dumps({"a.py::x": 1.0, "b.py::z": 5.0}))
    config: Any = SimpleNamespace(rootpath=tmp_path)
    plugin = Durations(config)
    items: Any = [SimpleNamespace(nodeid=n) for n in ("a.py::x", "b.py::z")]
    plugin.pytest_collection_modifyitems(items)
    assert [i.nodeid for i in items] == ["b.py::z", "a.py::x"]
    plugin.pytest_runtest_logreport(SimpleNamespace(nodeid="a.py::x", duration=2.0))
    plugin.pytest_sessionfinish(SimpleNamespace())
    assert read_durations(tmp_path / ".test-durations") == {"a.py::x": 2.0, "b.py::z": 5.0}
    assert read_durations(snapshot) == {"a.py::x": 1.0, "b.py::z": 5.0}  # never written
