"""The orchestrator against live agents: a stop request at any phase still ends in a written
report, and the outcome of a run states the same verdict its report does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.orchestrator import FuzzRun, Outputs, RunEnd

REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]
MINI = [sys.executable,
        str(Path(__file__).resolve().parents[1] / "fuzz_hostile" / "mini_agent.py")]


def test_a_stop_requested_as_generation_starts_ends_in_an_interrupted_report(
        tmp_path: Path) -> None:
    phases: list[str] = []
    run: FuzzRun | None = None

    def on_phase(name: str) -> None:
        phases.append(name)
        if name == "fuzzing" and run is not None:
            run.stop.request()  # as the CLI's signal handler does

    run = FuzzRun(FuzzConfig(REFERENCE, max_examples=50, seed=1, time_budget=60, spec="auto"),
                  on_phase=on_phase)
    outcome = run.run(Outputs(report=tmp_path / "r.json"))
    assert outcome.end is RunEnd.INTERRUPTED, outcome.result.notes
    assert phases[0] == "spec" and phases[-1] == "writing"  # the probe first, the report last
    assert outcome.result.recorder.examples == 0  # stopped before the first example
    written = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    # nothing was judged: no verdict is owed to the agent (a pass of nothing misled a matrix)
    assert written["summary"]["interrupted"] is True and written["verdict"] == "error"
    assert {"start-up", "probe", "generation"} <= set(written["summary"]["phases"])


def test_an_agent_that_cannot_be_initialized_is_a_void_outcome(tmp_path: Path) -> None:
    outcome = FuzzRun(FuzzConfig([*MINI, "--mode", "refuseinit"], max_examples=3,
                                 spec="seed", time_budget=60)).run()
    assert outcome.end is RunEnd.VOID
    assert outcome.report["verdict"] == "error"
    assert "initialize failed" in (outcome.result.unusable or "")
