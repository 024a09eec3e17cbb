"""``acp-model baseline write``: a baseline file accepting a report's failures."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from acp_model.cli.common import EXIT_OK, UsageError, read_json


def cmd_baseline_write(args: argparse.Namespace, console: Console) -> int:
    from acp_model.report.baseline import BaselineError, failures_of, from_report, load

    path = Path(args.report)
    report = read_json(path)
    if not isinstance(report, dict) or not isinstance(report.get("violations"), list):
        raise UsageError(f"{path}: not an acp-model JSON report (no `violations`)")
    text = from_report(report, path.name)
    out = Path(args.output)
    if out.exists() and not args.force:
        raise UsageError(f"{out} exists (--force replaces it)")
    out.write_text(text, encoding="utf-8")
    try:
        entries = load(out).entries  # what was written reads back
    except BaselineError as exc:  # pragma: no cover - a bug of from_report
        raise UsageError(str(exc)) from None
    console.print(f"{out}: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} "
                  f"accepting {len(failures_of(report))} failure(s); add each its note")
    return EXIT_OK


def register(sub: Any) -> None:
    p = sub.add_parser("baseline", help="baseline files: failures accepted until fixed",
                       description="A baseline (acp-model fuzz --baseline FILE) names failures "
                       "a run accepts; see docs/ci.md.",
                       epilog="example: acp-model baseline write out/report.json -o "
                              "acp-baseline.toml")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    w = verbs.add_parser("write", help="write a baseline accepting every failure of a report")
    w.add_argument("report", metavar="REPORT.json", help="a JSON report of acp-model fuzz or "
                   "check (--report)")
    w.add_argument("-o", "--output", default="acp-baseline.toml", metavar="FILE.toml",
                   help="where to write it (default acp-baseline.toml)")
    w.add_argument("--force", action="store_true", help="replace an existing file")
    w.set_defaults(func=cmd_baseline_write)
