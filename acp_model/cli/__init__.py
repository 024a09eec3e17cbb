"""The command line (``acp-model``); see :mod:`acp_model.cli.main`."""

import atexit
import contextlib
import os
import sys

from acp_model.cli.main import main

__all__ = ["main", "run"]


def run() -> None:
    """The ``acp-model`` executable: :func:`main`, then a prompt exit.

    Tearing down the interpreter's modules (Hypothesis, jsonschema, rich...) takes half a
    second on an idle machine and more under load, after everything is written: a Ctrl-C or
    SIGTERM must end the process within a second. So exit handlers run (temporary directories
    are removed), streams are flushed, and the process exits without the module teardown.
    """
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
