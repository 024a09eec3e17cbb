"""Agent-side stdio framing: a bounded stdin line reader thread and a whole-line stdout writer.

Deliberately independent of :mod:`acp_model.fuzzing.transport` (the client side) so that the
reference agent shares no code, and therefore no bugs, with the harness that tests it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable

OVERSIZE = object()
"""Sentinel delivered instead of a line that exceeded the reader's limit."""

EOF = object()
"""Sentinel delivered once stdin is closed."""

LineHandler = Callable[[object], None]


class StdinReader(threading.Thread):
    """Reads stdin in a thread and hands complete lines to the event loop.

    A thread (rather than ``loop.connect_read_pipe``) keeps the reader working whatever the
    client writes: lines longer than ``max_line_bytes`` are discarded while streaming and
    reported as :data:`OVERSIZE`, so a hostile client cannot make the agent buffer gigabytes.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        handler: LineHandler,
        *,
        fd: int = 0,
        max_line_bytes: int = 32 * 1024 * 1024,
    ) -> None:
        super().__init__(name="stdin-reader", daemon=True)
        self._loop = loop
        self._handler = handler
        self._fd = fd
        self._max = max_line_bytes

    def _deliver(self, *items: object) -> None:
        """Hand ``items`` to the loop in one callback: lines read together are handled before
        any task they start takes a step (a cancel written with its prompt is read before
        the prompt's acceptance runs, as an agent reading its input in order would)."""
        if items:
            with contextlib.suppress(RuntimeError):  # loop already closed
                self._loop.call_soon_threadsafe(self._handle_all, items)

    def _handle_all(self, items: tuple[object, ...]) -> None:
        for item in items:
            self._handler(item)

    def run(self) -> None:  # noqa: C901
        buf = bytearray()
        discarding = False
        try:
            while True:
                try:
                    chunk = os.read(self._fd, 65536)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                if discarding:
                    nl = chunk.find(b"\n")
                    if nl < 0:
                        continue
                    discarding = False
                    self._deliver(OVERSIZE)
                    chunk = chunk[nl + 1 :]
                scan = len(buf)
                buf += chunk
                start = 0
                lines: list[object] = []
                while True:
                    nl = buf.find(b"\n", max(start, scan))
                    if nl < 0:
                        break
                    lines.append(OVERSIZE if nl - start > self._max else bytes(buf[start:nl]))
                    start = nl + 1
                self._deliver(*lines)
                if start:
                    del buf[:start]
                if len(buf) > self._max:
                    buf = bytearray()
                    discarding = True
            if discarding:
                self._deliver(OVERSIZE)
            elif buf.strip():
                self._deliver(bytes(buf))
        finally:
            self._deliver(EOF)


class StdoutWriter:
    """Writes whole lines to stdout; only ever called from the event loop thread.

    Each message is one ``os.write`` loop of a complete line, so lines never interleave. A
    blocked pipe (client not reading) blocks the loop, which is the honest behaviour of a
    process whose output is not consumed.
    """

    def __init__(self, fd: int = 1) -> None:
        self._fd = fd
        os.set_blocking(fd, True)
        self.broken = False

    def write_line(self, data: bytes) -> None:
        self.write(data + b"\n")

    def write(self, data: bytes) -> None:
        """Write bytes as they are (several lines, or part of one: the design axis
        ``writes`` of the reference agent)."""
        if self.broken:
            return
        view = memoryview(data)
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.broken = True
