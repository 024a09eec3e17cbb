"""The proxy's judge: a process of its own that turns the relay's chunks into trace records,
writes the trace file and runs the same Monitor ``acp-model check`` runs, sending each
violation back the moment it is decided; :class:`JudgeProcess` is the relay's end of it.

A process, not a thread of the relay: judging a message costs tens of microseconds of Python,
and in the relay's process that time holds the interpreter lock the pumps need to forward the
next chunk (forwarding passed a ninth of a direct pipe that way, and added most of its latency).

Records are exactly what the fuzz transport records (``{"dir", "t", "msg"}``, or ``raw`` with
``not-json`` / ``invalid-utf8`` / ``oversize``), so ``acp-model check`` reads the trace unchanged
and reaches the same verdicts. Under ``--spec auto`` the records wait (a bounded number) until
the first prompt response decides the revision; they are then judged in order.

The pipe from the relay carries frames (``feed.HEADER``): the settings first, then each chunk
with its direction and time, then the end of the session with what only the relay knows (the
agent's exit, the bytes, whether the judge was cut off). Back on stdout, one JSON object a line:
``{"live": text}`` per violation, ``{"report": ...}`` at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

import orjson

from acp_model.oracle.monitor import Monitor, Violation
from acp_model.oracle.offline import finish_open, report_for
from acp_model.proxy.feed import DIRECTIONS, END, HEADER, SETUP
from acp_model.report.html import trace_page, write_html
from acp_model.spec import revisions
from acp_model.spec.levels import Level
from acp_model.spec.readings import Readings
from acp_model.spec.rules import strength_shown
from acp_model.trace import dialect
from acp_model.trace.wire import LineCutter, decode_line, dumps_record

UNDECIDED_LIMIT = 10_000  # records judged as the seed's if no prompt response came by then
# The judge yields the CPU to the wire: on a busy machine the relay (and the editor and agent
# it serves) get the cores first, and the judge works from its backlog (``feed.py``).
NICENESS = 5
READ_SIZE = 1 << 20  # a read of the relay's pipe takes up to this much (the pipe's size)
TRACE_BUFFER = 1 << 16  # the trace file's buffer, written out at each batch's end


@dataclass(frozen=True)
class JudgeSettings:
    """What the judge process is told first (pickled: the same code runs both ends)."""

    readings: Readings
    spec: str
    source: str  # the agent's command line, for the report
    validate: bool = True
    max_line: int = 8 << 20
    max_trace: int = 256 << 20
    trace_fd: int | None = None  # the trace file, opened by the relay and inherited
    html: str | None = None  # where the HTML page goes at the end


def live_line(v: Violation) -> str:
    """One line per violation, as the editor's log shows it."""
    level = "FAIL" if v.level == Level.FAIL else "warn"
    where = f"#{v.index}" + (f".{v.sub}" if v.sub is not None else "")
    session = f" session {v.session}" if v.session else ""
    strength = strength_shown(v.rule, v.strength)
    return f"acp-model: {level} {v.rule} ({strength}) {where}{session}: {v.message}"


class Judge:
    """Chunks of both directions -> records -> the trace file and the monitor."""

    def __init__(self, settings: JudgeSettings, *, trace: IO[bytes] | None,
                 live: Callable[[Violation], None]) -> None:
        self.settings = settings
        self.readings = settings.readings
        self.trace = trace
        self.live = live
        self.cutters = {d: LineCutter(settings.max_line) for d in DIRECTIONS}
        self.recorded = 0  # bytes of trace written
        self.records = 0
        self.truncated = False  # the trace (and judging) stopped at the cap
        self.monitor: Monitor | None = None
        self.detector = dialect.Detector()
        self.waiting: list[dict[str, Any]] = []  # records held until auto decides
        self.kept: list[dict[str, Any]] | None = [] if settings.html else None  # the HTML page
        self.error: BaseException | None = None
        if settings.spec != revisions.AUTO:
            self._decide(revisions.chosen(settings.spec))

    def chunk(self, direction: str, t: float, data: bytes) -> None:
        """Bytes read from one direction (empty: it ended). An error of the oracle stops the
        judging, never the relay: it is reported at the end."""
        if self.error is not None:
            return
        t = round(t, 6)  # the relay sends its clock as read; the trace keeps microseconds
        try:
            cutter = self.cutters[direction]
            for line, oversize in (cutter.feed(data) if data else cutter.finish()):
                self._line(direction, t, line, oversize)
        except Exception as exc:  # an oracle bug must not take the session down
            self.error = exc

    def _line(self, direction: str, t: float, line: bytes, oversize: int | None) -> None:
        if oversize is not None:
            rec: dict[str, Any] = {"dir": direction, "t": t,
                                   "raw": line.decode("utf-8", errors="replace"),
                                   "error": "oversize", "bytes": oversize}
        else:
            value, raw, error = decode_line(line)
            rec = {"dir": direction, "t": t}
            if error is None:
                rec["msg"] = value
            else:
                rec["raw"], rec["error"] = raw, error
        self._record(rec)

    def _record(self, rec: dict[str, Any]) -> None:
        if self.truncated:
            return
        data = dumps_record(rec) + b"\n"
        if self.recorded + len(data) > self.settings.max_trace:
            self.truncated = True
            return
        self.recorded += len(data)
        self.records += 1
        if self.kept is not None:
            self.kept.append(rec)
        if self.trace is not None:
            self.trace.write(data)  # flushed once per batch of frames (:meth:`flush`)
        if self.monitor is not None:
            self._feed(rec)
            return
        self.waiting.append(rec)
        decision = self.detector.feed(rec)
        if decision is None and len(self.waiting) >= UNDECIDED_LIMIT:
            decision = self.detector.undecided(f"no prompt response in the first "
                                               f"{UNDECIDED_LIMIT} messages")
        if decision is not None:
            self._decide(decision)

    def _decide(self, decision: revisions.Decision) -> None:
        self.readings = self.readings.parse([f"SPEC={decision.revision}"])
        self.monitor = Monitor(self.readings, validate=self.settings.validate,
                               decision=decision)
        waiting, self.waiting = self.waiting, []
        for rec in waiting:
            self._feed(rec)

    def _feed(self, rec: dict[str, Any]) -> None:
        assert self.monitor is not None
        for v in self.monitor.feed(rec):
            self.live(v)

    def flush(self) -> None:
        """Everything recorded so far to the trace file: the judge calls it whenever it has
        judged every frame it read (before it waits for more), so what is judged is on disk
        by the time the judge waits, at one write per batch rather than per record."""
        if self.trace is not None:
            self.trace.flush()

    def finish(self) -> Monitor:
        """The monitor once everything read was judged (``auto`` decided if it never was);
        liveness is the caller's: what is owed is *open at end*."""
        if self.monitor is None:
            self._decide(self.detector.undecided())
        assert self.monitor is not None
        return self.monitor

    def report(self, relayed: dict[str, Any], cpu: float) -> dict[str, Any]:
        """The report of the session: ``check``'s, with what is open at the end and the
        proxy's own facts (``relayed``: what the relay knows)."""
        monitor = self.finish()
        open_at_end = finish_open(monitor)  # owed when the session ended: not failures
        proxy = {**relayed, "records": self.records, "trace_truncated": self.truncated,
                 "judging_cut_short": _cut_short.is_set(),
                 "internal_error": repr(self.error) if self.error else None}
        proxy["cpu_seconds"] = {**relayed.get("cpu_seconds", {}), "judge": round(cpu, 6)}
        report = report_for(monitor, command="proxy", source=self.settings.source, extra={
            "open_at_end": [v.to_json() for v in open_at_end], "proxy": proxy})
        report["verdict"] = covered_verdict(report["verdict"], proxy)
        return report


def covered_verdict(verdict: str, proxy: dict[str, Any]) -> str:
    """A pass over part of a session is not a pass. When judging stopped before the session
    ended (the judge fell ``--max-queue`` behind the wire, the trace reached its cap, the judge
    was cut short at exit) the verdict is ``incomplete``; when the oracle itself failed, it is
    ``error``. A failure found in the part judged stands: its proof lies in that part."""
    if verdict != "pass":
        return verdict
    if proxy.get("internal_error"):
        return "error"
    if any(proxy.get(k) for k in ("judge_overflowed", "trace_truncated", "judging_cut_short")):
        return "incomplete"
    return verdict


_cut_short = threading.Event()  # SIGUSR1: the relay waits no longer; report what was judged


def main() -> int:
    """The judge process: frames on stdin, JSON lines on stdout (see the module docstring)."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)  # the relay ends the session, then closes our stdin
    signal.signal(signal.SIGUSR1, lambda _s, _f: _cut_short.set())
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    out = os.fdopen(1, "wb", buffering=0)
    lock = threading.Lock()

    def send(obj: dict[str, Any]) -> None:
        data = orjson.dumps(obj, default=str) + b"\n"
        with lock, contextlib.suppress(OSError):
            out.write(data)

    frames = FrameReader(0)
    first = frames.next()
    if first is None or first[0] != SETUP:
        return 2
    settings: JudgeSettings = pickle.loads(first[2])
    trace = (os.fdopen(settings.trace_fd, "wb", buffering=TRACE_BUFFER)
             if settings.trace_fd is not None else None)
    judge = Judge(settings, trace=trace, live=lambda v: send({"live": live_line(v)}))
    frames.idle = judge.flush
    cpu0 = time.process_time()
    relayed: dict[str, Any] = {}
    while (got := frames.next()) is not None:
        kind, t, data = got
        if kind == END:
            relayed = json.loads(data)
            break
        if _cut_short.is_set():
            break
        judge.chunk(DIRECTIONS[kind], t, data)
    report = judge.report(relayed, time.process_time() - cpu0)
    if trace is not None:
        trace.close()
    if settings.html:
        write_html(trace_page(report, judge.kept or [], "the proxied session"), settings.html)
    send({"report": report})
    return 0


class FrameReader:
    """The frames on a descriptor, read as they come: one read takes what the pipe holds
    (a batch of the relay's, or many), and its frames are handed out one by one. ``idle`` is
    called before each read that may wait, once every frame read so far was handed out: the
    judge flushes its trace there, once per batch instead of once per record."""

    def __init__(self, fd: int, idle: Callable[[], None] = lambda: None) -> None:
        self.fd, self.idle = fd, idle
        self.ready: deque[tuple[int, float, bytes]] = deque()
        self.rest = b""  # the start of a frame not yet read whole

    def next(self) -> tuple[int, float, bytes] | None:
        """The next frame (kind, time, bytes); None at the end of the pipe."""
        while not self.ready:
            self.idle()
            try:
                chunk = os.read(self.fd, READ_SIZE)
            except OSError:
                return None
            if not chunk:
                return None
            self._cut(self.rest + chunk if self.rest else chunk)
        return self.ready.popleft()

    def _cut(self, data: bytes) -> None:
        at, size = 0, len(data)
        while size - at >= HEADER.size:
            kind, t, length = HEADER.unpack_from(data, at)
            end = at + HEADER.size + length
            if end > size:
                break
            self.ready.append((kind, t, data[at + HEADER.size:end]))
            at = end
        self.rest = data[at:]


class JudgeProcess:
    """The relay's end of the judge: the process, its pipe (``stdin_fd``: frames go there) and
    a thread reading what it sends back (live lines to ``live``, the report at the end)."""

    def __init__(self, settings: JudgeSettings, *, live: Callable[[str], None],
                 stderr_fd: int | None) -> None:
        fds = (settings.trace_fd,) if settings.trace_fd is not None else ()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "acp_model.proxy.judge"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=stderr_fd if stderr_fd is not None
            else subprocess.DEVNULL, pass_fds=fds)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin_fd = os.dup(self.proc.stdin.fileno())  # JudgeFeed owns (and closes) this
        self.proc.stdin.close()
        self.live = live
        self.report: dict[str, Any] | None = None
        self.reader = threading.Thread(target=self._read, name="proxy-judge-out", daemon=True)
        self.reader.start()
        self.setup = pickle.dumps(settings)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                msg = orjson.loads(line)
                if "live" in msg:
                    self.live(msg["live"])
                elif "report" in msg:
                    self.report = msg["report"]

    def result(self, timeout: float) -> dict[str, Any] | None:
        """The report, once the judge had read everything; after ``timeout`` seconds it is
        told to stop (SIGUSR1: it reports what it judged), and killed if even that fails."""
        for last in (False, True):
            self.reader.join(timeout if not last else 5.0)
            if not self.reader.is_alive():
                break
            with contextlib.suppress(OSError):
                self.proc.send_signal(signal.SIGKILL if last else signal.SIGUSR1)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5.0)
        return self.report

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait()


if __name__ == "__main__":
    sys.exit(main())
