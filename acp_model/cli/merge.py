"""``acp-model merge``: the reports of many workers (machines, shards) as one."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console

from acp_model.cli.common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, UsageError, read_json
from acp_model.report.document import write_json
from acp_model.report.merge import MergeError, merge_reports
from acp_model.report.text import counterexample_line, render, show


def cmd_merge(args: argparse.Namespace, console: Console) -> int:
    reports = [read_json(name) for name in args.reports]
    try:
        merged = merge_reports(reports, [str(p) for p in args.reports])
    except MergeError as exc:
        raise UsageError(str(exc)) from None
    if args.report:
        write_json(merged, args.report)
    if args.html:
        from acp_model.fuzzing.artifacts import merged_html
        from acp_model.report.html import write_html

        write_html(merged_html(merged), args.html)
    if args.format == "json":
        print(json.dumps(merged, indent=2))
        return _exit(merged)
    s = merged["summary"]
    console.print(f"merged {s['workers']} report(s): "
                  + ", ".join(f"{k} {s[k]}" for k in ("examples", "actions", "messages")
                              if k in s))
    for note in merged["notes"]:
        show(console, f"note: {note}", indent="")
    render(merged, console)
    for ce in merged["counterexamples"]:
        show(console, counterexample_line(ce, f"(found by {len(ce['workers'])} worker(s); "
                                              f"kept from {ce['worker']})"),
             indent="", markup=True)
    return _exit(merged)


def _exit(merged: dict[str, Any]) -> int:
    """1 for a failure in any report; 2 when a report judged nothing and none failed."""
    return {"fail": EXIT_FAIL, "error": EXIT_USAGE}.get(merged["verdict"], EXIT_OK)


def register(sub: Any) -> None:
    p = sub.add_parser("merge", help="combine the JSON reports of many workers into one",
                       description="Combine check/fuzz/proxy JSON reports (e.g. one per CI "
                       "machine or shard) into one: the verdict, rule statuses and counts, "
                       "distinct violations and counterexamples (by rule: a reproduced one before "
                       "an unverified one, then the shortest). Exit 0: no failure; 1: a "
                       "failure in any report; 2: unusable input, or a report that judged "
                       "nothing.",
                       epilog="example: acp-model merge worker-*/report.json --report "
                       "merged.json --html merged.html",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reports", nargs="+", metavar="REPORT.json")
    p.add_argument("--report", metavar="PATH.json", help="write the merged JSON report here")
    p.add_argument("--html", metavar="PATH.html", help="write the merged report as a page")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="terminal output format (default text)")
    p.set_defaults(func=cmd_merge)
