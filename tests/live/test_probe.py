"""``--spec auto``'s probe never decides a run's fate, and never swallows a signal.

An agent that never answers ``session/prompt`` used to end ``--spec auto`` runs with a usage
error and no report, hiding the PROMPT-04 failure it is; a slow starter met the same wall; a
Ctrl-C during the probe was swallowed (the signal guard came after it).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.revision import PROBE_DEADLINE, resolve
from acp_model.fuzzing.stop import Interrupted, Stop
from tests.live.test_interrupt import Run

pytestmark = pytest.mark.slow  # fuzz runs against live agents

HOSTILE = Path(__file__).resolve().parents[1] / "hostile"
MUTE = [sys.executable, str(HOSTILE / "mute_prompts.py")]


def test_an_agent_that_never_answers_prompts_fails_prompt_04(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """Default options (``--spec auto``): the probe falls back, the run reports PROMPT-04,
    and the whole run, the probe's wait included, ends within the budget and its slack (an
    agent that never answers makes every prompt's wait run out)."""
    from acp_model.cli.main import main
    from acp_model.fuzzing import revision
    from acp_model.fuzzing.budget import failure_budget, slack

    monkeypatch.setattr(revision, "PROBE_DEADLINE", 3.0)  # waited out in full: 10 s by default
    report_path = tmp_path / "r.json"
    # a fixed seed: an unseeded program may withdraw every prompt it sends ($/cancel_request),
    # and a withdrawn prompt left unanswered is CANCEL-14, not PROMPT-04
    # the budget bounds the whole run, the probe's 3 s included (fuzzing/budget.py)
    started = time.monotonic()
    code = main(["fuzz", "--time-budget", "12", "--deadline", "1", "--max-examples", "5",
                 "--seed", "1", "--replay-runs", "1", "--minimize-budget", "3",
                 "--report", str(report_path), "--",
                 *MUTE])
    took = time.monotonic() - started
    assert code == 1
    report = json.loads(report_path.read_text())
    # each failure has its own minimizing and replay budgets on top (fuzzing/budget.py)
    after = sum(sum(failure_budget(3)) for _ in report["counterexamples"])
    assert took <= 12 + after + slack(12), f"{took:.1f} s for a 12 s budget (+{after:g} s)"
    assert report["verdict"] == "fail"
    failed = {v["rule"] for v in report["violations"] if v["level"] == "fail"}
    assert "PROMPT-04" in failed, report["violations"]
    assert report["spec"]["fallback"] is True and report["spec"]["revision"] == "seed"
    assert "the probe could not decide" in report["spec"]["evidence"]
    assert any(n.startswith("--spec auto: ") for n in report["notes"])


def test_a_slow_starter_is_probed_not_refused() -> None:
    """Answers 4 s late (past the 3 s deadline, within the probe's own)."""
    assert PROBE_DEADLINE > 4
    cfg = resolve(FuzzConfig(argv=[*MUTE, "--slow", "4"], spec="auto", deadline=3.0))
    assert cfg.decision is not None and not cfg.decision.fallback
    assert cfg.decision.evidence.startswith("probe: ") and cfg.decision.revision == "seed"


def test_a_patient_agents_probe_waits_its_patience_longer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A profiled agent's patience lengthens the probe's prompt wait (its first model round
    trip on a loaded machine): an answer 1.5 s late, past a 1 s probe deadline, decides the
    revision at patience 3 and is a fallback at patience 1."""
    from acp_model.fuzzing import revision

    monkeypatch.setattr(revision, "PROBE_DEADLINE", 1.0)
    slow = [*MUTE, "--slow", "1.5"]
    patient = resolve(FuzzConfig(argv=slow, spec="auto", deadline=0.5, patience=3.0))
    assert patient.decision is not None and not patient.decision.fallback, patient.decision
    hasty = resolve(FuzzConfig(argv=slow, spec="auto", deadline=0.5))
    assert hasty.decision is not None and hasty.decision.fallback
    assert "not answered" in hasty.decision.evidence or "within 1 s" in hasty.decision.evidence


def test_a_stop_request_ends_the_probe_at_once() -> None:
    stop = Stop()
    started = time.monotonic()
    import threading

    threading.Timer(0.5, stop.request).start()
    with pytest.raises(Interrupted):
        resolve(FuzzConfig(argv=MUTE, spec="auto"), stop)
    assert time.monotonic() - started < 1.6  # 0.5 s, then within the 0.1 s poll (loaded CI)


def test_the_probe_waits_for_nothing_past_the_budgets_end() -> None:
    """An agent that never answers initialize: the probe's 30 s start-up wait ends at the
    budget's end (here 1 s away), and the agent is then ended without the polite grace."""
    hang = [sys.executable, str(HOSTILE / "hang.py")]
    started = time.monotonic()
    cfg = resolve(FuzzConfig(argv=hang, spec="auto"), Stop(), until=started + 1.0)
    took = time.monotonic() - started
    assert cfg.decision is not None and cfg.decision.fallback
    assert "before the time budget's end" in cfg.decision.evidence
    assert took < 3.0, f"the probe took {took:.1f} s for 1 s left"  # 30 s without the bound


def test_a_budget_the_probe_spends_still_bounds_the_run(tmp_path: Path) -> None:
    """`--time-budget 3` on an agent that never answers and ignores SIGTERM: the whole run
    (probe, its agent's end, the run's own attempt, writing) ends within budget + slack."""
    from acp_model.cli.main import main
    from acp_model.fuzzing.budget import slack

    report = tmp_path / "r.json"
    started = time.monotonic()
    main(["fuzz", "--time-budget", "3", "--report", str(report), "--",
          sys.executable, str(HOSTILE / "ignore_sigterm.py")])
    took = time.monotonic() - started
    assert took <= 3 + slack(3), f"{took:.1f} s for a 3 s budget"
    doc = json.loads(report.read_text())
    assert doc["summary"]["phases"]["probe"] < 3 + 1.0  # cut at the budget's end, then 0.1 s
    assert "before the time budget's end" in doc["spec"]["evidence"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_probe_stops_with_the_report(sig: signal.Signals,
                                                         tmp_path: Path) -> None:
    run = Run(tmp_path, *MUTE)
    run.wait_for("phase: spec")
    started = time.monotonic()
    run.proc.send_signal(sig)
    code = run.proc.wait(timeout=30)
    took = time.monotonic() - started
    assert code == 130, run.seen
    assert took < 5, f"took {took:.1f} s to stop"  # 1 s goal; the interpreter's exit on CI
    report = json.loads(run.report.read_text())
    assert report["summary"]["interrupted"] is True
    assert report["summary"]["examples"] == 0


def _burn() -> None:
    while True:
        pass


def test_sigint_during_the_probe_under_load_exits_within_a_second(tmp_path: Path) -> None:
    """Both cores busy, an agent that takes 30 s to answer initialize: SIGINT during the probe
    ends the run with exit 130 and its report within 1 s of the signal."""
    import multiprocessing

    burners = [multiprocessing.Process(target=_burn, daemon=True)
               for _ in range(max(2, os.cpu_count() or 2))]
    for b in burners:
        b.start()
    try:
        run = Run(tmp_path, *MUTE, "--slow", "30", options=("--spec", "auto"))
        run.wait_for("phase: spec")
        started = time.monotonic()
        run.proc.send_signal(signal.SIGINT)
        code = run.proc.wait(timeout=30)
        took = time.monotonic() - started
    finally:
        for b in burners:
            b.kill()
            b.join()
    assert code == 130, run.seen
    assert took < 1.0, f"took {took:.2f} s from SIGINT to exit"
    report = json.loads(run.report.read_text())
    assert report["summary"]["interrupted"] is True


def test_jobs_workers_get_what_the_probe_left_of_the_budget(tmp_path: Path) -> None:
    """`--jobs 2`: the parent's probe of an agent that never answers ends at the budget's
    end, and the workers are given what is left, not the whole budget again."""
    from acp_model.cli.jobs import worker_args
    from acp_model.cli.main import main

    assert worker_args(["--time-budget", "9", "--time-budget=8", "--seed", "1", "-x"]) == ["-x"]
    report = tmp_path / "r.json"
    main(["fuzz", "--jobs", "2", "--time-budget", "3", "--report", str(report),
          "--", sys.executable, str(HOSTILE / "hang.py")])
    merged = json.loads(report.read_text())
    assert "no answer before the time budget's end" in merged["spec"]["evidence"], merged["spec"]
    # each worker fuzzed for what was left (the 1 s floor), not for the whole 3 s again: read
    # from the workers' own clocks, since the wall time of the run also holds two start-ups,
    # which a loaded machine stretches
    seconds = [w["summary"]["seconds"] for w in merged["workers"]]
    assert len(seconds) == 2 and all(s < 3 for s in seconds), seconds
