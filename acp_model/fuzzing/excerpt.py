"""Which records of an agent process's transcript a finding keeps.

A failure seen on a long-lived shared agent process has its proof in a transcript of
thousands of messages, most of them earlier examples. The stored transcript keeps the
handshake, the example's own records, every record the proof cites and everything between
the first of them and the example (the proof window; only its cited records, with a few
neighbours, when that window is very long), and the failing session's own earlier history
(the requests naming it and their answers: a cancel of an earlier example that a later prompt
pays for), and what all these refer to in the part left out (the request of a kept answer,
the answer of a kept request, the creation of a session a kept record names), so the excerpt
reads as a transcript of its own. Everything else is left out, and the files say where
(``trace/format.py``: each record keeps its message number, and a gap record stands for what
was left out).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

HANDSHAKE = 2  # initialize and its answer
WINDOW = 1000  # records before the example kept whole when the proof reaches back to them
CONTEXT = 3  # neighbours kept on each side of a cited record outside a window kept whole
SESSION_HISTORY = 300  # the failing session's own earlier records kept, the latest ones


def excerpt(records: Sequence[dict[str, Any]], start: int, cited: Iterable[int],
            session: str | None) -> list[int]:
    """The positions to keep, ascending: see the module's docstring. ``start`` is where the
    example's own records begin, ``cited`` the records its proof names (the offending one
    among them), ``session`` the session it is about."""
    total = len(records)
    keep = set(range(min(HANDSHAKE, start, total)))
    keep.update(range(start, total))
    cited = [i for i in cited if 0 <= i < total]
    first = min([start, *cited])
    if start - first <= WINDOW:
        keep.update(range(first, start))
    else:
        for i in cited:
            keep.update(range(max(0, i - CONTEXT), min(total, i + CONTEXT + 1)))
    if session is not None and start > HANDSHAKE:
        history = [i for i in _naming(records, session, HANDSHAKE, start) if i not in keep]
        keep.update(history[-SESSION_HISTORY:])
    if start > HANDSHAKE:
        keep |= _Context(records, start).closure(keep)
    return sorted(keep)


class _Context:
    """What the kept records refer to in the left-out part, so that the excerpt reads as a
    transcript of its own: the request of each kept answer, the answer of each kept request,
    and how each session a kept record names was created."""

    def __init__(self, records: Sequence[dict[str, Any]], start: int) -> None:
        self.records, self.start = records, start
        self.requests: dict[tuple[str, Any], list[int]] = {}
        self.answers: dict[tuple[str, Any], list[int]] = {}
        self.created: dict[Any, int] = {}  # session id -> the answer that first named it
        for i in range(start):
            rec = records[i]
            for m in _messages(rec):
                key = (str(rec.get("dir")), _key(m.get("id")))
                if "method" in m:
                    if "id" in m:
                        self.requests.setdefault(key, []).append(i)
                elif "id" in m:
                    self.answers.setdefault(key, []).append(i)
                    result = m.get("result")
                    if isinstance(result, dict) and "sessionId" in result:
                        self.created.setdefault(_key(result["sessionId"]), i)

    def closure(self, keep: set[int]) -> set[int]:
        """The left-out records the kept ones refer to, and what those refer to in turn."""
        added: set[int] = set()
        todo = sorted(keep)
        while todo:
            i = todo.pop()
            for j in self._refers(i):
                if j < self.start and j not in keep and j not in added:
                    added.add(j)
                    todo.append(j)
        return added

    def _refers(self, i: int) -> list[int]:
        rec = self.records[i]
        there = "a2c" if rec.get("dir") == "c2a" else "c2a"
        out: list[int] = []
        for m in _messages(rec):
            for part in (m.get("params"), m.get("result")):
                if isinstance(part, dict) and "sessionId" in part:
                    made = self.created.get(_key(part["sessionId"]))
                    if made is not None and made != i:
                        out.append(made)
            if "id" not in m:
                continue
            if "method" in m:  # a request: its answer, the first after it
                later = [j for j in self.answers.get((there, _key(m["id"])), []) if j > i]
                out += later[:1]
            else:  # an answer: its request, the last before it
                earlier = [j for j in self.requests.get((there, _key(m["id"])), []) if j < i]
                out += earlier[-1:]
        return out


def _messages(rec: dict[str, Any]) -> list[dict[str, Any]]:
    msg = rec.get("msg")
    return [m for m in (msg if isinstance(msg, list) else [msg]) if isinstance(m, dict)]


def _naming(records: Sequence[dict[str, Any]], session: str, lo: int, hi: int
            ) -> Iterable[int]:
    """Positions in ``lo``..``hi`` of the records that name ``session`` (in their params or
    result), and of the answers to the requests that did."""
    asked: dict[str, set[Any]] = {"c2a": set(), "a2c": set()}
    for i in range(lo, hi):
        rec = records[i]
        msg = rec.get("msg")
        mine = False
        for m in msg if isinstance(msg, list) else [msg]:
            if not isinstance(m, dict):
                continue
            if _names(m, session):
                mine = True
                if "method" in m and "id" in m:
                    asked[str(rec.get("dir"))].add(_key(m["id"]))
            elif "method" not in m and _key(m.get("id")) in asked[
                    "a2c" if rec.get("dir") == "c2a" else "c2a"]:
                mine = True
        if mine:
            yield i


def _names(m: dict[str, Any], session: str) -> bool:
    for part in (m.get("params"), m.get("result")):
        if isinstance(part, dict) and part.get("sessionId") == session:
            return True
    return False


def _key(ident: Any) -> Any:
    """A request id as a set key (an id of an unhashable type is never matched)."""
    return ident if isinstance(ident, str | int | float | type(None)) else repr(ident)
