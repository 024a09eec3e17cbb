"""``acp-model rules``: the rule catalogue."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console

from acp_model.cli import rule_map
from acp_model.cli.common import EXIT_OK, add_reading_option, readings_of
from acp_model.report.text import show
from acp_model.spec.readings import READING_DEFS, Readings
from acp_model.spec.revisions import NAMES, REVISIONS
from acp_model.spec.rules import catalogue


def cmd_rules(args: argparse.Namespace, console: Console) -> int:
    from rich.table import Table

    readings = readings_of(args)
    rules = catalogue()
    if args.map:
        print(rule_map.markdown(), end="")
        return EXIT_OK
    if args.diff:
        return _diff(readings, readings_of(args, args.diff), args.format, console)
    decided = rule_map.decisions()
    if args.format == "json":
        out = []
        for r in rules:
            d = r.to_json()
            d["effective_strength"] = r.strength_under(readings)
            d["decided_in"] = rule_map.decided_in(r.id)
            out.append(d)
        print(json.dumps({"rules": out, "readings": {
            d.id: {"slug": d.slug, "question": d.question, "values": dict(d.values),
                   "default": d.default, "citation": d.citation}
            for d in READING_DEFS.values()}}, indent=2))
        return EXIT_OK
    rows = []
    for r in rules:
        strength = r.strength_under(readings)
        if r.alt_strength:
            strength += f" ‡ ({r.alt_strength}: {r.alt_source})"
        where = sorted({m.module.rsplit(".", 1)[-1] for m in decided.get(r.id, [])})
        rows.append({"id": r.id, "binds": r.party, "strength": strength, "kind": r.kind,
                     "rule": r.statement, "citation": r.citation,
                     "decided in": ", ".join(where) or (
                         "-" if r.kind in ("allowance", "definition")
                         else ", ".join(r.judged_via) or "-"),
                     "acp-tck": ", ".join(r.tck)})
    title = f"acp-model rule catalogue ({len(rules)} rules)"
    if args.format == "table":
        table = Table(title=title)
        for col in rows[0]:  # the rows' keys are the columns
            table.add_column(col, no_wrap=col == "id", overflow="fold")
        for row in rows:
            table.add_row(*row.values())
        console.print(table)
        return EXIT_OK
    console.print(f"[bold]{title}[/]\n")
    for row, r in zip(rows, rules, strict=True):
        facts = [r.binds, row["kind"], f"decided in {row['decided in']}"]
        if row["acp-tck"]:
            facts.append(f"acp-tck {row['acp-tck']}")
        _entry(console, row["id"], row["strength"], facts, row["rule"], row["citation"])
    return EXIT_OK


def _entry(console: Console, rule_id: str, strength: str, facts: list[str], statement: str,
           citation: str) -> None:
    """One rule as a block that reads at any terminal width (a table of eight columns does
    not fit 80): the ID and strength, then its facts, statement and source indented below."""
    show(console, f"{rule_id}  {strength}", "bold", indent="")
    show(console, " · ".join(facts), "dim")
    show(console, statement)
    show(console, citation, "cyan")
    console.print()


def revision_diff(a: Readings, b: Readings) -> dict[str, Any]:
    """What changes from revision ``a`` to ``b``: rules only one has, strengths and citations
    that differ, and the readings each decides."""
    ra, rb = a.revision, b.revision
    rows: list[dict[str, Any]] = []
    for r in catalogue():
        in_a, in_b = r.applies(ra), r.applies(rb)
        if in_a != in_b:
            rows.append({"id": r.id, "change": "added" if in_b else "removed",
                         "strength": r.strength_under(b if in_b else a),
                         "statement": r.statement, "citation": r.citation_in(rb if in_b else ra)})
        elif in_a and (r.strength_under(a) != r.strength_under(b)
                       or r.citation_in(ra) != r.citation_in(rb)):
            sa, sb = r.strength_under(a), r.strength_under(b)
            rows.append({"id": r.id, "change": "changed" if sa != sb else "cited anew",
                         "strength": f"{sa} -> {sb}" if sa != sb else sb,
                         "statement": r.statement, "citation": r.citation_in(rb)})
    readings = [{"reading": k, ra: a[k], rb: b[k], "why": REVISIONS[rb].why.get(k)
                 or REVISIONS[ra].why.get(k, "")}
                for k, _ in a.values if k != "SPEC" and a[k] != b[k]]
    return {"from": ra, "to": rb, "rules": rows, "readings": readings}


def _diff(a: Readings, b: Readings, fmt: str, console: Console) -> int:
    from rich.table import Table

    doc = revision_diff(a, b)
    if fmt == "json":
        print(json.dumps(doc, indent=2))
        return EXIT_OK
    title = f"rules: spec {doc['from']} -> {doc['to']} ({len(doc['rules'])} differences)"
    if fmt == "table":
        table = Table(title=title)
        for col in ("id", "change", "strength", "rule", "citation"):
            table.add_column(col, overflow="fold", no_wrap=col == "id")
        for row in doc["rules"]:
            table.add_row(row["id"], row["change"], row["strength"], row["statement"],
                          row["citation"])
        console.print(table)
    else:
        console.print(f"[bold]{title}[/]\n")
        for row in doc["rules"]:
            _entry(console, row["id"], row["strength"], [row["change"]], row["statement"],
                   row["citation"])
    decided = Table(title="readings the revisions decide differently")
    for col in ("reading", doc["from"], doc["to"], "deciding text"):
        decided.add_column(col, overflow="fold")
    for row in doc["readings"]:
        decided.add_row(row["reading"], row[doc["from"]], row[doc["to"]], row["why"])
    console.print(decided)
    return EXIT_OK


def register(sub: Any) -> None:
    p = sub.add_parser("rules", help="print the rule catalogue",
                       description="The catalogued rules: ID, party bound, strength, statement, "
                       "citation and the acp-tck requirement checking the same thing.",
                       epilog="example: acp-model rules --spec seed --diff sdk-2.4.0",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--format", choices=("text", "table", "json"), default="text",
                   help="text: one block per rule, readable at any width (default); table: one "
                        "row per rule, for wide terminals; json: the data, readings included")
    p.add_argument("--map", action="store_true",
                   help="print the rule map (where each rule is decided) as Markdown")
    add_reading_option(p)
    p.add_argument("--diff", choices=NAMES, metavar="REVISION",
                   help="what changes from --spec to REVISION: rules added, removed or "
                        "changed, and the readings each decides")
    p.set_defaults(func=cmd_rules)

