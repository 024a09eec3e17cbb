"""Command line: ``acp-model check | rules`` (more subcommands register themselves here)."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Sequence

from rich.console import Console

from acp_model import __version__
from acp_model.readings import DEFAULT, READING_DEFS, ReadingError, Readings
from acp_model.rules import catalogue
from acp_model.trace import TraceError

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """A user mistake: printed without a traceback, exit code 2."""


def _readings(args: argparse.Namespace) -> Readings:
    try:
        return DEFAULT.parse(args.reading or [])
    except ReadingError as exc:
        raise UsageError(str(exc)) from None


def _add_reading_option(p: argparse.ArgumentParser) -> None:
    names = "; ".join(f"{d.id}/{d.slug}: {'|'.join(d.values)} (default {d.default})"
                      for d in READING_DEFS.values())
    p.add_argument("--reading", action="append", metavar="NAME=VALUE",
                   help=f"choose a reading of an ambiguity (repeatable). {names}")


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    from acp_model.check import check_trace
    from acp_model.report import render, write_json

    readings = _readings(args)
    try:
        report = check_trace(args.trace, readings=readings, validate=not args.no_validate,
                             engine=args.engine)
    except TraceError as exc:
        raise UsageError(f"unusable trace: {exc}") from None
    if args.report:
        write_json(report, args.report)
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        console.print(f"checked {report['summary']['messages']} message(s) in "
                      f"{report['summary']['sessions']} session(s) from {args.trace}")
        render(report, console)
    return EXIT_FAIL if report["verdict"] == "fail" else EXIT_OK


def cmd_rules(args: argparse.Namespace, console: Console) -> int:
    from rich.table import Table

    readings = _readings(args)
    rules = catalogue()
    if args.format == "json":
        out = []
        for r in rules:
            d = r.to_json()
            d["effective_strength"] = r.effective_strength(readings["STRENGTH"])
            out.append(d)
        print(json.dumps({"rules": out, "readings": {
            d.id: {"slug": d.slug, "question": d.question, "values": dict(d.values),
                   "default": d.default, "citation": d.citation}
            for d in READING_DEFS.values()}}, indent=2))
        return EXIT_OK
    table = Table(title=f"acp-model rule catalogue ({len(rules)} rules)")
    for col in ("id", "binds", "strength", "kind", "rule", "citation", "acp-tck"):
        table.add_column(col, overflow="fold")
    for r in rules:
        strength = r.effective_strength(readings["STRENGTH"])
        if r.alt_strength:
            strength += f" ‡ ({r.alt_strength}: {r.alt_source})"
        table.add_row(r.id, r.party, strength, r.kind, r.statement, r.citation, ", ".join(r.tck))
    console.print(table)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-model",
        description="Formal model, offline checker and live fuzzer for the ACP v2 prompt "
                    "lifecycle.")
    parser.add_argument("--version", action="version", version=f"acp-model {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("check", help="check a recorded JSONL trace against the model",
                       description="Check a recorded trace (one JSON object per line: "
                       '{"dir": "c2a"|"a2c", "t": seconds, "msg": message} or '
                       '{"dir": ..., "raw": "unparseable line"}). Exit 0: no failure; '
                       "1: a MUST rule or a liveness obligation failed; 2: unusable input.")
    p.add_argument("trace", help="path of the JSONL trace")
    p.add_argument("--report", metavar="PATH.json", help="write the JSON report here")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="terminal output format (default text)")
    p.add_argument("--no-validate", action="store_true",
                   help="skip JSON schema validation (lifecycle rules only)")
    p.add_argument("--engine", choices=("table", "statemachine"), default="table",
                   help="run the derived transition table (fast, default) or the "
                        "python-statemachine machine itself")
    _add_reading_option(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("rules", help="print the rule catalogue",
                       description="The catalogued rules: ID, party bound, strength, statement, "
                       "citation and the acp-tck requirement checking the same thing.")
    p.add_argument("--format", choices=("table", "json"), default="table")
    _add_reading_option(p)
    p.set_defaults(func=cmd_rules)

    for register in _extensions():
        register(sub)
    return parser


def _extensions() -> list:
    """Subcommands defined next to the features they run (fuzz, explore, diagram...)."""
    found = []
    for module in ("acp_model.fuzzing.cli", "acp_model.explore_cli"):
        try:
            mod = __import__(module, fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        found.append(mod.register)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    agent: list[str] | None = None
    if "--" in words:  # everything after "--" is the agent's command line, untouched
        cut = words.index("--")
        words, agent = words[:cut], words[cut + 1:]
    args = parser.parse_args(words)
    if agent is not None:
        args.agent = agent
    console = Console(stderr=False, highlight=False)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args, console))
    except UsageError as exc:
        err.print(f"[red]error:[/] {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        err.print(f"[red]internal error:[/] {type(exc).__name__}: {exc} "
                  "(run with --debug for the traceback)")
        return EXIT_INTERNAL


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: subcommand modules raise
    # acp_model.cli.UsageError, which must be the class main() catches.
    from acp_model import cli as _cli

    sys.exit(_cli.main())
