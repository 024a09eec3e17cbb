"""The settings of one fuzz run."""

from __future__ import annotations

from dataclasses import dataclass

from acp_model.spec.readings import DEFAULT, Readings
from acp_model.spec.revisions import Decision


@dataclass
class FuzzConfig:
    argv: list[str]
    max_examples: int = 200
    steps: int = 30
    seed: int | None = None
    time_budget: float | None = 300.0
    deadline: float = 3.0
    startup_deadline: float = 30.0  # the first answer (initialize) may wait for a slow start
    readings: Readings = DEFAULT
    isolate: bool = False
    validate: bool = True
    max_sessions: int = 3
    replay_runs: int = 5
    max_rounds: int = 4
    shrink_budget: float = 15.0  # Hypothesis' own shrinking, per round
    minimize_budget: float = 60.0  # per failure: fresh-process replays that minimize it
    stop_on: frozenset[str] = frozenset()  # stop generating once all of these rules are found
    guided: bool = True  # coverage guidance with target() (off only to measure what it buys)
    cwd: str | None = None
    env: dict[str, str] | None = None
    # Root directory of Hypothesis' example database (one subdirectory per agent, see
    # campaign.example_database); None: nothing is stored or replayed from earlier runs.
    database: str | None = None
    # Redis URLs of shared stores (``redis://HOST:PORT/N``), multiplexed with ``database``;
    # read-only: replay what others stored, save nothing there.
    shared_databases: tuple[str, ...] = ()
    database_readonly: bool = False
    # The spec revision: a name, "auto" (a probe prompt decides, fuzzing/revision.py), or None
    # (the revision in ``readings``). ``decision`` is filled in once it is decided.
    spec: str | None = None
    decision: Decision | None = None
