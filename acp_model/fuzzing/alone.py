"""``--minimize-alone LOCK``: runs side by side generate together, but each minimizes and
replays its failures with nothing else running.

A matrix runs its rows ``--jobs`` at a time on a machine of few cores. Generation shares the
CPU well (each row waits on its agent most of the time), but minimizing does not: a racy
failure reproduces when its agent gets about the CPU it had in the run, and a slow agent's
trials (fresh processes, 10-40 s each on the s4 run's kilo, opencode and qwen-code rows) took
up to twice as long while another row fuzzed beside them, so minimizing was cut by its budget.
With a gate file, a run holds it *shared* from before its clock starts to the end of its
generation, and *exclusively* while it minimizes and replays: a run waits to start while
another minimizes, and waits to minimize until no other run generates or minimizes. The
waiting is outside every budget (the run's clock starts once it holds the gate; a failure's
budget once it holds it alone). ``flock`` locks go with the process: a run that dies holds
nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path

from acp_model.fuzzing.stop import Stop

POLL = 0.2  # seconds between tries of the lock (a stop request ends the waiting at once)


class GateMode(StrEnum):
    """How a run holds the gate: beside the other generating runs, or alone."""

    SHARED = "shared"
    ALONE = "alone"

    @property
    def flock(self) -> int:
        return fcntl.LOCK_EX if self is GateMode.ALONE else fcntl.LOCK_SH

    @property
    def waiting(self) -> str:
        """What a run waiting for this hold is told."""
        return "waiting to minimize alone" if self is GateMode.ALONE \
            else "waiting while another run minimizes"


class GateHold:
    """A run's hold of a gate file shared by runs side by side (``path`` None: no gate, every
    call returns at once)."""

    def __init__(self, path: str | os.PathLike[str] | None,
                 on_wait: Callable[[str], None] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.on_wait = on_wait or (lambda _: None)
        self._fd: int | None = None
        self.mode: GateMode | None = None  # None: not held

    def shared(self, stop: Stop) -> bool:
        """Hold the gate beside other generating runs (waiting while one minimizes);
        False when a stop came first."""
        return self._take(GateMode.SHARED, stop)

    def alone(self, stop: Stop) -> bool:
        """Hold the gate alone (waiting until no other run holds it); False when a stop
        came first."""
        return self._take(GateMode.ALONE, stop)

    def release(self) -> None:
        """Let the other runs go on (the gate file stays open for a later hold)."""
        if self._fd is not None and self.mode is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self.mode = None

    def close(self) -> None:
        self.release()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @contextlib.contextmanager
    def held_alone(self, stop: Stop) -> Iterator[bool]:
        """:meth:`alone` for the block, released after it."""
        try:
            yield self.alone(stop)
        finally:
            self.release()

    def _take(self, mode: GateMode, stop: Stop) -> bool:
        if self.path is None:
            return True
        if self.mode == mode:
            return True
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        # a shared hold becoming exclusive lets go first: two runs doing so at once must not
        # wait on each other (flock's own conversion is not atomic either)
        self.release()
        told = False
        while True:
            try:
                fcntl.flock(self._fd, mode.flock | fcntl.LOCK_NB)
            except BlockingIOError:
                if not told:
                    self.on_wait(mode.waiting)
                    told = True
                if stop.event.wait(POLL):
                    return False
                continue
            self.mode = mode
            return True

    def __enter__(self) -> GateHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["GateHold", "GateMode"]
