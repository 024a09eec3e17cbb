"""SARIF 2.1.0 from a report (``--sarif FILE``): where GitHub code scanning shows findings.

One result per distinct violation of the report: its rule ID, a level from the rule's strength
(``error`` for a MUST broken, ``warning`` for a SHOULD or an unproven MUST, ``note`` for the
rest), the violation's message, and the counterexample's text (client actions and agent
messages, the offending one marked) as the message's Markdown and a property. Each result
points at the transcript file and line of the offending message: the counterexample's own
transcript for a fuzz run written with ``--out``, the checked trace for ``acp-model check``.
The rule descriptors carry the rule's statement and ``helpUri`` (its documentation anchor). A
failure a baseline accepts is kept, suppressed (``suppressions``, with the entry's note).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from acp_model import __version__
from acp_model.report.links import docs_url, rule_url
from acp_model.spec.levels import Level
from acp_model.spec.rules import RULES
from acp_model.trace.format import GAP

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"


@dataclass(frozen=True)
class Located:
    """Where a violation shows: a file, its 1-based line, and the counterexample's text."""

    path: str | None = None
    line: int | None = None
    text: str = ""


def level_of(violation: dict[str, Any]) -> str:
    strength = violation.get("strength")
    if violation.get("level") == Level.FAIL:
        return "error" if strength in ("MUST", "MUST NOT", None) else "warning"
    return "warning" if strength in ("MUST", "MUST NOT", "SHOULD", "SHOULD NOT") else "note"


def _uri(path: str) -> str:
    """Relative to the working directory when below it (what code scanning resolves against
    the repository), else an absolute file URI."""
    p = Path(path).resolve()
    try:
        return p.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.as_uri()


def _descriptor(rule: str) -> dict[str, Any]:
    known = RULES.get(rule)
    statement = known.statement if known is not None else rule
    out: dict[str, Any] = {"id": rule, "shortDescription": {"text": statement[:1000]},
                           "fullDescription": {"text": statement},
                           "helpUri": rule_url(rule),
                           "help": {"text": f"{statement}\nSee {rule_url(rule)}"}}
    if known is not None:
        out["properties"] = {"party": str(known.party), "kind": str(known.kind)}
    return out


def sarif_log(report: dict[str, Any], located: dict[int, Located] | None = None
              ) -> dict[str, Any]:
    """The SARIF log of ``report``. ``located`` maps a violation's position in
    ``report["violations"]`` to where it shows (no entry: a result without a location)."""
    located = located or {}
    accepted = {a["rule"]: a.get("note", "") for a in
                (report.get("baseline") or {}).get("accepted", [])}
    rules: list[str] = []
    results = []
    for n, v in enumerate(report.get("violations", [])):
        rule = v["rule"]
        if rule not in rules:
            rules.append(rule)
        where = located.get(n, Located())
        message: dict[str, Any] = {"text": v.get("message", rule)}
        if where.text:
            message["markdown"] = (f"{v.get('message', rule)}\n\nCounterexample:\n\n```\n"
                                   f"{where.text.rstrip()}\n```")
        result: dict[str, Any] = {"ruleId": rule, "ruleIndex": rules.index(rule),
                                  "level": level_of(v), "message": message,
                                  "properties": {"strength": v.get("strength"),
                                                 "party": v.get("party"),
                                                 "session": v.get("session"),
                                                 "check": v.get("check")}}
        if where.text:
            result["properties"]["counterexample"] = where.text
        if where.path is not None:
            physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(where.path)}}
            if where.line is not None:
                physical["region"] = {"startLine": where.line}
            result["locations"] = [{"physicalLocation": physical}]
        if v.get("level") == Level.FAIL and rule in accepted:
            result["suppressions"] = [{"kind": "external", "status": "accepted",
                                       "justification": accepted[rule] or "in the baseline"}]
        result["properties"] = {k: x for k, x in result["properties"].items() if x is not None}
        results.append(result)
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "acp-model", "version": __version__,
                            "informationUri": docs_url(),
                            "rules": [_descriptor(r) for r in rules]}},
        "results": results,
        "properties": {"verdict": report.get("verdict"), "command": report.get("command"),
                       "source": report.get("source"),
                       "spec": (report.get("spec") or {}).get("revision")},
    }
    return {"$schema": SCHEMA_URI, "version": VERSION, "runs": [run]}


def write_sarif(report: dict[str, Any], path: str | Path,
                located: dict[int, Located] | None = None) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(sarif_log(report, located), indent=2, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    return out


def trace_lines(path: str | os.PathLike[str]) -> dict[int, int]:
    """The 1-based line of each message of a JSONL trace, by its number (blank lines hold
    none; an excerpt numbers its records itself and marks gaps, ``trace/format.py``)."""
    out: dict[int, int] = {}
    number = 0
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            if b'"n"' in line or b'"gap"' in line:  # the rare numbered line: read it
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError:
                    obj = None
                if isinstance(obj, dict) and isinstance(obj.get(GAP), list):
                    number = int(obj[GAP][-1]) + 1
                    continue
                if isinstance(obj, dict) and isinstance(obj.get("n"), int):
                    number = obj["n"]
            out[number] = lineno
            number += 1
    return out


def check_locations(report: dict[str, Any], trace: str) -> dict[int, Located]:
    """Each violation of an ``acp-model check`` report at its record's line of ``trace``."""
    lines = trace_lines(trace)
    out = {}
    for n, v in enumerate(report.get("violations", [])):
        index = v.get("index")
        out[n] = Located(trace, lines.get(index) if isinstance(index, int) else None)
    return out
