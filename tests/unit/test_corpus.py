"""The corpus of a coverage-guided run: which seeds are continued, where they are cut, and
that a corpus round really replays each prefix and draws the rest afresh (Hypothesis' reuse
phase, the mechanism the run's corpus rounds rely on)."""

from __future__ import annotations

import random
from typing import ClassVar

from hypothesis import HealthCheck, Verbosity, seed, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.database import InMemoryExampleDatabase
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from acp_model.fuzzing.corpus import MAX_SEEDS, Corpus, CorpusDatabase, corpus_round


def test_the_least_continued_seeds_go_first_cut_in_their_second_half() -> None:
    corpus = Corpus(random.Random(1))
    corpus.keep((1,))  # one choice: nothing to continue from
    assert corpus.seeds == []
    for n in range(3):
        corpus.keep(tuple(range(10 + n)))
    first = corpus.prefixes(2)
    assert [len(c) for c in first] and all(6 <= len(c) <= 11 for c in first)
    assert [s.uses for s in corpus.seeds] == [0, 1, 1]  # the newest two went first
    second = corpus.prefixes(2)
    assert [s.uses for s in corpus.seeds] == [1, 1, 2]  # the oldest, then the newest again
    assert second[0] == tuple(range(len(second[0])))  # the oldest, now continued once
    assert corpus.kept == 3 and corpus.continued == 4


def test_a_full_corpus_lets_the_most_continued_seed_go() -> None:
    corpus = Corpus(random.Random(2))
    for n in range(MAX_SEEDS):
        corpus.keep((n, 0, 0))
    corpus.prefixes(1)  # the newest is continued once
    corpus.keep((-1, 0, 0))
    assert len(corpus.seeds) == MAX_SEEDS
    assert (MAX_SEEDS - 1, 0, 0) not in [s.choices for s in corpus.seeds]


def test_the_corpus_database_offers_only_the_prefixes_and_keeps_what_is_saved() -> None:
    inner = InMemoryExampleDatabase()
    db = CorpusDatabase([(1, 2)], inner)
    assert list(db.fetch(b"k")) == [] and len(list(db.fetch(b"k.secondary"))) == 1
    db.save(b"k", b"failure")
    db.delete(b"k.secondary", next(iter(db.fetch(b"k.secondary"))))
    assert list(inner.fetch(b"k")) == [b"failure"] and len(list(db.fetch(b"k.secondary"))) == 1


class _Steps(RuleBasedStateMachine):
    """A machine whose examples leave their choice sequences behind."""

    runs: ClassVar[list[tuple[object, ...]]] = []

    @rule(n=st.integers(0, 1000))
    def step(self, n: int) -> None:
        pass

    def teardown(self) -> None:
        _Steps.runs.append(current_build_context().data.choices)


def _run(rng_seed: int, **chosen: object) -> list[tuple[object, ...]]:
    _Steps.runs = []
    run_state_machine_as_test(seed(rng_seed)(_Steps), settings=settings(
        stateful_step_count=20, deadline=None, suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet, **chosen))  # type: ignore[arg-type]
    return _Steps.runs


def test_a_corpus_round_continues_each_prefix_with_fresh_choices() -> None:
    generated = [c for c in _run(1, max_examples=10, database=None) if len(c) >= 8]
    assert len(generated) >= 3
    corpus = Corpus(random.Random(3))
    for choices in generated[:3]:
        corpus.keep(choices)
    prefixes = corpus.prefixes(3)
    runs = _run(2, **corpus_round(prefixes, None))
    assert len(runs) == len(prefixes)  # nothing generated besides them
    for prefix in prefixes:
        continued = [r for r in runs if r[:len(prefix)] == prefix]
        assert continued, prefix
    seeds = {s.choices for s in corpus.seeds}
    assert any(r not in seeds for r in runs)  # the rest was drawn afresh, not replayed
