"""The command line (``acp-model``); see :mod:`acp_model.cli.main`."""

import atexit
import contextlib
import os
import sys
import threading
import time

from acp_model.cli.main import main

__all__ = ["main", "run"]


THREADS_GRACE = 5.0  # seconds the non-daemon threads get to finish before the exit


def run() -> None:
    """The ``acp-model`` executable: :func:`main`, then a prompt exit.

    Tearing down the interpreter's modules (Hypothesis, jsonschema, rich...) takes half a
    second on an idle machine and more under load, after everything is written: a Ctrl-C or
    SIGTERM must end the process within a second. So exit handlers run (temporary directories
    are removed), streams are flushed, and the process exits without the module teardown.
    """
    # Hypothesis loads every installed plugin at import (hypofuzz, trio: a quarter of a second
    # per start); the fuzzer uses none. HYPOTHESIS_NO_PLUGINS set (even empty) keeps the user's.
    os.environ.setdefault("HYPOTHESIS_NO_PLUGINS", "1")
    code = main()
    # what a normal exit does first: let the threads that still end something (a fuzz run's
    # worker closing its agent's process group) finish, or an agent would outlive the run
    deadline = time.monotonic() + THREADS_GRACE
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
