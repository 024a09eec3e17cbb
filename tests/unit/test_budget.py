"""``--time-budget`` bounds the whole run: generation, minimizing and replays.

The bound is the budget plus the slack the design states (fuzzing/budget.py: the larger of
10 % and 10 s); the test measures the process's whole wall time, interpreter start included,
on agents whose bugs make every wait run out (the worst case for a budget).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_model.fuzzing.budget import DRAIN_SHARE, RESERVE, Budget, slack
from acp_model.fuzzing.stop import Stop

HOSTILE = Path(__file__).parents[1] / "hostile"
REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]


def test_slack_is_ten_percent_or_ten_seconds() -> None:
    assert slack(30) == 10.0
    assert slack(300) == 30.0


def test_a_failure_moves_generations_end_earlier() -> None:
    budget = Budget(100.0, start=1000.0)
    assert budget.generation_end(found=False) == 1100.0
    assert budget.generation_end(found=True) == 1100.0 - RESERVE * 100.0
    # the last example's teardown may wait for what the agent owes: that ends by the end too
    assert budget.generation_end(found=False, drain=6.0) == 1094.0
    assert budget.generation_end(found=False, drain=600.0) == 1100.0 - DRAIN_SHARE * 100.0
    assert budget.generation_end(found=True, drain=600.0) == \
        1100.0 - (DRAIN_SHARE + RESERVE) * 100.0
    assert Budget(None).generation_end(found=True) is None


def test_each_failure_gets_a_share_of_what_is_left() -> None:
    budget = Budget(60.0)
    assert 29.0 < budget.share(2) <= 30.0
    assert Budget(None).share(3) == float("inf")


def test_the_cutoff_fires_at_its_time_or_on_the_parents_stop() -> None:
    budget = Budget(0.3)
    parent = Stop()
    with budget.cutoff(parent) as cut:
        assert cut.event.wait(5.0)  # the budget's end, without any stop request
    assert not parent.requested
    parent = Stop()
    with Budget(100.0).cutoff(parent) as cut:
        assert not cut.requested
        parent.request()
        assert cut.event.wait(5.0)


def test_phases_are_timed() -> None:
    budget = Budget(None)
    budget.enter("generation")
    budget.enter("minimizing")
    budget.close()
    assert set(budget.seconds()) == {"generation", "minimizing"}


def _fuzz(tmp_path: Path, budget: float, *agent: str) -> tuple[float, dict, str]:
    report = tmp_path / "report.json"
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--time-budget", f"{budget:g}",
         "--seed", "1", "--report", str(report), "--out", str(tmp_path / "out"), "--", *agent],
        capture_output=True, text=True, timeout=budget * 6 + 60)
    took = time.monotonic() - started
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return took, json.loads(report.read_text()), proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("mutant", ["cancel_no_idle", "busy_prompt_deadlock"])
def test_a_hanging_mutant_ends_within_budget_and_slack(mutant: str, tmp_path: Path) -> None:
    """Every turn of these mutants leaves a wait to run out: minimizing and replays used to
    come on top of the budget (a 60 s budget took 123 s and 237 s)."""
    budget = 10.0
    took, report, out = _fuzz(tmp_path, budget, *REFERENCE, "--mutant", mutant)
    assert report["verdict"] == "fail"
    assert took <= budget + slack(budget), f"{took:.1f} s for a {budget:g} s budget\n{out}"
    phases = report["summary"]["phases"]
    assert "generation" in phases and "minimizing" in phases and "replaying" in phases
    assert "time: " in out  # the summary prints each phase's time


@pytest.mark.slow
def test_an_agent_that_never_answers_prompts_ends_within_budget_and_slack(
        tmp_path: Path) -> None:
    budget = 30.0  # the probe waits 10 s for the prompt's answer, and falls back
    took, report, _ = _fuzz(tmp_path, budget, sys.executable, str(HOSTILE / "mute_prompts.py"))
    assert report["verdict"] == "fail"
    assert took <= budget + slack(budget), f"{took:.1f} s for a {budget:g} s budget"


@pytest.mark.slow
def test_a_probe_that_spends_the_budget_on_a_silent_agent_is_no_pass(tmp_path: Path) -> None:
    """The --spec auto probe waits 10 s for its prompt's answer: with a 12 s budget nothing is
    left for an example, so nothing of the lifecycle is judged, and that is not a pass."""
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--time-budget", "12", "--seed", "1",
         "--report", str(report), "--", sys.executable, str(HOSTILE / "mute_prompts.py")],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    doc = json.loads(report.read_text())
    assert doc["verdict"] == "error"
    assert "nothing of the prompt lifecycle was judged" in doc["unusable"]
