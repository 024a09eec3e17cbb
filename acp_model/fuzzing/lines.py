"""Cutting a byte stream into wire lines, with a cap on the line length.

The fuzz transport and the proxy both read ndjson from a pipe in arbitrary chunks; both record
one item per line, and a line longer than the cap as one ``oversize`` item (a preview and its
total size) instead of holding it in memory. Only the framing is decided here; what a line
means is :func:`acp_model.fuzzing.transport.decode_line`'s job.
"""

from __future__ import annotations

from collections.abc import Iterator

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
