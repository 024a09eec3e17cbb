"""The ``acp-model`` command line: one module per subcommand, registered here."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from collections.abc import Sequence

from rich.console import Console

from acp_model import __version__
from acp_model.cli import (
    agents,
    baseline,
    check,
    diagram,
    explore,
    fuzz,
    matrix,
    merge,
    proxy,
    report_bug,
    rules,
)
from acp_model.cli.common import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    UsageError,
)

EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE

SUBCOMMANDS = (check, rules, fuzz, baseline, proxy, merge, explore, diagram, agents, matrix,
               report_bug)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-model",
        description="Formal model, offline checker and live fuzzer for the ACP prompt "
                    "lifecycle (v2 drafts and v1).",
        epilog="example: acp-model fuzz --out out -- python -m acp_model.agents.reference\n"
               "every option of every command: the docs site's command line page (docs/cli.md)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"acp-model {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    agent: list[str] | None = None
    if "--" in words:  # everything after "--" is the agent's command line, untouched
        cut = words.index("--")
        words, agent = words[:cut], words[cut + 1:]
    args = parser.parse_args(words)
    args.words = words + (["--", *agent] if agent is not None else [])  # for --jobs workers
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
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`acp-model check ... | head`): not an error of ours. What is
        # still buffered can go nowhere, so stdout points at the void; the status is the one a
        # tool killed by SIGPIPE has, since the verdict may not have been printed
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        err.print(f"[red]internal error:[/] {type(exc).__name__}: {exc} "
                  "(run with --debug for the traceback)")
        return EXIT_INTERNAL
    finally:
        _forget_handled_interrupt()


def _forget_handled_interrupt() -> None:
    """Clear CPython's "unhandled KeyboardInterrupt" flag before exiting.

    CPython sets that flag whenever code run by ``exec`` of a string raises KeyboardInterrupt,
    even if a caller handles it (Hypothesis execs generated code while it builds a state
    machine, so a Ctrl-C can land there), and at exit it then kills the process with SIGINT
    instead of returning our exit code. Every ``exec`` of a string resets the flag first.
    """
    exec("None")


