"""Session-scoped runs the live tier's tests share (tests/live/shared.py)."""

from __future__ import annotations

import sys

import pytest

from tests.live.shared import SharedRun, shared_fuzz_run

REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]


@pytest.fixture(scope="session")
def cancel_as_end_turn_run(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """The mutant that reports a cancelled turn as end_turn, found as CANCEL-07: its report,
    JUnit, HTML page, counterexample folders and replay file (test_fuzz, test_html_report).

    CANCEL-07 is a failure only where a response proves the cancel was read, a race: 40
    examples once (1 run in 24, 2026-12-04) showed only the warning. The room costs nothing
    when it is found early: the run stops generating once it is (``--stop-on``)."""
    return shared_fuzz_run(tmp_path_factory, "cancel_as_end_turn", [
        "--max-examples", "300", "--steps", "15", "--seed", "1", "--deadline", "1.5",
        "--stop-on", "CANCEL-07", "--replay-runs", "2", "--",
        *REFERENCE, "--mutant", "cancel_as_end_turn"])
