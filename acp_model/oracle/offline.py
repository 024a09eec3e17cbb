"""Offline checking of a recorded trace (``acp-model check``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from acp_model.oracle.monitor import Monitor
from acp_model.report.document import build_report
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.trace.format import Record, iter_trace


def check_records(records: Iterable[Record | dict[str, Any]], *, readings: Readings = DEFAULT,
                  validate: bool = True, engine: str = "table", source: str = "<records>",
                  deadline: float | None = None) -> dict[str, Any]:
    """Run the monitor over records and return the JSON report (as a dict)."""
    monitor = Monitor(readings, validate=validate, engine=engine)
    for rec in records:
        monitor.feed(rec)
    monitor.finish(deadline)
    return report_for(monitor, command="check", source=source)


def check_trace(path: str | Path, **options: Any) -> dict[str, Any]:
    """Check a JSONL trace file; raises ``TraceError`` for unusable input."""
    return check_records(iter_trace(path), source=str(path), **options)


def report_for(monitor: Monitor, *, command: str, source: str,
               extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return build_report(
        command=command, source=source, readings=monitor.readings,
        violations=[v.to_json() for v in monitor.violations],
        stats=monitor.rule_stats(),
        summary={"messages": monitor.count, "sessions": len(monitor.sessions)},
        extra={"transitions": monitor.transition_counts(), **(extra or {})})
