"""Agents made of bytes for the proxy's tests, and a reader of what the judge was sent."""

from __future__ import annotations

from acp_model.proxy.feed import HEADER


def frames(data: bytes) -> list[tuple[int, float, bytes]]:
    """The frames (kind, time, bytes) the judge's pipe carried; fails on a frame cut short."""
    out, at = [], 0
    while at < len(data):
        kind, t, size = HEADER.unpack_from(data, at)
        at += HEADER.size
        out.append((kind, t, data[at:at + size]))
        at += size
    assert at == len(data), "a frame was cut"
    return out
