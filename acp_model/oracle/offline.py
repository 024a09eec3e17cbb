"""Offline checking of a recorded trace (``acp-model check``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from acp_model.oracle import one_sided
from acp_model.oracle.monitor import Monitor, Violation
from acp_model.report.document import build_report
from acp_model.spec import revisions
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.trace import dialect
from acp_model.trace.format import Record, iter_trace


def check_records(records: Iterable[Record | dict[str, Any]], *, readings: Readings = DEFAULT,
                  validate: bool = True, engine: str = "table", source: str = "<records>",
                  deadline: float | None = None, spec: str | None = None,
                  open_at_end: bool = False,
                  recording: one_sided.Recording | None = None) -> dict[str, Any]:
    """Run the monitor over records and return the JSON report (as a dict).

    ``spec`` names the revision (``auto``: decided from the trace's first prompt response);
    without it the revision in ``readings`` judges. ``open_at_end``: what is still owed when
    the trace ends is listed as open (a recorded interactive session may end mid-turn), not
    judged as liveness failures. ``recording``: the records were rebuilt from a one-sided
    recording (``check_one_sided``).
    """
    decision = None
    if spec is not None:
        if spec == revisions.AUTO:  # decided on the way, the trace still read as a stream
            decision, records = dialect.detect_ahead(
                r if isinstance(r, dict) else r.to_json() for r in records)
        else:
            decision = revisions.chosen(spec)
        readings = readings.parse([f"SPEC={decision.revision}"])
    monitor = Monitor(readings, validate=validate, engine=engine, decision=decision)
    for rec in records:
        monitor.feed(rec)
    if open_at_end:  # (the deadline a recorded run's client waited: what it proved)
        still_owed = finish_open(monitor, deadline)
        return report_for(monitor, command="check", source=source, recording=recording,
                          extra={"open_at_end": [v.to_json() for v in still_owed]})
    monitor.finish(deadline)
    return report_for(monitor, command="check", source=source, recording=recording)


def finish_open(monitor: Monitor, deadline: float | None = None) -> list[Violation]:
    """End the trace with what is still owed set apart: returned as *open at end*, not kept
    among the monitor's violations (the proxy's end of session, ``check --open-at-end``).
    ``deadline``: how long the client that recorded the trace waited for it (a fuzz run's),
    so a re-judged liveness verdict says what the run proved, as its counterexample does."""
    before = len(monitor.violations)
    monitor.finish(deadline)
    still_owed = monitor.violations[before:]
    del monitor.violations[before:]
    return still_owed


def check_trace(path: str | Path, **options: Any) -> dict[str, Any]:
    """Check a JSONL trace file; raises ``TraceError`` for unusable input."""
    return check_records(iter_trace(path), source=str(path), **options)


def check_one_sided(path: str | Path, side: str = one_sided.AGENT,
                    **options: Any) -> tuple[dict[str, Any], one_sided.Recording]:
    """Check a recording of one side's messages (``one_sided``): the client's side inferred,
    the rules that need it reported as not judged. Raises ``OneSidedError`` for unusable
    input. Returns the report and the rebuilt trace (the HTML page shows it)."""
    if side not in one_sided.SIDES:
        raise one_sided.OneSidedError(
            f"--one-sided {side}: only recordings of the agent's messages can be checked "
            f"(a client is judged on what it sends to an agent: record both sides)")
    recording = one_sided.infer(one_sided.read_lines(path))
    report = check_records(recording.records, source=str(path), recording=recording,
                           **options)
    return report, recording


def report_for(monitor: Monitor, *, command: str, source: str,
               extra: dict[str, Any] | None = None,
               recording: one_sided.Recording | None = None) -> dict[str, Any]:
    violations = [v.to_json() for v in monitor.violations]
    stats = monitor.rule_stats()
    not_judged: dict[str, str] = {}
    if recording is not None:  # a one-sided recording: what it cannot decide is set aside
        not_judged = one_sided.not_judged()
        violations, aside = one_sided.set_aside(violations, recording, not_judged)
        one_sided.discount(stats, aside)
        extra = {**(extra or {}), "one_sided": {**recording.summary(), "set_aside": aside}}
    if monitor.gaps:  # an excerpt: what its gaps held was never seen, so never judged
        extra = {**(extra or {}), "gaps": [{"first": a, "last": b} for a, b in monitor.gaps]}
    elided = sum(b - a + 1 for a, b in monitor.gaps)
    return build_report(
        command=command, source=source, readings=monitor.readings,
        violations=violations,
        stats=stats,
        summary={"messages": monitor.count - elided,
                 "sessions": len(monitor.machines.sessions)},
        extra={"transitions": monitor.machines.transition_counts(), **(extra or {})},
        spec={**monitor.decision.to_json(), "fit": monitor.shapes.fit.to_json()},
        not_judged=not_judged)
