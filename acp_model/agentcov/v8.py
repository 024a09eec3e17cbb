"""Lines and functions from V8's block coverage (the snapshots ``data/preload.cjs`` writes).

V8 reports, per script, each function it compiled with a list of nested source ranges
(``startOffset``, ``endOffset``, ``count``): the first is the function itself, the others the
blocks whose count differs from their parent's. The count of a position is the count of the
innermost range holding it. Each snapshot covers the time since the previous one (V8 resets
its counters when it reports), so a line is reached if its first non-blank character had a
count above zero in any snapshot; a function, if its own range did. Offsets count UTF-16 code
units, as JavaScript strings do. No library reads this format in Python; c8 and v8-to-istanbul
do the same for Node (a line's count is its innermost range's), and so does this reader.

Functions are those V8 reported: a function nested in one that never ran was never compiled
and is not among them (c8 has the same blind spot), so the function figure is a lower bound of
the total and the line figure is the one to compare.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote


@dataclass
class ScriptLines:
    """A script's source as V8 counts it: the UTF-16 offset of each line's first non-blank
    character (lines that are blank or only a comment have none)."""

    starts: list[int]  # UTF-16 offset at which each line begins
    first: dict[int, int]  # line (1-based) -> offset of its first non-blank character

    @classmethod
    def of(cls, text: str) -> ScriptLines:
        starts, first = [], {}
        offset = 0
        for number, line in enumerate(text.split("\n"), start=1):
            starts.append(offset)
            stripped = line.lstrip()
            if stripped and not stripped.startswith(("//", "/*", "* ", "*/")) \
                    and stripped != "*":
                lead = line[: len(line) - len(stripped)]
                first[number] = offset + _units(lead)
            offset += _units(line) + 1
        return cls(starts, first)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)


def _units(text: str) -> int:
    """Length in UTF-16 code units (a character beyond the BMP counts two)."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


@dataclass
class ScriptCoverage:
    """What ran of one script, over every snapshot of every process."""

    path: str
    lines: set[int] = field(default_factory=set)  # reached
    functions: dict[int, tuple[str, bool]] = field(default_factory=dict)  # start -> name, ran

    def add(self, functions: Iterable[Mapping[str, Any]], source: ScriptLines) -> None:
        ranges: list[tuple[int, int, int]] = []
        for fn in functions:
            spans = [(int(r["startOffset"]), int(r["endOffset"]), int(r["count"]))
                     for r in fn.get("ranges") or ()]
            if not spans:
                continue
            ranges += spans
            start, _, count = spans[0]
            if start == 0 and not fn.get("functionName"):
                continue  # the script's own body, not a function
            name = str(fn.get("functionName") or "(anonymous)")
            seen = self.functions.get(start)
            self.functions[start] = (name, count > 0 or (seen is not None and seen[1]))
        self.lines |= reached_lines(ranges, source)


def reached_lines(ranges: list[tuple[int, int, int]], source: ScriptLines) -> set[int]:
    """Lines whose first non-blank character's innermost range has a count above zero
    (a sweep over the ranges sorted outer before inner)."""
    ranges = sorted(ranges, key=lambda r: (r[0], -r[1]))
    out: set[int] = set()
    stack: list[tuple[int, int, int]] = []
    i = 0
    for line, offset in sorted(source.first.items(), key=lambda kv: kv[1]):
        while i < len(ranges) and ranges[i][0] <= offset:
            r = ranges[i]
            i += 1
            while stack and stack[-1][1] <= r[0]:
                stack.pop()
            stack.append(r)
        while stack and stack[-1][1] <= offset:
            stack.pop()
        if stack and stack[-1][2] > 0:
            out.add(line)
    return out


def read_snapshot(path: str) -> list[dict[str, Any]]:
    """The scripts of one snapshot file (an unreadable one is skipped: a process killed
    while writing leaves only its ``.part``)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return []
    return [s for s in data if isinstance(s, dict)] if isinstance(data, list) else []


def script_path(url: str) -> str | None:
    return unquote(url[len("file://"):]) if url.startswith("file://") else None


__all__ = ["ScriptCoverage", "ScriptLines", "reached_lines", "read_snapshot", "script_path"]
