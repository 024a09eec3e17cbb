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

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
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


__all__ = ["as_part", "current", "stamp", "writing_as"]
