"""The conformance matrix: one row per agent and protocol, one cell per rule family.

``acp-model matrix`` fuzzes each agent (``cli/matrix.py``) and turns each run's report into a
row here. A cell is ``fail``, ``warn``, ``pass`` or ``not exercised`` (or ``not applicable``
when no rule of the family applies in the revision that judged the run), with how often its
rules were exercised: a family whose rules never ran is never a pass. Two kinds of "did not
run" are told apart: a family the agent's profile says it never exercises by design (an agent
that never asks permission in the mode it runs in) is ``not applicable`` with that reason; any
other is ``not exercised`` with how far the run got toward it and the hint that a longer
budget may reach it. Each failure carries the
paths of its counterexample, transcript and replay file relative to the matrix's own folder,
so the page and the docs link them wherever the folder is moved.

The document (``matrix.json``) is what ``--compare``, the page and ``docs/agents.md`` read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from acp_model import __version__
from acp_model.report.links import rule_url
from acp_model.report.proof import proof_evidence
from acp_model.report.reach import LABELS, Reach
from acp_model.report.text import (
    CutBy,
    inconclusive_words,
    minimize_stopped,
    proven_minimal,
)
from acp_model.spec.families import Family, families, family_of
from acp_model.spec.levels import Level, reported_standing
from acp_model.spec.rules import RULES, strength_shown

FORMAT = "acp-model-matrix/1"


class MatrixError(ValueError):
    """A file that is not a matrix document."""


class Cell(StrEnum):
    FAIL = "fail"
    WARN = "warn"
    PASS = "pass"
    NOT_EXERCISED = "not exercised"
    NOT_APPLICABLE = "not applicable"


class RowStatus(StrEnum):
    RAN = "ran"  # fuzzed; its cells are the verdicts
    UNAVAILABLE = "unavailable"  # cannot run offline: the profile says why, never started
    NOT_INSTALLED = "not installed"
    ERROR = "error"  # started but judged nothing (did not start, a usage problem...)


class Change(StrEnum):
    NEW_FAILURE = "new failure"
    FIXED = "fixed"
    NEW_WARNING = "new warning"
    WARNING_GONE = "warning gone"
    NEWLY_EXERCISED = "newly exercised"
    NO_LONGER_EXERCISED = "no longer exercised"
    VERSION_CHANGED = "version changed"
    STATUS_CHANGED = "status changed"
    ROW_ADDED = "row added"
    ROW_REMOVED = "row removed"


@dataclass(frozen=True)
class Target:
    """What a row is about: an agent (a profile, or a command line) under one protocol."""

    agent: str
    protocol: int
    title: str = ""
    version: str = ""
    package: str = ""
    model_api: str | None = None
    command: tuple[str, ...] = ()
    # (family id, why): families its profile says the agent never exercises by design
    by_design: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        return row_key(self.agent, self.protocol)


def row_key(agent: str, protocol: int) -> str:
    return f"{agent} v{protocol}"


def _rel(path: str | None, base: Path) -> str | None:
    if not path:
        return None
    return Path(os.path.relpath(Path(path).resolve(), base.resolve())).as_posix()


def _active(rule_id: str, readings: Mapping[str, Any]) -> bool:
    """A strict reading's rule counts only when that reading is chosen."""
    reading, dot, value = rule_id.partition(".")
    return not dot or readings.get(reading) == value


def rules_once(findings: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """The rules of a cell's findings, each once, in order: one rule may warn from two checks
    (or as a warning and a shared process's unconfirmed failure), and a list or a link names
    the rule, whose section shows both."""
    return list(dict.fromkeys(str(x["rule"]) for x in findings or ()))


def rate(reproduced: Any, replays: Any) -> str | None:
    """``3/4``, or None when nothing was replayed (shown as "not replayed", never "0/0")."""
    return f"{int(reproduced or 0)}/{int(replays)}" if replays else None


def reproduction_text(f: Mapping[str, Any], *, predicate: bool = False) -> str:
    """How often a finding's program reproduced in fresh agent processes, in words;
    ``predicate``: worded to follow "the program" ("reproduced 2/6 ...", "had no conclusive
    replay ...", "was not replayed ...")."""
    held, free = f.get("reproduction"), f.get("free_reproduction")
    if free is not None or f.get("inconclusive") or f.get("free_inconclusive"):
        unsure, free_unsure = int(f.get("inconclusive") or 0), int(f.get("free_inconclusive") or 0)
        why = f": {inconclusive_words(str(f['inconclusive_why']))}" \
            if f.get("inconclusive_why") else ""
        held_more = f" ({unsure} more inconclusive{why})" if unsure else ""
        free_more = f" ({free_unsure} more inconclusive{'' if unsure else why})" \
            if free_unsure else ""
        return (f"{_rate_words(held, unsure, 'reproduced ', predicate=predicate)}{held_more} "
                f"in fresh agent processes under the recorded boundary schedule"
                f"{' and clock' if f.get('clock') else ''}, "
                f"{_rate_words(free, free_unsure)}{free_more} free-running")
    if held is not None:
        return f"reproduced {held} in fresh agent processes (free-running)" + (
            "; unverified: no fresh process showed it" if held.startswith("0/") else "")
    return ("was " if predicate else "") + "not replayed in a fresh agent process"


def _rate_words(rate: Any, unsure: int, lead: str = "", *, predicate: bool = False) -> str:
    """A recorded rate in words: ``lead`` and "3/6", else "no conclusive replay" when
    inconclusive ones ran, else "not replayed" (never "reproduced not replayed");
    ``predicate``: with the verb that follows "the program" ("had no conclusive replay",
    "was not replayed")."""
    hits, runs = _rate_of(rate)
    if runs:
        return f"{lead}{hits}/{runs}"
    if unsure:
        return f"{'had ' if predicate else ''}no conclusive replay"
    return f"{'was ' if predicate else ''}not replayed"


def not_filed(f: Mapping[str, Any]) -> str | None:
    """Why a failure gets no issue body (None: it gets one): a program a maintainer cannot act
    on. Either its minimizing was cut before its fixpoint (the s10 matrix filed codex-acp
    v2's 35-action CANCEL-07, cut at its search stage, held 1/6), or none of its final
    replays reproduced it (s11: codex-acp v1's CANCEL-07 reached its fixpoint in trials that
    showed it, then held 0/6 and free 1/6): what it proves stands on the page, but no issue
    should hand a maintainer a program that does not make it happen."""
    m = f.get("minimize") or {}
    if not m.get("fixpoint") and (m or f.get("minimize_cut")):
        steps = f.get("steps")
        where = (f"at its {m.get('stage')} stage after {m.get('trials')} trial(s)"
                 if m.get("stage") else "by its budget")
        cut = CutBy.of(m.get("cut_by"))
        return (f"minimizing was cut {where}" + (f" ({cut.words})" if cut else "")
                + (f", leaving {steps} client action(s)" if steps is not None else "")
                + f", and the program {reproduction_text(f, predicate=True)}: a program not "
                "minimized to its fixpoint is not one a maintainer can act on")
    hits, runs = _rate_of(f.get("reproduction"))
    if runs and not hits:
        return (f"none of the program's final replays reproduced it: it "
                f"{reproduction_text(f, predicate=True)}"
                "; a program that does not make the failure happen again is not one a "
                "maintainer can act on")
    return None


def _rate_of(text: Any) -> tuple[int, int]:
    """(hits, runs) of a ``3/4`` rate (0, 0: none)."""
    hits, _, runs = str(text or "").partition("/")
    return (int(hits), int(runs)) if hits.isdigit() and runs.isdigit() else (0, 0)


def minimized_text(f: Mapping[str, Any]) -> str:
    """How long a finding's program is and how far minimizing got, in words."""
    steps = f.get("steps")
    size = f"{steps} client action(s)" if steps is not None else "client actions"
    m = f.get("minimize") or {}
    hits, runs = _rate_of(f.get("reproduction") or f.get("free_reproduction"))
    length = int(steps) if steps is not None else int(m.get("steps") or 0)
    if m.get("fixpoint") and m.get("steps") not in (None, length):
        return (f"{size}: minimizing reached its fixpoint at {m['steps']} action(s); this "
                "longer program reproduces more often, so it is the one shown")
    if m.get("fixpoint") and not proven_minimal(m, length, hits, runs):
        return (f"{size}; minimizing reached its fixpoint, but the program reproduces only "
                f"{hits}/{runs}: a removal whose replay missed is no proof that the action "
                "is needed, so it is not proven minimal")
    if m.get("fixpoint"):
        return f"{size}, minimized to a fixpoint: no single action can be removed"
    if m:
        return f"{size}; {minimize_stopped(m)}: a shorter program may exist"
    if f.get("minimize_cut"):
        return f"{size}; minimizing was cut by its budget: a shorter program may exist"
    return f"{size}, the shortest program the run found"


def _finding(v: Mapping[str, Any], ce: Mapping[str, Any] | None, revision: str,
             base: Path) -> dict[str, Any]:
    rule = RULES.get(str(v.get("rule")))
    files = dict((ce or {}).get("files") or v.get("files") or {})
    replay = _rel(files.get("replay.json"), base)
    ce = ce or {}
    return {
        "rule": v.get("rule"),
        "level": v.get("level"),
        "strength": strength_shown(str(v.get("rule")),
                                   str(v.get("strength") or (rule.strength if rule else ""))),
        "message": v.get("message", ""),
        "statement": rule.statement if rule else "",
        "citation": rule.citation_in(revision) if rule else "",
        "url": rule_url(str(v.get("rule"))),
        "seen": int(v.get("seen") or 1),
        "counterexample": _rel(files.get("counterexample.txt") or files.get("warning.txt"),
                               base),
        "transcript": _rel(files.get("transcript.jsonl"), base),
        "sequence": _rel(files.get("sequence.mmd"), base),
        "replay": replay,
        "replay_command": f"acp-model replay {replay} --runs 5" if replay else None,
        # the proof: the offending message and the records it cites, by message number
        "index": v.get("index"),
        "evidence": proof_evidence(v),
        # under the recorded boundary schedule (the headline), and free-running; None: the
        # program was not replayed (older runs carry only the free-running rate)
        "reproduction": rate(ce.get("reproduced"), ce.get("replays")) if ce else None,
        "free_reproduction": rate(ce.get("free_reproduced"), ce.get("free_replays")),
        **({"clock": True} if ce.get("clock") else {}),  # held to the agent's clock too
        # replays in which the agent failed on its own, beside the rates (newer runs, and
        # only when there were any: fuzzing/inconclusive.py)
        **{k: ce[k] for k in ("inconclusive", "free_inconclusive", "inconclusive_why")
           if ce.get(k)},
        "minimize": ce.get("minimize"),
        "minimize_cut": ce.get("minimize_cut"),
        "standing": reported_standing(ce) if ce else None,
        "steps": ce.get("steps"),
        # where the transcript's teardown began (newer runs): the proof names its acts
        **({"teardown_at": ce["teardown_at"]} if ce.get("teardown_at") is not None else {}),
    }


def cells_of(report: Mapping[str, Any], base: Path,
             by_design: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """One cell per family from a fuzz report (``fuzzing/artifacts.fuzz_report``);
    ``by_design``: the families the agent never exercises by design, and why."""
    revision = str((report.get("spec") or {}).get("revision") or "")
    readings = report.get("readings") or {}
    kept = {ce["rule"]: ce for ce in report.get("counterexamples") or []}
    cells: dict[str, dict[str, Any]] = {
        f.id: {"status": Cell.NOT_APPLICABLE.value, "exercised": 0, "rules_exercised": 0,
               "rules_total": 0, "rules": {}, "failures": [], "warnings": []}
        for f in families()}
    for r in report.get("rules") or []:
        if r.get("status") == "not in revision" or r.get("kind") == "definition" \
                or r.get("status") == "allowance" or not _active(r["id"], readings):
            continue  # nothing to judge there: an allowance is never a verdict
        cell = cells[family_of(r["id"]).id]
        n = int(r.get("exercised") or 0)
        cell["rules"][r["id"]] = n
        cell["rules_total"] += 1
        cell["exercised"] += n
        cell["rules_exercised"] += n > 0
    for v in report.get("violations") or []:
        cell = cells[family_of(str(v["rule"])).id]
        failed = v.get("level") == Level.FAIL
        finding = _finding(v, kept.get(v["rule"]) if failed else None, revision, base)
        cell["failures" if failed else "warnings"].append(finding)
    for cell in cells.values():
        cell["status"] = (Cell.FAIL if cell["failures"] else Cell.WARN if cell["warnings"]
                          else Cell.PASS if cell["rules_exercised"]
                          else Cell.NOT_EXERCISED if cell["rules_total"]
                          else Cell.NOT_APPLICABLE).value
        if cell["status"] == Cell.NOT_APPLICABLE:
            cell["reason"] = f"no rule of this family in {revision or 'the revision'}"
    for fam, why in (by_design or {}).items():
        cell = cells.get(fam)
        if cell is None:
            continue
        if cell["status"] == Cell.NOT_EXERCISED:  # its rules did not run, as declared
            cell.update(status=Cell.NOT_APPLICABLE.value, reason=why, by_design=True)
        elif cell["status"] != Cell.NOT_APPLICABLE:  # they ran: the verdict stands
            cell["contradicts"] = f"the profile says it never does this by design ({why}), " \
                                  "yet its rules ran: the profile may be out of date"
    return cells


def _hint(cell: dict[str, Any], fam: Family, summary: Mapping[str, Any],
          reach: Mapping[str, Any]) -> str:
    """Why a family was not exercised, as far as the run tells: how far it got toward it
    (its reach counters), in how long, and that a longer budget may reach it."""
    near = [f"{int(reach.get(k, 0))} {LABELS[Reach(k)]}" for k in fam.reach if k in reach]
    ran = f"{summary.get('seconds')} s, {summary.get('examples')} examples" \
        if summary.get("seconds") is not None else "the run"
    return (f"none of its {cell['rules_total']} rule(s) ran in {ran}"
            + (f" (reached: {', '.join(near)})" if near else "")
            + "; a longer --budget may reach it")


def row_from_report(target: Target, report: Mapping[str, Any], base: Path,
                    report_path: Path | None = None, out_dir: Path | None = None
                    ) -> dict[str, Any]:
    """A row for a run that wrote its report: its cells, or the error that voided it."""
    row = _row(target)
    info = report.get("agent_info") or {}
    summary = report.get("summary") or {}
    row.update({
        "version": target.version or str(info.get("version") or ""),
        "agent_info": info or None,
        "verdict": report.get("verdict"),
        "revision": (report.get("spec") or {}).get("revision"),
        "spec_evidence": (report.get("spec") or {}).get("evidence"),
        "summary": {k: summary.get(k) for k in ("examples", "actions", "seconds",
                                                "actions_per_second", "restarts", "failures",
                                                "warnings")},
        "reach": dict(report.get("reach") or {}),
        "transitions": dict(report.get("transitions") or {}),
        "notes": list(report.get("notes") or []),
        "readings": dict(report.get("readings_changed") or {}),
        "report": _rel(str(report_path), base) if report_path else None,
        "out": _rel(str(out_dir), base) if out_dir else None,
        "cells": cells_of(report, base, dict(target.by_design)),
    })
    if (measured := agent_coverage(report)) is not None:  # (none: no key, as older rows)
        row["agent_coverage"] = measured
    for fam in families():
        cell = row["cells"][fam.id]
        if cell["status"] == Cell.NOT_EXERCISED:
            cell["hint"] = _hint(cell, fam, row["summary"], row["reach"])
            cell["near"] = {k: int(row["reach"].get(k, 0)) for k in fam.reach
                            if k in row["reach"]}
    if report.get("verdict") == "error" or report.get("unusable"):
        # the agent could not be fuzzed (it did not start, refused initialize...): a row with
        # the error; what a rule says about that (ACPM-ALIVE...) stays in its cells
        row["status"] = RowStatus.ERROR.value
        row["reason"] = str(report.get("unusable") or report.get("problem")
                            or "the run judged nothing")
    return row


def agent_coverage(report: Mapping[str, Any]) -> dict[str, Any] | None:
    """The row's ACP-layer coverage (``acp-model fuzz --coverage``): the tool and the lines
    and functions reached of the files counted (None: not measured)."""
    measured = report.get("coverage_agent")
    if not isinstance(measured, Mapping):
        return None
    return {"tool": measured.get("tool"), "scope": measured.get("scope"),
            "files": sum(1 for f in measured.get("files") or [] if isinstance(f, Mapping)
                         and (f.get("loaded") or f.get("runtime") == "python")),
            "lines": dict(measured.get("lines") or {}),
            "functions": dict(measured.get("functions") or {})}


def coverage_text(row: Mapping[str, Any]) -> str:
    """``77.0% of 1428 lines, 58.3% of 204 functions`` (``not measured``; ``no file of the
    layer loaded`` when nothing was counted)."""
    cov = row.get("agent_coverage")
    if not isinstance(cov, Mapping):
        return "not measured"
    parts = []
    for what in ("lines", "functions"):
        fig = cov.get(what) or {}
        if fig.get("total"):
            parts.append(f"{fig.get('percent')}% of {fig['total']} {what}")
    return ", ".join(parts) or "no file of the layer loaded"


def coverage_short(row: Mapping[str, Any]) -> str:
    """The grid's cell: ``77% lines, 58% functions`` (``-``: not measured)."""
    cov = row.get("agent_coverage")
    if not isinstance(cov, Mapping):
        return "-"
    parts = [f"{(cov.get(what) or {}).get('percent'):g}% {what}" for what in
             ("lines", "functions") if (cov.get(what) or {}).get("percent") is not None]
    return ", ".join(parts) or "0 files"


COVERAGE_ABOUT = ("the agent's own ACP layer reached by the run (acp-model matrix --coverage: "
                  "V8 for Node agents, coverage.py for Python agents)")


def coverage_measured(rows: Iterable[Mapping[str, Any]]) -> bool:
    """Does any row carry its agent's coverage (then the grid has the column)?"""
    return any(isinstance(r.get("agent_coverage"), Mapping) for r in rows)


def row_without_run(target: Target, status: RowStatus, reason: str, short: str = ""
                    ) -> dict[str, Any]:
    """A row that was never fuzzed (unavailable, not installed) or whose run wrote nothing;
    ``short``: the reason in a line, where the reason is long."""
    row = _row(target)
    row.update({"status": status.value, "reason": reason, "verdict": None, "cells": {}})
    if short:
        row["reason_short"] = short
    return row


def _row(target: Target) -> dict[str, Any]:
    return {"key": target.key, "agent": target.agent, "protocol": target.protocol,
            "title": target.title or target.agent, "version": target.version,
            "package": target.package, "model_api": target.model_api,
            "command": list(target.command), "by_design": dict(target.by_design),
            "acp_model": __version__, "status": RowStatus.RAN.value, "reason": None}


def target_of(row: Mapping[str, Any]) -> Target:
    """The target a recorded row was about (its by-design families: the row's own, or, for an
    older row, those its cells name)."""
    by_design = row.get("by_design")
    if by_design is None:
        by_design = {fam: str(c.get("reason")) for fam, c in (row.get("cells") or {}).items()
                     if c.get("by_design")}
    return Target(str(row["agent"]), int(row["protocol"]), title=str(row.get("title") or ""),
                  version=str(row.get("version") or ""), package=str(row.get("package") or ""),
                  model_api=row.get("model_api"), command=tuple(row.get("command") or ()),
                  by_design=tuple(dict(by_design).items()))


def document(rows: Iterable[Mapping[str, Any]], settings: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "tool": "acp-model",
        "version": __version__,
        "settings": dict(settings),
        "families": [{"id": f.id, "title": f.title, "about": f.about, "reach": list(f.reach)}
                     for f in families()],
        "rows": list(rows),
    }


def load(path: str | Path) -> dict[str, Any]:
    """A matrix document from disk; :class:`MatrixError` for anything else."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MatrixError(f"{p}: no such file") from None
    except (OSError, ValueError) as exc:
        raise MatrixError(f"{p}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT \
            or not isinstance(doc.get("rows"), list):
        raise MatrixError(f"{p}: not an {FORMAT} document (written by acp-model matrix)")
    return doc


def verdict_of(row: Mapping[str, Any]) -> str:
    """A row's verdict in a word or two: fail, pass, pass with warnings, or its status."""
    if row.get("status") != RowStatus.RAN:
        return str(row.get("status"))
    cells = (row.get("cells") or {}).values()
    if any(c.get("failures") for c in cells):
        return "fail"
    return "pass with warnings" if any(c.get("warnings") for c in cells) else "pass"


def rules_of(row: Mapping[str, Any], key: str) -> list[str]:
    """The distinct rules of a row's ``failures`` or ``warnings``, sorted."""
    return sorted({str(f["rule"]) for c in (row.get("cells") or {}).values()
                   for f in c.get(key) or []})


# --- comparing two matrices --------------------------------------------------------------------
def _rules_by_level(cell: Mapping[str, Any], key: str) -> set[str]:
    return {str(f["rule"]) for f in cell.get(key) or []}


def compare(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:  # noqa: C901
    """What changed from ``old`` to ``new``, per row and cell: failures new and fixed (a fix
    only where the new run exercised the rule; otherwise it is no longer exercised), warnings,
    families newly (no longer) exercised, versions, rows added and removed."""
    before = {r["key"]: r for r in old.get("rows") or []}
    after = {r["key"]: r for r in new.get("rows") or []}
    titles = {f["id"]: f["title"] for f in new.get("families") or old.get("families") or []}
    out: list[dict[str, Any]] = []

    def add(key: str, kind: Change, detail: str, family: str | None = None,
            rule: str | None = None) -> None:
        out.append({"row": key, "family": family, "family_title": titles.get(family or "", ""),
                    "change": kind.value, "rule": rule, "detail": detail})

    for key, row in after.items():
        was = before.get(key)
        if was is None:
            add(key, Change.ROW_ADDED, f"{row.get('status')} (version {row.get('version') or '?'})")
            continue
        if (was.get("version") or "") != (row.get("version") or ""):
            add(key, Change.VERSION_CHANGED, f"{was.get('version') or '?'} -> "
                f"{row.get('version') or '?'}")
        if was.get("status") != row.get("status"):
            add(key, Change.STATUS_CHANGED, f"{was.get('status')} -> {row.get('status')}"
                + (f": {row.get('reason')}" if row.get("reason") else ""))
        for fam, cell in (row.get("cells") or {}).items():
            prior = (was.get("cells") or {}).get(fam)
            if prior is None:
                continue
            fails, prior_fails = _rules_by_level(cell, "failures"), \
                _rules_by_level(prior, "failures")
            for rule in sorted(fails - prior_fails):
                add(key, Change.NEW_FAILURE, _message(cell, rule), fam, rule)
            for rule in sorted(prior_fails - fails):
                exercised = int((cell.get("rules") or {}).get(rule, 0))
                add(key, Change.FIXED if exercised else Change.NO_LONGER_EXERCISED,
                    f"exercised {exercised} time(s) without a failure" if exercised
                    else "failed before; not exercised in the new run", fam, rule)
            warns, prior_warns = _rules_by_level(cell, "warnings"), \
                _rules_by_level(prior, "warnings")
            for rule in sorted(warns - prior_warns):
                add(key, Change.NEW_WARNING, _message(cell, rule, "warnings"), fam, rule)
            for rule in sorted(prior_warns - warns):
                add(key, Change.WARNING_GONE, "", fam, rule)
            was_ex = prior.get("status") != Cell.NOT_EXERCISED
            now_ex = cell.get("status") != Cell.NOT_EXERCISED
            if now_ex and not was_ex and cell.get("status") != Cell.NOT_APPLICABLE:
                add(key, Change.NEWLY_EXERCISED, f"{cell.get('status')}, "
                    f"{cell.get('exercised', 0)} check(s)", fam)
            elif was_ex and not now_ex and prior.get("status") != Cell.NOT_APPLICABLE:
                add(key, Change.NO_LONGER_EXERCISED, f"was {prior.get('status')}", fam)
    for key, was in before.items():
        if key not in after:
            add(key, Change.ROW_REMOVED, f"was {was.get('status')}")
    return out


def _message(cell: Mapping[str, Any], rule: str, key: str = "failures") -> str:
    return next((str(f.get("message", "")) for f in cell.get(key) or [] if f["rule"] == rule),
                "")
