"""``acp-model check``: a recorded trace against the model."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from acp_model.cli.common import EXIT_FAIL, EXIT_OK, UsageError, add_reading_option
from acp_model.oracle.offline import check_one_sided, check_records
from acp_model.oracle.one_sided import OneSidedError, Recording
from acp_model.report.document import write_json
from acp_model.report.html import trace_page, write_html
from acp_model.report.sarif import Located, check_locations, write_sarif
from acp_model.report.text import render, show
from acp_model.spec.readings import DEFAULT, ReadingError
from acp_model.trace.format import Record, TraceError, iter_trace

BIG_TRACE = 8 << 20  # bytes: about 40k messages, a second or more of checking


@contextmanager
def _reading(path: str) -> Iterator[Callable[[int], None] | None]:
    """A transient progress bar on stderr over the bytes of a trace that takes seconds to
    check (stdout may carry the JSON report)."""
    try:
        size = Path(path).stat().st_size
    except OSError:  # iter_trace says what is wrong with it
        size = 0
    if size < BIG_TRACE:
        yield None
        return
    with Progress(TextColumn("checking"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("checking", total=size)
        yield lambda read: bar.update(task, completed=read)


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    recording: Recording | None = None
    try:
        options: dict[str, Any] = {
            "readings": DEFAULT.parse(args.reading or []), "validate": not args.no_validate,
            "engine": args.engine, "spec": args.spec, "open_at_end": args.open_at_end}
        if args.one_sided is not None:
            report, recording = check_one_sided(args.trace, args.one_sided, **options)
            records: Iterable[Record] = recording.records
        else:
            with _reading(args.trace) as progress:
                records = iter_trace(args.trace, progress)
                if args.html:  # the page shows the records: keep them
                    records = list(records)
                report = check_records(records, source=str(args.trace), **options)
    except TraceError as exc:
        raise UsageError(f"unusable trace: {exc}") from None
    except OneSidedError as exc:
        raise UsageError(f"unusable one-sided recording: {exc}") from None
    except ReadingError as exc:  # a bad --reading, or one the decided revision fixes otherwise
        raise UsageError(str(exc)) from None
    if report["summary"]["messages"] == 0:  # a PASS of nothing would read as a clean agent
        raise UsageError(f"{args.trace} holds no message: nothing to judge (a trace is JSON "
                         "lines, one recorded message each: docs/checker.md, 'Trace format')")
    if args.report:
        write_json(report, args.report)
    if args.sarif:
        write_sarif(report, args.sarif, _locations(report, str(args.trace), recording))
    if args.html:
        marks = {} if recording is None else {i.index: "inferred" for i in recording.inferred}
        write_html(trace_page(report, records, str(args.trace), marks), args.html)
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        show(console, f"checked {report['summary']['messages']} message(s) in "
             f"{report['summary']['sessions']} session(s) from {args.trace}", indent="")
        render(report, console)
    return EXIT_FAIL if report["verdict"] == "fail" else EXIT_OK


def _locations(report: dict[str, Any], trace: str,
               recording: Recording | None) -> dict[int, Located]:
    """Where each violation is in the file: a one-sided recording's own line numbers."""
    if recording is None:
        return check_locations(report, trace)
    return {n: Located(trace, v.get("line")) for n, v in enumerate(report["violations"])}


def register(sub: Any) -> None:
    p = sub.add_parser("check", help="check a recorded JSONL trace against the model",
                       description="Check a recorded trace (one JSON object per line: "
                       '{"dir": "c2a"|"a2c", "t": seconds, "msg": message} or '
                       '{"dir": ..., "raw": "unparseable line"}). Exit 0: no failure; '
                       "1: a MUST rule or a liveness obligation failed; 2: unusable input.",
                       epilog="example: acp-model check trace.jsonl --report report.json "
                       "--html report.html\n"
                       "example: acp-model check --one-sided agent golden.jsonl",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="path of the JSONL trace")
    p.add_argument("--report", metavar="PATH.json", help="write the JSON report here")
    p.add_argument("--sarif", metavar="PATH.sarif", help="write a SARIF 2.1.0 log (GitHub code "
                   "scanning): one result per violation, at its line of the trace")
    p.add_argument("--html", metavar="PATH.html",
                   help="write a self-contained HTML report (findings with proofs, sequence "
                        "diagrams, rules, transcript)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="terminal output format (default text)")
    p.add_argument("--no-validate", action="store_true",
                   help="skip JSON schema validation (lifecycle rules only)")
    p.add_argument("--open-at-end", action="store_true",
                   help="list what is still owed when the trace ends as open, not as "
                        "liveness failures (traces of interactive sessions, e.g. from "
                        "acp-model proxy)")
    p.add_argument("--one-sided", metavar="SIDE",
                   help="the file holds only one side's messages (SIDE: agent), one JSON "
                        'object a line: {"kind": "request"|"notification"|"response"|"error", '
                        '"method", "payload"} (vendors\' golden files), or a trace of a2c '
                        "records only; the client's requests the agent's answers imply are "
                        "inferred and listed, rules that need the client's side are reported "
                        "as not judged")
    p.add_argument("--engine", choices=("table", "statemachine"), default="table",
                   help="run the derived transition table (fast, default) or the "
                        "python-statemachine machine itself")
    add_reading_option(p, auto=True)
    p.set_defaults(func=cmd_check)

