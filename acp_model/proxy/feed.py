"""The relay's hand-off to its judge: framed copies of the chunks, written without ever waiting.

One frame per chunk (:data:`HEADER`: direction, seconds since the relay started, length; then
the bytes). The relay's loop is the only writer while the session runs, so there is no lock and
no thread: a frame goes straight into the judge's pipe when nothing waits before it, otherwise
it joins the backlog, which the loop writes whenever the pipe has room (it watches the pipe
while :attr:`JudgeFeed.backlog` is not empty).

Back-pressure, stated: the wire never waits for the judge. The backlog is bounded by bytes
(``cap``, ``--max-queue``); a chunk that would take it past the cap cuts the judge off
(:attr:`JudgeFeed.overflowed`): judging stops for the rest of the session, because a trace with
a hole in it would give unsound verdicts, and the proxy's verdict says so (``incomplete``, never
``pass``). The frames the judge does get are whole and in order: a prefix of the session, then
the end of the session, but not the ends of the two directions: a chunk ends anywhere, so the
last line the judge got may be cut, and an end would make the judge record that fragment as a
line the agent or the editor wrote (a false RPC-04); without it the fragment is never judged.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import time
from collections import deque

# One frame to the judge: direction, seconds since the relay started, length; then the bytes.
HEADER = struct.Struct("<BdI")
C2A, A2C = 0, 1  # editor -> agent, agent -> editor; empty bytes: that direction ended
SETUP, END = 2, 3  # control frames: the judge's settings (first), the end of the session
DIRECTIONS = ("c2a", "a2c")
PIPE_SIZE = 1 << 20  # asked for the judge's pipe and the agent's stdout (Linux; default 64 KiB)
_F_SETPIPE_SZ = 1031


def widen(fd: int) -> None:
    """Ask for a larger pipe (fewer, larger chunks in a flood); a refusal changes nothing."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_SIZE)


class JudgeFeed:
    """The copies on their way to the judge's pipe; :meth:`put` never blocks.

    Once ``cap`` bytes wait, the judge is cut off (``overflowed``): later chunks and the ends
    of the directions are not sent, only the end of the session, so the judge ends cleanly.
    A frame begun is always finished, whatever the cap: the judge never reads half a frame.
    """

    def __init__(self, fd: int, cap: int) -> None:
        self.fd, self.cap = fd, cap
        os.set_blocking(fd, False)
        widen(fd)  # fewer frames wait in the backlog
        self.backlog: deque[bytes | memoryview] = deque()
        self.waiting = 0  # bytes in the backlog
        self.overflowed = False  # the judge fell ``cap`` bytes behind: judging stopped
        self.lost = False  # the judge's pipe broke (it exited), or it was given up at the end
        self.cpu = 0.0  # CPU seconds :meth:`close` spent draining the backlog

    def put(self, kind: int, t: float, data: bytes | memoryview) -> None:
        """Hand one chunk (or a control frame) to the judge without waiting for it; ``data``
        is not kept past the call unless it is copied into the backlog."""
        if self.lost or (self.overflowed and kind < SETUP):
            return
        header = HEADER.pack(kind, t, len(data))
        if self.backlog:
            self.flush()
        if not self.backlog:
            try:
                n = os.writev(self.fd, (header, data))
            except BlockingIOError:
                n = 0
            except OSError:
                self._give_up()
                return
            if n < len(header) + len(data):  # the rest waits (a frame begun is finished)
                self._queue(memoryview(header + bytes(data))[n:])
            return
        if kind < SETUP and data and self.waiting + len(header) + len(data) > self.cap:
            self.overflowed = True
            return
        self._queue(header + bytes(data))

    def _queue(self, rest: bytes | memoryview) -> None:
        self.backlog.append(rest)
        self.waiting += len(rest)

    def flush(self) -> None:
        """Write what waits, as far as the pipe takes it now (never blocks)."""
        while self.backlog:
            item = self.backlog[0]
            try:
                n = os.write(self.fd, item)
            except BlockingIOError:
                return
            except OSError:
                self._give_up()
                return
            self.waiting -= n
            if n < len(item):
                self.backlog[0] = memoryview(item)[n:]
                return
            self.backlog.popleft()

    def _give_up(self) -> None:
        self.lost = True
        self.backlog.clear()
        self.waiting = 0

    def close(self, timeout: float) -> bool:
        """Let the backlog drain (at most ``timeout`` seconds), then close the pipe: the judge
        reads its end. False when the judge did not take everything in time."""
        cpu0 = time.thread_time()
        deadline = time.monotonic() + timeout
        while self.backlog and (left := deadline - time.monotonic()) > 0:
            with contextlib.suppress(OSError, ValueError):
                select.select([], [self.fd], [], min(left, 0.2))
            self.flush()
        drained = not self.backlog and not self.lost
        if self.backlog:
            self._give_up()  # what it has not read by now it will not get
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.cpu += time.thread_time() - cpu0
        return drained
