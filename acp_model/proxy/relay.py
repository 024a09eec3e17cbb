"""The byte relay between an editor and its agent: forward first, hand a copy to the judge.

Three pump threads: the editor's stdin to the agent's stdin, the agent's stdout to the editor,
the agent's stderr to the proxy's stderr (whole lines, so the proxy's own lines never split
one of the agent's). Every chunk is forwarded untouched, as soon as it is read: no buffering
beyond what one ``read`` returned, nothing injected, nothing rewritten. Before a chunk is
written on, a framed copy goes to the judge (:class:`JudgeFeed`), so the judge sees both
directions in an order consistent with causality (what the editor sends in reply to a message
the agent wrote reaches the judge after that message).

The judge is another process (``judge.py``): judging never holds this process's interpreter
lock, so forwarding a chunk costs a read, one non-blocking write of its copy and a write.

Back-pressure: the judge's pipe takes what it can without blocking; the rest waits in a backlog
bounded by bytes (``max_queue``) that a feeder thread drains as the judge reads. A judge that
falls further behind is cut off: judging stops for the rest of the session (a trace with a hole
would give unsound verdicts), the report says so, and the wire never waits for the judge.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from acp_model.process import READ_CHUNK, end_group, read_chunks, spawn_group

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

    A frame goes straight into the pipe when nothing waits before it and the pipe has room;
    otherwise it joins the backlog, which the feeder thread writes as the judge reads. Frames
    stay whole and in order (one lock; the backlog drains before any new direct write). Once
    ``cap`` bytes wait, the judge is cut off (``overflowed``): later chunks are not sent, only
    the ends of the two directions and the end of the session, so the judge ends cleanly.
    """

    def __init__(self, fd: int, cap: int) -> None:
        self.fd, self.cap = fd, cap
        os.set_blocking(fd, False)
        widen(fd)  # fewer frames wait in the backlog
        self.backlog: deque[bytes | memoryview] = deque()
        self.waiting = 0  # bytes in the backlog
        self.overflowed = False  # the judge fell ``cap`` bytes behind: judging stopped
        self.lost = False  # the judge's pipe broke (it exited)
        self.closing = False
        self.cond = threading.Condition()
        self.cpu = 0.0  # CPU seconds of the feeder thread
        self.thread = threading.Thread(target=self._drain, name="proxy-feed", daemon=True)
        self.thread.start()

    def put(self, kind: int, t: float, data: bytes) -> None:
        """Hand one chunk (or a control frame) to the judge without waiting for it."""
        header = HEADER.pack(kind, t, len(data))
        with self.cond:
            if self.lost or (self.overflowed and data and kind < SETUP):
                return
            if not self.backlog:
                try:
                    n = os.writev(self.fd, (header, data))
                except BlockingIOError:
                    n = 0
                except OSError:
                    self.lost = True
                    return
                if n == len(header) + len(data):
                    return
                if n:  # a frame begun is finished, whatever the cap
                    self._queue((header + data)[n:])
                    return
            elif kind < SETUP and data and self.waiting + len(header) + len(data) > self.cap:
                self.overflowed = True
                return
            self._queue(header + data)

    def _queue(self, rest: bytes) -> None:
        self.backlog.append(rest)
        self.waiting += len(rest)
        self.cond.notify()

    def _drain(self) -> None:
        """Write the backlog as the judge's pipe takes it (only this thread writes then)."""
        try:
            while True:
                with self.cond:
                    while not self.backlog and not self.closing:
                        self.cond.wait()
                    if not self.backlog:
                        return
                    item = self.backlog[0]
                try:
                    _, ready, _ = select.select([], [self.fd], [], 0.2)
                    n = os.write(self.fd, item) if ready else 0
                except BlockingIOError:
                    n = 0
                except OSError:
                    with self.cond:
                        self.lost = True
                        self.backlog.clear()
                        self.waiting = 0
                    return
                with self.cond:
                    if not self.backlog or self.backlog[0] is not item:
                        continue  # given up on by close(): nothing is written any more
                    self.waiting -= n
                    if n == len(item):
                        self.backlog.popleft()
                    elif n:
                        self.backlog[0] = memoryview(item)[n:]
        finally:
            self.cpu = time.thread_time()

    def close(self, timeout: float) -> bool:
        """Let the backlog drain (at most ``timeout`` seconds), then close the pipe: the judge
        reads its end. False when the judge did not take everything in time."""
        with self.cond:
            self.closing = True
            self.cond.notify()
        self.thread.join(timeout)
        drained = not self.thread.is_alive()
        if not drained:
            with self.cond:
                self.lost = True  # what it has not read by now it will not get
                self.backlog.clear()
                self.waiting = 0
            self.thread.join(1.0)  # its writes never block: it sees the empty backlog at once
        with contextlib.suppress(OSError):
            os.close(self.fd)
        return drained


class Relay:
    """The agent process and the three pumps."""

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
        self.editor_reading = True  # False once writing to the editor failed (it went away)
        self.bytes = {"c2a": 0, "a2c": 0}
        self.cpu: dict[str, float] = {}  # CPU seconds of each pump thread, when it ended
        self.proc = spawn_group(argv, cwd)
        self.pgid = self.proc.pid
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._agent_in = self.proc.stdin.fileno()
        widen(self.proc.stdout.fileno())
        self.threads = [
            threading.Thread(target=self._pump_up, name="proxy-up", daemon=True),
            threading.Thread(target=self._pump_down, name="proxy-down", daemon=True),
            threading.Thread(target=self._pump_stderr, name="proxy-stderr", daemon=True),
        ]
        for t in self.threads:
            t.start()

    def elapsed(self) -> float:
        return round(time.monotonic() - self.t0, 6)

    def forwarding_cpu(self) -> float:
        """CPU seconds the pumps and the feeder spent (all of the forwarding, none of the
        judging); complete once :meth:`join` and the feed's close returned."""
        return round(sum(self.cpu.values()) + self.feed.cpu, 6)

    # --- pumps -----------------------------------------------------------------------------
    def _pump_up(self) -> None:
        """Editor -> agent."""
        put, sent = self.feed.put, self.bytes
        for data in read_chunks(self.stdin_fd, self.stop):
            put(C2A, self.elapsed(), data)
            sent["c2a"] += len(data)
            if not _write_all(self._agent_in, data, self.stop):
                break  # the agent stopped reading or exited: nothing more can reach it
        put(C2A, self.elapsed(), b"")
        self.editor_gone.set()
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]  # EOF, as without the proxy
        self.cpu["up"] = time.thread_time()

    def _pump_down(self) -> None:
        """Agent -> editor."""
        out = self.proc.stdout.fileno()  # type: ignore[union-attr]
        put, sent = self.feed.put, self.bytes
        for data in read_chunks(out, self.stop, PIPE_SIZE):
            put(A2C, self.elapsed(), data)
            sent["a2c"] += len(data)
            if self.editor_reading and not _write_all(self.stdout_fd, data, self.stop):
                self.editor_reading = False  # keep draining the agent, record what it says
        put(A2C, self.elapsed(), b"")
        self._release_editor()
        self.agent_out_closed.set()
        self.cpu["down"] = time.thread_time()

    def _release_editor(self) -> None:
        """The agent closed its stdout, so the editor's channel ends now, as it would without
        the proxy (judging may still go on). The descriptor stays open on /dev/null, so that
        its number is not reused while the caller still holds it."""
        with contextlib.suppress(OSError):
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
        """Let the pumps drain (the agent's output after its exit), then stop them."""
        self.threads[1].join(timeout)
        self.threads[2].join(timeout)
        self.stop.set()
        for t in self.threads:
            t.join(timeout)


def _write_all(fd: int, data: bytes, stop: threading.Event) -> bool:
    """Write every byte (blocking pipes); False when the reader is gone."""
    view = memoryview(data)
    while view and not stop.is_set():
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [], 0.2)
            continue
        except (BrokenPipeError, OSError):
            return False
        view = view[n:]
    return not view
