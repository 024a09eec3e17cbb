"""Who is writing now, per thread: the author stamped on each client message as it is
written (``trace/authors.py``).

Each part of the client that writes runs in a scope naming itself: the handshake, the
session factory's worker (spares), each action of an example, the teardown, and the
delivery thread's and the services' replies to the agent's requests. The stdin writer reads
the scope of the thread that writes (``fuzzing/pipes.py``), so the stamp is decided where the
write happens, not inferred afterwards from where the message sits in the transcript. An inner
scope wins (a relaunch's handshake inside its action).
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ParamSpec, TypeVar

from acp_model.trace.authors import Author, Part

P = ParamSpec("P")
R = TypeVar("R")

_local = threading.local()


def current() -> Author | None:
    """The author of what this thread writes now (None: no part of the client named itself)."""
    return getattr(_local, "author", None)


@contextlib.contextmanager
def writing_as(author: Author | Part) -> Iterator[None]:
    """What this thread writes inside the block is ``author``'s."""
    before = current()
    _local.author = author if isinstance(author, Author) else Author(author)
    try:
        yield
    finally:
        _local.author = before


def as_part(part: Part, fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` writing as ``part`` whichever thread calls it (a reply a worker writes)."""
    @functools.wraps(fn)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        with writing_as(part):
            return fn(*args, **kwargs)
    return wrapped


def stamp(record: dict[str, Any]) -> None:
    """Put the current author on a client record about to be written."""
    author = current()
    if author is not None:
        record["by"] = author.to_json()


def in_program(author: Author, at: int, start: int, starts: Sequence[int],
               begun: Sequence[int]) -> Author:
    """An action's author (record ``at`` of a shared process's transcript) as a program that
    begins at record ``start`` numbers it: each example numbers its own actions from 1, and
    the program is every example's actions from the one that began there (``starts``: where
    each example begins in the process's history of actions, ``begun``: in its records). An
    action of an example before it is an earlier example's."""
    if not author.numbered or author.n is None:
        return author
    if at < start:
        return Author(Part.EARLIER)
    first = bisect.bisect_right(begun, start) - 1
    example = bisect.bisect_right(begun, at) - 1
    if first < 0 or example < first or example >= len(starts):
        return author
    return Author(Part.ACTION, author.n + starts[example] - starts[first])


__all__ = ["as_part", "current", "in_program", "stamp", "writing_as"]
