"""``acp-model replay FILE``: the run's setup, as the file says it was."""

from __future__ import annotations

import argparse

import pytest
from rich.console import Console

from acp_model.cli.fuzz import _replays, replayed_profile
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.schedule import Boundary, Crossed, Crossing, Schedule
from acp_model.profiles import get
from acp_model.spec.readings import DEFAULT


def test_acp_model_replay_sets_a_profiled_agent_up_for_the_protocol_its_file_was_judged_by(
        ) -> None:
    """A v1 row's replay file replayed by ``acp-model replay``: the profile's v1 session
    configuration (codex-acp: session/set_mode), not its v2 one (session/set_config_option,
    which a v1 session's held replay wrote where the recording had nothing: it left its
    schedule at once, and reproduced 2/8 where the matrix's replays had 3/6)."""
    codex = get("codex-acp")
    v1 = replayed_profile(FuzzConfig(["true"], readings=DEFAULT.parse(["SPEC=v1"])), codex)
    v2 = replayed_profile(FuzzConfig(["true"], readings=DEFAULT.parse(["SPEC=sdk-2.4.0"])),
                          codex)
    assert (v1.protocol, [m for m, _ in v1.session_config]) == (1, ["session/set_mode"])
    assert (v2.protocol, [m for m, _ in v2.session_config]) == (
        2, ["session/set_config_option"])


def test_acp_model_replay_holds_the_clock_after_cause_and_says_which_runs_did_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run on the real clock in which the agent failed on its own (gemini-cli's load in its
    session's clock minute, s15) makes the next runs hold the agent's clock; the report names
    the run that did not, instead of saying the clock was not held at all."""
    from acp_model.fuzzing import shrink
    from acp_model.fuzzing.replay import ReplayOutcome

    recording = Schedule((Crossing(Boundary.WRITE, (Crossed.REQUEST, "session/new"), t=0.0,
                                   action=0),), 1, 1_700_000_000.0)
    asked: list[bool] = []

    def replay(*args: object, clock: bool = False, **kwargs: object) -> ReplayOutcome:
        asked.append(clock)
        if not clock:  # the agent exits on its own on the real clock
            return ReplayOutcome(False, [], [], None, held=True, exited=(0, 1),
                                 unclocked="the real clock was kept")
        return ReplayOutcome(True, [], [], None, held=True)

    monkeypatch.setattr(shrink, "replay_once", replay)
    console = Console(record=True, width=400)
    args = argparse.Namespace(runs=3, free=False, html=None)
    _replays(args, {"rule": "X"}, FuzzConfig(["true"]), [], console, recording)
    out = console.export_text()
    assert asked == [False, True, True]
    assert "reproduced 2/3 under the recorded schedule (X)" in out
    assert "run 2: reproduced; the agent's wall clock held" in out
    assert "not held in run(s) 1: the real clock was kept" in out
