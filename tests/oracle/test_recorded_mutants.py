"""Mutants whose bug does not depend on timing, judged from a transcript recorded once
(tests/data/transcripts; re-record: ``python -m tests.live.agents.record_transcripts``): the
oracle names the mutant's rule at the level it had when recorded. The live tier checks that
the agent still behaves as recorded (test_mutants); the racy mutants are fuzzed live only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_model.agents import mutants as zoo
from acp_model.oracle.offline import check_records
from acp_model.spec.readings import DEFAULT
from acp_model.trace.format import read_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "transcripts"
INDEX: dict[str, dict[str, str]] = json.loads((DATA / "index.json").read_text())


def test_most_mutants_are_judged_from_a_recording() -> None:
    assert set(INDEX) <= set(zoo.BY_NAME)
    assert len(INDEX) >= 30, sorted(set(zoo.BY_NAME) - set(INDEX))
    assert sorted(p.stem for p in DATA.glob("*.jsonl")) == sorted(INDEX)
    for name, entry in INDEX.items():
        assert entry["rule"] == zoo.BY_NAME[name].rule
        assert entry["spec"] == zoo.BY_NAME[name].revisions[0]


@pytest.mark.parametrize("name", sorted(INDEX))
def test_a_recorded_mutant_is_judged_under_its_rule(name: str) -> None:
    entry = INDEX[name]
    report = check_records(read_trace(DATA / f"{name}.jsonl"),
                           readings=DEFAULT.parse([f"SPEC={entry['spec']}"]), open_at_end=True)
    levels = {v["rule"]: str(v["level"]) for v in report["violations"]}
    assert levels.get(entry["rule"]) == entry["level"], report["violations"]
    if entry["level"] == "fail":
        assert report["verdict"] == "fail"
