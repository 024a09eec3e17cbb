"""Reports: the JSON document every command writes, and its terminal rendering.

The JSON report has at least ``verdict`` ("pass" / "fail"), ``violations`` (each with ``rule``,
``strength``, ``index``, ``message``) and ``rules`` (every catalogued rule with its status:
violated / warned / held / not exercised). The fuzzer extends it (counterexamples, runs).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from acp_model import __version__
from acp_model.report.stats import RuleStat
from acp_model.spec.levels import Level
from acp_model.spec.readings import Readings
from acp_model.spec.rules import RULES, catalogue

# The status of a rule the input cannot decide (a one-sided recording): neither held nor broken.
NOT_JUDGED = "not judged"


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


def rules_section(stats: dict[str, RuleStat], readings: Readings,
                  not_judged: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every catalogued rule with its status; ``not_judged`` names the rules the input cannot
    decide (a one-sided recording), each with the reason: never reported as held."""
    out = []
    for r in catalogue():
        st = stats.get(r.id, RuleStat())
        why = (not_judged or {}).get(r.id) if r.applies(readings.revision) else None
        entry: dict[str, Any] = {
            "id": r.id,
            "party": r.party,
            "strength": r.strength_under(readings),
            "kind": r.kind,
            "status": ("not in revision" if not r.applies(readings.revision)
                       else NOT_JUDGED if why is not None
                       else "allowance" if r.is_allowance and not st.violations
                       else st.status),
            "exercised": st.exercised,
            "violations": st.violations,
            "warnings": st.warnings,
            "statement": r.statement,
            "citation": r.citation_in(readings.revision),
            "revisions": list(r.revisions),
            "tck": list(r.tck),
        }
        if why is not None:
            entry["not_judged"] = why
        out.append(entry)
    return out


def build_report(*, command: str, source: str, readings: Readings, violations: list[dict],
                 stats: dict[str, RuleStat], summary: dict[str, Any],
                 extra: dict[str, Any] | None = None,
                 spec: dict[str, Any] | None = None,
                 not_judged: Mapping[str, str] | None = None) -> dict[str, Any]:
    failures = [v for v in violations if v.get("level") == Level.FAIL]
    report: dict[str, Any] = {
        "tool": "acp-model",
        "version": __version__,
        "command": command,
        "source": source,
        "verdict": "fail" if failures else "pass",
        "summary": {**summary, "failures": len(failures),
                    "warnings": len(violations) - len(failures)},
        # which revision judged, and the evidence that decided it (``revisions.Decision``)
        "spec": spec or {"revision": readings.revision, "requested": readings.revision,
                         "evidence": f"spec revision {readings.revision} chosen"},
        "readings": readings.as_dict(),
        "readings_changed": readings.changed(),
        "violations": violations,
        "rules": rules_section(stats, readings, not_judged),
    }
    if extra:
        report.update(extra)
    return report


def write_json(report: dict[str, Any], path: str | Path) -> None:
    p = Path(path)
    if p.parent and not p.parent.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
