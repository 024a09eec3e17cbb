"""One fuzz run from start-up to its report, the same for every front-end.

``acp-model fuzz`` (and the probe ``--jobs`` runs before its workers), the pytest plugin's
session run and the campaigns all go through :class:`FuzzRun`. It owns the phases in order:
start-up (the scripted model, a profile's home), the ``--spec auto`` probe, generation,
minimizing and replaying each failure (:func:`acp_model.fuzzing.run.fuzz_phases`), then the
report phase (the per-failure files, the JSON report, the baseline's judgement, JUnit, SARIF,
HTML). It returns a :class:`FuzzOutcome` whose :class:`RunEnd` each front-end turns into its
own terms (an exit code, a pytest outcome), so the same agent gets the same verdict whichever
front-end ran it. A stop request (Ctrl-C, SIGTERM) at any moment still ends in a report of
what was found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from acp_model.fuzzing.alone import GateHold
from acp_model.fuzzing.backend import backend
from acp_model.fuzzing.budget import Budget
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.recorder import Recorder
from acp_model.fuzzing.revision import SpecUndecidable, resolve
from acp_model.fuzzing.run import FuzzResult, fuzz_phases
from acp_model.fuzzing.stop import Stop
from acp_model.profiles import Profile
from acp_model.report.baseline import Baseline, Judgement
from acp_model.spec.revisions import AUTO


class RunEnd(StrEnum):
    """How a run ended, in the order a front-end decides it."""

    FAILED = "failed"  # a failure (one the baseline, when given, does not accept)
    INTERRUPTED = "interrupted"  # stopped on request before any failure was found
    VOID = "void"  # nothing judged: a usage, environment or start-up problem no rule covers
    PASSED = "passed"  # no failure (warnings allowed)


@dataclass(frozen=True)
class Outputs:
    """Where a run's report goes: the per-failure folder and each report format (None: not
    written)."""

    out: Path | None = None
    report: Path | None = None
    junit: Path | None = None
    sarif: Path | None = None
    html: Path | None = None

    def write(self, report: dict[str, Any], *, html: Callable[[], str] | None = None,
              sarif: Callable[[], Any] | None = None) -> None:
        """Write ``report`` in each format asked for; ``html`` and ``sarif`` build the page
        and the SARIF locations only when those are asked for."""
        from acp_model.report.document import write_json
        from acp_model.report.html import write_html
        from acp_model.report.junit import write_junit
        from acp_model.report.sarif import write_sarif

        if self.report is not None:
            write_json(report, self.report)
        if self.junit is not None:
            write_junit(report, self.junit)
        if self.sarif is not None:
            write_sarif(report, self.sarif, sarif() if sarif is not None else {})
        if self.html is not None and html is not None:
            write_html(html(), self.html)


@dataclass
class FuzzOutcome:
    """What a run left: its result, its report and the files written for each failure."""

    result: FuzzResult
    report: dict[str, Any]
    files: dict[str, dict[str, str]] = field(default_factory=dict)
    judgement: Judgement | None = None
    strict: bool = False  # a stale baseline entry fails the run too

    @property
    def end(self) -> RunEnd:
        if self.judgement is not None:
            if self.judgement.failed(self.strict):
                return RunEnd.FAILED
        elif self.report["verdict"] == "fail":
            return RunEnd.FAILED
        if self.result.interrupted:
            return RunEnd.INTERRUPTED
        return RunEnd.PASSED if self.result.judged else RunEnd.VOID


class FuzzRun:
    """One agent fuzzed once: its configuration, clock, stop request and recorder, through
    every phase. ``on_progress`` hears the recorder after each example, ``on_phase`` each
    phase's name ("start-up", "spec", "fuzzing", "minimizing R" ...)."""

    def __init__(self, cfg: FuzzConfig, profile: Profile | None = None, *,
                 stop: Stop | None = None, budget: Budget | None = None,
                 on_progress: Callable[[Recorder], None] | None = None,
                 on_phase: Callable[[str], None] | None = None) -> None:
        self.cfg, self.profile = cfg, profile
        self.stop = stop or Stop()
        self.budget = budget or Budget(cfg.time_budget)  # the probe and start-up count too
        self._own_clock = budget is None
        self.recorder = Recorder(on_progress=on_progress, on_phase=on_phase)
        self._phase = on_phase or (lambda _: None)

    def probe(self, running: FuzzConfig) -> FuzzConfig:
        """``running`` with its revision decided (``auto``: one probe prompt, within the
        budget); :class:`SpecUndecidable` when the readings contradict the revision."""
        if running.spec == AUTO and running.decision is None:
            self._phase("spec")
            self.budget.enter("probe")
        return resolve(running, self.stop, self.budget.end)

    def decide(self) -> FuzzConfig:
        """Only the probe, with the scripted model up for it: the configuration every worker
        of ``--jobs`` is then given (its revision decided once)."""
        with backend(self.cfg, self.profile) as running:
            return self.probe(running)

    def fuzz(self, *, strict_spec: bool = True) -> FuzzResult:
        """Start-up, probe, generation, minimizing and replays; an interrupt at any moment
        returns what was found. A revision the readings contradict raises
        :class:`SpecUndecidable` (the CLI's usage error), or without ``strict_spec`` is a void
        result saying so (the library's). The fuzzer's own errors raise
        :class:`~acp_model.fuzzing.run.FuzzerBug`."""
        result: FuzzResult | None = None
        cfg = self.cfg
        gate = GateHold(cfg.minimize_alone, self._phase)
        try:
            if not gate.shared(self.stop):
                raise KeyboardInterrupt
            if self._own_clock and cfg.minimize_alone:  # the wait for the gate is no run's
                self.budget = Budget(cfg.time_budget)
            self.budget.enter("start-up")
            with backend(cfg, self.profile) as running:
                cfg = self.probe(running)
                result = fuzz_phases(cfg, self.recorder, self.stop, self.budget, gate)
        except SpecUndecidable as exc:
            if strict_spec:
                raise
            result = FuzzResult(cfg, self.recorder, [], 0.0,
                                problem=f"--spec {self.cfg.spec}: {exc}")
        except KeyboardInterrupt:
            pass  # the phases handle interrupts themselves; this one landed around them
        finally:
            self.budget.close()
            gate.close()
        if result is None:
            result = FuzzResult(cfg, self.recorder, [], 0.0, interrupted=True)
        result.interrupted = result.interrupted or self.stop.requested
        return result

    def report(self, result: FuzzResult, outputs: Outputs = Outputs(), *,
               baseline: Baseline | None = None, strict: bool = False,
               extra: dict[str, Any] | None = None) -> FuzzOutcome:
        """The report phase: per-failure files under ``outputs.out``, the report (with
        ``extra`` and the baseline's judgement in it), and each format asked for."""
        from acp_model.fuzzing.artifacts import (
            fuzz_html,
            fuzz_report,
            sarif_locations,
            write_out_dir,
        )

        self._phase("writing")
        self.budget.enter("writing")
        files = write_out_dir(result, outputs.out) if outputs.out is not None else {}
        report = fuzz_report(result, files or None)
        report.update(extra or {})
        outcome = FuzzOutcome(result, report, files, judge(baseline, report, strict), strict)
        outputs.write(report, html=lambda: fuzz_html(result, report, files or None),
                      sarif=lambda: sarif_locations(result, files or None))
        self.budget.close()
        return outcome

    def run(self, outputs: Outputs = Outputs(), *,
            extra: dict[str, Any] | None = None) -> FuzzOutcome:
        """Every phase, for a library caller (a revision the readings contradict is a void
        result)."""
        return self.report(self.fuzz(strict_spec=False), outputs, extra=extra)


def judge(baseline: Baseline | None, report: dict[str, Any], strict: bool) -> Judgement | None:
    """The baseline's judgement of ``report``, stored in it; the baseline's state file updated
    when it counts runs (None: no baseline)."""
    from acp_model.report.baseline import judge as judged
    from acp_model.report.baseline import read_state, write_state

    if baseline is None:
        return None
    counting = baseline.stale_after > 1
    judgement, counts = judged(baseline, report, read_state(baseline) if counting else None)
    if counting and not report["summary"].get("interrupted"):
        try:
            write_state(baseline, counts)
        except OSError as exc:
            report.setdefault("notes", []).append(f"baseline state not saved: {exc}")
    report["baseline"] = judgement.to_json(baseline, strict)
    return judgement
