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

The rows are always rebuilt from the run's own record, never from an earlier re-judging,
so re-judging is idempotent. Re-judging a run into a folder (``matrix --rejudge RUN [--out
DIR]``) rewrites each row's ``report.json`` there to say the current verdicts, as every other
file in the folder does, and keeps what the run itself said in its ``recorded`` section (the
run's verdicts, counterexamples, rule table, spec and readings; everything else is the run's
and stays as it was): one file per row, and re-judging it again reads that section back
(:func:`as_recorded`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_model import __version__
from acp_model.fuzzing.inconclusive import recounted
from acp_model.matrix.held import held_of
from acp_model.model.check import CHECKS
from acp_model.model.vocab import Role
from acp_model.oracle.offline import check_records
from acp_model.report.breaches import resting_in_file
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
from acp_model.spec.levels import Level, Standing, reported_standing
from acp_model.spec.readings import DEFAULT, Readings, lookup
from acp_model.spec.rules import RULES
from acp_model.trace.format import TraceError, numbers_of, read_trace

RECORDED = "recorded"  # a re-judged report.json's section: what the run itself said
JUDGED_BY = "judged_by"  # ... and which code re-judged it
# what a re-judging rewrites in a row's report (the rest is the run's and stays)
VERDICT_KEYS = ("verdict", "summary", "violations", "counterexamples", "rules", "spec",
                "readings", "readings_changed")
# the run's rule table is kept as the entries that differ from the current one's (most rules
# were judged alike) and the ids the run's table lacks: a kept run stays small
RULES_CHANGED, RULES_ABSENT = "rules_changed", "rules_absent"


def as_recorded(report: Mapping[str, Any]) -> dict[str, Any]:
    """The run's own report: ``report`` as the run wrote it, or, when a re-judging rewrote it,
    with the run's verdicts its ``recorded`` section keeps put back."""
    recorded = report.get(RECORDED)
    out = {k: v for k, v in report.items() if k not in (RECORDED, JUDGED_BY)}
    if not isinstance(recorded, Mapping):
        return out
    changed = {r["id"]: r for r in recorded.get(RULES_CHANGED) or []}
    absent = set(recorded.get(RULES_ABSENT) or ())
    rules = [changed.pop(r["id"], r) for r in report.get("rules") or [] if r["id"] not in absent]
    return {**{k: v for k, v in out.items() if k not in VERDICT_KEYS},
            **{k: v for k, v in recorded.items() if k not in (RULES_CHANGED, RULES_ABSENT)},
            "rules": [*rules, *changed.values()]}


def with_record(again: Mapping[str, Any], report: Mapping[str, Any],
                judged_by: Mapping[str, Any], row_dir: Path) -> dict[str, Any]:
    """The re-judged report ``again`` as a row's ``report.json`` in ``row_dir`` is written:
    the current verdicts, with the run's own (``report``, as recorded) in its ``recorded``
    section. The rule table keeps the form the run's has (a kept run's is slim:
    ``matrix/keep.py``), and the findings' files are named relative to the folder (found
    there wherever it is copied: :func:`local`)."""
    def here(found: Any) -> list[Any]:
        return [{**x, "files": {k: _relative(v, row_dir) for k, v in x["files"].items()}}
                if isinstance(x, Mapping) and isinstance(x.get("files"), Mapping) else x
                for x in found or []]

    had = report.get("rules") or []
    keys = set().union(*(r.keys() for r in had)) if had else None
    rules = [{k: v for k, v in r.items() if keys is None or k in keys}
             for r in again.get("rules") or []]
    now = {r["id"]: r for r in rules}
    recorded: dict[str, Any] = {k: report[k] for k in VERDICT_KEYS if k in report
                                and k != "rules"}
    recorded[RULES_CHANGED] = [r for r in had if now.get(r["id"]) != r]
    recorded[RULES_ABSENT] = sorted(set(now) - {r["id"] for r in had})
    return {**again, "violations": here(again.get("violations")),
            "counterexamples": here(again.get("counterexamples")), "rules": rules,
            RECORDED: recorded, JUDGED_BY: dict(judged_by)}


def _relative(path: Any, row_dir: Path) -> Any:
    p = Path(str(path))
    return p.relative_to(row_dir).as_posix() if p.is_absolute() and p.is_relative_to(row_dir) \
        else path


class RejudgeError(ValueError):
    """A run that cannot be re-judged (a row's report missing, a reading that does not fit)."""


@dataclass(frozen=True)
class Case:
    """One recorded finding: the run's violation (rule, level, offending message, proof) and
    its files (None: the run kept none, so it cannot be judged again)."""

    violation: Mapping[str, Any]
    files: Mapping[str, str] | None  # file name -> path (resolved in the run's folder)


@dataclass(frozen=True)
class Judged:
    """The current code's word on one recorded transcript."""

    violations: list[dict[str, Any]]
    still_open: list[dict[str, Any]]  # owed when the transcript ends (not judged as failed)
    gapped: bool  # an excerpt: messages the verdicts may rest on are left out


def local(path: str, row_dir: Path) -> Path:
    """A path the run recorded, found in the row's folder wherever the run was moved or
    copied: a relative path is the folder's; an absolute one is matched by its tail
    (``<RULE>/<file>`` or ``warnings/<name>/<file>``) in the folder."""
    p = Path(path)
    if not p.is_absolute():
        return row_dir / p
    if p.is_relative_to(row_dir):
        return p
    tail = p.parts[-3:] if len(p.parts) >= 3 and p.parts[-3] == "warnings" else p.parts[-2:]
    here = row_dir.joinpath(*tail)
    return here if here.exists() or not p.exists() else p


def cases_of(report: Mapping[str, Any], row_dir: Path) -> list[Case]:
    """The run's findings: failures first (with their kept counterexample's files), then
    warnings (with their first sighting's)."""
    kept = {ce["rule"]: ce for ce in report.get("counterexamples") or []}
    out: list[Case] = []
    for v in sorted(report.get("violations") or [], key=lambda v: v.get("level") != Level.FAIL):
        failed = v.get("level") == Level.FAIL
        files = (kept.get(v["rule"]) or {}).get("files") if failed else v.get("files")
        files = {k: str(local(p, row_dir)) for k, p in (files or {}).items()}
        out.append(Case(v, files if Path(files.get("transcript.jsonl", "")).is_file()
                        else None))
    return out


def readings_of(report: Mapping[str, Any], extra: Sequence[str] = (),
                spec: str | None = None) -> tuple[Readings, list[str]]:
    """The readings a row was judged by, then ``extra`` (``NAME=VALUE``) and ``spec`` on top;
    and the ones of ``extra`` its revision decides itself (they do not apply to it)."""
    revision = spec or str((report.get("spec") or {}).get("revision") or DEFAULT.revision)
    chosen = [f"{k}={v}" for k, v in (report.get("readings_changed") or {}).items()
              if k != "SPEC"]
    decided = revisions.get(revision).decides
    try:
        moot = [e for e in extra if lookup(e.partition("=")[0]).id in decided]
        return DEFAULT.parse([f"SPEC={revision}", *chosen,
                              *(e for e in extra if e not in moot)]), moot
    except ValueError as exc:
        raise RejudgeError(str(exc)) from None


def judge(transcript: Path, readings: Readings, config: Mapping[str, Any]) -> Judged:
    """The current code's verdicts on one recorded transcript. What is still owed when it
    ends is set apart, not failed: a transcript kept when a finding was seen stops there."""
    report = check_records(read_trace(transcript), readings=readings,
                           validate=bool(config.get("validate", True)),
                           deadline=config.get("deadline"), source=str(transcript),
                           open_at_end=True)
    return Judged(list(report["violations"]), list(report.get("open_at_end") or []),
                  bool(report.get("gaps")))


def process_checks() -> frozenset[tuple[str, str]]:
    """(rule, check) of the verdicts the fuzzer makes from the agent process, not from the
    wire (a crash, a start-up deadline, a model request of ours still open): a transcript
    cannot decide them again."""
    from acp_model.fuzzing import client, sessions, stalls  # noqa: F401 (they declare them)

    return frozenset((m.rule, m.name) for m in CHECKS.values() if m.role == Role.PROCESS)


KEPT_PROCESS = "kept as recorded: decided from the agent process, not from the wire"
KEPT_EXCERPT = ("kept as recorded: its transcript is an excerpt of a shared agent process, "
                "and the current code cannot judge it without the part left out")


def verdicts_on(case: Case, readings: Readings, config: Mapping[str, Any],
                own: Readings | None = None) -> list[dict[str, Any]]:
    """What the current code says about a recorded finding: its rule's verdict on the
    finding's transcript (at the finding's message first; a reading may regrade it or move
    it), else its verdicts at that message under other rules (the same root cause filed
    under the rule it breaks), else none: the finding is withdrawn, unless the transcript is
    an excerpt whose left-out part the verdict may rest on, or the verdict was made from the
    agent process (then it stands as recorded, and says why). ``own``: the run's own
    readings, when ``readings`` are others: an excerpt on which the code finds the rule under
    the run's own readings holds what the verdict rests on, so another reading that finds
    nothing there withdraws it."""
    v = case.violation
    if case.files is None:
        return [{**v, "rejudged": "kept as recorded: the run kept no transcript of it"}]
    if (str(v.get("rule")), str(v.get("check"))) in process_checks():
        return [{**v, "rejudged": KEPT_PROCESS}]
    judged = judge(Path(case.files["transcript.jsonl"]), readings, config)
    index, rule = v.get("index"), v.get("rule")
    found = list(judged.violations)
    # still owed when its transcript ends: a liveness finding as recorded, and a finding the
    # run's end decided (a history a reopen never replayed) when the current code still holds
    # it open at the same message: the transcript ends where the run's end judged it
    found += [x for x in judged.still_open if v.get("kind") == "liveness"
              or (x.get("rule") == rule and x.get("index") == index)]
    same = sorted((x for x in found if x.get("rule") == rule),
                  key=lambda x: (x.get("index") != index, x.get("level") != Level.FAIL))
    if same and judged.gapped and same[0].get("level") == Level.FAIL \
            and v.get("level") != Level.FAIL:
        # a failure on an excerpt where the run, which read the whole process, warned: what
        # made it a warning may be in the part left out (a session's creation a reopen names)
        return [{**v, "rejudged": KEPT_EXCERPT}]
    if same:  # the rule still holds it (at its message, or where a reading now puts it)
        return [same[0]]
    here = [x for x in found if x.get("index") == index]
    # the same message judged under another rule now; on an excerpt another rule's verdict
    # there may come from what was left out, not from the agent
    if here and not judged.gapped:
        return here
    known = RULES.get(str(rule))
    if known is not None and not known.active(readings):
        return []  # no such rule in this revision, or under these readings
    if not judged.gapped:
        return []
    if own is not None and own != readings and any(
            x.get("rule") == rule for x in judge(Path(case.files["transcript.jsonl"]), own,
                                                 config).violations):
        return []  # the excerpt shows it under the run's readings; this reading does not
    return [{**v, "rejudged": KEPT_EXCERPT}]


# rule, level, check (of a warning), seen on a shared process only
FindingKey = tuple[str, str, str | None, bool]


def finding_key(v: Mapping[str, Any], level: str) -> FindingKey:
    """What makes two re-judged findings one entry, as the run's report keeps them: a rule's
    failure is one (one counterexample per rule), a warning is one per check of its rule (a
    CANCEL-07 after a reopen and a probable CANCEL-07 say different things), and a failure
    seen only on a shared process, reported as a warning, stays apart from the rule's warnings
    (it has a counterexample of its own)."""
    return (str(v["rule"]), level, None if level == Level.FAIL else str(v.get("check")),
            v.get("standing") == Standing.SHARED_ONLY)


def _stats(report: Mapping[str, Any],
           found: Mapping[FindingKey, Mapping[str, Any]]) -> dict[str, RuleStat]:
    """Each rule's counts: exercised as the run counted, its findings as judged now."""
    stats = {r["id"]: RuleStat(exercised=int(r.get("exercised") or 0))
             for r in report.get("rules") or []}
    for (rule, level, _, _), v in found.items():
        st = stats.setdefault(rule, RuleStat())
        st.exercised = max(st.exercised, 1)
        st.violations += int(v["seen"]) if level == Level.FAIL else 0
        st.warnings += 0 if level == Level.FAIL else int(v["seen"])
    return stats


def rejudged_report(report: Mapping[str, Any], row_dir: Path, readings: Readings,
                    own: Readings | None = None) -> dict[str, Any]:
    """The run's report with the verdicts its recorded findings have now (``own``: the run's
    readings, when ``readings`` are others)."""
    config = report.get("config") or {}
    kept = {ce["rule"]: ce for ce in report.get("counterexamples") or []}
    found: dict[FindingKey, dict[str, Any]] = {}
    for case in cases_of(report, row_dir):
        for v in verdicts_on(case, readings, config, own):
            level = str(v["level"])
            ce = kept.get(str(v["rule"]))
            if level == Level.FAIL and ce and reported_standing(ce) == Standing.SHARED_ONLY:
                level = Level.WARN.value  # seen once on a shared process, never fresh
                v = {**v, "standing": Standing.SHARED_ONLY.value}
            elif level == Level.FAIL and case.files is not None and (kept_breach := resting_in_file(
                    Path(case.files["transcript.jsonl"]), v.get("index"),
                    v.get("evidence") or [])) is not None:
                level = Level.WARN.value  # it rests on the agent's handling of our breach
                v = {**v, "rejudged": kept_breach.rested_on()}
            key = finding_key(v, level)
            seen = int(case.violation.get("seen") or 1)
            if key in found:  # another recorded finding of it: its sightings count too
                found[key]["seen"] += seen
            else:
                found[key] = {**v, "level": level, "files": dict(case.files or {}),
                              "seen": seen, "judged_on": str(case.violation["rule"])}
    counterexamples = []
    for (rule, level, _, _), v in found.items():
        if level != Level.FAIL:
            continue
        ce = kept.get(rule)
        if ce is not None and v["judged_on"] == rule:  # its own counterexample: as recorded,
            # its inconclusive replays counted as the current code counts them
            counterexamples.append({**recounted(ce, _records(v["files"]), v.get("index")),
                                    "files": v["files"], "message": v["message"]})
        else:  # the current code's rule for what the run reported under another
            counterexamples.append({"rule": rule, "message": v["message"], "files": v["files"],
                                    "notes": [f"the run reported it as {v['judged_on']}"]})
    violations = sorted(found.values(), key=lambda v: (v["level"] != Level.FAIL, v["rule"]))
    failures = sum(v["level"] == Level.FAIL for v in violations)
    spec = dict(report.get("spec") or {})
    if spec.get("revision") != readings.revision:
        spec = {"revision": readings.revision, "requested": readings.revision,
                "evidence": f"re-judged under spec revision {readings.revision}"}
    return {**report, "violations": violations, "counterexamples": counterexamples,
            "rules": rules_section(_stats(report, found), readings), "spec": spec,
            "readings": readings.as_dict(), "readings_changed": readings.changed(),
            "verdict": "fail" if failures else (
                report.get("verdict") if report.get("verdict") == "error" else "pass"),
            "summary": {**(report.get("summary") or {}), "failures": failures,
                        "warnings": len(violations) - failures}}


def _records(files: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A finding's transcript, numbered (none when it cannot be read)."""
    path = files.get("transcript.jsonl")
    try:
        trace = read_trace(Path(path)) if path else []
    except (OSError, TraceError):
        return []
    return [{**r.to_json(), "n": n} for r, n in zip(trace, numbers_of(trace), strict=True)]


def rejudge_row(row: Mapping[str, Any], base: Path, extra: Sequence[str] = (),
                spec: str | None = None, *, rewrite: bool = False) -> dict[str, Any]:
    """``row`` rebuilt from its run's report with the current code's verdicts; a row with
    no report (unavailable, not installed, an error before any report) stays as it is, and so
    does a row of another protocol than ``spec``'s. ``rewrite``: each re-judged failure's
    ``counterexample.txt`` and ``sequence.mmd`` are rewritten to say its verdict now
    (:mod:`acp_model.matrix.rewrite`), a failure's ``issue.md`` goes when it is no longer one,
    and the row's ``report.json`` says the current verdicts, the run's kept in its
    ``recorded`` section."""
    if not row.get("report") or row.get("status") not in (RowStatus.RAN, RowStatus.ERROR):
        return _refreshed(row)
    if spec is not None and revisions.get(spec).protocol != int(row["protocol"]):
        return {**row, "rejudged": f"not judged under {spec} (a revision of another protocol)"}
    path = base / str(row["report"])
    try:
        report = as_recorded(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise RejudgeError(f"row {row['key']}: its report {path} cannot be read ({exc})") \
            from None
    readings, moot = readings_of(report, extra, spec)
    own = readings_of(report)[0] if extra or spec else None
    again = rejudged_report(report, path.parent, readings, own)
    if rewrite:
        rewrite_files(report, again, readings)
        stale_issues(report, again, path.parent)
        path.write_text(json.dumps(with_record(again, report, {
            "version": __version__, "readings": list(extra), "spec": spec}, path.parent), indent=1,
            ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        # (sorted: a violation's view counts come in no fixed order, and the kept file must
        # come out the same from one re-judging to the next)
    out_dir = base / str(row["out"]) if row.get("out") else path.parent
    new = row_from_report(target_of(row), again, base, path, out_dir)
    for cell in (new.get("cells") or {}).values():
        for f in cell.get("failures") or []:
            if (held := held_of(f, base)) is not None:
                f["held"] = held  # what the held replays kept, in words (fuzzing/held.py)
    for key in ("exit", "created", "reused", "acp_model"):  # the run's, not the judging's
        if key in row:
            new[key] = row[key]
    if moot:
        new["rejudged"] = f"{', '.join(moot)}: decided by {readings.revision} itself"
    return new


def rewrite_files(report: Mapping[str, Any], again: Mapping[str, Any],
                  readings: Readings) -> None:
    """Rewrite the counterexample files of the findings the run failed (``report``) as the
    re-judged report ``again`` says them, its failures and those it lowered to warnings."""
    from acp_model.matrix.rewrite import rewrite

    kept = {ce["rule"]: ce for ce in report.get("counterexamples") or []}
    decided = (again.get("spec") or {}).get("evidence")
    written: set[str] = set()  # one finding per file: the failure, if one shares it
    for v in again.get("violations") or []:  # (failures first)
        ce = kept.get(str(v.get("judged_on") or v.get("rule")))
        where = str((v.get("files") or {}).get("counterexample.txt"))
        if ce is not None:  # its rates as the page says them
            ce = recounted(ce, _records(v.get("files") or {}), v.get("index"))
        if ce is not None and where not in written \
                and rewrite(v, ce, readings.revision, str(decided) if decided else None):
            written.add(where)


def stale_issues(report: Mapping[str, Any], again: Mapping[str, Any], row_dir: Path) -> None:
    """Remove the ``issue.md`` the run wrote beside each failure of its own (``report``) that
    the current code (``again``) no longer fails, a warning now or withdrawn: an issue body
    beside it would still say it is a bug."""
    from acp_model.matrix.rewrite import ISSUE

    failing = {Path(f).parent for v in again.get("violations") or []
               if v.get("level") == Level.FAIL
               and (f := (v.get("files") or {}).get("transcript.jsonl"))}
    for ce in report.get("counterexamples") or []:
        transcript = (ce.get("files") or {}).get("transcript.jsonl")
        folder = local(str(transcript), row_dir).parent if transcript else None
        if folder is not None and folder not in failing:
            (folder / ISSUE).unlink(missing_ok=True)


def _refreshed(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row that never ran, with its profile's reason as the profile gives it now."""
    from acp_model.profiles import PROFILES

    profile = PROFILES.get(str(row.get("agent")))
    if row.get("status") != RowStatus.UNAVAILABLE or profile is None \
            or not profile.unavailable or profile.version != row.get("version"):
        return dict(row)
    return {**row, "reason": profile.unavailable,
            **({"reason_short": profile.unavailable_short} if profile.unavailable_short
               else {})}


def rejudge(doc: Mapping[str, Any], base: Path, extra: Sequence[str] = (),
            spec: str | None = None, *, rewrite: bool = False) -> dict[str, Any]:
    """The whole matrix judged again; with ``extra`` readings or another ``spec`` the
    document also says what it was judged under and what changed against ``doc`` as the
    current code judges it with the run's own readings (``compare``). ``rewrite``: the
    failures' counterexample files say the new verdicts (:func:`rejudge_row`)."""
    rows = [rejudge_row(r, base, extra, spec, rewrite=rewrite) for r in doc.get("rows") or []]
    settings = dict(doc.get("settings") or {})
    new = {**document(rows, settings), **{k: v for k, v in doc.items()
                                         if k in ("history", "format")}}
    new["judged_by"] = {"version": __version__, "readings": list(extra), "spec": spec}
    if extra or spec:
        today = rejudge(doc, base)
        new["compare"] = {"against": "today's verdicts (the run's own readings)",
                          "changes": compare(today, new)}
    return new
