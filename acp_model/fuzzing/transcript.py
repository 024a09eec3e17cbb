"""The record store of one agent connection and the listeners that hear each record.

:class:`Transcript` holds every record of both directions under one lock, in the order they
were appended, and stops storing (not counting) at its cap; whoever waits for a record waits on
its condition variable. :class:`RecordListeners` owns the delivery thread: callbacks run in
transcript order, one at a time, outside the lock (see :mod:`acp_model.fuzzing.transport`).
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_model.fuzzing.stop import Interrupted
from acp_model.trace.wire import Record, dumps_record

Listener = Callable[[Record], None]

RECORD_OVERHEAD = 64  # rough per-record bookkeeping cost counted against the transcript cap
MAX_LISTENER_ERRORS = 100


class RecordListeners:
    """Callbacks for every record, run on one delivery thread in transcript order; the queue
    of records not yet delivered and the errors the callbacks raised."""

    def __init__(self, cond: threading.Condition) -> None:
        self._cond = cond  # the transcript's: a record is stored and queued at once
        self._callbacks: list[Listener] = []
        self._undelivered: collections.deque[Record] = collections.deque()
        self.queued = 0  # records put in the delivery queue so far
        self.delivered = 0  # records the listeners have seen (transcript order)
        self.errors: list[BaseException] = []
        self.thread: threading.Thread | None = None

    def add(self, callback: Listener) -> Callable[[], None]:
        """Register ``callback`` for every later record; returns the unsubscribe function."""
        with self._cond:
            self._callbacks.append(callback)

        def remove() -> None:
            with self._cond, contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return remove

    def put(self, record: Record) -> int:
        """Queue a record (the transcript's lock held); returns its delivery number."""
        self._undelivered.append(record)
        self.queued += 1
        return self.queued

    def start(self, name: str, finished: Callable[[], bool]) -> threading.Thread:
        """Start the delivery thread; it ends once the queue is empty and ``finished()``
        (checked under the lock) holds."""
        self.thread = threading.Thread(target=self._run, args=(finished,), name=name,
                                       daemon=True)
        self.thread.start()
        return self.thread

    def _run(self, finished: Callable[[], bool]) -> None:
        """Run the callbacks in transcript order, outside the lock."""
        while True:
            with self._cond:
                while not self._undelivered:
                    if finished():
                        return
                    self._cond.wait(0.2)
                record = self._undelivered.popleft()
                callbacks = list(self._callbacks)
            for callback in callbacks:
                try:
                    callback(record)
                except Exception as exc:  # a broken listener must not stop the delivery
                    if len(self.errors) < MAX_LISTENER_ERRORS:
                        self.errors.append(exc)
            with self._cond:
                self.delivered += 1
                self._cond.notify_all()

    def wait(self, number: int | None = None, timeout: float = 5.0) -> bool:
        """Wait until the listeners have seen the first ``number`` records (None: all queued
        so far). A listener that sends is being delivered: it does not wait for itself."""
        if number is None:
            with self._cond:
                number = self.queued
        thread = self.thread
        if thread is None or threading.current_thread() is thread:
            return self.delivered >= number
        end = time.monotonic() + timeout
        with self._cond:
            while self.delivered < number:
                remaining = end - time.monotonic()
                if remaining <= 0 or not thread.is_alive():
                    return False
                self._cond.wait(min(remaining, 0.2))
        return True


class Transcript:
    """Every record of one connection, in append order, up to ``max_bytes`` stored (later
    records are counted, and one ``transcript-cap`` marker stored); ``ended`` once the agent's
    stdout reached EOF, so no further agent record can arrive."""

    def __init__(self, max_bytes: int) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.records: list[Record] = []
        self.max_bytes = max_bytes
        self.truncated = False
        """Set once the cap was hit; later records are counted, not stored."""
        self.stored_bytes = 0
        self.dropped_records = 0
        self.dropped_bytes = 0
        self.ended = False
        self.listeners = RecordListeners(self.cond)
        # called with each record as it is appended, under the lock (the boundary schedule)
        self.taps: list[Callable[[Record], None]] = []
        # called with each record before it is stored or heard, under the lock: they may add
        # keys to it (the scripted model's side, ``fuzzing/model_window.py``)
        self.stamps: list[Callable[[Record], None]] = []

    def append(self, record: Record, cost: int) -> int:
        """Store a record and queue it for the listeners; returns its delivery number."""
        with self.cond:
            for stamp in self.stamps:
                stamp(record)
            if self.truncated:
                self.dropped_records += 1
                self.dropped_bytes += cost
            elif self.stored_bytes + cost + RECORD_OVERHEAD > self.max_bytes:
                self.truncated = True
                self.dropped_records += 1
                self.dropped_bytes += cost
                self.records.append({"dir": record["dir"], "t": record["t"], "raw": "",
                                     "error": "transcript-cap"})
            else:
                self.stored_bytes += cost + RECORD_OVERHEAD
                self.records.append(record)
            number = self.listeners.put(record)
            for tap in self.taps:
                tap(record)
            self.cond.notify_all()
            return number

    def end(self) -> None:
        """The agent's stdout reached EOF (the reader's last word)."""
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def wait_eof(self, timeout: float) -> bool:
        """Wait until everything the agent wrote to stdout has been read (EOF): an agent that
        exited may have left its last lines in the pipe (False: a child still holds it)."""
        with self.cond:
            return self.cond.wait_for(lambda: self.ended, timeout)

    def mark(self) -> int:
        """Current length: pass it as ``start`` to wait for what comes next."""
        with self.cond:
            return len(self.records)

    def at(self, index: int) -> Record:
        with self.cond:
            return self.records[index]

    def snapshot(self) -> list[Record]:
        """A copy of the list (the records themselves are shared)."""
        with self.cond:
            return list(self.records)

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the records as JSONL (one record per line) and return the path."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        records = self.snapshot()
        with out.open("wb") as fh:
            for record in records:
                fh.write(dumps_record(record))
                fh.write(b"\n")
        return out

    def wait_for_index(self, predicate: Callable[[Any], bool], timeout: float, *,
                       stop: threading.Event, start: int = 0, direction: str | None = "a2c",
                       raw: bool = False) -> int | None:
        """Index of the first record at or after ``start`` matching, or None.

        ``predicate`` gets the record's ``msg`` (or the whole record when ``raw`` is true).
        Returns None on timeout or as soon as no further matching record can arrive (stdout
        closed for a2c); raises :class:`Interrupted` once ``stop`` is set. Waits on the
        condition variable, never by polling.
        """
        deadline = time.monotonic() + timeout
        index = start
        with self.cond:
            while True:
                records = self.records
                while index < len(records):
                    record = records[index]
                    if direction is None or record.get("dir") == direction:
                        subject = record if raw else record.get("msg")
                        if (raw or "msg" in record) and predicate(subject):
                            return index
                    index += 1
                if direction == "a2c" and (self.ended or self.truncated):
                    return None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                if stop.is_set():
                    raise Interrupted
                self.cond.wait(min(remaining, 0.1))
