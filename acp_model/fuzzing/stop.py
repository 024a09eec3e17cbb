"""Stopping a run on request (Ctrl-C, SIGTERM, a budget), wherever it happens to be.

A stop request is a flag, never an exception thrown into whatever is running (one landing
inside a lock's wait can leave the lock released). Every wait loop and every client action
checks the flag (at least every 0.1 s) and raises :class:`Interrupted` from a known place: a run
stops within a second of the request and still writes what it found.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator


class Interrupted(KeyboardInterrupt):
    """The run was asked to stop (a KeyboardInterrupt, so Hypothesis treats it as one)."""


class Stop:
    """A run's stop request, shared by the pool, the clients and the replays."""

    def __init__(self, event: threading.Event | None = None) -> None:
        self.event = event if event is not None else threading.Event()

    def request(self) -> None:
        self.event.set()

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    def check(self) -> None:
        """Raise :class:`Interrupted` once a stop was requested."""
        if self.event.is_set():
            raise Interrupted


@contextlib.contextmanager
def cutoff(stop: Stop, at: float | None) -> Iterator[Stop]:
    """A stop request that fires on ``stop`` or at the ``time.monotonic()`` instant ``at``
    (None: never), whichever comes first; a watcher thread sets it within 0.05 s."""
    if at is None:
        yield stop
        return
    child = Stop()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            left = at - time.monotonic()
            if left <= 0 or stop.requested:
                child.request()
                return
            stop.event.wait(min(left, 0.05))

    thread = threading.Thread(target=watch, name="acp-model cutoff", daemon=True)
    thread.start()
    try:
        yield child
    finally:
        done.set()
        thread.join(timeout=1.0)
