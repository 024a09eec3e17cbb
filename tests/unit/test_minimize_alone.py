"""``--minimize-alone``: runs side by side hold a gate file shared while they generate and
alone while they minimize (fuzzing/alone.py). Each gate here has its own open file, as each
run of a matrix does, so they contend as processes would."""

from __future__ import annotations

import threading
from pathlib import Path

from acp_model.fuzzing.alone import GateHold, GateMode
from acp_model.fuzzing.stop import Stop


def _waiting(path: Path) -> tuple[GateHold, threading.Event]:
    told = threading.Event()
    return GateHold(path, lambda _: told.set()), told


def test_generating_runs_share_the_gate_and_a_minimizing_run_waits_for_all(
        tmp_path: Path) -> None:
    path = tmp_path / "gate.lock"
    with GateHold(path) as one, GateHold(path) as two:
        assert one.shared(Stop()) and two.shared(Stop())  # both generate at once
        gate, told = _waiting(path)
        with gate:
            got: list[bool] = []
            thread = threading.Thread(target=lambda: got.append(gate.alone(Stop())))
            thread.start()
            assert told.wait(10), "the minimizing run did not wait for the generating ones"
            one.release()
            assert thread.is_alive() or not got, "it went alone while a run still generated"
            two.release()
            thread.join(10)
            assert got == [True] and gate.mode is GateMode.ALONE


def test_a_run_waits_to_start_while_another_minimizes_alone(tmp_path: Path) -> None:
    path = tmp_path / "gate.lock"
    with GateHold(path) as minimizing:
        assert minimizing.alone(Stop())
        gate, told = _waiting(path)
        with gate:
            got: list[bool] = []
            thread = threading.Thread(target=lambda: got.append(gate.shared(Stop())))
            thread.start()
            assert told.wait(10)
            assert not got
            minimizing.release()
            thread.join(10)
            assert got == [True] and gate.mode is GateMode.SHARED


def test_two_generating_runs_turning_alone_at_once_do_not_wait_on_each_other(
        tmp_path: Path) -> None:
    path = tmp_path / "gate.lock"
    with GateHold(path) as one, GateHold(path) as two:
        assert one.shared(Stop()) and two.shared(Stop())
        got: list[bool] = []

        def turn(gate: GateHold) -> None:  # each minimizes alone in turn, then lets go
            got.append(gate.alone(Stop()))
            gate.release()

        threads = [threading.Thread(target=turn, args=(g,)) for g in (one, two)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert got == [True, True]


def test_a_stop_ends_the_wait_and_no_gate_never_waits(tmp_path: Path) -> None:
    path = tmp_path / "gate.lock"
    with GateHold(path) as minimizing:
        assert minimizing.alone(Stop())
        gate, told = _waiting(path)
        stop = Stop()
        with gate:
            got: list[bool] = []
            thread = threading.Thread(target=lambda: got.append(gate.shared(stop)))
            thread.start()
            assert told.wait(10)
            stop.request()
            thread.join(10)
            assert got == [False] and gate.mode is None
    free = GateHold(None)
    assert free.shared(Stop()) and free.alone(Stop()) and free.mode is None
