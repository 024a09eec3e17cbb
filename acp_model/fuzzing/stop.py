"""Stopping a run on request (Ctrl-C, SIGTERM, a budget), wherever it happens to be.

A ``KeyboardInterrupt`` raised by the signal handler can land anywhere: in a wait, in
Hypothesis, in a library that catches it. So a stop request is also a flag that every wait loop
and every client action checks (at least every 0.1 s): a run stops within a second of the
request whatever swallowed the exception, and still writes what it found.
"""

from __future__ import annotations

import threading


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
