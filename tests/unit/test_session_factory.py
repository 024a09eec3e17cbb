"""The session factory's spares: an action that asks for a session right after the factory
starts takes the factory's first spare instead of making its own (a replay held to a schedule
whose recording had a spare there would otherwise write a session/new the recording's action
never wrote, and wait out the spare's answer)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from acp_model.fuzzing.ops import SessionHandle
from acp_model.fuzzing.sessions import SessionFactory


class _Noting(threading.Condition):
    """A condition that says when somebody first waits on it."""

    def __init__(self, waiting: threading.Event) -> None:
        super().__init__()
        self.waiting = waiting

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        self.waiting.set()
        return super().wait_for(predicate, timeout)


def _factory() -> tuple[SessionFactory, list[str]]:
    factory = SessionFactory(SimpleNamespace(deadline=10.0), ahead=1)  # type: ignore[arg-type]
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
    factory._start()
    assert factory._worker is not None
    factory._worker.join(10)
    assert not factory._worker.is_alive()
    assert factory.making == 0
