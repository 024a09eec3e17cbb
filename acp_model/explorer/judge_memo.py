"""Judging each distinct situation once: what the explorer learns about its checks.

The explorer asks the model's checks about every event it tries in every configuration (about
290,000 times for one session with the default bounds) but meets only about a hundred distinct
(control state, event, argument) triples. A check reads a few parts of the model (the prompts,
the cancels...) and its verdict depends on nothing else. So the verdicts of each triple are
kept under the snapshot slices (``snapshot.slices``) of the parts its checks read, learned by
watching them read: on a miss the checks run with the model's and the context's attribute reads
recorded, and a triple whose checks read more on some path is keyed by more from then on. A
configuration that agrees with an earlier one on those slices gets that verdict without running
a check. Slices are canonical (trace indices as ranks), so configurations far apart in the
graph share verdicts.

Sound for the reason the snapshot is a node key (``model.snapshot``: equal snapshots accept the
same futures), applied part by part, with the checks pure functions of what they read. Two
reads are not parts: the read frontier, which the ranks carry (their sign), and the probable
frontier, which is keyed by where it falls among the held indices (``probable_rank``).
``verify`` runs the checks on every hit too and fails on a difference (the tests use it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from operator import itemgetter
from typing import Any

Verdict = tuple[int, tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...] | None]
PROBABLE = "probable"  # the pseudo-part: the context's probable frontier


class MemoMismatch(AssertionError):
    """A remembered verdict differs from the checks' own (``verify``): a check read something
    the memo does not key by."""


class _Watch:
    """Which parts of a model, and whether the probable frontier, a computation reads: the model
    and its context are switched to subclasses that record their attribute reads, and back."""

    def __init__(self, model_cls: type, ctx_cls: type, parts: frozenset[str]) -> None:
        seen: set[str] = set()
        self.seen = seen
        get = object.__getattribute__

        def model_read(obj: Any, name: str) -> Any:
            if name in parts:
                seen.add(name)
            return get(obj, name)

        def ctx_read(obj: Any, name: str) -> Any:
            if name == PROBABLE:
                seen.add(PROBABLE)
            return get(obj, name)

        self.classes = (model_cls, ctx_cls)
        self.watched = (type(f"Watched{model_cls.__name__}", (model_cls,),
                             {"__getattribute__": model_read}),
                        type(f"Watched{ctx_cls.__name__}", (ctx_cls,),
                             {"__slots__": (), "__getattribute__": ctx_read}))

    @contextmanager
    def reads(self, model: Any, ctx: Any) -> Iterator[set[str]]:
        self.seen.clear()
        model.__class__, ctx.__class__ = self.watched
        try:
            yield self.seen
        finally:
            model.__class__, ctx.__class__ = self.classes


class _Entry:
    """One (state, event, argument): the parts its checks have read so far and the verdicts
    under their slices."""

    __slots__ = ("key", "parts", "verdicts")

    def __init__(self, parts: tuple[int, ...]) -> None:
        self.parts = parts
        self.key: Callable[[tuple[Any, ...]], Any] = \
            itemgetter(*parts) if parts else (lambda view: ())
        self.verdicts: dict[Any, tuple[Verdict, Any]] = {}


class JudgeMemo:
    """The verdicts learned in one exploration (nothing outlives it)."""

    def __init__(self, slices: tuple[str, ...], model_cls: type, ctx_cls: type, *,
                 verify: bool = False) -> None:
        self.keep = [i for i, name in enumerate(slices) if name != "queries"]
        self.names = [slices[i] for i in self.keep] + [PROBABLE]
        self.watch = _Watch(model_cls, ctx_cls, frozenset(self.names[:-1]))
        self.entries: dict[tuple[str, str, Any], _Entry] = {}
        self.verify = verify
        self.hits = self.misses = 0

    def view(self, slices: tuple[tuple[Any, ...], ...], held: list[int], frontier: int,
             probable: int) -> tuple[Any, ...]:
        """What a configuration offers the memo: its snapshot's slice of each part
        (``snapshot.slices``), then where the probable frontier falls among its held indices
        (``held``, sorted), counted from the read frontier (the ranks' zero)."""
        below = sum(1 for i in held if i <= probable) - sum(1 for i in held if i <= frontier)
        return (*(slices[i] for i in self.keep), below)

    def judge(self, triple: tuple[str, str, Any], view: tuple[Any, ...], model: Any, ctx: Any,
              run: Callable[..., tuple[Verdict, Any]], *args: Any) -> tuple[Verdict, Any]:
        """The verdict of ``triple`` in the configuration ``view`` describes; ``run(*args)``
        judges it for real (and returns what else it made, the event, which a hit returns as
        None)."""
        entry = self.entries.get(triple)
        if entry is not None:
            found = entry.verdicts.get(entry.key(view))
            if found is not None:
                self.hits += 1
                if self.verify:
                    self._check(found[0], run(*args)[0], triple)
                return found[0], None
        self.misses += 1
        with self.watch.reads(model, ctx) as seen:
            verdict, made = run(*args)
        read = tuple(i for i, name in enumerate(self.names) if name in seen)
        if entry is None or not set(read) <= set(entry.parts):
            # more is read on this path: key by the union from now on (older verdicts were
            # keyed by less and are dropped; they come back as misses)
            entry = self.entries[triple] = _Entry(tuple(sorted(
                set(read) | set(entry.parts if entry is not None else ()))))
        entry.verdicts[entry.key(view)] = (verdict, None)
        return verdict, made

    @staticmethod
    def _check(remembered: Verdict, fresh: Verdict, triple: tuple[str, str, Any]) -> None:
        if remembered != fresh:
            raise MemoMismatch(f"{triple}: remembered {remembered}, the checks say {fresh}")
