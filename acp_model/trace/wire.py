"""The wire, neutral: cutting a byte stream into ndjson lines, decoding one line, writing a
record back; used alike by the fuzz transport and the proxy.

The fuzz transport and the proxy both read ndjson from a pipe in arbitrary chunks; both record
one item per line, and a line longer than the cap as one ``oversize`` item (a preview and its
total size) instead of holding it in memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson

Record = dict[str, Any]
"""One transcript entry in the project trace format (``trace/format.py``)."""

OVERSIZE_PREVIEW = 4096  # bytes of an oversize line kept for the record

Line = tuple[bytes, int | None]  # (line without "\n", None) or (preview, total bytes: oversize)


class LineCutter:
    """Feed chunks, get complete lines; memory stays below about ``max_line`` bytes."""

    def __init__(self, max_line: int, preview: int = OVERSIZE_PREVIEW) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self.max_line = max_line
        self.preview = preview
        self._buf = bytearray()
        self._scan_from = 0
        self._oversize: bytes | None = None  # not None while discarding an oversize line
        self._oversize_total = 0

    def feed(self, chunk: bytes) -> Iterator[Line]:
        if self._oversize is not None:
            nl = chunk.find(b"\n")
            if nl < 0:
                self._oversize_total += len(chunk)
                return
            yield self._oversize, self._oversize_total + nl
            self._oversize = None
            chunk = chunk[nl + 1:]
        buf = self._buf
        buf += chunk
        start = 0
        while True:
            nl = buf.find(b"\n", max(start, self._scan_from))
            if nl < 0:
                break
            if nl - start > self.max_line:
                yield bytes(buf[start:start + self.preview]), nl - start
            else:
                yield bytes(buf[start:nl]), None
            start = nl + 1
            self._scan_from = start
        if start:
            del buf[:start]
            self._scan_from = 0
        self._scan_from = max(self._scan_from, len(buf))
        if len(buf) > self.max_line:
            self._oversize = bytes(buf[:self.preview])
            self._oversize_total = len(buf)
            self._buf = bytearray()
            self._scan_from = 0

    def finish(self) -> Iterator[Line]:
        """The stream ended: what is left is a last line without a newline."""
        if self._oversize is not None:
            yield self._oversize, self._oversize_total
            self._oversize = None
        elif self._buf:
            yield bytes(self._buf), None
        self._buf = bytearray()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def decode_line(line: bytes) -> tuple[Any, str | None, str | None]:
    """Parse one wire line. Returns ``(value, None, None)`` or ``(None, raw_text, error)``.

    orjson is tried first for speed; the stdlib parser is the fallback for inputs orjson refuses
    but that are still valid JSON (lone surrogate escapes). NaN/Infinity are refused as JSON
    does not allow them.
    """
    try:
        return orjson.loads(line), None, None
    except orjson.JSONDecodeError:
        pass
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, line.decode("utf-8", errors="replace"), "invalid-utf8"
    try:
        return json.loads(text, parse_constant=_reject_constant), None, None
    except ValueError:
        return None, text, "not-json"


def dumps_record(record: Record) -> bytes:
    """Serialise a record as one JSON line (no trailing newline), whatever strings it holds."""
    try:
        return orjson.dumps(record)
    except (TypeError, orjson.JSONEncodeError):
        # lone surrogates (from the stdlib fallback parser) or exotic values
        return json.dumps(record, ensure_ascii=True, default=repr).encode("ascii")


def is_response_to(msg: Any, request_id: Any) -> bool:
    """True if ``msg`` is a JSON-RPC response (not a request) carrying ``request_id``."""
    return (
        isinstance(msg, dict)
        and "method" not in msg
        and ("result" in msg or "error" in msg)
        and msg.get("id") == request_id
        and type(msg.get("id")) is type(request_id)
    )
