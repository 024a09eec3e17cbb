"""The byte relay between an editor and its agent: forward first, hand a copy to the judge.

Three pump threads: the editor's stdin to the agent's stdin, the agent's stdout to the editor,
the agent's stderr to the proxy's stderr (whole lines, so the proxy's own lines never split
one of the agent's). Every chunk is forwarded untouched, as soon as it is read: no buffering
beyond what one ``read`` returned, nothing injected, nothing rewritten. Before a chunk is
written it is queued for the judge with its direction, so the judge sees both directions in
an order consistent with causality (what the editor sends in reply to a message the agent
wrote is queued after that message). The judge runs on its own thread; the queue is bounded by
bytes, and a judge that falls behind is cut off (the trace says it was truncated), never the
wire.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from acp_model.process import READ_CHUNK, end_group, read_chunks, spawn_group


@dataclass
class Chunk:
    """Bytes read from one direction (``c2a``: editor to agent, ``a2c``) at time ``t``;
    ``data`` empty: that direction ended."""

    dir: str
    t: float
    data: bytes


@dataclass
class ChunkQueue:
    """What the relay hands to the judge, bounded by bytes: once ``cap`` bytes wait, the rest
    of the run is not judged (``overflowed``), and the wire is not slowed down."""

    cap: int
    chunks: deque[Chunk] = field(default_factory=deque)
    queued: int = 0
    overflowed: bool = False
    cond: threading.Condition = field(default_factory=threading.Condition)

    def put(self, chunk: Chunk) -> None:
        with self.cond:
            if self.overflowed and chunk.data:
                return
            if self.queued + len(chunk.data) > self.cap:
                self.overflowed = True
                return
            self.chunks.append(chunk)
            self.queued += len(chunk.data)
            self.cond.notify()

    def get(self, timeout: float) -> Chunk | None:
        with self.cond:
            if not self.chunks:
                self.cond.wait(timeout)
            if not self.chunks:
                return None
            chunk = self.chunks.popleft()
            self.queued -= len(chunk.data)
            return chunk


class Relay:
    """The agent process and the three pumps."""

    def __init__(self, argv: Sequence[str], queue: ChunkQueue, *, stdin_fd: int = 0,
                 stdout_fd: int = 1, stderr_write: Callable[[bytes], None],
                 cwd: str | None = None) -> None:
        self.queue = queue
        self.stdin_fd, self.stdout_fd = stdin_fd, stdout_fd
        self.stderr_write = stderr_write
        self.t0 = time.monotonic()
        self.stop = threading.Event()
        self.editor_gone = threading.Event()  # the editor closed our stdin
        self.agent_out_closed = threading.Event()  # the agent closed its stdout
        self.editor_reading = True  # False once writing to the editor failed (it went away)
        self.bytes = {"c2a": 0, "a2c": 0}
        self.proc = spawn_group(argv, cwd)
        self.pgid = self.proc.pid
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._agent_in = self.proc.stdin.fileno()
        self.threads = [
            threading.Thread(target=self._pump_up, name="proxy-up", daemon=True),
            threading.Thread(target=self._pump_down, name="proxy-down", daemon=True),
            threading.Thread(target=self._pump_stderr, name="proxy-stderr", daemon=True),
        ]
        for t in self.threads:
            t.start()

    def elapsed(self) -> float:
        return round(time.monotonic() - self.t0, 6)

    # --- pumps -----------------------------------------------------------------------------
    def _pump_up(self) -> None:
        """Editor -> agent."""
        for data in read_chunks(self.stdin_fd, self.stop):
            self.queue.put(Chunk("c2a", self.elapsed(), data))
            self.bytes["c2a"] += len(data)
            if not _write_all(self._agent_in, data, self.stop):
                break  # the agent stopped reading or exited: nothing more can reach it
        self.queue.put(Chunk("c2a", self.elapsed(), b""))
        self.editor_gone.set()
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]  # EOF, as without the proxy

    def _pump_down(self) -> None:
        """Agent -> editor."""
        out = self.proc.stdout.fileno()  # type: ignore[union-attr]
        for data in read_chunks(out, self.stop):
            self.queue.put(Chunk("a2c", self.elapsed(), data))
            self.bytes["a2c"] += len(data)
            if self.editor_reading and not _write_all(self.stdout_fd, data, self.stop):
                self.editor_reading = False  # keep draining the agent, record what it says
        self.queue.put(Chunk("a2c", self.elapsed(), b""))
        self.agent_out_closed.set()

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
