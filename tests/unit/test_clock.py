"""The agent's wall clock on a held replay (fuzzing/clock.py): what a schedule records of it,
the offset a replay writes for libfaketime and when it moves, which agents it can reach, and
how a report says it. The live test (tests/live/test_clock_replay.py) holds a real process's
clock."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from acp_model.fuzzing import clock as clocks
from acp_model.fuzzing.clock import AgentClock
from acp_model.fuzzing.crossings import ScheduleLog
from acp_model.fuzzing.hold import Hold
from acp_model.fuzzing.inconclusive import Unsure, UnsureKind
from acp_model.fuzzing.schedule import Boundary, Crossed, Crossing, Schedule
from acp_model.report.text import rates_phrase, reproduction_phrase

NEW = Crossing(Boundary.WRITE, (Crossed.REQUEST, "session/new"), t=0.0, action=0)
MADE = Crossing(Boundary.MESSAGE, (Crossed.RESPONSE, "result"), cause=0, t=0.1, action=0)


def _offset(clock: AgentClock) -> float:
    """The offset libfaketime reads: the file's one line, "+S" or "-S" seconds."""
    text = clock.path.read_text(encoding="ascii")
    assert text.endswith("\n") and text[0] in "+-", text
    return float(text)


def _clock() -> AgentClock:
    return AgentClock(Path("/opt/faketime/libfaketime.so.1"))  # its path is only named


def test_a_schedule_keeps_its_epoch_and_each_crossing_s_clock_moves() -> None:
    prompt = Crossing(Boundary.WRITE, (Crossed.REQUEST, "session/prompt"), session=1, t=0.2,
                      action=1, by_action=True, ahead=1.5)
    schedule = Schedule((NEW, MADE, prompt), 2, 1_700_000_000.25)
    data = schedule.to_json()
    assert data["epoch"] == 1_700_000_000.25 and data["events"][2]["ck"] == 1.5
    assert "ck" not in data["events"][0]  # a clock nobody moved adds nothing to the file
    again = Schedule.from_json(data)
    assert again == schedule
    # what the agent's clock read at each crossing: t=0's time, the seconds since, and how far
    # a replay that recorded it had moved its clock forward
    assert again.clock_at(0) == 1_700_000_000.25
    assert again.clock_at(2) == pytest.approx(1_700_000_000.25 + 0.2 + 1.5)
    assert again.restrict([1]).epoch == schedule.epoch  # a sub-program keeps the clock


def test_a_schedule_written_before_the_epoch_reads_without_a_clock() -> None:
    old = {"format": "acp-model-schedule/1", "actions": 1,
           "events": [{"b": "write", "w": ["request", "session/new"], "t": 0.0, "a": 0}]}
    schedule = Schedule.from_json(old)
    assert schedule.epoch is None and schedule.clock_at(0) is None
    assert "epoch" not in schedule.to_json()


def test_the_log_records_the_agent_s_clock_at_t0_and_how_far_it_moved() -> None:
    clock = _clock()
    clock.start(time.time() - 3600.0)  # a trial whose recording began an hour ago
    log = ScheduleLog(threading.Condition())
    log.clock.agent = clock
    log.start()
    assert log.epoch == pytest.approx(time.time() - 3600.0, abs=1.0)  # the agent's, not ours
    log.on_record({"dir": "c2a", "msg": {"jsonrpc": "2.0", "id": 1, "method": "session/new",
                                         "params": {}}})
    clock.advance(clock.now() + 30.0)
    log.on_record({"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 1, "result": {}}})
    recorded = log.schedule(0, 1)
    assert recorded.epoch == pytest.approx(log.epoch)
    assert recorded.events[0].ahead == 0.0
    assert recorded.events[1].ahead == pytest.approx(30.0, abs=0.5)


def test_the_offset_is_set_at_the_trial_s_start_then_moves_forward_only() -> None:
    clock = _clock()
    assert _offset(clock) == 0.0 and not clock.held  # a process started ahead: the real clock
    clock.advance(time.time() + 100.0)
    assert _offset(clock) == 0.0  # nothing moves before its trial starts
    recorded = time.time() - 7200.0  # the recording's t=0, two hours ago
    clock.start(recorded)
    assert clock.held
    assert _offset(clock) == pytest.approx(-7200.0, abs=0.5)  # set: back, at the start only
    assert clock.now() == pytest.approx(recorded, abs=0.5)
    clock.advance(recorded + 10.0)  # an input recorded 10 s in, issued at once
    assert _offset(clock) == pytest.approx(-7190.0, abs=0.5)
    assert clock.ahead() == pytest.approx(10.0, abs=0.5)
    clock.advance(recorded + 2.0)  # an earlier reading: never back
    assert _offset(clock) == pytest.approx(-7190.0, abs=0.5)
    clock.close()
    assert not clock.path.exists()


def test_the_environment_preloads_libfaketime_reading_the_clock_s_file() -> None:
    clock = _clock()
    env = clock.env({"PATH": "/bin", "LD_PRELOAD": "/opt/own.so", "FAKETIME": "+1d"})
    assert env["LD_PRELOAD"] == "/opt/own.so /opt/faketime/libfaketime.so.1"
    assert env["FAKETIME_TIMESTAMP_FILE"] == str(clock.path)
    assert env["FAKETIME_NO_CACHE"] == "1"  # each read sees a move at once
    assert env["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"  # timers and deadlines stay real
    assert "FAKETIME" not in env  # it would win over the file
    clock.close()


def _write(rid: int, method: str, **params: object) -> dict[str, object]:
    return {"dir": "c2a", "msg": {"jsonrpc": "2.0", "id": rid, "method": method,
                                  "params": params}}


def test_a_held_input_moves_the_clock_to_its_recorded_reading() -> None:
    prompt = Crossing(Boundary.WRITE, (Crossed.REQUEST, "session/prompt"), session=1,
                      t=0.15, action=1, by_action=True, ahead=5.0)
    epoch = time.time() - 1000.0
    clock = _clock()
    log = ScheduleLog(threading.Condition())
    log.clock.agent = clock
    assert log.follow(Hold(Schedule((NEW, MADE, prompt), 2, epoch)))
    assert _offset(clock) == pytest.approx(-1000.0, abs=0.5)  # the trial starts at t=0's time
    log.start()
    log.act(0)
    new = _write(1, "session/new")
    log.before_write([new])
    log.on_record(new)
    assert _offset(clock) == pytest.approx(-1000.0, abs=0.5)  # at t=0: no move
    log.on_record({"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 1,
                                         "result": {"sessionId": "s1"}}})
    log.act(1)
    sent = _write(2, "session/prompt", sessionId="s1", prompt=[])
    log.before_write([sent])
    # the prompt goes when the agent's clock reads what it read then: 5.15 s past t=0
    assert clock.now() >= epoch + 5.15 - 0.01
    assert _offset(clock) == pytest.approx(-1000.0 + 5.0, abs=0.5)
    log.on_record(sent)
    assert log.schedule(0, 2).events[-1].ahead == pytest.approx(5.0, abs=0.5)
    clock.close()


def test_a_session_made_before_its_program_keeps_its_clock_reading(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a shared process (the fuzz run's): the session is made by one example, a later one
    # prompts it two minutes on; the later program's schedule paces the making as its first
    # event, but says the agent's clock read two minutes earlier then (gemini-cli loses a
    # session's history on a load in the clock minute it was made: a replay whose session is
    # made in the load's minute fails on its own, s15)
    log = ScheduleLog(threading.Condition())
    log.start()
    log.act(0)
    new = _write(1, "session/new")
    log.before_write([new])
    log.on_record(new)
    log.on_record({"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 1,
                                         "result": {"sessionId": "s1"}}})
    later = time.monotonic() + 120.0
    monkeypatch.setattr(time, "monotonic", lambda: later)
    start = log.start()  # the later example
    log.act(0)
    sent = _write(2, "session/prompt", sessionId="s1", prompt=[])
    log.before_write([sent])
    log.on_record(sent)
    monkeypatch.undo()
    recorded = log.schedule(start, 1)
    kinds = [e.what for e in recorded.events]
    made, prompt = kinds.index((Crossed.REQUEST, "session/new")), \
        kinds.index((Crossed.REQUEST, "session/prompt"))
    assert recorded.events[made].t == recorded.events[prompt].t  # paced as its first event
    made_at, prompt_at = recorded.clock_at(made), recorded.clock_at(prompt)
    assert made_at is not None and prompt_at is not None
    assert prompt_at - made_at == pytest.approx(120.0, abs=1.0)
    again = Schedule.from_json(recorded.to_json())
    assert again == recorded and again.first_clock() == pytest.approx(made_at)
    # a held replay starts the agent's clock at the making, so its prompt is two minutes on
    clock = _clock()
    replay = ScheduleLog(threading.Condition())
    replay.clock.agent = clock
    assert replay.follow(Hold(again))
    assert clock.now() == pytest.approx(made_at, abs=0.5)
    clock.close()


def test_a_schedule_without_an_epoch_leaves_the_clock_alone() -> None:
    clock = _clock()
    log = ScheduleLog(threading.Condition())
    log.clock.agent = clock
    assert not log.follow(Hold(Schedule((NEW, MADE), 1)))
    assert not clock.held and _offset(clock) == 0.0
    assert not log.follow(None)  # free-running: the real clock
    clock.close()


def _elf(path: Path, *, interp: bool) -> Path:
    """A 64-bit little-endian ELF header with one program header (PT_INTERP, or PT_LOAD)."""
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    header[32:40] = (64).to_bytes(8, "little")  # e_phoff
    header[54:56] = (56).to_bytes(2, "little")  # e_phentsize
    header[56:58] = (1).to_bytes(2, "little")  # e_phnum
    program = bytearray(56)
    program[:4] = (3 if interp else 1).to_bytes(4, "little")
    path.write_bytes(bytes(header + program))
    path.chmod(0o755)
    return path


def test_the_clock_reaches_a_dynamically_linked_program_or_says_why_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clocks, "library", lambda: Path("/opt/faketime/libfaketime.so.1"))
    env = {"PATH": f"{tmp_path}:{os.environ.get('PATH', '')}"}
    static = _elf(tmp_path / "goagent", interp=False)
    _elf(tmp_path / "cagent", interp=True)
    assert "linked statically" in (clocks.blocker([str(static)], env) or "")
    assert clocks.blocker(["cagent", "--acp"], env) is None
    # a script is run by the interpreter its #! line names, through env too
    script = tmp_path / "agent.sh"
    script.write_text("#!/usr/bin/env goagent\n")
    script.chmod(0o755)
    assert "goagent is linked statically" in (clocks.blocker([str(script)], env) or "")
    monkeypatch.setattr(clocks, "sleeps_broken", lambda lib: False)
    assert clocks.blocker([sys.executable, "-m", "agent"], env) is None
    # a library that breaks sleeps to an absolute monotonic deadline (libfaketime 0.9.10 with
    # the monotonic clock left real): a Python agent, whose time.sleep is one, is not reached
    monkeypatch.setattr(clocks, "sleeps_broken", lambda lib: True)
    assert "issue #426" in (clocks.blocker([sys.executable, "-m", "agent"], env) or "")
    assert clocks.blocker(["cagent", "--acp"], env) is None
    monkeypatch.setattr(clocks, "library", lambda: None)
    assert clocks.blocker(["cagent"], env) == clocks.NOT_INSTALLED
    clock, why = AgentClock.for_agent(["cagent"], env)
    assert clock is None and why == clocks.NOT_INSTALLED


def test_the_sweep_removes_what_ended_processes_left_in_shared_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clocks, "SHM", tmp_path)
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    mine = os.getpid()
    names = [f"faketime_shm_{ended.pid}", f"sem.faketime_sem_{ended.pid}",
             f"faketime_shm_{mine}", f"sem.faketime_sem_{mine}", "other_file"]
    for name in names:
        (tmp_path / name).write_bytes(b"\0")
    assert clocks.sweep(time.time() - 60.0) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[2:])
    assert clocks.sweep(time.time() + 60.0) == 0  # leftovers older than the run are not ours


def test_a_report_says_the_clock_was_held_or_why_a_replay_was_inconclusive_without_it() -> None:
    assert reproduction_phrase(6, 6, 1, 6, clock=True) == \
        "reproduced 6/6 under the recorded schedule and clock, 1/6 free-running"
    assert reproduction_phrase(6, 6, 1, 6) == \
        "reproduced 6/6 under the recorded schedule, 1/6 free-running"
    assert "and clock" in rates_phrase({"reproduced": 6, "replays": 6, "free_reproduced": 0,
                                        "free_replays": 6, "clock": True})
    unsure = Unsure(UnsureKind.ERROR, -32603, method="session/load", n=1, unclocked=True)
    assert "wall clock not held" in unsure.words()
    assert Unsure.from_json(unsure.to_json()) == unsure
    assert "unclocked" not in Unsure(UnsureKind.ERROR, -32603, method="session/load",
                                     n=1).to_json()


def test_the_matrix_page_says_the_clock_was_held() -> None:
    from acp_model.report.matrix import reproduction_text

    finding = {"reproduction": "6/6", "free_reproduction": "0/6", "clock": True}
    assert reproduction_text(finding) == ("reproduced 6/6 in fresh agent processes under the "
                                          "recorded boundary schedule and clock, 0/6 "
                                          "free-running")
    assert "and clock" not in reproduction_text({**finding, "clock": False})


@pytest.mark.parametrize(("exited", "reproduced", "epoch", "before", "held"), [
    ((1, 1), False, 1.0, 0.0, True),  # on the real clock, the agent exited on its own: clock
    (None, False, 1.0, 0.0, False),  # did not reproduce, failed on nothing of its own: evidence
    ((1, 1), True, 1.0, 0.0, False),  # reproduced: the real clock served
    ((1, 1), False, None, 0.0, False),  # a recording without a clock has none to hold
    # did not reproduce, and its session was made two minutes (by the recording's clock)
    # before the rest, which the replay ran in a moment: its clock read unlike the recording's
    (None, False, 1.0, 120.0, True),
    (None, True, 1.0, 120.0, False),  # it reproduced all the same
    (None, False, 1.0, 0.5, False),  # within the slack
])
def test_the_clock_is_held_only_once_a_held_replay_on_the_real_clock_failed_on_its_own(
        monkeypatch: pytest.MonkeyPatch, exited: tuple[int, int] | None, reproduced: bool,
        epoch: float | None, before: float, held: bool) -> None:
    """libfaketime changes some agents (claude-agent-acp's Claude Code child exits at its
    shared-memory set-up): a pool's processes start under it only after cause."""
    from acp_model.fuzzing import shrink
    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.fuzzing.replay import ReplayOutcome, WarmPool

    recording = Schedule((dataclasses.replace(NEW, ahead=-before), MADE), 2, epoch)
    outcome = ReplayOutcome(reproduced, [], [], None, held=True, exited=exited,
                            unclocked="the real clock was kept")
    monkeypatch.setattr(shrink, "replay_once", lambda *a, **k: outcome)
    cfg = FuzzConfig(["true"])
    with WarmPool(cfg, 0) as pool:
        for _ in range(2):
            shrink._replay(cfg, [], "X", threading.Event(), recording, pool)
        assert pool.clock is held and not pool.choice.dropped


@pytest.mark.parametrize(("under_clock", "chosen"), [
    # claude-agent-acp's child exits under libfaketime: every replay under it fails on its own,
    # and after DROP_AFTER of them the real clock comes back for good
    (["failed", "failed", "missed"], [True, False, False]),
    # a clock that served (gemini-cli: the replay under it reproduced) is kept when a later
    # replay under it fails on its own: that is the agent's, not libfaketime's (s15)
    (["reproduced", "failed", "failed", "failed"], [True, True, True, True]),
    (["failed", "reproduced", "failed", "failed"], [True, True, True, True]),
])
def test_a_clock_that_makes_the_agent_fail_on_its_own_is_dropped_for_good(
        monkeypatch: pytest.MonkeyPatch, under_clock: list[str], chosen: list[bool]) -> None:
    """The clock after cause, and back for good once under it the agent failed on its own
    with no replay under it going right: no switching back and forth."""
    from acp_model.fuzzing import shrink
    from acp_model.fuzzing.clock import DROP_AFTER
    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.fuzzing.replay import ReplayOutcome, WarmPool

    assert DROP_AFTER == 2  # the cases count on it
    recording = Schedule((dataclasses.replace(NEW, ahead=-120.0), MADE), 2, 1.0)
    real = ReplayOutcome(False, [], [], None, held=True, unclocked="the real clock was kept")
    clocked = {"failed": ReplayOutcome(False, [], [], None, held=True, exited=(1, 1)),
               "reproduced": ReplayOutcome(True, [], [], None, held=True),
               "missed": real}
    outcomes = iter([real, *(clocked[name] for name in under_clock)])
    monkeypatch.setattr(shrink, "replay_once", lambda *a, **k: next(outcomes))
    cfg = FuzzConfig(["true"])
    with WarmPool(cfg, 0) as pool:
        seen = []
        for _ in range(1 + len(under_clock)):
            shrink._replay(cfg, [], "X", threading.Event(), recording, pool)
            seen.append(pool.clock)
        # the first, on the real clock, missed with a wide recorded clock: the clock is held
        assert seen == [True, *chosen]
        assert pool.choice.dropped is (False in chosen)
