"""Reports: the JSON document every command writes, and its terminal rendering.

The JSON report has at least ``verdict`` ("pass" / "fail"), ``violations`` (each with ``rule``,
``strength``, ``index``, ``message``) and ``rules`` (every catalogued rule with its status:
violated / warned / held / not exercised). The fuzzer extends it (counterexamples, runs).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from acp_model import __version__
from acp_model.readings import Readings
from acp_model.rules import RULES, RuleStat, catalogue


def merge_stats(stats: Iterable[dict[str, RuleStat]]) -> dict[str, RuleStat]:
    total = {rid: RuleStat() for rid in RULES}
    for one in stats:
        for rid, st in one.items():
            t = total[rid]
            t.exercised += st.exercised
            t.violations += st.violations
            t.warnings += st.warnings
            t.examples.extend(st.examples[: max(0, 5 - len(t.examples))])
    return total


def rules_section(stats: dict[str, RuleStat], readings: Readings) -> list[dict[str, Any]]:
    out = []
    for r in catalogue():
        st = stats.get(r.id, RuleStat())
        out.append({
            "id": r.id,
            "party": r.party,
            "strength": r.effective_strength(readings["STRENGTH"]),
            "kind": r.kind,
            "status": "allowance" if r.is_allowance and not st.violations else st.status,
            "exercised": st.exercised,
            "violations": st.violations,
            "warnings": st.warnings,
            "statement": r.statement,
            "citation": r.citation,
            "tck": list(r.tck),
        })
    return out


def build_report(*, command: str, source: str, readings: Readings, violations: list[dict],
                 stats: dict[str, RuleStat], summary: dict[str, Any],
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    failures = [v for v in violations if v.get("level") == "fail"]
    report: dict[str, Any] = {
        "tool": "acp-model",
        "version": __version__,
        "command": command,
        "source": source,
        "verdict": "fail" if failures else "pass",
        "summary": {**summary, "failures": len(failures),
                    "warnings": len(violations) - len(failures)},
        "readings": readings.as_dict(),
        "readings_changed": readings.changed(),
        "violations": violations,
        "rules": rules_section(stats, readings),
    }
    if extra:
        report.update(extra)
    return report


def write_json(report: dict[str, Any], path: str | Path) -> None:
    p = Path(path)
    if p.parent and not p.parent.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def render(report: dict[str, Any], console: Console, *, limit: int = 50) -> None:
    """Human summary: verdict, the violations, and rule coverage counts."""
    violations = report["violations"]
    if violations:
        table = RichTable(title="Violations", show_lines=False, expand=False)
        for col in ("level", "rule", "at", "session", "what"):
            table.add_column(col, overflow="fold")
        for v in violations[:limit]:
            at = f"#{v['index']}" + (f".{v['sub']}" if "sub" in v else "")
            style = "red" if v["level"] == "fail" else "yellow"
            label = "FAIL" if v["level"] == "fail" else "warn"
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
    console.print(f"rules: {parts}")
    colour = "green" if report["verdict"] == "pass" else "red"
    console.print(f"[bold {colour}]verdict: {report['verdict'].upper()}[/]  "
                  f"({s['failures']} failure(s), {s['warnings']} warning(s))")
