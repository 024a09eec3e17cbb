"""A run interrupted before its first example judged nothing: its report's verdict is
``error``, never a pass (a matrix row stopped at its start was read as passing)."""

from __future__ import annotations

from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.recorder import Recorder
from acp_model.fuzzing.run import FuzzResult


def _result(examples: int, *, interrupted: bool) -> FuzzResult:
    recorder = Recorder()
    recorder.examples = examples
    return FuzzResult(FuzzConfig(["agent"]), recorder, [], 0.0, interrupted=interrupted)


def test_a_run_interrupted_before_its_first_example_judged_nothing() -> None:
    assert not _result(0, interrupted=True).judged


def test_a_run_interrupted_after_an_example_or_never_interrupted_judged_it() -> None:
    assert _result(1, interrupted=True).judged
    assert _result(0, interrupted=False).judged  # a budget too short for one: the run's word
