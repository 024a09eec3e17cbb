"""What every fuzz front-end (the CLI, the pytest plugin, the campaigns) does the same way:
checking the agent command line, keeping Hypothesis' files in one place, and stopping cleanly
on a signal with what was found so far."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
from collections.abc import Iterator, Sequence
from types import FrameType

from acp_model.fuzzing.stop import Stop


def agent_problem(argv: Sequence[str]) -> str | None:
    """Why ``argv`` cannot be started as an agent (None: it can)."""
    if not argv:
        return "the agent command is empty"
    exe = argv[0]
    found = shutil.which(exe) if os.sep not in exe else (exe if os.path.isfile(exe) else None)
    if found is None:
        return f"agent command {exe!r} not found"
    if not os.access(found, os.X_OK):
        return f"agent command {exe!r} is not executable"
    return None


def hypothesis_home() -> None:
    """Keep Hypothesis' working files out of the user's current directory.

    They go to ``$XDG_CACHE_HOME/acp-model/hypothesis`` unless the user chose a place with
    ``HYPOTHESIS_STORAGE_DIRECTORY``.
    """
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return
    from hypothesis.configuration import set_hypothesis_home_dir

    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    set_hypothesis_home_dir(os.path.join(cache, "acp-model", "hypothesis"))


class SignalStop:
    """SIGINT / SIGTERM request a stop by setting the stop flag, which every wait and every
    client action checks at least every 0.1 s. The handler raises nothing: an exception thrown
    into whatever the main thread was running can land between a lock's release and its
    re-acquisition (inside ``threading.Condition.wait``) and corrupt it."""

    def __init__(self, stop: Stop) -> None:
        self.stop = stop
        self.signal: int | None = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.signal = self.signal or signum
        self.stop.request()

    @contextlib.contextmanager
    def installed(self) -> Iterator[SignalStop]:
        if threading.current_thread() is not threading.main_thread():
            yield self  # signals reach only the main thread; nothing to install
            return
        old = {sig: signal.signal(sig, self._handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
