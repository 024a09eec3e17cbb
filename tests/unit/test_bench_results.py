"""The benchmark result files the docs site's benchmarks page is rendered from."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from benchmarks import results


def test_a_recorded_command_leaves_out_the_notes(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The page prints a result's notes under its figures; a paragraph of them inside the
    command that reproduces it (``--notes TEXT`` or ``--notes=TEXT``) only hid the command."""
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    monkeypatch.setattr(results, "ROOT", tmp_path)
    monkeypatch.setattr(sys, "argv", ["benchmarks/bench_x.py", "--replays", "6", "--notes",
                                      "a long paragraph", "--jobs", "2", "--notes=more"])
    path = results.record("x", "X", [], notes="a long paragraph")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["command"].endswith("bench_x.py --replays 6 --jobs 2"), doc["command"]
    assert doc["notes"] == "a long paragraph"
