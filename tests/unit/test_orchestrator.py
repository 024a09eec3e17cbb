"""The orchestrator's report phase and typed outcome, on finished runs built without an agent:
what each front-end maps to its exit code or pytest outcome."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_model.cli.common import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, exit_code
from acp_model.fuzzing.actions import Cancel, NewSession
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.orchestrator import FuzzRun, Outputs, RunEnd
from acp_model.fuzzing.recorder import Recorder
from acp_model.fuzzing.run import FuzzResult
from acp_model.oracle.monitor import Violation
from acp_model.report.baseline import Baseline, Entry

CFG = FuzzConfig(["agent"], spec="seed")
RECORD = {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 1, "result": {}}}


def _failing() -> Recorder:
    rec = Recorder()
    rec.failure(Violation("CANCEL-07", "fail", "MUST", 0, "ended end_turn"),
                [NewSession(), Cancel(0)], [RECORD], 0, [])
    return rec


def _finished(rec: Recorder, **kw: object) -> tuple[FuzzRun, FuzzResult]:
    run = FuzzRun(CFG)
    return run, FuzzResult(CFG, rec, [], 1.0, **kw)  # type: ignore[arg-type]


def test_a_run_without_failures_passes_and_writes_every_format_asked_for(
        tmp_path: Path) -> None:
    run, result = _finished(Recorder())
    outputs = Outputs(out=tmp_path / "out", report=tmp_path / "r.json",
                      junit=tmp_path / "r.xml", sarif=tmp_path / "r.sarif",
                      html=tmp_path / "r.html")
    outcome = run.report(result, outputs, extra={"profile": "quick"})
    assert outcome.end is RunEnd.PASSED and exit_code(outcome.end) == EXIT_OK
    written = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert written["verdict"] == "pass" and written["profile"] == "quick"
    assert all((tmp_path / name).stat().st_size for name in ("r.xml", "r.sarif", "r.html"))
    assert "writing" in run.budget.seconds()


def test_a_failure_fails_the_run_and_leaves_its_counterexample_files(tmp_path: Path) -> None:
    run, result = _finished(_failing())
    outcome = run.report(result, Outputs(out=tmp_path))
    assert outcome.end is RunEnd.FAILED and exit_code(outcome.end) == EXIT_FAIL
    assert (tmp_path / "CANCEL-07" / "replay.json").exists()
    assert outcome.files["CANCEL-07"]["replay.json"] == str(tmp_path / "CANCEL-07" /
                                                             "replay.json")
    (ce,) = outcome.report["counterexamples"]
    assert ce["files"] == outcome.files["CANCEL-07"]


def test_a_failure_outranks_an_interrupt_which_outranks_a_void_run() -> None:
    interrupted_failing = _finished(_failing(), interrupted=True)
    assert interrupted_failing[0].report(interrupted_failing[1]).end is RunEnd.FAILED
    interrupted = _finished(Recorder(), interrupted=True, unusable="never answered")
    outcome = interrupted[0].report(interrupted[1])
    assert outcome.end is RunEnd.INTERRUPTED and exit_code(outcome.end) == EXIT_INTERRUPTED
    void = _finished(Recorder(), unusable="it exited before answering initialize")
    outcome = void[0].report(void[1])
    assert outcome.end is RunEnd.VOID and exit_code(outcome.end) == EXIT_USAGE
    assert outcome.report["verdict"] == "error"


@pytest.mark.parametrize(("strict", "end"), [(False, RunEnd.PASSED), (True, RunEnd.FAILED)])
def test_a_baseline_accepts_known_failures_and_strictly_fails_on_stale_entries(
        tmp_path: Path, strict: bool, end: RunEnd) -> None:
    baseline = Baseline(tmp_path / "b.toml", [Entry("CANCEL-07"), Entry("PROMPT-04")], 1)
    run, result = _finished(_failing())
    outcome = run.report(result, baseline=baseline, strict=strict)
    assert outcome.judgement is not None and outcome.judgement.accepts("CANCEL-07")
    assert [s["rule"] for s in outcome.judgement.stale] == ["PROMPT-04"]
    assert outcome.end is end
    assert outcome.report["baseline"]["strict"] is strict
    new = _finished(_failing())
    judged = new[0].report(new[1], baseline=Baseline(tmp_path / "c.toml", [], 1))
    assert judged.end is RunEnd.FAILED


def test_a_revision_the_readings_contradict_is_a_usage_error_or_a_void_result() -> None:
    from acp_model.fuzzing.revision import SpecUndecidable
    from acp_model.spec.readings import DEFAULT

    readings = DEFAULT.parse(["A-04=idle-cancelled"])  # v1 decides A-04=noop
    cfg = FuzzConfig(["agent"], spec="v1", readings=readings)
    with pytest.raises(SpecUndecidable):
        FuzzRun(cfg).fuzz()
    outcome = FuzzRun(cfg).run()  # the library's: no agent was started, nothing judged
    assert outcome.end is RunEnd.VOID
    problem = outcome.result.problem
    assert problem is not None and problem.startswith("--spec v1: reading A-04")
