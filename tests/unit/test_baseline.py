"""A baseline accepts known failures; a run fails only on others; stale entries are reported."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_model.cli.main import main
from acp_model.report.baseline import Baseline, BaselineError, Entry, from_report, judge, load

REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]


def _report(*failed: str, exercised: dict[str, int] | None = None,
            version: str | None = "1.0") -> dict[str, Any]:
    return {"violations": [{"rule": r, "level": "fail", "message": f"{r} broken"}
                           for r in failed],
            "rules": [{"id": r, "exercised": n} for r, n in (exercised or {}).items()],
            "agent_info": {"name": "a", "version": version} if version else None}


def _baseline(tmp_path: Path, *entries: Entry, stale_after: int = 1) -> Baseline:
    return Baseline(tmp_path / "b.toml", list(entries), stale_after)


def test_a_failure_in_the_baseline_is_accepted_and_others_are_new(tmp_path: Path) -> None:
    b = _baseline(tmp_path, Entry("CANCEL-07", note="upstream #1"))
    j, _ = judge(b, _report("CANCEL-07", "PROMPT-04"))
    assert [a["rule"] for a in j.accepted] == ["CANCEL-07"]
    assert j.accepted[0]["note"] == "upstream #1"
    assert [n["rule"] for n in j.new] == ["PROMPT-04"]
    assert j.failed(strict=False)
    j, _ = judge(b, _report("CANCEL-07"))
    assert not j.failed(strict=True) and not j.stale


def test_an_entry_whose_rule_passes_is_stale(tmp_path: Path) -> None:
    b = _baseline(tmp_path, Entry("CANCEL-07"), Entry("CANCEL-06"))
    j, _ = judge(b, _report("CANCEL-07", exercised={"CANCEL-06": 12}))
    assert [s["rule"] for s in j.stale] == ["CANCEL-06"]
    assert "exercised its rule 12 time(s) and it passed" in j.stale[0]["why"]
    assert not j.failed(strict=False)
    assert j.failed(strict=True)


def test_stale_after_counts_runs_without_the_failure(tmp_path: Path) -> None:
    b = _baseline(tmp_path, Entry("CANCEL-06"), stale_after=3)
    state: dict[str, int] = {}
    for run in range(1, 4):
        j, state = judge(b, _report(), state)
        assert state == {"CANCEL-06": run}
        assert bool(j.stale) == (run == 3), run
    assert "not reached" in j.stale[0]["why"] or "did not reach" in j.stale[0]["why"]
    j, state = judge(b, _report("CANCEL-06"), state)  # seen again: the count starts over
    assert state == {"CANCEL-06": 0} and not j.stale


def test_an_entry_for_another_agent_version_accepts_nothing(tmp_path: Path) -> None:
    b = _baseline(tmp_path, Entry("CANCEL-07", agent_version="0.9"))
    j, _ = judge(b, _report("CANCEL-07", version="1.0"))
    assert [n["rule"] for n in j.new] == ["CANCEL-07"]
    assert [e.rule for e in j.not_applying] == ["CANCEL-07"]
    assert not j.stale


def test_written_baseline_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "b.toml"
    path.write_text(from_report(_report("CANCEL-07", "PROMPT-04", "CANCEL-07")))
    b = load(path)
    assert [(e.rule, e.agent_version) for e in b.entries] == [("CANCEL-07", "1.0"),
                                                             ("PROMPT-04", "1.0")]
    assert b.entries[0].note == "CANCEL-07 broken"


@pytest.mark.parametrize(("text", "says"), [
    ("accept = [", "not valid TOML"),
    ("[[accept]]\nnote = 'x'\n", "`rule`"),
    ("[[accept]]\nrule = 'NOPE-1'\n", "unknown rule 'NOPE-1'"),
    ("[[accept]]\nrule = 'CANCEL-07'\ntypo = 1\n", "unknown key(s) typo"),
    ("stale_after = 0\n", "stale_after"),
    ("colour = 1\n", "unknown key(s) colour"),
])
def test_a_bad_baseline_is_a_usage_error(text: str, says: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "b.toml"
    path.write_text(text)
    with pytest.raises(BaselineError, match=r"b\.toml"):
        load(path)
    assert main(["fuzz", "--baseline", str(path), "--", *REFERENCE]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_baseline_write_needs_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    (tmp_path / "r.json").write_text("{not json")
    assert main(["baseline", "write", str(tmp_path / "r.json"), "-o",
                 str(tmp_path / "b.toml")]) == 2
    assert "not a JSON report" in capsys.readouterr().err


@pytest.mark.slow
def test_a_run_fails_only_on_failures_not_in_the_baseline(tmp_path: Path) -> None:
    """The mutant's CANCEL-07 is accepted; a CANCEL-06 entry (cancelled turns do end) is
    stale, which --baseline-strict makes a failure."""
    baseline = tmp_path / "acp-baseline.toml"
    baseline.write_text('[[accept]]\nrule = "CANCEL-07"\nnote = "issue #7"\n\n'
                        '[[accept]]\nrule = "CANCEL-06"\n')
    # until the mutant's failure is found (the budget: a loaded machine's cap)
    words = ["fuzz", "--time-budget", "60", "--stop-on", "CANCEL-07", "--seed", "1",
             "--replay-runs", "1", "--baseline", str(baseline),
             "--report", str(tmp_path / "r.json"), "--",
             *REFERENCE, "--mutant", "cancel_as_end_turn"]
    assert main(words) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "fail"  # the agent's verdict is kept; the baseline's is beside
    assert report["baseline"]["verdict"] == "pass"
    assert [a["rule"] for a in report["baseline"]["accepted"]] == ["CANCEL-07"]
    assert [s["rule"] for s in report["baseline"]["stale"]] == ["CANCEL-06"]
    assert main([*words[:1], "--baseline-strict", *words[1:]]) == 1
