"""``acp-model report-bug``: the issue body of each failure, ready for its maintainers."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from acp_model.cli.common import EXIT_OK, UsageError


def cmd_report_bug(args: argparse.Namespace, console: Console) -> int:
    from acp_model.matrix.bugs import ISSUE, installed_sdks, issue_body, issues_in, title_of
    from acp_model.report.matrix import MatrixError, not_filed

    try:
        found, base = issues_in(Path(args.dir))
    except MatrixError as exc:
        raise UsageError(str(exc)) from None
    if not found:
        console.print(f"no failure in {args.dir} (as the current code judges its transcripts)")
        return EXIT_OK
    for row, f in found:
        if (why := not_filed(f)) is not None:
            console.print(f"{title_of(row, f)}\n  not filed: {why}", markup=False)
            continue
        body = issue_body(row, f, base, sdks=installed_sdks(row))
        if args.print:
            print(body)
            continue
        path = (base / f["transcript"]).parent / ISSUE
        path.write_text(body, encoding="utf-8")
        console.print(f"{title_of(row, f)}\n  wrote {path} (attach transcript.jsonl and "
                      "replay.json from the same folder)")
    return EXIT_OK


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report-bug", help="write the issue body of each failure, for its maintainers",
        description="For each failure under DIR (a matrix folder, a fuzz run's --out folder "
        "with its report.json, or one failure's folder), judged again by the current code: "
        "an issue body with the agent, version and protocol, the spec sentence it breaks and "
        "its strength, the program in words, the numbered wire lines that prove it, how often "
        "it reproduced, and the command that replays it; for a JSON-RPC envelope rule, the "
        "ACP SDK the installed agent bundles, where the behaviour may belong. Written as "
        "issue.md beside the "
        "failure's transcript and replay file (attach those two).",
        epilog="example: acp-model report-bug matrix/opencode-v1/CANCEL-07",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", metavar="DIR", help="a matrix folder, a fuzz --out folder, or one "
                   "failure's folder")
    p.add_argument("--print", action="store_true", help="print the bodies instead of writing "
                   "issue.md files")
    p.set_defaults(func=cmd_report_bug)
