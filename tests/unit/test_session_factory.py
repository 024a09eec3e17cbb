"""The session factory's spares: an action that asks for a session right after the factory
starts takes the factory's first spare instead of making its own (a replay held to a schedule
whose recording had a spare there would otherwise write a session/new the recording's action
never wrote, and wait out the spare's answer), however slow the agent is to make it; and a
replay's fresh process makes its first spare before its program begins (a warm process: while
it waits for its replay), its held replays keeping to their recordings."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from acp_model.fuzzing.actions import Action, NewSession, Prompt, Wait, WaitMode
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.ops import SessionHandle
from acp_model.fuzzing.pool import AgentPool, Example
from acp_model.fuzzing.recorder import Recorder
from acp_model.fuzzing.replay import ReplayOutcome, WarmPool, replay_once
from acp_model.fuzzing.schedule import Boundary, Crossed, Crossing, Schedule
from acp_model.fuzzing.sessions import SessionFactory
from acp_model.trace.authors import Author, Part, author_of


class _Noting(threading.Condition):
    """A condition that says when somebody first waits on it."""

    def __init__(self, waiting: threading.Event) -> None:
        super().__init__()
        self.waiting = waiting

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        self.waiting.set()
        return super().wait_for(predicate, timeout)


def _factory(deadline: float = 10.0) -> tuple[SessionFactory, list[str]]:
    client = SimpleNamespace(deadline=deadline, startup_deadline=10.0, session_config=())
    factory = SessionFactory(client, ahead=1)  # type: ignore[arg-type]
    made: list[str] = []

    def create() -> SessionHandle:
        made.append(threading.current_thread().name)
        return SessionHandle(f"s{len(made)}-{threading.current_thread().name}")

    waiting = threading.Event()
    factory._cond = _Noting(waiting)
    run = factory._run

    def late_worker() -> None:
        # the worker thread gets going only once the action waits: the order a loaded
        # machine's scheduler may choose
        assert waiting.wait(10)
        run()

    factory.create = create  # type: ignore[method-assign]
    factory._run = late_worker  # type: ignore[method-assign]
    return factory, made


def test_a_take_right_after_the_start_takes_the_worker_spare() -> None:
    factory, made = _factory()
    handle = factory.take()
    factory.stop()
    assert handle is not None and handle.sid.endswith("session-factory"), (handle, made)
    assert made[0] == "session-factory", made


def test_a_stopped_factory_leaves_nothing_counted() -> None:
    factory, _ = _factory()
    factory.stop()
    factory._cond.waiting.set()  # type: ignore[attr-defined]  # nobody takes: let it run
    factory.start()
    assert factory._worker is not None
    factory._worker.join(10)
    assert not factory._worker.is_alive()
    assert factory.making == 0


def test_a_take_waits_for_a_spare_slower_than_the_deadline() -> None:
    """kilo's first session/new took 5.8 s (s13) where an action waited 5 s for a spare, then
    wrote a session/new of its own: the action now waits for the spare being made as long as
    its making may take. Here the spare comes only once the action has made its own or a
    second has passed, four deadlines: the action made none."""
    factory, made = _factory(deadline=0.25)
    own = threading.Event()

    def create() -> SessionHandle:
        name = threading.current_thread().name
        made.append(name)
        if name == "session-factory":
            own.wait(1.0)  # the spare is slow: ready once the action gave up, or after 1 s
        else:
            own.set()
        return SessionHandle(f"s{len(made)}-{name}")

    factory.create = create  # type: ignore[method-assign]
    factory._run = SessionFactory._run.__get__(factory)  # type: ignore[method-assign]
    handle = factory.take()
    factory.stop()
    assert handle is not None and handle.sid.endswith("session-factory"), (handle, made)
    assert not own.is_set(), made


SLOW = [sys.executable, str(Path(__file__).resolve().parents[1] / "hostile" / "slow_sessions.py"),
        "--slow", "1.0"]  # its first session/new answered 1 s late: twice the deadline below
# the turn is let settle (blocked on its permission request) before the teardown's cancel: no
# race of the agent's own is left for a held replay to meet
PROGRAM: list[Action] = [NewSession(), Prompt(0, [{"type": "text", "text": "go"}]),
                         Wait(0, WaitMode.SETTLED)]


def _slow() -> FuzzConfig:
    return FuzzConfig(SLOW, deadline=0.5, sessions_ahead=1)


def _session_news(out: ReplayOutcome) -> list[Author | None]:
    return [author_of(r) for r in out.records
            if r["dir"] == "c2a" and r["msg"].get("method") == "session/new"]


def _spare_write(schedule: Schedule) -> Crossing:
    return next(e for e in schedule.events if e.boundary is Boundary.WRITE
                and e.what == (Crossed.REQUEST, "session/new"))


def test_a_replay_s_process_makes_its_first_spare_before_its_program_begins() -> None:
    """A warm process makes its first spare while it waits for its replay: the program's new
    session takes it, and no action writes a session/new of its own on the slow agent."""
    with WarmPool(_slow(), 1) as pool:
        out = replay_once(_slow(), PROGRAM, None, pool=pool)
    assert out.teardown is not None and out.schedule is not None, out.error
    assert _session_news(out) and set(_session_news(out)) == {Author(Part.SPARE)}, out.records
    assert _spare_write(out.schedule).action is None, out.schedule.events[:3]  # before action 1


def _run_s_recording(cfg: FuzzConfig) -> Schedule:
    """The program's schedule as the fuzz run records it: the pooled process makes its first
    spare when the program's first action asks for a session."""
    recorder = Recorder()
    pool = AgentPool(cfg, recorder)
    try:
        ex = Example(pool.client(), recorder, deadline=cfg.deadline)
        for action in PROGRAM:
            ex.act(action)
        ex.finish()
        return ex.client.schedule.schedule(ex.schedule_start, len(PROGRAM))
    finally:
        pool.retire()


def test_held_replays_on_warm_processes_keep_to_the_run_s_recording_and_their_own() -> None:
    """The run's recording has the first spare made during action 1, a warm process made it
    before: the hold matches it all the same, as it does the replay's own recording."""
    cfg = _slow()
    recorded = _run_s_recording(cfg)
    assert _spare_write(recorded).action == 0
    with WarmPool(cfg, 1) as pool:
        held = replay_once(cfg, PROGRAM, None, schedule=recorded, pool=pool)
        assert held.held and held.divergence is None, held.divergence
        assert held.schedule is not None
        again = replay_once(cfg, PROGRAM, None, schedule=held.schedule, pool=pool)
    assert again.held and again.divergence is None, again.divergence
