"""The plugin's profiles: Hypothesis settings profiles plus the fuzzer's own budgets."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class AcpProfile:
    """One ``--acp-profile``: Hypothesis settings (registered under ``hypothesis``) plus the
    fuzzer's own budgets, which Hypothesis has no settings for."""

    name: str
    max_examples: int
    steps: int
    derandomize: bool  # deterministic generation: a fixed seed and no example database
    time_budget: float
    max_rounds: int
    replay_runs: int
    shrink_budget: float
    description: str

    @property
    def hypothesis(self) -> str:
        return f"acp-model-{self.name}"


PROFILES: dict[str, AcpProfile] = {p.name: p for p in (
    AcpProfile("quick", 30, 15, False, 60.0, 2, 2, 5.0,
               "smoke run: ~30 examples, a minute at most"),
    AcpProfile("ci", 100, 25, True, 300.0, 3, 3, 10.0,
               "deterministic moderate run (seed 0 unless --acp-seed, no example database)"),
    AcpProfile("deep", 2000, 40, False, 1800.0, 6, 10, 60.0,
               "long run: 2000 examples, up to 30 minutes, 10 replays per counterexample"),
)}


def register_profiles() -> None:
    """Register ``acp-model-<name>`` Hypothesis profiles (never loads one: that is the user's)."""
    from hypothesis import HealthCheck, settings

    for p in PROFILES.values():
        settings.register_profile(
            p.hypothesis, max_examples=p.max_examples, stateful_step_count=p.steps,
            deadline=None, derandomize=p.derandomize, database=None,
            suppress_health_check=list(HealthCheck))


def default_profile() -> str:
    """``ci`` where the ``CI`` variable is set (as Hypothesis itself does), else ``quick``."""
    return "ci" if os.environ.get("CI") else "quick"
