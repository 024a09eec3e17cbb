"""What every subcommand shares: exit codes, the usage error, the --reading option."""

from __future__ import annotations

import argparse

from acp_model.spec.readings import DEFAULT, READING_DEFS, ReadingError, Readings

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A user mistake: printed without a traceback, exit code 2."""


def readings_of(args: argparse.Namespace) -> Readings:
    """The readings chosen with --reading (a bad one is a usage error)."""
    try:
        return DEFAULT.parse(args.reading or [])
    except ReadingError as exc:
        raise UsageError(str(exc)) from None


def add_reading_option(p: argparse.ArgumentParser) -> None:
    names = "; ".join(f"{d.id}/{d.slug}: {'|'.join(d.values)} (default {d.default})"
                      for d in READING_DEFS.values())
    p.add_argument("--reading", action="append", metavar="NAME=VALUE",
                   help=f"choose a reading of an ambiguity (repeatable). {names}")
