"""A failure stands on a fresh process: one only a long-lived shared process showed, which no
fresh-process replay (held to its recorded schedule, or free) reproduced, is reported as a
warning with its proof, and fails neither the run nor its exit code. Replays are stand-ins
here (the live tiers replay real agents)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from rich.console import Console

from acp_model.fuzzing import shrink
from acp_model.fuzzing.actions import Action, NewSession, Prompt
from acp_model.fuzzing.artifacts import counterexample_text, fuzz_report
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.orchestrator import FuzzOutcome, RunEnd
from acp_model.fuzzing.recorder import Found, Recorder
from acp_model.fuzzing.replay import ReplayOutcome
from acp_model.fuzzing.run import FuzzResult
from acp_model.oracle.monitor import Violation
from acp_model.report.text import counterexample_line

RULE = "CANCEL-07"
PROGRAM: list[Action] = [NewSession(), Prompt(0, [{"type": "text", "text": "go"}])]


def _never(cfg: FuzzConfig, actions: list[Action], rule: str | None,
           abort: threading.Event | None = None, **_: Any) -> ReplayOutcome:
    return ReplayOutcome(False, [], [], None)


def _found(*, fresh: bool) -> Found:
    v = Violation(RULE, "fail", "MUST", 5, "response #5 (stopReason 'end_turn') after a read "
                  "cancel")
    records = [{"dir": "c2a", "t": 0.0, "msg": {"jsonrpc": "2.0", "id": 0,
                                                  "method": "initialize"}}] * 6
    found = Found(RULE, v, list(PROGRAM), records, 5, [list(PROGRAM)] * 3, 1.0, 1.0,
                  candidates=[(list(PROGRAM), [list(PROGRAM)] * 3)])
    found.seen_fresh = fresh
    return found


def _run(found: Found, monkeypatch: pytest.MonkeyPatch) -> tuple[FuzzOutcome, FuzzConfig]:
    monkeypatch.setattr(shrink, "replay_once", _never)
    cfg = FuzzConfig(["agent"], replay_runs=2, minimize_budget=0.3)
    shrink.measure_reproduction(cfg, found)
    recorder = Recorder()
    recorder.found[RULE] = found
    result = FuzzResult(cfg, recorder, [], 1.0)
    return FuzzOutcome(result, fuzz_report(result)), cfg


def test_a_failure_only_a_shared_process_showed_is_a_warning_with_its_proof(
        monkeypatch: pytest.MonkeyPatch) -> None:
    found = _found(fresh=False)
    outcome, cfg = _run(found, monkeypatch)
    assert found.standing == "shared-only" and not found.stands and found.fresh_runs > 0
    report = outcome.report
    assert report["verdict"] == "pass" and outcome.end is RunEnd.PASSED
    (v,) = report["violations"]
    assert v["level"] == "warn" and v["standing"] == "shared-only"
    assert "seen on a shared agent process only, not reproduced" in v["message"]
    (ce,) = report["counterexamples"]
    assert ce["standing"] == "shared-only" and ce["free_replays"] == 2
    assert ce["reproduction"] == "not replayed"  # no schedule was recorded to hold one to
    text = counterexample_text(found, cfg)
    assert "WARNING, not a failure" in text and "#5" in text  # its proof, as the run saw it
    console = Console(record=True, width=200)
    console.print(counterexample_line(ce))
    assert "0/0" not in console.export_text()


def test_a_failure_a_fresh_process_showed_stands_even_unreproduced(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's first example on its process is a fresh process: no earlier state."""
    found = _found(fresh=True)
    outcome, _ = _run(found, monkeypatch)
    assert found.standing == "fresh" and found.stands and not found.verified
    assert outcome.report["verdict"] == "fail" and outcome.end is RunEnd.FAILED


def test_a_failure_never_replayed_is_not_replayed_never_0_of_0() -> None:
    found = _found(fresh=False)
    assert found.standing is None and found.stands  # not replayed: nothing says otherwise
    result = FuzzResult(FuzzConfig(["agent"]), Recorder(found={RULE: found}), [], 1.0)
    (ce,) = fuzz_report(result)["counterexamples"]
    assert ce["reproduction"] == "not replayed"
    console = Console(record=True, width=200)
    console.print(counterexample_line(ce))
    out = console.export_text()
    assert "not replayed" in out and "0/0" not in out


def test_a_program_its_own_replays_never_reproduced_stands_on_no_fresh_process() -> None:
    """Minimizing reproduced some program once, but the reported one reproduced 0/6 held and
    0/6 free (codex-acp v1's CANCEL-07 of the s9 matrix): a maintainer cannot make it happen
    again, and its proof is the shared process's, so it is a warning; the run's first example
    on a fresh process, or replays disabled, keep the older answer."""
    from acp_model.spec.levels import Standing, reported_standing, standing_of

    assert standing_of((0, 12), (1, 184), seen_fresh=False) == Standing.SHARED_ONLY
    assert standing_of((0, 12), (1, 184), seen_fresh=True) == Standing.FRESH
    assert standing_of((1, 12), (1, 184), seen_fresh=False) == Standing.FRESH
    assert standing_of((0, 0), (3, 40), seen_fresh=False) == Standing.FRESH  # not measured
    assert standing_of((0, 0), (0, 0), seen_fresh=False) is None
    old = {"standing": "fresh", "reproduced": 0, "replays": 6, "free_reproduced": 0,
           "free_replays": 6}
    assert reported_standing(old) == Standing.SHARED_ONLY
    assert reported_standing({**old, "free_reproduced": 1}) == Standing.FRESH
    assert reported_standing({"standing": "shared-only"}) == Standing.SHARED_ONLY
