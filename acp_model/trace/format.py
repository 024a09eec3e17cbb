"""The trace format shared by the checker, the fuzzer and the reference agent's tests.

One JSON object per line::

    {"dir": "c2a" | "a2c", "t": <seconds, optional>, "msg": <JSON-RPC message or batch array>}
    {"dir": "c2a" | "a2c", "t": <seconds, optional>, "raw": "<unparseable wire line>"}

Optional keys: ``"error"`` on a raw record (``invalid-utf8``, ``not-json``, ``oversize``) and
``"probe": true`` on a client message the fuzzer sent on purpose to break a client rule (a
negative input such as a prompt for an unknown session); the checker then does not blame the
client for it, only judges how the agent answers. ``"by"`` on a client message the fuzz client
wrote names the part of it that wrote it (``trace/authors.py``: an action and its number, the
handshake, a spare session made ahead, a reply, the teardown); the checker ignores it.

Two more keys carry what the fuzzer knew of its scripted model (the LLM stand-in), which the
wire cannot show: ``"turn_done": N`` on a client record that writes a cancel (``session/cancel``,
or ``$/cancel_request`` of a prompt) says the model had released the whole final response of
that session's current turn (its end, no tool call in it) after message #N and no model request
of the session was open; ``"model_asked": [sessionId, ...]`` on any record says the agent made a
model request of those sessions' turns since the record before (it voids an earlier
``turn_done``: the turn was not done). A trace without them knows nothing of the model.

``"taken": [[sessionId, N], ...]`` on any record says the client's numbered action N took that
session, ready-made ahead of need (a spare: ``fuzzing/sessions.py``), since the record before:
taking one writes nothing, so a report could not otherwise tell which action's session it is.
The checker ignores it.

``c2a`` is client to agent, ``a2c`` agent to client. Records are in the order the *client side*
saw them (sent / received), which is what makes the race reasoning of the monitor sound.

A stored excerpt of a longer transcript (a counterexample found on a shared agent process)
numbers its records as the whole transcript did, so the ``#421`` a proof cites is the line
whose ``"n"`` is 421, and says where messages were left out::

    {"dir": "c2a", "t": 0.0, "msg": {...}, "n": 1}
    {"gap": [2, 420], "note": "earlier examples on the shared agent process"}
    {"dir": "c2a", "t": 9.1, "msg": {...}, "n": 421}

Numbers only grow; a gap record names the (inclusive) range of the numbers it stands for and
the record after it carries the next one. A reader numbers a record without ``"n"`` one past
the record before it; what fell in a gap is unknown to the checker, which says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from acp_model.trace.authors import Author

DIRECTIONS = ("c2a", "a2c")
TURN_DONE = "turn_done"  # the keys of the model's side (module docstring)
MODEL_ASKED = "model_asked"
TAKEN = "taken"  # the spares the client's actions took since the record before


class TraceError(ValueError):
    """An unusable trace: the message names the file and line."""


class Record(NamedTuple):
    """One wire message (or unparseable line) in one direction (a NamedTuple: one is built
    for every line a trace is read with, at a fraction of a frozen dataclass's cost)."""

    dir: str
    msg: Any = None
    raw: str | None = None
    t: float | None = None
    note: str | None = None
    probe: bool = False  # a deliberate negative input sent by the fuzzer
    n: int | None = None  # its message number in the whole transcript (an excerpt's own)
    # a cancel written when the scripted model had finished the session's turn, after #N
    turn_done: int | None = None
    model_asked: tuple[str, ...] = ()  # sessions whose turns the model was asked since
    by: Author | None = None  # which part of the fuzz client wrote it (``trace/authors.py``)
    # (session id, action number): the spares the client's actions took since the record before
    taken: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dir": self.dir}
        if self.t is not None:
            out["t"] = self.t
        if self.probe:
            out["probe"] = True
        if self.n is not None:
            out["n"] = self.n
        if self.turn_done is not None:
            out[TURN_DONE] = self.turn_done
        if self.model_asked:
            out[MODEL_ASKED] = list(self.model_asked)
        if self.by is not None:
            out["by"] = self.by.to_json()
        if self.taken:
            out[TAKEN] = [list(t) for t in self.taken]
        if self.raw is not None:
            out["raw"] = self.raw
            if self.note:
                out["error"] = self.note
        else:
            out["msg"] = self.msg
        return out


_PLAIN = frozenset({"dir", "msg", "t"})  # the keys of most records: a message as it went


def parse_record(obj: Any, where: str = "record") -> Record:
    """Validate the shape of one trace record (not the message inside it)."""
    if isinstance(obj, dict) and obj.keys() <= _PLAIN and "msg" in obj:
        # the common record, judged by the same rules as below in fewer reads; one they
        # refuse goes the long way, which says why
        direction, t = obj.get("dir"), obj.get("t")
        if direction in DIRECTIONS and (t is None or type(t) in _SECONDS):
            # Record(direction, msg, None, t) built as its tuple: the named tuple's generated
            # __new__ is a Python frame filling seven defaults, on every line a trace is read
            return _new_record(Record, (direction, obj["msg"], None, t, *_PLAIN_REST))
    return _parse_any_record(obj, where)


_new_record = tuple.__new__
_PLAIN_REST = Record("c2a")[4:]  # the defaults of the fields after ``t``


def _parse_any_record(obj: Any, where: str) -> Record:
    """:func:`parse_record` of a record with more than a message and its time, or refused."""
    if not isinstance(obj, dict):
        raise TraceError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    direction = obj.get("dir")
    if direction not in DIRECTIONS:
        raise TraceError(f"{where}: 'dir' must be \"c2a\" or \"a2c\", got {direction!r}")
    t = obj.get("t")
    if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)):
        raise TraceError(f"{where}: 't' must be a number of seconds, got {t!r}")
    probe = obj.get("probe") is True
    n = obj.get("n")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise TraceError(f"{where}: 'n' must be a message number (0 or more), got {n!r}")
    done, asked = obj.get(TURN_DONE), obj.get(MODEL_ASKED)
    if done is not None and (isinstance(done, bool) or not isinstance(done, int) or done < 0):
        raise TraceError(f"{where}: '{TURN_DONE}' must be a message number, got {done!r}")
    if asked is not None and not (isinstance(asked, list)
                                  and all(isinstance(a, str) for a in asked)):
        raise TraceError(f"{where}: '{MODEL_ASKED}' must be a list of session ids, got {asked!r}")
    model: dict[str, Any] = {} if done is None and not asked else \
        {"turn_done": done, "model_asked": tuple(asked or ())}
    model.update(_client_marks(obj, where))
    has_msg, has_raw = "msg" in obj, "raw" in obj
    if has_msg == has_raw:
        raise TraceError(f"{where}: exactly one of 'msg' or 'raw' is required")
    if has_raw:
        if not isinstance(obj["raw"], str):
            raise TraceError(f"{where}: 'raw' must be a string")
        note = obj.get("error")
        return Record(direction, raw=obj["raw"], t=t, note=note if isinstance(note, str) else None,
                      probe=probe, n=n, **model)
    if model:
        return Record(direction, obj["msg"], None, t, None, probe, n, **model)
    return Record(direction, obj["msg"], None, t, None, probe, n)  # positional: once per line


_SECONDS = (int, float)  # a record's time (exactly these: a bool is no time)


def _client_marks(obj: dict[str, Any], where: str) -> dict[str, Any]:
    """What the fuzz client marks on a record: who wrote it, the spares taken before it."""
    out: dict[str, Any] = {}
    if "by" in obj:
        out["by"] = Author.from_json(obj["by"])
    if TAKEN in obj:
        out["taken"] = takes_of(obj[TAKEN], where)
    return out


def takes_of(value: Any, where: str = "record") -> tuple[tuple[str, int], ...]:
    """A record's ``"taken"``: [[session id, action number], ...]."""
    if not isinstance(value, list) or not all(
            isinstance(t, list) and len(t) == 2 and isinstance(t[0], str)
            and isinstance(t[1], int) and not isinstance(t[1], bool) for t in value):
        raise TraceError(f"{where}: '{TAKEN}' must be a list of [session id, action number], "
                         f"got {value!r}")
    return tuple((t[0], t[1]) for t in value)


GAP = "gap"  # the key of a gap record: [first, last] message numbers left out


@dataclass(frozen=True, slots=True)
class Gap:
    """Messages ``first``..``last`` (inclusive) of the whole transcript, left out of this one."""

    first: int
    last: int
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {GAP: [self.first, self.last], **({"note": self.note} if self.note else {})}


def parse_gap(obj: Any, where: str = "record") -> Gap | None:
    """The gap a record stands for (None: it is a message record)."""
    if not isinstance(obj, dict) or GAP not in obj:
        return None
    span = obj[GAP]
    if not (isinstance(span, list) and len(span) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in span)
            and span[0] <= span[1]):
        raise TraceError(f"{where}: 'gap' must be [first, last] message numbers, got {span!r}")
    note = obj.get("note")
    return Gap(span[0], span[1], note if isinstance(note, str) else "")


class Numbering:
    """Numbers the records of a trace as it is read: a record's own ``n``, or one past the
    record before (left as it is while nothing in the file carried a number); a gap moves the
    count past the messages it stands for. Numbers must grow, and a gap must start where the
    count stands: otherwise the lines are not one transcript."""

    def __init__(self) -> None:
        self.next = 0
        self.numbered = False  # some record or gap carried a number

    def gap(self, gap: Gap, where: str) -> None:
        if gap.first < self.next:
            raise TraceError(f"{where}: a gap from #{gap.first} after message #{self.next - 1}:"
                             " message numbers must grow")
        self.numbered = True
        self.next = gap.last + 1

    def record(self, record: Record, where: str | Path, line: int | None = None) -> Record:
        """``where``: the record's place (with ``line``: its file and line, joined only for an
        error, not for each line read)."""
        if record.n is None:
            if self.numbered:
                record = record._replace(n=self.next)
            self.next += 1
            return record
        if record.n < self.next:
            place = where if line is None else f"{where}:{line}"
            raise TraceError(f"{place}: message #{record.n} after #{self.next - 1}: message "
                             "numbers must grow")
        self.numbered = True
        self.next = record.n + 1
        return record


def numbers_of(records: Iterable[Record | dict[str, Any]]) -> list[int]:
    """The message number of each record: its own ``n``, or one past the record before."""
    out: list[int] = []
    for rec in records:
        n = rec.n if isinstance(rec, Record) else rec.get("n")
        out.append(n if isinstance(n, int) else (out[-1] + 1 if out else 0))
    return out


def numbered_lines(records: Sequence[Record | dict[str, Any]], numbers: Sequence[int],
                   note: str = "") -> Iterator[dict[str, Any]]:
    """The records of an excerpt as trace objects, each with its number, and a gap record
    wherever numbers jump (``note`` says what the left-out messages were)."""
    expect = 0
    for rec, n in zip(records, numbers, strict=True):
        if n > expect:
            yield Gap(expect, n - 1, note).to_json()
        obj = rec.to_json() if isinstance(rec, Record) else {k: v for k, v in rec.items()
                                                               if k != "n"}
        yield {**obj, "n": n}
        expect = n + 1


PROGRESS_EVERY = 2048  # lines between two progress calls: cheap next to parsing them


def iter_trace(path: str | Path, progress: Callable[[int], None] | None = None
               ) -> Iterator[Record]:
    """Read a JSONL trace lazily; errors carry the 1-based line number. ``progress(bytes)``
    hears how much of the file was read, every few thousand lines and at the end."""
    p = Path(path)
    try:
        handle = p.open("rb")
    except FileNotFoundError:
        raise TraceError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{p}: is a directory, expected a .jsonl trace file") from None
    except OSError as exc:
        raise TraceError(f"{p}: cannot read: {exc.strerror}") from None
    read = 0
    numbering = Numbering()
    with handle:
        for lineno, line in enumerate(handle, start=1):
            if progress is not None:
                read += len(line)
                if lineno % PROGRESS_EVERY == 0:
                    progress(read)
            if line.isspace():  # (a line read from a file is never empty: no copy made)
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise TraceError(f"{p}:{lineno}: not valid JSON ({exc})") from None
            gap = parse_gap(obj, f"{p}:{lineno}") if isinstance(obj, dict) and GAP in obj \
                else None
            if gap is not None:
                numbering.gap(gap, f"{p}:{lineno}")
                continue
            try:
                record = parse_record(obj)
            except TraceError:  # again, naming the line: the text is built only for an error
                record = parse_record(obj, f"{p}:{lineno}")
            yield numbering.record(record, p, lineno)
    if progress is not None:
        progress(read)


def read_trace(path: str | Path) -> list[Record]:
    return list(iter_trace(path))


def write_trace(path: str | Path, records: Iterable[Record | dict[str, Any]]) -> None:
    with Path(path).open("wb") as out:
        for rec in records:
            obj = rec.to_json() if isinstance(rec, Record) else rec
            out.write(orjson.dumps(obj) + b"\n")
