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

Each part owns its state: the :class:`~acp_model.fuzzing.transcript.Transcript` (``log``: the
records, the cap, waiting on it) and its :class:`~acp_model.fuzzing.transcript.RecordListeners`,
the stdout reader, the stderr tail and the stdin writer (:mod:`acp_model.fuzzing.pipes`); the
kill ladder is :func:`acp_model.process.end_group`.

Threading: one reader thread per pipe (stdout, stderr), one thread waiting for the exit, and
one delivery thread. The reader threads only read and append: all records are appended under
one lock (the transcript's), so transcript order is the order in which records were appended,
and :meth:`RpcCalls.wait_for` waits on that condition variable (no polling). Listener callbacks
(the oracle, the client's answers to agent requests) run on the delivery thread, strictly in
transcript order and never concurrently, fed through the queue of undelivered records: however
long the oracle takes, the reader keeps draining the agent's stdout, and an agent that blocks
writing while not reading stdin cannot stall a reply behind the reader. A callback may send
(its record is delivered after it returns). A send from any other thread returns once its own
record has been delivered, so a client that sent something can ask the oracle about it at once.
An exception in a callback is kept in :attr:`AgentProcess.listener_errors` with its traceback;
the caller must look (the fuzz client turns it into an internal error, never a pass).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from acp_model.fuzzing.calls import AgentExited, RpcCalls, RpcError
from acp_model.fuzzing.pipes import (
    StderrTail,
    StdinWriter,
    StdoutReader,
)
from acp_model.fuzzing.transcript import Listener, Transcript
from acp_model.process import end_group, signal_group, spawn_group, wait_group_gone
from acp_model.trace.wire import Record, decode_line, dumps_record, is_response_to

__all__ = [
    "AgentExited",
    "AgentProcess",
    "Listener",
    "Record",
    "RpcCalls",
    "RpcError",
    "decode_line",
    "dumps_record",
    "is_response_to",
]

MiB = 1024 * 1024

# Every agent started and not yet closed: a run that ends abruptly (a Ctrl-C between two of
# its own clean-ups, the fast exit of ``acp_model.cli.run``) still ends their process groups
# (held strongly: an agent whose object was dropped unclosed is the one to end)
_LIVE: set[AgentProcess] = set()


@atexit.register
def _end_live_agents() -> None:
    cut = [agent for agent in list(_LIVE) if agent._closed]  # close() began
    for agent in cut:  # a thread of a run that ends now was waiting out its grace
        signal_group(agent.pgid, signal.SIGKILL)
    for agent in list(_LIVE):
        with contextlib.suppress(Exception):
            if agent in cut:
                wait_group_gone(agent.pgid, 2.0)
            else:
                agent.close(0.0)


STOP_GRACE = 0.1  # seconds an agent gets to exit on its own once the run was asked to stop


class AgentGroup:
    """The agent's process and its process group: the exit status (awaited by a thread of its
    own) and the ladder that ends the group (:func:`~acp_model.process.end_group`)."""

    def __init__(self, argv: Sequence[str], cwd: str | os.PathLike[str] | None,
                 env: Mapping[str, str] | None) -> None:
        self.popen = spawn_group(argv, cwd, env)
        self.pgid = self.popen.pid  # start_new_session: the agent leads its own group
        self.returncode: int | None = None
        self._cond = threading.Condition()
        self.waiter = threading.Thread(target=self._wait, name=f"acp-wait-{self.pgid}",
                                       daemon=True)

    def _wait(self) -> None:
        code = self.popen.wait()
        with self._cond:
            self.returncode = code
            self._cond.notify_all()

    def wait_exit(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` for the process to exit; returns its code or None."""
        with self._cond:
            self._cond.wait_for(lambda: self.returncode is not None, timeout)
            return self.returncode

    def kill(self) -> None:
        """SIGKILL to the group, and the agent reaped (a start that failed half-way)."""
        signal_group(self.pgid, signal.SIGKILL)
        self.popen.wait()

    def end(self, close_stdin: Callable[[], None], grace: float) -> int | None:
        """The kill ladder: stdin closed, SIGTERM, SIGKILL, each after ``grace``."""
        return end_group(self.pgid, close_stdin, self.wait_exit, grace)

    def close_pipes(self) -> None:
        """Close our ends of the agent's stdout and stderr (once their readers stopped)."""
        for stream in (self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class AgentProcess:
    """A spawned ACP agent speaking newline-delimited JSON-RPC 2.0 over stdio.

    Use as a context manager (``with AgentProcess([...]) as agent:``) or call :meth:`close`.
    The agent runs in its own session and process group so that everything it spawns can be
    killed together. Its parts: ``log`` (the transcript and its listeners), ``reader``
    (stdout), ``stderr`` (the tail), ``stdin`` (the writer) and ``calls`` (the JSON-RPC
    requests, answers and waits a client talks through: :class:`RpcCalls`).
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
        self.close_grace = close_grace
        self.log = Transcript(max_transcript_bytes)
        self.transcript: list[Record] = self.log.records
        self.listener_errors = self.log.listeners.errors
        self.calls = RpcCalls(self, self.log)
        self._stop = threading.Event()  # the reader threads' end
        self._closed = False
        self._t0 = time.monotonic()
        self.reader = StdoutReader(self.log, self.elapsed, max_line_bytes)
        self.stderr = StderrTail(stderr_bytes, stderr_path, stderr_file_bytes)
        self.group = AgentGroup(self.argv, cwd, env)
        self.pid = self.pgid = self.group.pgid
        try:
            assert self.group.popen.stdin is not None
            self.stdin = StdinWriter(self.log, self.elapsed, self.group.popen.stdin,
                                     write_timeout, lambda: self.returncode, max_line_bytes)
            self._start_threads()
        except BaseException:
            self.group.kill()  # a Ctrl-C before the object was usable: nobody could close it
            raise

    def _start_threads(self) -> None:
        _LIVE.add(self)  # ended at exit if nobody closes it
        out, err = self.group.popen.stdout, self.group.popen.stderr
        assert out is not None and err is not None
        self._threads = [threading.Thread(target=run, args=(fd, self._stop), daemon=True,
                                          name=f"acp-{name}-{self.pid}")
                         for run, fd, name in ((self.reader.run, out.fileno(), "stdout"),
                                               (self.stderr.run, err.fileno(), "stderr"))]
        self._threads.append(self.group.waiter)
        for thread in self._threads:
            thread.start()
        # the delivery thread drains what was read, then stops with the readers
        self._threads.append(self.log.listeners.start(
            f"acp-deliver-{self.pid}",
            lambda: self._stop.is_set() or (self._closed and self.log.ended)))

    # ------------------------------------------------------------------ state

    @property
    def returncode(self) -> int | None:
        return self.group.returncode

    @property
    def exited(self) -> bool:
        """True once the agent process has exited."""
        return self.returncode is not None

    @property
    def alive(self) -> bool:
        """True while the agent can still send us messages (running and stdout open)."""
        return not self.exited and not self.log.ended

    @property
    def stored_bytes(self) -> int:
        """Bytes the transcript holds (counted against ``max_transcript_bytes``)."""
        return self.log.stored_bytes

    def elapsed(self) -> float:
        """Seconds since the agent was spawned (the clock used for the records' ``t``)."""
        return time.monotonic() - self._t0

    def stderr_text(self) -> str:
        """The last ``stderr_bytes`` bytes the agent wrote to stderr, decoded leniently."""
        return self.stderr.text()

    def mark(self) -> int:
        """Current transcript length: pass it as ``start`` to wait for what comes next."""
        return self.log.mark()

    def records(self) -> list[Record]:
        """A snapshot copy of the transcript list (records themselves are shared)."""
        return self.log.snapshot()

    def write_trace(self, path: str | os.PathLike[str]) -> Path:
        """Write the transcript as JSONL (one record per line) and return the path."""
        return self.log.write(path)

    def on_record(self, callback: Listener) -> Callable[[], None]:
        """Register ``callback(record)`` for every later record; returns an unsubscribe function.

        Records already in the transcript are not replayed. See the module docstring for the
        threading contract.
        """
        return self.log.listeners.add(callback)

    def wait_delivered(self, number: int | None = None, timeout: float = 5.0) -> bool:
        """Wait until the listeners have seen the first ``number`` records (None: every record
        so far)."""
        return self.log.listeners.wait(number, timeout)

    def wait_exit(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` for the process to exit; returns its code or None."""
        return self.group.wait_exit(timeout)

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
        return self.stdin.send(list(msgs), probe)

    def send_raw(self, data: bytes, *, probe: bool = False) -> Record:
        """Write arbitrary bytes (garbage tests); recorded as one c2a raw record.

        A trailing newline is added if missing. The raw text is decoded leniently and flagged
        like agent output would be (``invalid-utf8``/``not-json``/``oversize``).
        """
        return self.stdin.send_raw(data, probe)

    # ------------------------------------------------------------------- close

    def close_stdin(self) -> None:
        """Close the agent's stdin (the polite "please exit" of the stdio transport)."""
        self.stdin.close()

    def close(self, grace: float | None = None) -> int | None:
        """Shut the agent down and reap everything it started (:func:`end_group`); returns its
        exit code. ``grace`` defaults to ``close_grace``, and is ``STOP_GRACE`` at most once a
        stop was requested. Reader threads are joined. Safe to call twice."""
        if self._closed:
            return self.returncode
        self._closed = True
        # a stop request (Ctrl-C, SIGTERM, the time budget's end) must end the run within a
        # second: the agent gets a moment, not the polite grace
        grace = self.close_grace if grace is None else grace
        if self.stop_requested.is_set():
            grace = min(grace, STOP_GRACE)
        try:
            self.group.end(self.close_stdin, grace)
        finally:
            _LIVE.discard(self)  # only now: an exit that cuts this close short ends the group
            self._stop.set()  # the delivery thread still drains what was read, then stops
            for thread in self._threads:
                thread.join(timeout=2.0)
            self.group.close_pipes()
            self.stderr.close()
        return self.returncode

    def __enter__(self) -> AgentProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
