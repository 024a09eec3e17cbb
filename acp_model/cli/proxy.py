"""``acp-model proxy``: put it where the editor's agent command goes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from acp_model.cli.common import UsageError, add_reading_option
from acp_model.fuzzing.frontend import agent_problem
from acp_model.spec.readings import DEFAULT, ReadingError

PROXY_EPILOG = """\
stdout is the editor's protocol channel: the proxy writes nothing of its own there. Live lines
("acp-model: FAIL CANCEL-07 (MUST) #16 session s1: ...") go to stderr and --log. The exit
status is the agent's (128 + N if the agent or the proxy died of signal N).
Example (Zed, settings.json):
  "agent_servers": {"My agent (checked)": {"command": "acp-model",
      "args": ["proxy", "--trace", "/tmp/acp.jsonl", "--", "my-agent", "--stdio"]}}
example: acp-model proxy --trace /tmp/acp.jsonl --log /tmp/acp-model.log -- my-agent --stdio"""


def cmd_proxy(args: argparse.Namespace, console: Console) -> int:
    from acp_model.proxy.run import ProxyConfig, ProxyError, run_proxy

    argv = list(args.agent or [])
    if not argv:
        raise UsageError("give the agent command after '--', e.g. "
                         "acp-model proxy -- python -m acp_model.agents.reference")
    problem = agent_problem(argv)
    if problem is not None:
        raise UsageError(problem)
    try:
        readings = DEFAULT.parse(args.reading or [])
        if args.spec != "auto":
            readings = readings.parse([f"SPEC={args.spec}"])
    except ReadingError as exc:
        raise UsageError(str(exc)) from None
    cfg = ProxyConfig(argv, trace=_path(args.trace), report=_path(args.report),
                      html=_path(args.html), log=_path(args.log), readings=readings, spec=args.spec,
                      grace=args.grace, quiet=args.quiet, validate=not args.no_validate,
                      max_queue=int(args.max_queue * (1 << 20)))
    try:
        return run_proxy(cfg).exit_code
    except ProxyError as exc:
        raise UsageError(str(exc)) from None


def _mib(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of MiB: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def register(sub: Any) -> None:
    p = sub.add_parser(
        "proxy", help="sit between an editor and its agent and judge the wire live",
        description="Start the agent, forward the editor's stdin to it and its stdout to the "
        "editor byte for byte, and check every message of both directions with the same "
        "model as acp-model check, reporting each violation the moment it is decided.",
        epilog=PROXY_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", metavar="FILE.jsonl",
                   help="write the trace as it happens (acp-model check reads it)")
    p.add_argument("--report", metavar="FILE.json", help="write the JSON report at the end")
    p.add_argument("--html", metavar="FILE.html", help="write a self-contained HTML report at "
                   "the end (findings with proofs, sequence diagrams, transcript)")
    p.add_argument("--log", metavar="FILE", help="append the live lines to FILE too")
    p.add_argument("--grace", type=float, default=3.0, metavar="S",
                   help="seconds the agent gets to exit after the editor closes stdin, and "
                        "between the steps of the shutdown ladder (default 3)")
    p.add_argument("--quiet", action="store_true", help="no live lines on stderr")
    p.add_argument("--max-queue", type=_mib, default=64.0, metavar="MIB",
                   help="how far (MiB) the judge may fall behind the wire before judging stops "
                        "for the rest of the session; forwarding never waits (default 64)")
    p.add_argument("--no-validate", action="store_true", help="skip JSON schema validation")
    add_reading_option(p, auto=True)
    p.add_argument("agent", nargs="*", metavar="-- AGENT_CMD", help="the agent's command line")
    p.set_defaults(func=cmd_proxy)
