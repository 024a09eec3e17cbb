"""The terminal rendering of a report (rich): the violations table, rule counts and the verdict."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from acp_model.spec.levels import Level


def render(report: dict[str, Any], console: Console, *, limit: int = 50) -> None:
    """Human summary: verdict, the violations, and rule coverage counts."""
    violations = report["violations"]
    if violations:
        table = RichTable(title="Violations", show_lines=False, expand=False)
        for col in ("level", "rule", "at", "session", "what"):
            table.add_column(col, overflow="fold")
        for v in violations[:limit]:
            at = f"#{v['index']}" + (f".{v['sub']}" if "sub" in v else "")
            style = "red" if v["level"] == Level.FAIL else "yellow"
            label = "FAIL" if v["level"] == Level.FAIL else "warn"
            if v.get("kind") == "liveness":
                label += " (liveness)"
            table.add_row(f"[{style}]{label}[/]", v["rule"], at, str(v.get("session") or ""),
                          v["message"])
        console.print(table)
        if len(violations) > limit:
            console.print(f"... and {len(violations) - limit} more (see the JSON report)")
    counts: dict[str, int] = {}
    for r in report["rules"]:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    s = report["summary"]
    parts = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    still_owed = report.get("open_at_end") or []
    for v in still_owed[:limit]:
        console.print(f"open at end: {v['rule']} #{v['index']}: {v['message']}", markup=False,
                      highlight=False)
    spec = report.get("spec")
    if spec:
        how = "decided by --spec auto: " if spec.get("requested") == "auto" else ""
        console.print(f"spec: {spec['revision']} ({how}{spec['evidence']})", markup=False,
                      highlight=False)
    console.print(f"rules: {parts}")
    colour = "green" if report["verdict"] == "pass" else "red"
    console.print(f"[bold {colour}]verdict: {report['verdict'].upper()}[/]  "
                  f"({s['failures']} failure(s), {s['warnings']} warning(s))")
