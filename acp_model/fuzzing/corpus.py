"""The corpus of a coverage-guided run (``--coverage``): examples that reached new code, and
the examples that continue them.

Hypothesis' ``target()`` climbs from the example that scored best on a label, by small
changes to its choices. Scored on what an example reached *first* (new agent lines, new
model transitions), that cannot work: a replay of the best example reaches nothing new and
scores zero, so no change ever beats it, and the climb spends its share of a round (half of
it once the round is half run) on near-copies of one example. Under ``--coverage`` the
compass is a corpus instead, as coverage-guided fuzzers (HypoFuzz, AFL) keep one: every
example that reached agent lines, model transitions or rules no earlier example of the run
reached is kept, and between Hypothesis' rounds a corpus round continues the least-used
ones: each seed's choices cut at a random point past its first half, the rest drawn afresh
(Hypothesis' reuse phase extends a stored prefix at random). What the seed did up to the
cut (the sessions, prompts and turns that led to new code) is played again; what follows is
new.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import Phase
from hypothesis.database import ExampleDatabase, choices_to_bytes

CorpusChoices = tuple[object, ...]  # an example's choice sequence, as Hypothesis drew it

MAX_SEEDS = 200  # beyond this, the most-continued seed (the oldest among equals) gives way
SECONDARY = b".secondary"  # the key suffix of the corpus Hypothesis' reuse phase extends


@dataclass
class Seed:
    choices: CorpusChoices
    uses: int = 0  # how many examples continued it


@dataclass
class Corpus:
    """The seeds of one run and the choice of which to continue next (least continued
    first, the newest among equals)."""

    rng: random.Random
    seeds: list[Seed] = field(default_factory=list)
    kept: int = 0  # examples kept over the run
    continued: int = 0  # examples that continued a seed

    def keep(self, choices: Sequence[object]) -> None:
        """Keep an example that reached new code (a choice sequence too short to cut is a
        program of one step: fresh generation does as well)."""
        if len(choices) < 2:
            return
        self.seeds.append(Seed(tuple(choices)))
        self.kept += 1
        if len(self.seeds) > MAX_SEEDS:
            self.seeds.remove(max(self.seeds, key=lambda s: s.uses))  # the oldest of the most used

    def prefixes(self, n: int) -> list[CorpusChoices]:
        """Up to ``n`` prefixes to continue: the least-continued seeds (newest first among
        equals), each cut at a random point in its second half."""
        order = sorted(range(len(self.seeds)), key=lambda i: (self.seeds[i].uses, -i))[:n]
        out = []
        for i in order:
            seed = self.seeds[i]
            seed.uses += 1
            size = len(seed.choices)
            out.append(seed.choices[:self.rng.randint(max(1, size // 2), size - 1)])
        self.continued += len(out)
        return out


class CorpusDatabase(ExampleDatabase):
    """The example database a corpus round reads: the prefixes to continue as the secondary
    corpus (which the reuse phase extends at random), and nothing else (a stored failure is
    replayed by the rounds that generate, not by every corpus round). What the round saves
    (a failure it found) goes to the run's own database, if it has one."""

    def __init__(self, prefixes: Iterable[CorpusChoices], db: ExampleDatabase | None) -> None:
        super().__init__()
        self.prefixes = [choices_to_bytes(p) for p in prefixes]  # type: ignore[arg-type]
        self.db = db

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return list(self.prefixes) if key.endswith(SECONDARY) else []

    def save(self, key: bytes, value: bytes) -> None:
        if self.db is not None:
            self.db.save(key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        pass  # a continued prefix is the corpus' to drop, not Hypothesis'

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        if self.db is not None:
            self.db.move(src, dest, value)


def corpus_round(prefixes: Sequence[CorpusChoices], db: ExampleDatabase | None
                 ) -> dict[str, Any]:
    """The settings of a round that continues ``prefixes`` and generates nothing else: the
    reuse phase replays each with a random extension (at most as many examples as
    prefixes), and a failure one finds is shrunk as usual."""
    return {"max_examples": max(1, len(prefixes)), "database": CorpusDatabase(prefixes, db),
            "phases": (Phase.explicit, Phase.reuse, Phase.shrink)}


__all__ = ["Corpus", "CorpusDatabase", "Seed", "corpus_round"]
