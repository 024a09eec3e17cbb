"""The trace format shared by the checker, the fuzzer and the reference agent's tests.

One JSON object per line::

    {"dir": "c2a" | "a2c", "t": <seconds, optional>, "msg": <JSON-RPC message or batch array>}
    {"dir": "c2a" | "a2c", "t": <seconds, optional>, "raw": "<unparseable wire line>"}

Optional keys: ``"error"`` on a raw record (``invalid-utf8``, ``not-json``, ``oversize``) and
``"probe": true`` on a client message the fuzzer sent on purpose to break a client rule (a
negative input such as a prompt for an unknown session); the checker then does not blame the
client for it, only judges how the agent answers.

``c2a`` is client to agent, ``a2c`` agent to client. Records are in the order the *client side*
saw them (sent / received), which is what makes the race reasoning of the monitor sound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

DIRECTIONS = ("c2a", "a2c")


class TraceError(ValueError):
    """An unusable trace: the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Record:
    """One wire message (or unparseable line) in one direction."""

    dir: str
    msg: Any = None
    raw: str | None = None
    t: float | None = None
    note: str | None = None
    probe: bool = False  # a deliberate negative input sent by the fuzzer

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dir": self.dir}
        if self.t is not None:
            out["t"] = self.t
        if self.probe:
            out["probe"] = True
        if self.raw is not None:
            out["raw"] = self.raw
            if self.note:
                out["error"] = self.note
        else:
            out["msg"] = self.msg
        return out


def parse_record(obj: Any, where: str = "record") -> Record:
    """Validate the shape of one trace record (not the message inside it)."""
    if not isinstance(obj, dict):
        raise TraceError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    direction = obj.get("dir")
    if direction not in DIRECTIONS:
        raise TraceError(f"{where}: 'dir' must be \"c2a\" or \"a2c\", got {direction!r}")
    t = obj.get("t")
    if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)):
        raise TraceError(f"{where}: 't' must be a number of seconds, got {t!r}")
    probe = obj.get("probe") is True
    has_msg, has_raw = "msg" in obj, "raw" in obj
    if has_msg == has_raw:
        raise TraceError(f"{where}: exactly one of 'msg' or 'raw' is required")
    if has_raw:
        if not isinstance(obj["raw"], str):
            raise TraceError(f"{where}: 'raw' must be a string")
        note = obj.get("error")
        return Record(direction, raw=obj["raw"], t=t, note=note if isinstance(note, str) else None,
                      probe=probe)
    return Record(direction, obj["msg"], None, t, None, probe)  # positional: once per line


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
    with handle:
        for lineno, line in enumerate(handle, start=1):
            if progress is not None:
                read += len(line)
                if lineno % PROGRESS_EVERY == 0:
                    progress(read)
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise TraceError(f"{p}:{lineno}: not valid JSON ({exc})") from None
            try:
                record = parse_record(obj)
            except TraceError:  # again, naming the line: the text is built only for an error
                record = parse_record(obj, f"{p}:{lineno}")
            yield record
    if progress is not None:
        progress(read)


def read_trace(path: str | Path) -> list[Record]:
    return list(iter_trace(path))


def write_trace(path: str | Path, records: Iterable[Record | dict[str, Any]]) -> None:
    with Path(path).open("wb") as out:
        for rec in records:
            obj = rec.to_json() if isinstance(rec, Record) else rec
            out.write(orjson.dumps(obj) + b"\n")
