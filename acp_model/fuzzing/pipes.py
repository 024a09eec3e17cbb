"""The three pipes of an agent process, each with the state only it owns: the stdout reader
(lines cut with a bounded buffer, recorded), the stderr tail (a ring buffer, optionally a capped
file) and the stdin writer (one lock, a write timeout, what went wrong with the pipe).
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable
from typing import IO, Any

import orjson

from acp_model.fuzzing.authorship import stamp
from acp_model.fuzzing.calls import AgentExited
from acp_model.fuzzing.transcript import Transcript
from acp_model.process import RingBuffer, read_chunks
from acp_model.trace.wire import OVERSIZE_PREVIEW, LineCutter, Record, decode_line


def line_record(direction: str, line: bytes, t: float) -> Record:
    """The record of one line: its JSON value, or its text and why it is not one."""
    value, raw, error = decode_line(line)
    record: Record = {"dir": direction, "t": t}
    if error is None:
        record["msg"] = value
    else:
        record["raw"] = raw
        record["error"] = error
    return record


def oversize_record(direction: str, preview: bytes, total: int, t: float) -> Record:
    """A line too long to hold: a preview of it, and its length in ``bytes``."""
    return {"dir": direction, "t": t, "raw": preview.decode("utf-8", errors="replace"),
            "error": "oversize", "bytes": total}


class StdoutReader:
    """Cuts the agent's stdout into lines (never holding one longer than ``max_line_bytes``)
    and records each in the transcript; counts what it read."""

    def __init__(self, log: Transcript, clock: Callable[[], float], max_line_bytes: int) -> None:
        self.log = log
        self.clock = clock
        self.max_line_bytes = max_line_bytes
        self.bytes_read = 0
        self.lines_read = 0
        self.oversize_lines = 0
        # asked before each record is appended (a replay held to its schedule reads an agent
        # message no earlier than the recording did)
        self.before: Callable[[Record], None] | None = None

    def run(self, fd: int, stop: threading.Event) -> None:
        """The reader thread: read to EOF (or ``stop``), then end the transcript's a2c side."""
        cutter = LineCutter(self.max_line_bytes, OVERSIZE_PREVIEW)
        try:
            for chunk in read_chunks(fd, stop):
                self.bytes_read += len(chunk)
                for line, oversize in cutter.feed(chunk):
                    self._line(line, oversize)
            for line, oversize in cutter.finish():  # a last line without a newline
                self._line(line, oversize)
        finally:
            self.log.end()

    def _line(self, line: bytes, oversize: int | None) -> None:
        self.lines_read += 1
        if oversize is None:
            self._record_line(line)
        else:
            self.oversize_lines += 1
            self._append(oversize_record("a2c", line, oversize, self.clock()), len(line))

    def _record_line(self, line: bytes) -> None:
        self._append(line_record("a2c", line, self.clock()), len(line))

    def _append(self, record: Record, cost: int) -> None:
        if self.before is not None:
            self.before(record)
            record["t"] = self.clock()  # when it was read
        self.log.append(record, cost)


class StderrTail:
    """The last ``ring_bytes`` the agent wrote to stderr (and, with ``path``, its first
    ``file_bytes`` in a file); waiters are woken per chunk and at EOF."""

    def __init__(self, ring_bytes: int, path: str | os.PathLike[str] | None,
                 file_bytes: int) -> None:
        self._ring = RingBuffer(ring_bytes)
        self._cond = threading.Condition()
        self._eof = False
        self._file = open(path, "wb") if path is not None else None  # noqa: SIM115
        self._file_left = file_bytes

    @property
    def total(self) -> int:
        """Bytes the agent wrote to stderr, kept or not."""
        return self._ring.total

    def text(self) -> str:
        """The tail, decoded leniently."""
        return self._ring.getvalue().decode("utf-8", errors="replace")

    def wait(self, text: str, timeout: float) -> bool:
        """Wait until ``text`` appears in the tail (False: it did not within ``timeout``
        seconds, or stderr was closed without it)."""
        with self._cond:
            return self._cond.wait_for(lambda: text in self.text() or self._eof, timeout) \
                and text in self.text()

    def run(self, fd: int, stop: threading.Event) -> None:
        """The stderr thread: drain the pipe until EOF (or ``stop``)."""
        try:
            for chunk in read_chunks(fd, stop):
                with self._cond:
                    self._ring.write(chunk)
                    self._cond.notify_all()
                if self._file is not None and self._file_left > 0:
                    piece = chunk[: self._file_left]
                    self._file_left -= len(piece)
                    with contextlib.suppress(OSError, ValueError):
                        self._file.write(piece)
        finally:
            with self._cond:
                self._eof = True
                self._cond.notify_all()

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()


class StdinWriter:
    """Writes to the agent's stdin and records what it writes, never blocking past
    ``timeout``; one writer at a time, so the transcript's order is the write order. A send
    returns once its records were delivered to the listeners (from a listener: at once)."""

    def __init__(self, log: Transcript, clock: Callable[[], float], pipe: IO[bytes],
                 timeout: float, exit_code: Callable[[], int | None],
                 max_line_bytes: int) -> None:
        self.log = log
        self.clock = clock
        self._pipe = pipe
        self._fd = pipe.fileno()
        os.set_blocking(self._fd, False)
        self.timeout = timeout
        self._exit_code = exit_code
        self.max_line_bytes = max_line_bytes
        self._lock = threading.Lock()
        self.closed = False
        self.broken = False  # a timed-out write left half a line in the pipe
        # asked before each write with its messages (a replay held to its schedule writes
        # only once what preceded the write in the recording has happened)
        self.before: Callable[[list[Record]], None] | None = None
        self.lost = False
        """A write found the agent's end closed: it is exiting, or will never read."""

    def send(self, msgs: list[Any], probe: bool) -> list[Record]:
        """Each message as a line, in one ``write``; raises :class:`AgentExited` if the pipe
        is unusable (the agent died) and :class:`TimeoutError` if the agent stops reading for
        ``timeout`` seconds."""
        lines = [orjson.dumps(m) for m in msgs]
        records: list[Record] = [{"dir": "c2a", "t": 0.0, "msg": m} for m in msgs]
        for record in records:
            if probe:
                record["probe"] = True
            stamp(record)
        last = 0
        if self.before is not None:
            self.before(records)
        try:
            with self._lock:
                self._check()
                for record, line in zip(records, lines, strict=True):
                    record["t"] = self.clock()
                    last = self.log.append(record, len(line))
                self._write_all(b"".join(line + b"\n" for line in lines))
        finally:
            self.log.listeners.wait(last)
        return records

    def send_raw(self, data: bytes, probe: bool) -> Record:
        """Arbitrary bytes as one line, recorded (and flagged) as agent output would be."""
        if not data.endswith(b"\n"):
            data += b"\n"
        line = data[:-1]
        if len(line) > self.max_line_bytes:
            record = oversize_record("c2a", line[:OVERSIZE_PREVIEW], len(line), 0.0)
            cost = OVERSIZE_PREVIEW
        else:
            record, cost = line_record("c2a", line, 0.0), len(line)
        if probe:
            record["probe"] = True
        stamp(record)
        number = 0
        if self.before is not None:
            self.before([record])
        try:
            with self._lock:
                self._check()
                record["t"] = self.clock()
                number = self.log.append(record, cost)
                self._write_all(data)
        finally:
            self.log.listeners.wait(number)
        return record

    def _check(self) -> None:
        if self.closed:
            raise AgentExited("stdin already closed")
        if self.broken:
            raise AgentExited("stdin unusable: an earlier write timed out mid-line")
        if (code := self._exit_code()) is not None:
            raise AgentExited(f"agent exited with code {code}")

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        deadline = time.monotonic() + self.timeout
        while view:
            if self.closed:
                raise AgentExited("stdin closed while writing")
            try:
                n = os.write(self._fd, view)
                view = view[n:]
                continue
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError) as exc:
                self.lost = True
                raise AgentExited(f"agent closed stdin ({exc})") from exc
            except OSError as exc:
                raise AgentExited(f"cannot write to agent ({exc})") from exc
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if len(view) != len(data):
                    self.broken = True
                raise TimeoutError(f"agent did not read stdin for {self.timeout}s")
            if (code := self._exit_code()) is not None:
                raise AgentExited(f"agent exited with code {code}")
            select.select([], [self._fd], [], min(remaining, 0.2))

    def close(self) -> None:
        """Close the pipe (the polite "please exit"). A write blocked on an agent that stops
        reading sees the flag within 0.2 s and gives up, so closing never waits for its write
        timeout."""
        self.closed = True
        with self._lock:
            if not self._pipe.closed:
                with contextlib.suppress(OSError):
                    self._pipe.close()
