"""``acp-model rules``: the rule catalogue."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console

from acp_model.cli import rule_map
from acp_model.cli.common import EXIT_OK, add_reading_option, readings_of
from acp_model.spec.readings import READING_DEFS
from acp_model.spec.rules import catalogue


def cmd_rules(args: argparse.Namespace, console: Console) -> int:
    from rich.table import Table

    readings = readings_of(args)
    rules = catalogue()
    if args.map:
        print(rule_map.markdown(), end="")
        return EXIT_OK
    decided = rule_map.decisions()
    if args.format == "json":
        out = []
        for r in rules:
            d = r.to_json()
            d["effective_strength"] = r.effective_strength(readings["STRENGTH"])
            d["decided_in"] = rule_map.decided_in(r.id)
            out.append(d)
        print(json.dumps({"rules": out, "readings": {
            d.id: {"slug": d.slug, "question": d.question, "values": dict(d.values),
                   "default": d.default, "citation": d.citation}
            for d in READING_DEFS.values()}}, indent=2))
        return EXIT_OK
    table = Table(title=f"acp-model rule catalogue ({len(rules)} rules)")
    table.add_column("id", no_wrap=True)
    for col in ("binds", "strength", "kind", "rule", "citation", "decided in", "acp-tck"):
        table.add_column(col, overflow="fold")
    for r in rules:
        strength = r.effective_strength(readings["STRENGTH"])
        if r.alt_strength:
            strength += f" ‡ ({r.alt_strength}: {r.alt_source})"
        where = sorted({m.module.rsplit(".", 1)[-1] for m in decided.get(r.id, [])})
        table.add_row(r.id, r.party, strength, r.kind, r.statement, r.citation,
                      ", ".join(where) or ("-" if r.kind in ("allowance", "definition")
                                           else ", ".join(r.judged_via) or "-"),
                      ", ".join(r.tck))
    console.print(table)
    return EXIT_OK


def register(sub: Any) -> None:
    p = sub.add_parser("rules", help="print the rule catalogue",
                       description="The catalogued rules: ID, party bound, strength, statement, "
                       "citation and the acp-tck requirement checking the same thing.")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--map", action="store_true",
                   help="print the rule map (where each rule is decided) as Markdown")
    add_reading_option(p)
    p.set_defaults(func=cmd_rules)

