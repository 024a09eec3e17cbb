"""A recorded matrix run judged again by the current code: the page is the current oracle's
word, and a spec author sees what another reading or revision would fail.

What a run recorded is each row's ``report.json`` (its verdicts, how often each rule was
exercised, its counterexamples and their reproduction) and, for each finding, the wire
transcript that showed it (a failure's counterexample, a warning's first sighting). Re-judging
checks every such transcript again (``oracle/offline.py``) under the row's revision and
readings, or those given, and rebuilds the row from the run's report with the verdicts the
transcripts now give: a failure the current code no longer reports on its own transcript is
gone, one it grades lower is a warning, a rule it now breaks there is a new finding (with that
transcript as its proof). How often each rule was exercised stays the run's: only the
findings' transcripts were kept, so a stricter reading can only be judged on them (the page
says so). A failure whose counterexample never reproduced in a fresh process (``standing``
"shared-only") stays a warning.

The rows are always rebuilt from the run's ``report.json``, never from an earlier re-judging,
so re-judging is idempotent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_model import __version__
from acp_model.oracle.offline import check_records
from acp_model.report.document import rules_section
from acp_model.report.matrix import (
    RowStatus,
    compare,
    document,
    row_from_report,
    target_of,
)
from acp_model.report.stats import RuleStat
from acp_model.spec import revisions
from acp_model.spec.levels import Level
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.trace.format import read_trace

SHARED_ONLY = "shared-only"  # a counterexample seen on a shared process, never fresh


class RejudgeError(ValueError):
    """A run that cannot be re-judged (a row's report missing, a reading that does not fit)."""


@dataclass(frozen=True)
class Case:
    """One recorded finding: the rule the run reported, its level, and its files."""

    rule: str
    level: str
    files: Mapping[str, str]  # file name -> path (resolved in the run's folder)
    seen: int


def local(path: str, row_dir: Path) -> Path:
    """A path the run recorded, found in the row's folder wherever the run was moved: a
    relative path is the folder's; an absolute one that no longer exists is matched by its
    tail (``<RULE>/<file>`` or ``warnings/<name>/<file>``)."""
    p = Path(path)
    if not p.is_absolute():
        return row_dir / p
    if p.is_relative_to(row_dir) or p.exists():
        return p
    tail = p.parts[-3:] if len(p.parts) >= 3 and p.parts[-3] == "warnings" else p.parts[-2:]
    return row_dir.joinpath(*tail)


def cases_of(report: Mapping[str, Any], row_dir: Path) -> list[Case]:
    """The run's findings that kept a transcript: failures first (each with its kept
    counterexample's files), then warnings (their first sighting)."""
    kept = {ce["rule"]: ce for ce in report.get("counterexamples") or []}
    out: list[Case] = []
    for v in sorted(report.get("violations") or [], key=lambda v: v.get("level") != Level.FAIL):
        failed = v.get("level") == Level.FAIL
        files = (kept.get(v["rule"]) or {}).get("files") if failed else v.get("files")
        files = {k: str(local(p, row_dir)) for k, p in (files or {}).items()}
        if "transcript.jsonl" in files:
            out.append(Case(str(v["rule"]), str(v.get("level")), files, int(v.get("seen") or 1)))
    return out


def readings_of(report: Mapping[str, Any], extra: Sequence[str] = (),
                spec: str | None = None) -> Readings:
    """The readings a row was judged by, then ``extra`` (``NAME=VALUE``) and ``spec`` on top."""
    revision = spec or str((report.get("spec") or {}).get("revision") or DEFAULT.revision)
    chosen = [f"{k}={v}" for k, v in (report.get("readings_changed") or {}).items()]
    try:
        return DEFAULT.parse([f"SPEC={revision}", *chosen, *extra])
    except ValueError as exc:
        raise RejudgeError(str(exc)) from None


def judge(transcript: Path, readings: Readings, config: Mapping[str, Any]
          ) -> list[dict[str, Any]]:
    """The current code's verdicts on one recorded transcript."""
    report = check_records(read_trace(transcript), readings=readings,
                           validate=bool(config.get("validate", True)),
                           deadline=config.get("deadline"), source=str(transcript))
    return list(report["violations"])


def rejudged_report(report: Mapping[str, Any], row_dir: Path, readings: Readings
                    ) -> dict[str, Any]:
    """The run's report with the verdicts its recorded transcripts give now."""
    config = report.get("config") or {}
    kept = {ce["rule"]: ce for ce in report.get("counterexamples") or []}
    seen = {(str(v["rule"]), str(v.get("level"))): int(v.get("seen") or 1)
            for v in report.get("violations") or []}
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for case in cases_of(report, row_dir):
        for v in judge(Path(case.files["transcript.jsonl"]), readings, config):
            level = str(v["level"])
            ce = kept.get(str(v["rule"]))
            if level == Level.FAIL and (ce or {}).get("standing") == SHARED_ONLY:
                level = Level.WARN.value  # seen once on a shared process, never fresh
            key = (str(v["rule"]), level)
            if key not in found:
                found[key] = {**v, "level": level, "files": dict(case.files),
                              "seen": seen.get(key, 1), "judged_on": case.rule}
    counterexamples = []
    for (rule, level), v in found.items():
        if level != Level.FAIL:
            continue
        ce = kept.get(rule)
        if ce is not None and v["judged_on"] == rule:  # its own counterexample: as recorded
            counterexamples.append({**ce, "files": v["files"], "message": v["message"]})
        else:  # a rule the current code finds on another finding's transcript
            counterexamples.append({"rule": rule, "message": v["message"], "files": v["files"],
                                    "notes": [f"found by re-judging the transcript of "
                                              f"{v['judged_on']}"]})
    stats = {r["id"]: RuleStat(exercised=int(r.get("exercised") or 0))
             for r in report.get("rules") or []}
    for (rule, level), v in found.items():
        st = stats.setdefault(rule, RuleStat())
        st.exercised = max(st.exercised, 1)
        if level == Level.FAIL:
            st.violations += int(v["seen"])
        else:
            st.warnings += int(v["seen"])
    violations = sorted(found.values(), key=lambda v: (v["level"] != Level.FAIL, v["rule"]))
    failures = sum(v["level"] == Level.FAIL for v in violations)
    spec = dict(report.get("spec") or {})
    if spec.get("revision") != readings.revision:
        spec = {"revision": readings.revision, "requested": readings.revision,
                "evidence": f"re-judged under spec revision {readings.revision}"}
    return {**report, "violations": violations, "counterexamples": counterexamples,
            "rules": rules_section(stats, readings), "spec": spec,
            "readings": readings.as_dict(), "readings_changed": readings.changed(),
            "verdict": "fail" if failures else (
                report.get("verdict") if report.get("verdict") == "error" else "pass"),
            "summary": {**(report.get("summary") or {}), "failures": failures,
                        "warnings": len(violations) - failures}}


def rejudge_row(row: Mapping[str, Any], base: Path, extra: Sequence[str] = (),
                spec: str | None = None) -> dict[str, Any]:
    """``row`` rebuilt from its run's report with the current code's verdicts; a row with
    no report (unavailable, not installed, an error before any report) stays as it is, and so
    does a row of another protocol than ``spec``'s."""
    if not row.get("report") or row.get("status") not in (RowStatus.RAN, RowStatus.ERROR):
        return dict(row)
    if spec is not None and revisions.get(spec).protocol != int(row["protocol"]):
        return {**row, "rejudged": f"not judged under {spec} (a revision of another protocol)"}
    path = base / str(row["report"])
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RejudgeError(f"row {row['key']}: its report {path} cannot be read ({exc})") \
            from None
    readings = readings_of(report, extra, spec)
    again = rejudged_report(report, path.parent, readings)
    out_dir = base / str(row["out"]) if row.get("out") else path.parent
    new = row_from_report(target_of(row), again, base, path, out_dir)
    for key in ("exit", "created", "reused", "acp_model"):  # the run's, not the judging's
        if key in row:
            new[key] = row[key]
    return new


def rejudge(doc: Mapping[str, Any], base: Path, extra: Sequence[str] = (),
            spec: str | None = None) -> dict[str, Any]:
    """The whole matrix judged again; with ``extra`` readings or another ``spec`` the
    document also says what it was judged under and what changed against ``doc`` as the
    current code judges it with the run's own readings (``compare``)."""
    rows = [rejudge_row(r, base, extra, spec) for r in doc.get("rows") or []]
    settings = dict(doc.get("settings") or {})
    new = {**document(rows, settings), **{k: v for k, v in doc.items()
                                         if k in ("history", "format")}}
    new["judged_by"] = {"version": __version__, "readings": list(extra), "spec": spec}
    if extra or spec:
        today = rejudge(doc, base)
        new["compare"] = {"against": "today's verdicts (the run's own readings)",
                          "changes": compare(today, new)}
    return new
