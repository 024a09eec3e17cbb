"""Library API for hand-written stateful tests: the fuzzer's Hypothesis machine bound to a fresh
agent pool, and a runner that keeps the first failure whatever Hypothesis does."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypothesis import settings as Settings
    from hypothesis.stateful import RuleBasedStateMachine

    from acp_model.fuzzing.config import FuzzConfig


import contextlib
import shlex
from collections.abc import Iterator

import pytest

from acp_model.pytest_plugin.items import describe_failures, emit_warnings


@contextlib.contextmanager
def lifecycle_machine(cfg: FuzzConfig) -> Iterator[type[RuleBasedStateMachine]]:
    """The fuzzer's Hypothesis state machine bound to a fresh agent pool, closed on exit.

    Subclass the yielded class to add ``@rule``s and run it with :func:`run_lifecycle`.
    Instances hold ``self.ex`` (the :class:`~acp_model.fuzzing.pool.Example`):
    ``self.ex.act(Prompt(0, blocks))`` performs a client action (the typed vocabulary of
    :mod:`acp_model.fuzzing.actions`; its JSON form ``{"op": ...}`` works too) and raises
    :class:`~acp_model.fuzzing.recorder.LifecycleFailure` when the oracle reports a failure. The
    class carries ``acp_recorder`` (every failure and warning seen, the side channel that
    survives Hypothesis' flakiness reports), ``acp_pool`` and ``acp_config``. Raises
    ``AgentUnusable`` when the agent cannot be started. A configuration whose revision is not
    decided yet (``spec="auto"``) is decided first, by the probe the CLI runs
    (:func:`acp_model.fuzzing.revision.resolve`): a v1 or v2-SDK agent is judged as it speaks.
    """
    from acp_model.fuzzing.machine import machine_for
    from acp_model.fuzzing.pool import AgentPool, Example
    from acp_model.fuzzing.recorder import Recorder, ShrinkBudgetSpent

    cfg = decided(cfg)
    recorder = Recorder()
    pool = AgentPool(cfg, recorder)
    limits: dict[str, float | None] = {"shrink": None}  # set by run_lifecycle while it runs
    try:
        def begin() -> Example:
            budget, first = limits["shrink"], recorder.round_failure_at
            if budget is not None and first is not None and recorder.elapsed() - first > budget:
                raise ShrinkBudgetSpent  # the shortest failing program is already recorded
            return Example(pool.client(), recorder, deadline=cfg.deadline,
                           relaunch=pool.relaunch)

        machine = machine_for(cfg, pool, begin)
        machine.acp_recorder = recorder  # type: ignore[attr-defined]
        machine.acp_pool = pool  # type: ignore[attr-defined]
        machine.acp_config = cfg  # type: ignore[attr-defined]
        machine.acp_limits = limits  # type: ignore[attr-defined]
        yield machine
    finally:
        pool.retire()


def decided(cfg: FuzzConfig) -> FuzzConfig:
    """``cfg`` with its spec revision decided as the CLI decides it (``auto``: the probe);
    a revision the readings contradict is a usage error."""
    from acp_model.fuzzing.revision import SpecUndecidable, resolve

    try:
        return resolve(cfg)
    except SpecUndecidable as exc:
        raise pytest.UsageError(f"--acp-spec {cfg.spec}: {exc}") from None


def _only_expected(exc: BaseException) -> bool:
    """Lifecycle failures and Hypothesis' replay troubles: the recorder holds the truth."""
    from hypothesis.errors import HypothesisException

    from acp_model.fuzzing.recorder import LifecycleFailure, ShrinkBudgetSpent

    nested = getattr(exc, "exceptions", None)
    if nested:
        return all(_only_expected(e) for e in nested)
    return isinstance(exc, LifecycleFailure | HypothesisException | ShrinkBudgetSpent)


def run_lifecycle(machine: type[RuleBasedStateMachine], settings: Settings | None = None, *,
                  replay: bool = True) -> None:
    """Run a machine from :func:`lifecycle_machine` (or a subclass) and fail like the plugin.

    ``run_state_machine_as_test`` alone reports a timing-dependent failure as Hypothesis
    flakiness (``FlakyFailure``, "inconsistent data generation"), because a live agent need not
    fail the same way twice. Here failures come from the recorder instead: shrinking stops after
    ``acp_config.shrink_budget`` seconds, each failure is replayed in fresh agent processes
    (unless ``replay=False``), and the test fails with the same text as ``test_acp[GROUP]``.
    Anything else the rules raise (your own assertions) propagates unchanged.
    """
    from hypothesis.stateful import run_state_machine_as_test

    from acp_model.fuzzing.shrink import measure_reproduction

    recorder = machine.acp_recorder  # type: ignore[attr-defined]
    cfg = machine.acp_config  # type: ignore[attr-defined]
    limits = machine.acp_limits  # type: ignore[attr-defined]
    before = set(recorder.found)
    recorder.round_failure_at = None
    limits["shrink"] = cfg.shrink_budget
    try:
        run_state_machine_as_test(machine, settings=settings)
    except BaseException as exc:
        if not (_only_expected(exc) and recorder.found):
            raise
    finally:
        limits["shrink"] = None
    emit_warnings(recorder)
    new = {rule: f for rule, f in recorder.found.items() if rule not in before}
    if not new:
        return
    if replay:
        for found in new.values():
            measure_reproduction(cfg, found, recorder.elapsed)
        new = {rule: f for rule, f in new.items() if f.stands}
        if not new:
            return
    pytest.fail(f"{len(new)} rule(s) failed against {shlex.join(cfg.argv)}\n\n"
                + describe_failures(new), pytrace=False)
