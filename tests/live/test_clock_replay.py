"""A held replay holds the agent's wall clock (fuzzing/clock.py): a real agent process whose
behaviour depends on its clock's minute reproduces when, and only when, the recording's minute
boundary falls where the replay puts it.

``tests/hostile/minute_agent.js`` (node) answers a prompt in the minute its session was made and
never one in a later minute (PROMPT-04), as gemini-cli loses a session's history when a load
comes in the minute the session was made. The program is the same in every run (a session, a
prompt a few milliseconds later), so the wire alone never tells the runs apart: on the real
clock a minute boundary falls between them once in thousands of runs. The recording is a run
of that program with its clock set so that a minute boundary falls between the session's
making and the prompt (the prompt recorded after the clock had been moved a second forward,
as a replay that held it writes); the control is the same recording with no boundary between
them.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path

import pytest

from acp_model.fuzzing.actions import Action, from_json
from acp_model.fuzzing.clock import library
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.replay import WarmPool, replay_once
from acp_model.fuzzing.schedule import Boundary, Crossed, Schedule
from acp_model.fuzzing.stop import Stop
from acp_model.spec.readings import DEFAULT

AGENT = ["node", str(Path(__file__).parents[1] / "hostile" / "minute_agent.js")]
RULE = "PROMPT-04"
PROGRAM: list[Action] = [from_json(a) for a in (
    {"op": "new_session"}, {"op": "prompt", "s": 0, "blocks": [{"type": "text", "text": "hi"}]})]
BEFORE = 0.5  # seconds the session is made before the minute boundary, in the recording

pytestmark = pytest.mark.skipif(library() is None or shutil.which("node") is None,
                                reason="libfaketime or node is not installed "
                                "(tests/services/setup.sh installs libfaketime)")


def _cfg() -> FuzzConfig:
    return FuzzConfig(AGENT, deadline=1.0, protocol=1, spec="v1",
                      readings=DEFAULT.parse(["SPEC=v1"]))


def _write(schedule: Schedule, method: str) -> int:
    return next(k for k, e in enumerate(schedule.events)
                if e.boundary is Boundary.WRITE and e.what == (Crossed.REQUEST, method))


def _recording(cfg: FuzzConfig, *, across: bool) -> Schedule:
    """The program's run with the agent's clock where it is wanted: the session made
    :data:`BEFORE` seconds before a minute boundary (an hour ago), the prompt written once the
    clock had been moved a second forward; ``across`` False: ten seconds after one instead,
    the prompt in the same minute."""
    run = replay_once(cfg, PROGRAM, RULE)  # the real clock: one minute, answered
    assert not run.reproduced and run.schedule is not None, run.violations
    events = run.schedule.events
    new, prompt = _write(run.schedule, "session/new"), _write(run.schedule, "session/prompt")
    moved = tuple(dataclasses.replace(e, ahead=1.0) if k >= prompt else e
                  for k, e in enumerate(events))
    boundary = (time.time() // 60 - 60) * 60
    made = boundary - BEFORE if across else boundary + 10.0
    schedule = dataclasses.replace(run.schedule, events=moved, epoch=made - events[new].t)
    assert (schedule.clock_at(new) // 60 != schedule.clock_at(prompt) // 60) is across
    return schedule


def test_a_replay_holding_the_clock_reproduces_what_only_the_clock_decides() -> None:
    cfg = _cfg()
    across = _recording(cfg, across=True)
    for _ in range(2):  # every time: nothing is left to the real clock's minute
        held = replay_once(cfg, PROGRAM, RULE, schedule=across, exact=True, clock=True)
        assert held.reproduced and held.clock_held, (held.violations, held.unclocked)
    # the real clock unless asked: libfaketime is not preloaded into an agent without cause
    real = replay_once(cfg, PROGRAM, RULE, schedule=across, exact=True)
    assert real.held and not real.clock_held and not real.reproduced, real.violations
    # the control: the same program and wire order, no minute boundary between them
    same = _recording(cfg, across=False)
    control = replay_once(cfg, PROGRAM, RULE, schedule=same, exact=True, clock=True)
    assert control.clock_held and not control.reproduced, control.violations


def test_a_warm_process_started_before_its_trial_takes_the_trial_s_clock() -> None:
    cfg = _cfg()
    across = _recording(cfg, across=True)
    with WarmPool(cfg, 1) as pool:
        pool.hold_clock()  # as a held replay that failed on its own on the real clock does
        pool.take(Stop()).close()  # the first take starts the pool's next process ahead
        held = replay_once(cfg, PROGRAM, RULE, schedule=across, pool=pool, exact=True)
        assert pool.started >= 1  # the replay's process was the one started ahead
        assert held.reproduced and held.clock_held, (held.violations, held.unclocked)


def test_a_schedule_without_a_clock_replays_on_the_real_one_and_says_so() -> None:
    cfg = _cfg()
    old = dataclasses.replace(_recording(cfg, across=True), epoch=None)
    held = replay_once(cfg, PROGRAM, RULE, schedule=old, exact=True, clock=True)
    assert held.held and not held.clock_held
    assert held.unclocked is not None and "records no clock" in held.unclocked


def test_an_agent_whose_process_libfaketime_does_not_reach_is_said_to_run_on_the_real_clock(
) -> None:
    # a launcher the check of the program started lets pass, whose agent runs without the
    # preload (as a static core under a node launcher would: codex-acp's musl-static codex)
    launcher = ["node", "-e",
                "const {spawn} = require('child_process');"
                "const env = {...process.env}; delete env.LD_PRELOAD;"
                "spawn(process.execPath, [process.argv[1]], {stdio: 'inherit', env})"
                ".on('exit', (code) => process.exit(code ?? 1));", AGENT[1]]
    cfg = dataclasses.replace(_cfg(), argv=launcher)
    across = _recording(cfg, across=True)
    held = replay_once(cfg, PROGRAM, RULE, schedule=across, exact=True, clock=True)
    assert held.held and not held.clock_held
    assert held.unclocked is not None and "does not load libfaketime" in held.unclocked


@pytest.mark.parametrize("pooled", [False, True], ids=["fresh", "warm pool"])
def test_an_agent_s_sessions_made_ahead_are_made_on_the_clock_its_trial_holds(
        pooled: bool) -> None:
    # a profile that makes sessions ahead of need (gemini-cli's): the spare a process makes
    # before its trial would be made on the real clock (an hour from the recording's), so the
    # control, whose prompt shares its session's minute in the recording, would be answered
    # in a different minute and "reproduce"; made once the trial set the clock, it does not
    cfg = dataclasses.replace(_cfg(), sessions_ahead=1)
    same, across = _recording(cfg, across=False), _recording(cfg, across=True)
    with WarmPool(cfg, 1) as pool:
        pool.hold_clock()
        for schedule, expected in ((same, False), (across, True)):
            held = replay_once(cfg, PROGRAM, RULE, schedule=schedule, exact=True, clock=True,
                               pool=pool if pooled else None)
            assert held.clock_held, held.unclocked
            assert held.reproduced is expected, (expected, held.violations, held.divergence)
            assert held.schedule is not None and held.schedule.epoch is not None
            # the replay's own recording says what the agent's clock read: its session's
            # minute and its prompt's are those of the recording it was held to
            new = _write(held.schedule, "session/new")
            prompt = _write(held.schedule, "session/prompt")
            minutes = {held.schedule.clock_at(k) // 60 for k in (new, prompt)}
            assert (len(minutes) == 2) is expected, minutes
