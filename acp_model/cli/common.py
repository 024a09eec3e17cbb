"""What every subcommand shares: exit codes, the usage error, reading a JSON file the user
names, the --reading and --spec options."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_model.spec import revisions
from acp_model.spec.readings import DEFAULT, READING_DEFS, ReadingError, Readings

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130
PROGRESS = "progress: "  # a --jobs worker's line after each example (cli/jobs.py reads it)

if TYPE_CHECKING:
    from acp_model.fuzzing.orchestrator import RunEnd


def exit_code(end: RunEnd) -> int:
    """The exit code of a fuzz run that ended so (``acp-model fuzz``, with or without
    ``--jobs``); VOID: not the agent's verdict, its command, its environment or a store could
    not be used."""
    from acp_model.fuzzing.orchestrator import RunEnd

    return {RunEnd.FAILED: EXIT_FAIL, RunEnd.INTERRUPTED: EXIT_INTERRUPTED,
            RunEnd.VOID: EXIT_USAGE, RunEnd.PASSED: EXIT_OK}[end]


class UsageError(Exception):
    """A user mistake: printed without a traceback, exit code 2."""


def read_json(path: str | Path, what: str = "JSON report") -> Any:
    """The JSON document at ``path``; a missing or unreadable file is the user's mistake."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not a {what} ({exc})") from None


def readings_of(args: argparse.Namespace, revision: str | None = None) -> Readings:
    """The readings chosen with --spec and --reading (a bad one is a usage error).

    ``revision`` overrides ``--spec`` (what ``auto`` decided); under ``auto`` before that is
    known, the seed's revision applies and a contradiction is found again once it is decided.
    """
    spec = revision or getattr(args, "spec", None) or revisions.SEED
    if spec == revisions.AUTO:
        spec = revisions.SEED
    try:
        return DEFAULT.parse([f"SPEC={spec}", *(args.reading or [])])
    except ReadingError as exc:
        raise UsageError(str(exc)) from None


def add_reading_option(p: argparse.ArgumentParser, *, auto: bool = False,
                       stored: bool = False) -> None:
    """``--reading`` and ``--spec``; ``auto`` (the agent decides) only where there is one,
    ``stored``: the default is what a file records (replays)."""
    names = "; ".join(f"{d.id}/{d.slug}: {'|'.join(d.values)} (default {d.default})"
                      for d in READING_DEFS.values() if d.id != "SPEC")
    p.add_argument("--reading", action="append", metavar="NAME=VALUE",
                   help=f"choose a reading of an ambiguity (repeatable). {names}")
    choices = revisions.CHOICES if auto else revisions.NAMES
    default = None if stored else revisions.AUTO if auto else revisions.SEED
    p.add_argument("--spec", choices=choices, default=default,
                   help="the revision of the text that judges (v1 or a v2 revision): "
                        + "; ".join(f"{r.name}: {r.title}" for r in revisions.REVISIONS.values())
                        + ("; auto: decided by the agent (protocolVersion 1 in its initialize "
                           "answer: v1; else its first prompt response, a messageId receipt: "
                           "sdk-2.4.0, else seed)" if auto else "")
                        + (" (default: the one the file records)" if stored
                           else f" (default {default})"))
