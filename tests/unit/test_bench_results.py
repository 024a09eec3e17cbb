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


def test_the_reproduction_figures_count_a_re_judged_run_s_shared_sightings() -> None:
    """Re-judging keeps only today's failures in a row's report.json and the run's own record
    under ``recorded``: the kept s12 run's figures counted 0 shared-process sightings where
    the run had 2 (claude-agent-acp v2's SDK-PROMPT-03, kimi-cli v1's SESS-07). Read on s14's
    kimi-cli row (``tests/data/s14-run``): the kept s15 run has no such sighting."""
    from benchmarks import reproduction

    run = Path(__file__).resolve().parents[1] / "data" / "s14-run"
    found = reproduction.reports([str(run)])
    table = reproduction.rows(found)
    failures, shared = reproduction.standing_apart(table)
    recorded = [ce for _, doc in found for ce in (doc.get("recorded") or {})
                .get("counterexamples") or [] if ce.get("standing") == "shared-only"]
    assert recorded and len(shared) == len(recorded)
    assert all(r["standing"] != "shared-only" for r in failures)


def test_five_of_six_needs_five_conclusive_hits() -> None:
    """One conclusive held replay of twelve (gemini-cli v1's V1-LOAD-01 in s13: 1/1, 11 more
    inconclusive) counted as "reproduced at least 5 of 6 times"."""
    from benchmarks.reproduction import reproduced_5_of_6

    assert reproduced_5_of_6(6, 6) and reproduced_5_of_6(5, 6)
    assert not reproduced_5_of_6(4, 6) and not reproduced_5_of_6(1, 1)
    assert not reproduced_5_of_6(0, 0)
