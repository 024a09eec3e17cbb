"""The byte relay between an editor and its agent: forward first, hand a copy to the judge.

One thread moves both directions (the editor's stdin to the agent's stdin, the agent's stdout
to the editor) in a ``poll`` loop; a second relays the agent's stderr to the proxy's stderr in
whole lines, so the proxy's own lines never split one of the agent's. Every chunk is forwarded
untouched, as soon as it is read: nothing injected, nothing rewritten. Before a chunk is written
on, a framed copy joins the judge's next batch (:class:`~acp_model.proxy.feed.JudgeFeed`), so
the judge sees both directions in an order consistent with causality (what the editor sends in
reply to a message the agent wrote reaches the judge after that message).

Why one thread: forwarding a chunk is a read and a write (its copy goes with the judge's next
batch, one write for many chunks), each of which releases the interpreter lock; two pump threads
passed the lock back and forth at every one of them (a futex storm in ``strace``), which cost
more than the forwarding itself. The judge is another process (``judge.py``), so judging never
holds this process's lock either; the main thread sleeps until a direction ends.

Back-pressure on the wire is the pipes' own: a chunk is written on before its source is read
again, and while the destination cannot take it (a full pipe: the reader is slow) the source is
not read, exactly as a writer would wait on the pipe without the proxy. So at most one chunk
per direction is ever held, and bytes are never dropped or reordered. The judge never holds the
wire back: see ``feed.py`` for what happens when it falls behind.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from acp_model.process import READ_CHUNK, end_group, read_chunks, spawn_group
from acp_model.proxy.feed import (
    A2C,
    C2A,
    DIRECTIONS,
    IDLE_MS,
    PIPE_SIZE,
    JudgeFeed,
    unwatched,
    widen,
)

_IN = select.POLLIN | select.POLLHUP | select.POLLERR | select.POLLNVAL
_OUT = select.POLLOUT | select.POLLHUP | select.POLLERR | select.POLLNVAL


class _Flow:
    """One direction of the wire: ``src`` is read only once the last chunk was written on to
    ``dst`` (``rest`` is what of it ``dst`` has not taken yet)."""

    __slots__ = ("count", "dst", "dst_open", "ended", "kind", "rest", "size", "src")

    def __init__(self, kind: int, src: int, dst: int) -> None:
        self.kind = kind
        self.src, self.dst = src, dst
        self.rest: memoryview | None = None
        # A full read means a flood: the next asks for a pipe's worth (fewer chunks, frames and
        # writes); a short one goes back to the small size (every read allocates what it asks).
        self.size = READ_CHUNK
        self.count = 0  # bytes read from ``src``
        self.dst_open = True  # False once writing failed (the reader went away)
        self.ended = False

    def push(self) -> bool:
        """Write what ``dst`` takes now of ``rest``; True once nothing is left (or ``dst`` is
        gone, which :attr:`dst_open` records)."""
        assert self.rest is not None
        try:
            n = os.write(self.dst, self.rest)
        except BlockingIOError:
            return False
        except OSError:
            self.dst_open, self.rest = False, None
            return True
        if n == len(self.rest):
            self.rest = None
            return True
        self.rest = self.rest[n:]
        return False


class Relay:
    """The agent process, the loop that forwards both directions, and the stderr pump."""

    def __init__(self, argv: Sequence[str], feed: JudgeFeed, *, stdin_fd: int = 0,
                 stdout_fd: int = 1, stderr_write: Callable[[bytes], None],
                 cwd: str | None = None) -> None:
        self.feed = feed
        self.stdin_fd, self.stdout_fd = stdin_fd, stdout_fd
        self.stderr_write = stderr_write
        self.t0 = time.monotonic()
        self.stop = threading.Event()
        self.editor_gone = threading.Event()  # the editor closed our stdin
        self.agent_out_closed = threading.Event()  # the agent closed its stdout
        self.news = threading.Event()  # either of the two above: the main thread wakes
        self.running = True  # the loop goes on (both directions ended, or join stopped it)
        self.cpu: dict[str, float] = {}  # CPU seconds of each thread, when it ended
        self.proc = spawn_group(argv, cwd)
        self.pgid = self.proc.pid
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        agent_out = self.proc.stdout.fileno()
        self.up = _Flow(C2A, stdin_fd, self.proc.stdin.fileno())
        self.down = _Flow(A2C, agent_out, stdout_fd)
        # Larger pipes where they are pipes: a chunk read whole is written whole. A writer
        # blocked on a full 64 KiB pipe is moved along by the kernel; the relay, which must
        # not block, would pay a poll and a write for every 64 KiB of it.
        for fd in (agent_out, self.up.dst, stdout_fd):
            widen(fd)
        # The destinations are written without blocking (a full pipe must not stop the other
        # direction); the editor's stdout gets its own mode back when the relay lets it go.
        # Not a terminal: its mode is shared with the shell and with stderr on the same tty.
        self._stdout_blocking = _blocking(stdout_fd)
        for fd in (self.up.dst, self.down.dst):
            with contextlib.suppress(OSError):
                if not os.isatty(fd):
                    os.set_blocking(fd, False)
        self.poller = select.poll()
        self.watched: dict[int, int] = {}
        self.threads = [
            threading.Thread(target=self._loop, name="proxy-relay", daemon=True),
            threading.Thread(target=self._pump_stderr, name="proxy-stderr", daemon=True),
        ]
        for t in self.threads:
            t.start()

    @property
    def bytes(self) -> dict[str, int]:
        """Bytes read so far from each direction's source."""
        return {DIRECTIONS[f.kind]: f.count for f in (self.up, self.down)}

    @property
    def editor_reading(self) -> bool:
        """False once writing to the editor failed (it went away)."""
        return self.down.dst_open

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def forwarding_cpu(self) -> float:
        """CPU seconds of the forwarding (the relay loop and the stderr pump, and the feed's
        drain at the end), none of the judging; complete once :meth:`join` and the feed's
        close returned."""
        return round(sum(self.cpu.values()) + self.feed.cpu, 6)

    # --- the loop ---------------------------------------------------------------------------
    def _watch(self, fd: int, events: int, on: bool) -> None:
        mask = self.watched.get(fd, 0)
        mask = mask | events if on else mask & ~events
        if mask == self.watched.get(fd, 0):
            return
        if mask:
            self.poller.register(fd, mask)
            self.watched[fd] = mask
        else:
            self.poller.unregister(fd)
            del self.watched[fd]

    def _loop(self) -> None:
        """Until both directions ended (or :meth:`join` stops it): each ready descriptor in
        turn; the judge's batch written when it is due, and its pipe watched while full.
        This is the path every byte takes, so it looks its flows up by descriptor and calls
        as little as it can."""
        up, down, feed = self.up, self.down, self.feed
        sources = {up.src: up, down.src: down}
        destinations = {up.dst: up, down.dst: down}
        for flow in (up, down):
            self._watch(flow.src, _IN, True)
        poll, feed_fd, clock, wait = self.poller.poll, feed.fd, time.monotonic, IDLE_MS
        feed.watch = self._watch_feed  # its pipe is watched while full, and only then
        self._watch_feed(feed.blocked)  # (filled before the loop began: the settings)
        try:
            while self.running:
                ready = poll(wait)
                now = clock()  # the one clock read of a turn: the chunks' time, the batch's due
                for fd, events in ready:
                    flow = sources.get(fd)
                    if flow is not None and events & _IN and flow.rest is None and not flow.ended:
                        self._forward(flow, now)
                    flow = destinations.get(fd)
                    if (flow is not None and events & _OUT and flow.rest is not None
                            and not flow.ended and flow.push()):
                        self._switch(flow, now, reading=True)
                    if fd == feed_fd and events & _OUT:
                        feed.flush()
                wait = feed.tick(now)
        finally:
            for flow in (up, down):
                if not flow.ended:
                    self._end(flow)
            feed.flush()  # the last batch goes now, not when the session's end is sent
            feed.watch = unwatched  # the rest is written by whoever closes the feed
            self.cpu["relay"] = time.thread_time()

    def _watch_feed(self, blocked: bool) -> None:
        self._watch(self.feed.fd, select.POLLOUT, blocked)

    def _forward(self, flow: _Flow, now: float) -> None:
        """One chunk of ``flow`` (read at ``now``): its copy to the judge's batch, then on to
        its destination."""
        try:
            data = os.read(flow.src, flow.size)
        except OSError:
            data = b""
        if not data:
            self._end(flow, now)
            return
        n = len(data)
        flow.size = PIPE_SIZE if n == flow.size else READ_CHUNK
        self.feed.chunk(flow.kind, now - self.t0, data, now)
        flow.count += n
        if not flow.dst_open:
            return  # the editor stopped reading: keep draining the agent, judge what it says
        try:
            written = os.write(flow.dst, data)
        except BlockingIOError:
            written = 0
        except OSError:
            flow.dst_open = False
            if flow is self.up:
                self._end(flow, now)  # the agent stopped reading or exited: nothing can reach it
            return
        if written < n:
            flow.rest = memoryview(data)[written:]
            self._switch(flow, now, reading=False)  # read no more until the destination took it

    def _switch(self, flow: _Flow, now: float, *, reading: bool) -> None:
        self._watch(flow.src, _IN, reading)
        self._watch(flow.dst, select.POLLOUT, not reading)
        if reading and not flow.dst_open and flow is self.up:
            self._end(flow, now)

    def _end(self, flow: _Flow, now: float | None = None) -> None:
        """The direction ended: the judge hears of it, and the far side gets its EOF, as it
        would without the proxy."""
        flow.ended = True
        if self.up.ended and self.down.ended:
            self.running = False
        for fd, events in ((flow.src, _IN), (flow.dst, select.POLLOUT)):
            with contextlib.suppress(KeyError, ValueError):
                self._watch(fd, events, False)
        # the turn's time when the loop ends it: a chunk of the same turn after it has that time
        # too, so the judge's times never go back
        self.feed.put(flow.kind, (time.monotonic() if now is None else now) - self.t0, b"")
        if flow is self.up:
            self.editor_gone.set()
            with contextlib.suppress(OSError):
                self.proc.stdin.close()  # type: ignore[union-attr]
        else:
            self._release_editor()
            self.agent_out_closed.set()
        self.news.set()

    def _release_editor(self) -> None:
        """The agent closed its stdout, so the editor's channel ends now, as it would without
        the proxy (judging may still go on). The descriptor stays open on /dev/null, so that
        its number is not reused while the caller still holds it."""
        with contextlib.suppress(OSError):
            if self._stdout_blocking is not None:
                os.set_blocking(self.stdout_fd, self._stdout_blocking)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stdout_fd)
            os.close(devnull)

    def _pump_stderr(self) -> None:
        err = self.proc.stderr.fileno()  # type: ignore[union-attr]
        pending = b""
        for data in read_chunks(err, self.stop):
            pending += data
            cut = pending.rfind(b"\n") + 1
            if cut or len(pending) > READ_CHUNK:
                whole, pending = (pending[:cut], pending[cut:]) if cut else (pending, b"")
                self.stderr_write(whole)
        if pending:
            self.stderr_write(pending)
        self.cpu["stderr"] = time.thread_time()

    # --- the end ---------------------------------------------------------------------------
    def wait_exit(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def shut_down(self, grace: float) -> int | None:
        """The fuzzer's ladder (:func:`end_group`); returns the agent's status."""

        def close_stdin() -> None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()  # type: ignore[union-attr]

        return end_group(self.pgid, close_stdin, self.wait_exit, grace)

    def join(self, timeout: float = 2.0) -> None:
        """Let the agent's output drain (what it wrote before it exited), then stop."""
        self.agent_out_closed.wait(timeout)
        self.threads[1].join(timeout)
        self.running = False
        self.stop.set()
        for t in self.threads:
            t.join(timeout)


def _blocking(fd: int) -> bool | None:
    try:
        return os.get_blocking(fd)
    except OSError:
        return None
