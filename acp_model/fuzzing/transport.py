"""Client side of the ACP stdio transport: spawn an agent, talk JSON-RPC, record everything.

The agent under test may be hostile (crash, hang, flood stdout, print garbage or huge lines,
ignore SIGTERM, leave grandchildren behind), so this module is built around hard bounds:

* stdout is split on ``\\n`` with a bounded buffer; a line longer than ``max_line_bytes`` is
  never held whole: a short preview is kept and it is recorded as an ``oversize`` raw record;
* the transcript stops storing records once ``max_transcript_bytes`` is reached (counters keep
  running, ``truncated`` is set and one ``transcript-cap`` marker record is stored);
* stderr is drained into a bounded ring buffer (and optionally a capped file);
* writes to stdin time out instead of blocking forever on an agent that stops reading;
* ``close()`` escalates stdin-close -> SIGTERM -> SIGKILL on the agent's whole process group.

Every message in both directions lands in :attr:`AgentProcess.transcript` in the project trace
format, one dict per record::

    {"dir": "c2a" | "a2c", "t": <seconds since spawn, monotonic>, "msg": <parsed JSON value>}
    {"dir": "a2c", "t": ..., "raw": "<text>", "error": "invalid-utf8" | "not-json" | "oversize"}

An ``oversize`` record's ``raw`` is a 4 KiB preview and it carries the line length in
``"bytes"``; :meth:`AgentProcess.send_raw` (garbage tests) records ``c2a`` raw records the same
way.

Threading: one reader thread per pipe (stdout, stderr), one thread waiting for the exit, and
one delivery thread. The reader threads only read and append: all records are appended under
one lock (``_cond``), so transcript order is the order in which records were appended, and
``wait_for`` waits on that condition variable (no polling). Listener callbacks (the oracle, the
client's answers to agent requests) run on the delivery thread, strictly in transcript order and
never concurrently, fed through the queue of undelivered records: however long the oracle takes,
the reader keeps draining the agent's stdout, and an agent that blocks writing while not reading
stdin cannot stall a reply behind the reader. A callback may send (its record is delivered after
it returns). A send from any other thread returns once its own record has been delivered, so a
client that sent something can ask the oracle about it at once. An exception in a callback is
kept in :attr:`AgentProcess.listener_errors` with its traceback; the caller must look (the fuzz
client turns it into an internal error, never a pass).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from acp_model.fuzzing.calls import AgentExited, RpcCalls, RpcError
from acp_model.process import RingBuffer, end_group, signal_group, spawn_group
from acp_model.trace.wire import (
    OVERSIZE_PREVIEW,
    LineCutter,
    Record,
    decode_line,
    dumps_record,
    is_response_to,
)

__all__ = [
    "AgentExited",
    "AgentProcess",
    "Listener",
    "Record",
    "RpcError",
    "decode_line",
    "dumps_record",
    "is_response_to",
]

Listener = Callable[[Record], None]

MiB = 1024 * 1024

# Every agent started and not yet closed: a run that ends abruptly (a Ctrl-C between two of
# its own clean-ups, the fast exit of ``acp_model.cli.run``) still ends their process groups
# (held strongly: an agent whose object was dropped unclosed is the one to end)
_LIVE: set[AgentProcess] = set()


@atexit.register
def _end_live_agents() -> None:
    for agent in list(_LIVE):
        with contextlib.suppress(Exception):
            agent.close(0.0)
_READ_CHUNK = 64 * 1024
_OVERSIZE_PREVIEW = OVERSIZE_PREVIEW
_RECORD_OVERHEAD = 64  # rough per-record bookkeeping cost counted against the transcript cap
STOP_GRACE = 0.1  # seconds an agent gets to exit on its own once the run was asked to stop


class AgentProcess(RpcCalls):
    """A spawned ACP agent speaking newline-delimited JSON-RPC 2.0 over stdio.

    Use as a context manager (``with AgentProcess([...]) as agent:``) or call :meth:`close`.
    The agent runs in its own session and process group so that everything it spawns can be
    killed together.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        max_line_bytes: int = 8 * MiB,
        max_transcript_bytes: int = 32 * MiB,
        stderr_bytes: int = 256 * 1024,
        stderr_path: str | os.PathLike[str] | None = None,
        stderr_file_bytes: int = 16 * MiB,
        write_timeout: float = 10.0,
        close_grace: float = 2.0,
        stop: threading.Event | None = None,
    ) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self.argv = list(argv)
        # set on a stop request (fuzzing.stop): every wait below gives up within 0.1 s
        self.stop_requested = stop if stop is not None else threading.Event()
        self.max_line_bytes = max_line_bytes
        self.max_transcript_bytes = max_transcript_bytes
        self.write_timeout = write_timeout
        self.close_grace = close_grace

        self.transcript: list[Record] = []
        self.truncated = False
        """Set once the transcript cap was hit; later records are counted, not stored."""
        self.stored_bytes = 0
        self.dropped_records = 0
        self.dropped_bytes = 0
        self.bytes_read = 0
        self.lines_read = 0
        self.oversize_lines = 0
        self.listener_errors: list[BaseException] = []
        self.delivered = 0  # records the listeners have seen (transcript order)
        self.returncode: int | None = None
        self.stdout_closed = False
        """EOF seen on the agent's stdout: no further a2c records can arrive."""

        self._cond = threading.Condition(threading.Lock())
        self._write_lock = threading.Lock()
        self._undelivered: collections.deque[Record] = collections.deque()
        self._queued = 0  # records put in the delivery queue so far
        self._listeners: list[Listener] = []
        self._next_id = 0
        self._stop = threading.Event()
        self._stdin_closed = False
        self._stdin_broken = False  # a timed-out write left half a line in the pipe
        self.stdin_lost = False
        """A write found the agent's end of stdin closed: it is exiting, or will never read."""
        self._closed = False
        self._cursor = 0
        self._stderr = RingBuffer(stderr_bytes)
        self._stderr_cond = threading.Condition()  # notified per stderr chunk and at its EOF
        self._stderr_eof = False
        self._stderr_file = open(stderr_path, "wb") if stderr_path is not None else None  # noqa: SIM115
        self._stderr_file_left = stderr_file_bytes

        self._t0 = time.monotonic()
        self._proc = spawn_group(self.argv, cwd, env)
        self.pid = self._proc.pid
        self.pgid = self._proc.pid  # start_new_session: the agent leads its own group
        try:
            self._start_threads()
        except BaseException:
            # a Ctrl-C between the spawn and a usable object: nobody could close it later
            signal_group(self.pgid, signal.SIGKILL)
            self._proc.wait()
            raise

    def _start_threads(self) -> None:
        _LIVE.add(self)  # ended at exit if nobody closes it
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        assert self._proc.stderr is not None
        self._stdin_fd = self._proc.stdin.fileno()
        os.set_blocking(self._stdin_fd, False)
        self._threads = [
            threading.Thread(target=self._read_stdout, name=f"acp-stdout-{self.pid}", daemon=True),
            threading.Thread(target=self._read_stderr, name=f"acp-stderr-{self.pid}", daemon=True),
            threading.Thread(target=self._wait_exit, name=f"acp-wait-{self.pid}", daemon=True),
            threading.Thread(target=self._deliver, name=f"acp-deliver-{self.pid}", daemon=True),
        ]
        self._delivery_thread = self._threads[-1]
        for thread in self._threads:
            thread.start()

    # ------------------------------------------------------------------ state

    @property
    def exited(self) -> bool:
        """True once the agent process has exited."""
        return self.returncode is not None

    @property
    def alive(self) -> bool:
        """True while the agent can still send us messages (running and stdout open)."""
        return not self.exited and not self.stdout_closed

    def elapsed(self) -> float:
        """Seconds since the agent was spawned (the clock used for the records' ``t``)."""
        return time.monotonic() - self._t0

    def stderr_text(self) -> str:
        """The last ``stderr_bytes`` bytes the agent wrote to stderr, decoded leniently."""
        return self._stderr.getvalue().decode("utf-8", errors="replace")

    def wait_stderr(self, text: str, timeout: float) -> bool:
        """Wait until ``text`` appears in what the agent wrote to stderr (False: it did not
        within ``timeout`` seconds, or stderr was closed without it)."""
        with self._stderr_cond:
            return self._stderr_cond.wait_for(
                lambda: text in self.stderr_text() or self._stderr_eof, timeout) \
                and text in self.stderr_text()

    @property
    def stderr_total_bytes(self) -> int:
        return self._stderr.total

    def mark(self) -> int:
        """Current transcript length: pass it as ``start`` to wait for what comes next."""
        with self._cond:
            return len(self.transcript)

    def on_record(self, callback: Listener) -> Callable[[], None]:
        """Register ``callback(record)`` for every later record; returns an unsubscribe function.

        Records already in the transcript are not replayed. See the module docstring for the
        threading contract.
        """
        with self._cond:
            self._listeners.append(callback)

        def remove() -> None:
            with self._cond, contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return remove

    # --------------------------------------------------------------- recording

    def _append(self, record: Record, cost: int) -> int:
        """Store a record and queue it for the listeners; returns its delivery number.

        Senders hold ``_write_lock`` while appending, so the transcript order is the write
        order.
        """
        with self._cond:
            if self.truncated:
                self.dropped_records += 1
                self.dropped_bytes += cost
            elif self.stored_bytes + cost + _RECORD_OVERHEAD > self.max_transcript_bytes:
                self.truncated = True
                self.dropped_records += 1
                self.dropped_bytes += cost
                marker: Record = {
                    "dir": record["dir"],
                    "t": record["t"],
                    "raw": "",
                    "error": "transcript-cap",
                }
                self.transcript.append(marker)
            else:
                self.stored_bytes += cost + _RECORD_OVERHEAD
                self.transcript.append(record)
            self._undelivered.append(record)
            self._queued += 1
            self._cond.notify_all()
            return self._queued

    def _deliver(self) -> None:
        """The delivery thread: run listeners in transcript order, outside the lock."""
        while True:
            with self._cond:
                while not self._undelivered:
                    if self._stop.is_set() or (self._closed and self.stdout_closed):
                        return
                    self._cond.wait(0.2)
                record = self._undelivered.popleft()
                listeners = list(self._listeners)
            for callback in listeners:
                try:
                    callback(record)
                except Exception as exc:  # a broken listener must not stop the delivery
                    if len(self.listener_errors) < 100:
                        self.listener_errors.append(exc)
            with self._cond:
                self.delivered += 1
                self._cond.notify_all()

    @property
    def queued(self) -> int:
        """Records handed to the listeners so far (delivered or waiting)."""
        with self._cond:
            return self._queued

    def wait_eof(self, timeout: float) -> bool:
        """Wait until everything the agent wrote to stdout has been read (EOF): an agent that
        exited may have left its last lines in the pipe (False: a child still holds it)."""
        with self._cond:  # the reader notifies when it sets stdout_closed
            return self._cond.wait_for(lambda: self.stdout_closed, timeout)

    def wait_delivered(self, number: int, timeout: float = 5.0) -> bool:
        """Wait until the listeners have seen the first ``number`` records."""
        if threading.current_thread() is self._delivery_thread:
            return self.delivered >= number  # a listener sending: it is being delivered
        end = time.monotonic() + timeout
        with self._cond:
            while self.delivered < number:
                remaining = end - time.monotonic()
                if remaining <= 0 or not self._delivery_thread.is_alive():
                    return False
                self._cond.wait(min(remaining, 0.2))
        return True

    def _record_line(self, line: bytes) -> None:
        self.lines_read += 1
        value, raw, error = decode_line(line)
        record: Record = {"dir": "a2c", "t": self.elapsed()}
        if error is None:
            record["msg"] = value
        else:
            record["raw"] = raw
            record["error"] = error
        self._append(record, len(line))

    def _record_oversize(self, preview: bytes, total: int) -> None:
        self.lines_read += 1
        self.oversize_lines += 1
        record: Record = {
            "dir": "a2c",
            "t": self.elapsed(),
            "raw": preview.decode("utf-8", errors="replace"),
            "error": "oversize",
            "bytes": total,
        }
        self._append(record, len(preview))

    # ----------------------------------------------------------------- threads

    def _chunks(self, fd: int) -> Iterator[bytes]:
        """What the agent writes to ``fd``, until it closes the pipe or we stop."""
        while not self._stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(fd, _READ_CHUNK)
            except OSError:
                return
            if not chunk:
                return
            yield chunk

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        cutter = LineCutter(self.max_line_bytes, _OVERSIZE_PREVIEW)
        try:
            for chunk in self._chunks(fd):
                self.bytes_read += len(chunk)
                for line, oversize in cutter.feed(chunk):
                    self._line(line, oversize)
            for line, oversize in cutter.finish():  # a last line without a newline
                self._line(line, oversize)
        finally:
            with self._cond:
                self.stdout_closed = True
                self._cond.notify_all()

    def _line(self, line: bytes, oversize: int | None) -> None:
        if oversize is None:
            self._record_line(line)
        else:
            self._record_oversize(line, oversize)

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        try:
            for chunk in self._chunks(self._proc.stderr.fileno()):
                with self._stderr_cond:
                    self._stderr.write(chunk)
                    self._stderr_cond.notify_all()
                if self._stderr_file is not None and self._stderr_file_left > 0:
                    piece = chunk[: self._stderr_file_left]
                    self._stderr_file_left -= len(piece)
                    with contextlib.suppress(OSError, ValueError):
                        self._stderr_file.write(piece)
        finally:
            with self._stderr_cond:
                self._stderr_eof = True
                self._stderr_cond.notify_all()

    def _wait_exit(self) -> None:
        code = self._proc.wait()
        with self._cond:
            self.returncode = code
            self._cond.notify_all()

    # ----------------------------------------------------------------- sending

    def send(self, msg: Any, *, probe: bool = False) -> Record:
        """Write one JSON-RPC message (or batch array) as a line and record it.

        ``probe`` marks a deliberate negative input (the trace's ``"probe": true``). Raises
        :class:`AgentExited` if the agent's stdin is closed (the agent died) and
        :class:`TimeoutError` if the agent stops reading for ``write_timeout`` seconds.
        """
        return self.send_many([msg], probe=probe)[0]

    def send_many(self, msgs: Iterable[Any], *, probe: bool = False) -> list[Record]:
        """Write several messages in a single ``write`` so they reach the agent together.

        Useful for races (e.g. a prompt immediately followed by a cancel).
        """
        msgs = list(msgs)
        lines = [orjson.dumps(m) for m in msgs]
        data = b"".join(line + b"\n" for line in lines)
        records: list[Record] = []
        last = 0
        try:
            with self._write_lock:
                self._check_writable()
                for msg, line in zip(msgs, lines, strict=True):
                    record: Record = {"dir": "c2a", "t": self.elapsed(), "msg": msg}
                    if probe:
                        record["probe"] = True
                    last = self._append(record, len(line))
                    records.append(record)
                self._write_all(data)
        finally:
            self.wait_delivered(last)
        return records

    def send_raw(self, data: bytes, *, probe: bool = False) -> Record:
        """Write arbitrary bytes (garbage tests); recorded as one c2a raw record.

        A trailing newline is added if missing. The raw text is decoded leniently and flagged
        like agent output would be (``invalid-utf8``/``not-json``/``oversize``).
        """
        if not data.endswith(b"\n"):
            data += b"\n"
        line = data[:-1]
        if len(line) > self.max_line_bytes:
            record: Record = {
                "dir": "c2a",
                "t": 0.0,
                "raw": line[:_OVERSIZE_PREVIEW].decode("utf-8", errors="replace"),
                "error": "oversize",
                "bytes": len(line),
            }
            cost = _OVERSIZE_PREVIEW
        else:
            value, raw, error = decode_line(line)
            record = {"dir": "c2a", "t": 0.0}
            if error is None:
                record["msg"] = value
            else:
                record["raw"] = raw
                record["error"] = error
            cost = len(line)
        if probe:
            record["probe"] = True
        number = 0
        try:
            with self._write_lock:
                self._check_writable()
                record["t"] = self.elapsed()
                number = self._append(record, cost)
                self._write_all(data)
        finally:
            self.wait_delivered(number)
        return record

    def _check_writable(self) -> None:
        if self._stdin_closed:
            raise AgentExited("stdin already closed")
        if self._stdin_broken:
            raise AgentExited("stdin unusable: an earlier write timed out mid-line")
        if self.exited:
            raise AgentExited(f"agent exited with code {self.returncode}")

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        deadline = time.monotonic() + self.write_timeout
        while view:
            if self._stdin_closed:
                raise AgentExited("stdin closed while writing")
            try:
                n = os.write(self._stdin_fd, view)
                view = view[n:]
                continue
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError) as exc:
                self.stdin_lost = True
                raise AgentExited(f"agent closed stdin ({exc})") from exc
            except OSError as exc:
                raise AgentExited(f"cannot write to agent ({exc})") from exc
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if len(view) != len(data):
                    self._stdin_broken = True
                raise TimeoutError(f"agent did not read stdin for {self.write_timeout}s")
            if self.exited:
                raise AgentExited(f"agent exited with code {self.returncode}")
            select.select([], [self._stdin_fd], [], min(remaining, 0.2))

    def wait_exit(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` for the process to exit; returns its code or None."""
        with self._cond:
            self._cond.wait_for(lambda: self.returncode is not None, timeout)
            return self.returncode

    # ------------------------------------------------------------------- close

    def close_stdin(self) -> None:
        """Close the agent's stdin (the polite "please exit" of the stdio transport).

        A write blocked on an agent that stops reading sees the flag within 0.2 s and gives up,
        so closing never waits for its write timeout.
        """
        self._stdin_closed = True
        with self._write_lock:
            assert self._proc.stdin is not None
            if not self._proc.stdin.closed:
                with contextlib.suppress(OSError):
                    self._proc.stdin.close()

    def close(self, grace: float | None = None) -> int | None:
        """Shut the agent down and reap everything it started (:func:`end_group`); returns its
        exit code. ``grace`` defaults to ``close_grace``, and is ``STOP_GRACE`` at most once a
        stop was requested. Reader threads are joined. Safe to call twice."""
        if self._closed:
            return self.returncode
        self._closed = True
        _LIVE.discard(self)
        if grace is None:
            # a stop request (Ctrl-C, SIGTERM, the time budget's end) must end the run within
            # a second: the agent gets a moment, not the polite grace
            grace = STOP_GRACE if self.stop_requested.is_set() else self.close_grace
        elif self.stop_requested.is_set():
            grace = min(grace, STOP_GRACE)
        try:
            end_group(self.pgid, self.close_stdin, self.wait_exit, grace)
        finally:
            self._stop.set()  # the delivery thread still drains what was read, then stops
            for thread in self._threads:
                thread.join(timeout=2.0)
            for stream in (self._proc.stdout, self._proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            if self._stderr_file is not None:
                with contextlib.suppress(OSError):
                    self._stderr_file.close()
        return self.returncode

    def __enter__(self) -> AgentProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ output

    def records(self) -> list[Record]:
        """A snapshot copy of the transcript list (records themselves are shared)."""
        with self._cond:
            return list(self.transcript)

    def write_trace(self, path: str | os.PathLike[str]) -> Path:
        """Write the transcript as JSONL (one record per line) and return the path."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        records = self.records()
        with out.open("wb") as fh:
            for record in records:
                fh.write(dumps_record(record))
                fh.write(b"\n")
        return out
