"""The relay's hand-off to its judge: framed copies of the chunks, in batches, never waiting.

One frame per chunk (:data:`HEADER`: direction, seconds since the relay started, length; then
the bytes). The relay's loop is the only writer while the session runs, so there is no lock and
no thread. Frames are written to the judge's pipe in batches: each waits until
:data:`BATCH_BYTES` have gathered or the oldest has waited ``delay`` seconds (:data:`DELAY`),
then all go in one ``writev``. A frame a message costs the forwarding a write, and the judge a
wake-up, per message; batched, both are paid about once per ``delay`` at a steady rate (a live
violation line comes at most that much later). The loop calls :meth:`JudgeFeed.tick` each turn
with the time it read once for the turn (it writes a due batch and says how long the loop may
sleep), hands each chunk to :meth:`JudgeFeed.chunk` (a header packed and two appends: the
chunk itself is never copied), and watches the pipe while it is full, told so by
:attr:`JudgeFeed.watch` when the pipe fills and when it drains, not by asking every turn.

Back-pressure, stated: the wire never waits for the judge, and no part of the judge's copy is
dropped while judging goes on: it is buffered. What waits is bounded by bytes (``cap``,
``--max-queue``; the judge's pipe holds :data:`PIPE_SIZE` more in the kernel): once the
judge's pipe is full, a chunk that would take what waits past the cap cuts the judge off
(:attr:`JudgeFeed.overflowed`): judging stops for the rest of
the session, because a trace with a hole in it would give unsound verdicts, and the proxy's
verdict says so (``incomplete``, never ``pass``). The frames the judge does get are whole and in
order: a prefix of the session, then the end of the session, but not the ends of the two
directions: a chunk ends anywhere, so the last line the judge got may be cut, and an end would
make the judge record that fragment as a line the agent or the editor wrote (a false RPC-04);
without it the fragment is never judged.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import math
import os
import select
import struct
import time
from collections import deque
from collections.abc import Callable

# One frame to the judge: direction, seconds since the relay started, length; then the bytes.
HEADER = struct.Struct("<BdI")
C2A, A2C = 0, 1  # editor -> agent, agent -> editor; empty bytes: that direction ended
SETUP, END = 2, 3  # control frames: the judge's settings (first), the end of the session
DIRECTIONS = ("c2a", "a2c")
PIPE_SIZE = 1 << 20  # asked for the judge's pipe and the agent's stdout (Linux; default 64 KiB)
_F_SETPIPE_SZ, _F_GETPIPE_SZ = 1031, 1032
BATCH_BYTES = 64 << 10  # a batch this large goes to the judge at once
DELAY = 0.01  # seconds a frame waits at most for others to go with it (a live line's delay)
IDLE_MS = 200  # the relay's poll timeout when no batch is due
_IOV_MAX = 1024  # pieces one writev takes (Linux)
_HEADER_SIZE, _pack = HEADER.size, HEADER.pack  # looked up once: every chunk uses them


def unwatched(_blocked: bool) -> None:
    """The feed's :attr:`JudgeFeed.watch` when no loop watches its pipe (it is written
    again at the next :meth:`JudgeFeed.tick` or :meth:`JudgeFeed.close`)."""


def widen(fd: int) -> None:
    """Ask for a pipe of :data:`PIPE_SIZE` when ``fd`` is a smaller pipe (fewer, larger chunks
    in a flood); anything else (a file, a terminal, a refusal) changes nothing."""
    with contextlib.suppress(OSError):
        if fcntl.fcntl(fd, _F_GETPIPE_SZ) < PIPE_SIZE:
            fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_SIZE)


class JudgeFeed:
    """The copies on their way to the judge's pipe; :meth:`put` never blocks.

    Once the pipe is full and ``cap`` bytes wait, the judge is cut off (``overflowed``): later
    chunks and the ends of the directions are not sent, only the end of the session, so the
    judge ends cleanly. A frame begun is always finished, whatever the cap: the judge never
    reads half a frame. Chunks are queued as they are (``bytes``, never copied).
    """

    def __init__(self, fd: int, cap: int, *, delay: float = DELAY) -> None:
        self.fd, self.cap, self.delay = fd, cap, delay
        os.set_blocking(fd, False)
        widen(fd)  # fewer frames wait when the judge is behind
        self.queue: deque[bytes | memoryview] = deque()  # headers and chunks not yet written
        self.waiting = 0  # bytes in the queue
        self.due = math.inf  # when the queue is written at the latest (``delay`` after its first)
        self.blocked = False  # the pipe was full at the last write: written again once it has room
        # Told when the pipe fills (True) and when it took everything or broke (False): the
        # relay's loop watches the pipe for room meanwhile, without asking every turn.
        self.watch: Callable[[bool], None] = unwatched
        self.overflowed = False  # the judge fell ``cap`` bytes behind: judging stopped
        self.lost = False  # the judge's pipe broke (it exited), or it was given up at the end
        self.cut = False  # overflowed or lost: no more chunks go
        self.cpu = 0.0  # CPU seconds :meth:`close` spent draining the queue

    def chunk(self, kind: int, t: float, data: bytes, now: float) -> None:
        """One chunk of the wire, read at ``now``: the relay's path for every chunk, so it
        takes the fewest steps (no control frames, no clock read: the loop's ``now``)."""
        if self.cut:
            return
        n = len(data)
        size = _HEADER_SIZE + n
        if self.blocked and self.waiting + size > self.cap:
            self.overflowed = self.cut = True
            return
        queue = self.queue
        if not queue:
            self.due = now + self.delay
        queue.append(_pack(kind, t, n))
        queue.append(data)
        self.waiting += size
        if self.waiting >= BATCH_BYTES and not self.blocked:
            self.flush()

    def put(self, kind: int, t: float, data: bytes) -> None:
        """Queue one frame for the judge: a chunk (as :meth:`chunk`), the end of a direction
        (empty bytes) or a control frame, which goes at once; a batch that reached
        :data:`BATCH_BYTES` is written now, as far as the pipe takes it."""
        now = time.monotonic()
        if kind < SETUP and data:
            self.chunk(kind, t, data, now)
            return
        if self.lost or (self.overflowed and kind < SETUP):
            return
        if not self.queue:
            self.due = now + self.delay
        self.queue.append(HEADER.pack(kind, t, len(data)))
        if data:
            self.queue.append(data)
        self.waiting += HEADER.size + len(data)
        if not self.blocked and (self.waiting >= BATCH_BYTES or kind >= SETUP):
            self.flush()

    def tick(self, now: float | None = None) -> int:
        """Write the queue if it is due at ``now`` (the loop's clock read, else the clock's);
        the milliseconds the loop may sleep before the next one is (:data:`IDLE_MS` when
        nothing is due: an empty queue, or a full pipe, which the loop watches instead)."""
        if not self.queue or self.blocked:
            return IDLE_MS
        left = self.due - (time.monotonic() if now is None else now)
        if left > 0:
            ms = int(left * 1000) + 1  # rounded up: the loop wakes once the batch is due
            return ms if ms < IDLE_MS else IDLE_MS
        self.flush()
        return IDLE_MS

    def flush(self) -> None:
        """Write what waits, as far as the pipe takes it now (never blocks)."""
        queue = self.queue
        while queue:
            pieces = (list(queue) if len(queue) <= _IOV_MAX
                      else list(itertools.islice(queue, _IOV_MAX)))
            try:
                n = os.writev(self.fd, pieces)
            except BlockingIOError:
                self._block(True)
                return
            except OSError:
                self._give_up()
                return
            self.waiting -= n
            if not self.waiting:  # all of it went (the usual case): no piece by piece
                queue.clear()
                break
            for piece in pieces:
                if n < len(piece):  # the pipe is full: the rest waits for room
                    queue[0] = memoryview(piece)[n:]
                    self._block(True)
                    return
                n -= len(piece)
                queue.popleft()
        self._block(False)
        self.due = math.inf

    def _block(self, blocked: bool) -> None:
        if blocked is not self.blocked:
            self.blocked = blocked
            self.watch(blocked)

    def _give_up(self) -> None:
        self.lost = self.cut = True
        self.queue.clear()
        self.waiting = 0
        self._block(False)  # nothing more is written: the pipe is not watched

    def close(self, timeout: float) -> bool:
        """Let the queue drain (at most ``timeout`` seconds), then close the pipe: the judge
        reads its end. False when the judge did not take everything in time."""
        cpu0 = time.thread_time()
        deadline = time.monotonic() + timeout
        self.flush()
        while self.queue and (left := deadline - time.monotonic()) > 0:
            with contextlib.suppress(OSError, ValueError):
                select.select([], [self.fd], [], min(left, 0.2))
            self.flush()
        drained = not self.queue and not self.lost
        if self.queue:
            self._give_up()  # what it has not read by now it will not get
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.cpu += time.thread_time() - cpu0
        return drained
