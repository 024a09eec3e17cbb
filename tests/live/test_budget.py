"""``--time-budget`` bounds the search; each failure then has its own ``--minimize-budget``.

The bound is the budget, twice the minimize budget per failure (minimizing, then its replays)
and the slack the design states (fuzzing/budget.py: the larger of 10 % and 10 s); the test
measures the process's whole wall time, interpreter start included, on agents whose bugs make
every wait run out (the worst case for a budget). An agent that never answers a prompt, the
probe's wait included, is bounded in tests/live/test_probe.py
(test_an_agent_that_never_answers_prompts_fails_prompt_04), on the same run that proves its
PROMPT-04 failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_model.agents import mutants
from acp_model.fuzzing.budget import slack

HOSTILE = Path(__file__).parents[1] / "hostile"
REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]


MINIMIZE = 3.0  # each failure's own budget (and as much for its replays)


def _fuzz(tmp_path: Path, budget: float, *agent: str,
          options: tuple[str, ...] = ()) -> tuple[float, dict, str]:
    report = tmp_path / "report.json"
    started = time.monotonic()
    # a 1 s deadline: every wait still runs out, three of them where a 3 s one ran out once
    proc = subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--time-budget", f"{budget:g}",
         "--minimize-budget", f"{MINIMIZE:g}",
         "--deadline", "1", "--seed", "1", "--report", str(report),
         "--out", str(tmp_path / "out"), *options, "--", *agent],
        capture_output=True, text=True, timeout=budget * 6 + 60)
    took = time.monotonic() - started
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return took, json.loads(report.read_text()), proc.stdout


@pytest.mark.parametrize("mutant", ["cancel_no_idle", "busy_prompt_deadlock"])
def test_a_hanging_mutant_ends_within_budget_and_slack(mutant: str, tmp_path: Path) -> None:
    """Every turn of these mutants leaves a wait to run out: minimizing and replays are
    bounded by each failure's own budget (they once ran unbounded: a 60 s budget took 123 s
    and 237 s).

    Whether 6 s of random programs reach the trigger (a cancel during work) is chance, and a
    loaded machine runs fewer of them (ci-69 ran 4 examples, none with it: a pass, nothing to
    bound). So a first run searches until the mutant's rule fails (``--stop-on``, a budget
    that only caps it) into an example database, and the measured run replays the failing
    examples first: it has failures to minimize from its first examples, whatever the load."""
    rule = mutants.BY_NAME[mutant].rule
    database = ("--db", str(tmp_path / "db"))
    _, seeded, _ = _fuzz(tmp_path / "search", 60.0, *REFERENCE, "--mutant", mutant,
                         options=(*database, "--stop-on", rule))
    # the mutant's rule stops the search at once; a sibling failure of the same fault (ci-71:
    # CANCEL-07 without CANCEL-06 in 60 s) fills the database as well
    assert seeded["verdict"] == "fail", seeded
    budget = 6.0
    took, report, out = _fuzz(tmp_path, budget, *REFERENCE, "--mutant", mutant,
                              options=database)
    assert report["verdict"] == "fail", out
    failures = len(report["counterexamples"])
    bound = budget + slack(budget) + failures * 2 * MINIMIZE
    assert took <= bound, f"{took:.1f} s for a {budget:g} s budget and {failures} failure(s)\n{out}"
    for ce in report["counterexamples"]:  # each failure's minimizing kept to its budget
        assert ce["minimize"]["seconds"] <= MINIMIZE + 1.5, ce["minimize"]
    phases = report["summary"]["phases"]
    assert "generation" in phases and "minimizing" in phases and "replaying" in phases
    assert "time: " in out  # the summary prints each phase's time


def test_a_probe_that_spends_the_budget_on_a_silent_agent_is_no_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The --spec auto probe waits its whole deadline for its prompt's answer: with a budget
    no longer than that wait nothing is left for an example, so nothing of the lifecycle is
    judged, and that is not a pass. (The probe's 10 s wait, shortened to 2 s: a budget the
    probe spends is the same case at any length.)"""
    from acp_model.cli.main import main
    from acp_model.fuzzing import revision

    monkeypatch.setattr(revision, "PROBE_DEADLINE", 2.0)
    report = tmp_path / "report.json"
    code = main(["fuzz", "--time-budget", "2", "--seed", "1", "--report", str(report), "--",
                 sys.executable, str(HOSTILE / "mute_prompts.py")])
    assert code == 2
    doc = json.loads(report.read_text())
    assert doc["verdict"] == "error"
    assert doc["spec"]["fallback"] is True
    assert "nothing of the prompt lifecycle was judged" in doc["unusable"]
