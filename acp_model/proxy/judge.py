"""The proxy's judge thread: chunks -> trace records -> the trace file and the same Monitor
``acp-model check`` runs, with each violation printed the moment it is decided.

Records are exactly what the fuzz transport records (``{"dir", "t", "msg"}``, or ``raw`` with
``not-json`` / ``invalid-utf8`` / ``oversize``), so ``acp-model check`` reads the trace unchanged
and reaches the same verdicts. Under ``--spec auto`` the records wait (a bounded number) until
the first prompt response decides the revision; they are then judged in order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import IO, Any

from acp_model.oracle.monitor import Monitor, Violation
from acp_model.proxy.relay import ChunkQueue
from acp_model.spec import revisions
from acp_model.spec.readings import Readings
from acp_model.trace import dialect
from acp_model.trace.wire import LineCutter, decode_line, dumps_record

UNDECIDED_LIMIT = 10_000  # records judged as the seed's if no prompt response came by then


class Judge:
    """Consumes the relay's chunks until both directions ended (or it is stopped)."""

    def __init__(self, queue: ChunkQueue, readings: Readings, spec: str, *,
                 trace: IO[bytes] | None, live: Callable[[Violation], None],
                 max_line: int, max_trace: int, validate: bool = True,
                 keep: bool = False) -> None:
        self.queue = queue
        self.readings = readings
        self.spec = spec
        self.trace = trace
        self.live = live
        self.validate = validate
        self.max_trace = max_trace
        self.cutters = {"c2a": LineCutter(max_line), "a2c": LineCutter(max_line)}
        self.ended: set[str] = set()
        self.recorded = 0  # bytes of trace written
        self.records = 0
        self.truncated = False  # the trace (and judging) stopped at the cap
        self.monitor: Monitor | None = None
        self.detector = dialect.Detector()
        self.waiting: list[dict[str, Any]] = []  # records held until auto decides
        self.kept: list[dict[str, Any]] | None = [] if keep else None  # for the HTML page
        self.thread = threading.Thread(target=self._run, name="proxy-judge", daemon=True)
        self.stop = threading.Event()
        self.error: BaseException | None = None
        if spec != revisions.AUTO:
            self._decide(revisions.chosen(spec))

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            while len(self.ended) < 2 and not self.stop.is_set():
                chunk = self.queue.get(0.2)
                if chunk is None:
                    continue
                cutter = self.cutters[chunk.dir]
                lines = list(cutter.feed(chunk.data)) if chunk.data else list(cutter.finish())
                for line, oversize in lines:
                    self._line(chunk.dir, chunk.t, line, oversize)
                if not chunk.data:
                    self.ended.add(chunk.dir)
        except BaseException as exc:  # an oracle bug must not take the wire down
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
        if self.recorded + len(data) > self.max_trace:
            self.truncated = True
            return
        self.recorded += len(data)
        self.records += 1
        if self.kept is not None:
            self.kept.append(rec)
        if self.trace is not None:
            self.trace.write(data)
            self.trace.flush()  # a crash of anything loses nothing
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
        self.monitor = Monitor(self.readings, validate=self.validate, decision=decision)
        waiting, self.waiting = self.waiting, []
        for rec in waiting:
            self._feed(rec)

    def _feed(self, rec: dict[str, Any]) -> None:
        assert self.monitor is not None
        for v in self.monitor.feed(rec):
            self.live(v)

    def finish(self, timeout: float) -> Monitor:
        """Wait for the judge to drain what was read (or ``timeout``), decide ``auto`` if it
        never was, and return the monitor (liveness is the caller's: open at end)."""
        self.thread.join(timeout)
        self.stop.set()
        self.thread.join(1.0)
        if self.monitor is None:
            self._decide(self.detector.undecided())
        assert self.monitor is not None
        return self.monitor
