"""The boundary schedule (fuzzing/schedule.py): what is recorded, in which order, under which
keys, and how a replay held to it waits for its turn. Synthetic records here; the live tests
(tests/live/test_schedule_replay.py) hold the reference agent's mutants to their recordings."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from acp_model.fuzzing import hold as holding
from acp_model.fuzzing import schedule as sched
from acp_model.fuzzing.crossings import ScheduleLog
from acp_model.fuzzing.hold import Hold
from acp_model.fuzzing.schedule import Boundary, Crossed, Crossing, Schedule, ScheduleError
from acp_model.llm.wire import ResponsePart


def _req(rid: int, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def _update(sid: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": sid, "update": {"sessionUpdate": kind, **fields}}}


def _answer(rid: Any, **result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


class _Connection:
    """Records fed to a log as a transcript would: under its lock, in order."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.log = ScheduleLog(self.lock)
        self.log.start()

    def write(self, msg: Any, action: int | None = None) -> None:
        if action is not None:
            self.log.act(action)
        with self.lock:
            self.log.on_record({"dir": "c2a", "msg": msg})

    def read(self, msg: Any) -> None:
        with self.lock:
            self.log.on_record({"dir": "a2c", "msg": msg})


def _prompt_turn(conn: _Connection, tag: str = "1") -> None:
    """A session, a prompt carrying a scripted turn's tag, and the agent's turn."""
    conn.write(_req(0, "session/new", cwd="/", mcpServers=[]), action=0)
    conn.read(_answer(0, sessionId="S1"))
    conn.write(_req(1, "session/prompt", sessionId="S1",
                    prompt=[{"type": "text", "text": f"fix it [acpm:{tag}]"}]), action=1)
    conn.read(_update("S1", "agent_message_chunk", content={"type": "text", "text": "a"}))
    conn.read(_update("S1", "agent_message_chunk", content={"type": "text", "text": "b"}))
    conn.read(_update("S1", "tool_call_update", toolCallId="x", status="in_progress"))
    conn.read(_update("S1", "tool_call_update", toolCallId="x", content=[]))
    conn.read(_answer(1, stopReason="end_turn"))


def test_records_are_keyed_by_what_crossed_never_by_ids_or_text() -> None:
    conn = _Connection()
    _prompt_turn(conn)
    conn.write(_req(2, "session/prompt", sessionId="nobody", prompt=[]), action=2)
    events = conn.log.events
    assert [(e.boundary, e.what) for e in events] == [
        (Boundary.WRITE, ("request", "session/new")),
        (Boundary.MESSAGE, ("response", "result")),
        (Boundary.WRITE, ("request", "session/prompt")),
        # a run of text chunks is one event: how many an agent writes depends on timing
        (Boundary.MESSAGE, ("update", "agent_message_chunk")),
        (Boundary.MESSAGE, ("update", "tool_call_update", "in_progress")),
        # a tool call's content without a status streams like a chunk
        (Boundary.MESSAGE, ("update", "tool_call_content_chunk")),
        (Boundary.MESSAGE, ("response", "result")),
        (Boundary.WRITE, ("request", "session/prompt")),
    ]
    # the session is the answer to session/new that made it, a response names its request
    assert events[2].session == events[3].session == 1
    assert events[1].cause == 0 and events[6].cause == 2
    assert events[7].session == -1  # a session the client never made
    assert events[2].action == 1 and events[2].by_action
    assert not events[3].by_action  # the agent's


def test_model_events_belong_to_the_turn_whose_prompt_carried_the_tag() -> None:
    conn = _Connection()
    _prompt_turn(conn, tag="7f")

    async def crossings() -> None:
        await conn.log.requested("7f", 0, 1)
        await conn.log.release("7f", 0, 1, ResponsePart.TEXT, 2)
        conn.log.hung_up("7f", 0, 1)
        await conn.log.requested("other", 0, 1)  # a tag of no prompt here: no turn

    asyncio.run(crossings())
    model = [e for e in conn.log.events if e.what[0] == "model"]
    assert [(e.boundary, e.what) for e in model] == [
        (Boundary.REQUEST, ("model", "0", "1")),
        (Boundary.RELEASE, ("model", "0", "1", "text", "2")),
        (Boundary.HANGUP, ("model", "0", "1")),
        (Boundary.REQUEST, ("model", "0", "1"))]
    assert [e.cause for e in model] == [2, 2, 2, None]  # the prompt's write
    assert [e.session for e in model] == [1, 1, 1, None]


def test_a_schedule_survives_json_and_is_restricted_with_what_its_actions_caused() -> None:
    conn = _Connection()
    _prompt_turn(conn)
    conn.write(_req(2, "_acp_model/sync"), action=2)
    conn.read({"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "no"}})
    schedule = conn.log.schedule(actions=3)
    again = Schedule.from_json(schedule.to_json())
    assert again == schedule
    # without the prompt (action 1): its write, its turn's messages and its response go; the
    # sync (action 2) is action 1 now
    less = schedule.restrict([0, 2])
    assert [e.what for e in less.events] == [("request", "session/new"), ("response", "result"),
                                             ("request", "_acp_model/sync"),
                                             ("response", "error")]
    assert [e.action for e in less.events] == [0, 0, 1, 1] and less.actions == 2
    assert less.events[3].cause == 2
    with pytest.raises(sched.ScheduleError):
        Schedule.from_json({"format": "something else"})


def test_a_later_example_s_schedule_keeps_the_making_of_the_sessions_it_uses() -> None:
    """On a shared process an example may use a session an earlier one made (or one made
    ahead of need): its schedule starts with the events that made it, which the replay's own
    session/new matches, whichever thread sent it."""
    conn = _Connection()
    conn.write(_req(0, "session/new", cwd="/", mcpServers=[]), action=0)
    conn.read(_answer(0, sessionId="S1"))
    conn.write(_req(1, "_acp_model/sync"), action=1)
    start = conn.log.start()  # the next example
    conn.write(_req(2, "session/prompt", sessionId="S1", prompt=[]), action=0)
    conn.read(_answer(2, stopReason="end_turn"))
    schedule = conn.log.schedule(start, actions=1)
    assert [(e.what, e.session, e.cause, e.action) for e in schedule.events] == [
        (("request", "session/new"), None, None, None),
        (("response", "result"), None, 0, None),
        (("request", "session/prompt"), 1, None, 0),
        (("response", "result"), None, 2, 0)]
    assert not schedule.events[0].by_action


def test_a_warm_process_s_first_program_begins_with_its_spare_and_not_its_wait(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm process makes its first spare before its program (``begin_early``): the program's
    schedule begins with it, and its clock goes on from the spare's answer, not from the
    minute the process waited in the pool. A hold attached after the spare was made matches
    what was recorded before it, so the program's prompt waits for nothing."""
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    lock = threading.Condition()
    log = ScheduleLog(lock)
    log.begin_early()
    with lock:
        log.on_record({"dir": "c2a", "msg": _req(0, "session/new", cwd="/", mcpServers=[])})
        now[0] = 101.0
        log.on_record({"dir": "a2c", "msg": _answer(0, sessionId="S1")})
    now[0] = 160.0
    recorded = Schedule((*(dataclasses.replace(e, action=0) for e in log.events),
                         Crossing(Boundary.WRITE, ("request", "session/prompt"), session=1,
                                  action=0, by_action=True, t=1.5)), 1)
    hold = Hold(recorded, deadline=30.0)
    log.hold = hold
    assert log.start() == 0
    now[0] = 160.5
    log.act(0)
    prompt = log._event(Boundary.WRITE, ("request", "session/prompt"), session=1, by_action=True)
    assert prompt.t == 1.5  # the spare's answer at 1.0, half a second later
    assert hold.admit(log._key(prompt), prompt) == 2
    assert hold.divergence is None and hold.held_for == 0.0


def _schedule(*events: Crossing) -> Schedule:
    return Schedule(tuple(events), 3)


W0 = Crossing(Boundary.WRITE, ("request", "session/new"), action=0, by_action=True, t=0.0)
M1 = Crossing(Boundary.MESSAGE, ("response", "result"), cause=0, action=0, t=0.1)
W2 = Crossing(Boundary.WRITE, ("request", "_acp_model/sync"), action=1, by_action=True, t=0.2)
M3 = Crossing(Boundary.MESSAGE, ("response", "error"), cause=2, action=1, t=0.3)


def _key(e: Crossing, hold: Hold) -> Any:
    return sched.event_key(e, hold.ref)


def test_an_input_waits_until_what_preceded_it_in_the_recording_happened() -> None:
    hold = Hold(_schedule(W0, M1, W2, M3), deadline=30.0)
    hold.observe(0, _key(W0, hold))
    admitted = threading.Event()

    def write_prompt() -> None:
        hold.admit(_key(W2, hold), W2)
        admitted.set()

    writer = threading.Thread(target=write_prompt)
    writer.start()
    # the sync is held: the recording read M1 before writing it
    assert hold.would_wait(_key(W2, hold), W2) and not admitted.is_set()
    replayed_m1 = Crossing(Boundary.MESSAGE, ("response", "result"), cause=0)
    hold.observe(1, sched.event_key(replayed_m1, hold.ref))
    writer.join(10)
    assert admitted.is_set() and hold.divergence is None
    assert hold.matched == {0: 0, 1: 1}


def test_an_agent_message_is_read_no_earlier_than_the_inputs_before_it_until_the_teardown(
        ) -> None:
    hold = Hold(_schedule(W0, M1, W2, M3), deadline=30.0)
    for n, e in enumerate((W0, M1)):
        hold.observe(n, _key(e, hold))
    early = Crossing(Boundary.MESSAGE, ("response", "error"), cause=2)
    key = (Boundary.MESSAGE, early.what, None, 2, None)
    assert hold.would_wait(key, early)  # the sync (W2) was written before it in the recording
    hold.read_freely()  # the teardown judges deadlines: nothing is held back from it
    assert hold.admit(key, early) == 3
    # an agent that wrote out of the recorded order (M1 has not come): holding its later
    # message could keep M1, behind it in the pipe, from coming: it is read at once
    reordered = Hold(_schedule(W0, M1, W2, M3), deadline=30.0)
    reordered.observe(0, _key(W0, reordered))
    assert not reordered.would_wait(key, early)


def test_a_release_of_the_scripted_model_awaits_the_gate_the_hold_opens() -> None:
    release = Crossing(Boundary.RELEASE, ("model", "0", "1", "start", "0"), cause=2, t=0.25)
    hold = Hold(_schedule(W0, M1, W2, release), deadline=30.0)
    for n, e in enumerate((W0, M1)):
        hold.observe(n, _key(e, hold))
    opened = threading.Event()

    async def model() -> None:
        await hold.admit_async((Boundary.RELEASE, release.what, None, 2, None), release)
        opened.set()

    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_until_complete, args=(model(),))
    runner.start()
    with hold.cond:  # held: the request before it is not written yet
        assert hold.cond.wait_for(lambda: bool(hold._waiters), 10)
        assert not opened.is_set()
    hold.observe(2, _key(W2, hold))
    runner.join(10)
    loop.close()
    assert opened.is_set() and hold.divergence is None


def test_what_the_replay_does_not_bring_is_left_out_in_time_and_said(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(holding, "FLOOR", 0.05)
    hold = Hold(_schedule(W0, M1, W2, M3), deadline=30.0)
    hold.observe(0, _key(W0, hold))
    # M1 never comes: the prompt waits its allowance (M1's recorded 0.1 s, slower, plus the
    # floor), then M1 is left out
    assert hold.expect.allowance(1) == pytest.approx(0.05 + holding.SLOWER * 0.1)
    assert hold.admit(_key(W2, hold), W2) == 2
    assert hold.skipped == 1 and not hold.free
    assert hold.divergence is not None and "did not come" in hold.divergence.what
    # what an action was recorded to write and the replay's did not is left behind with it
    hold2 = Hold(_schedule(W0, M1, W2, M3), deadline=30.0)
    hold2.left_behind(1)
    assert hold2.happened.done[0] and not hold2.happened.done[1] and not hold2.happened.done[2]
    assert hold2.divergence is not None and "before the next action" in hold2.divergence.what


def test_a_write_the_recording_does_not_have_takes_its_place_before_the_next_input(
        ) -> None:
    """The teardown's cancel of a turn the recording saw end by itself is not in it: it is
    written where the recording went on after the replay's last input, once the agent's
    messages recorded there came."""
    hold = Hold(_schedule(W0, M1, W2, M3), deadline=30.0)
    cancel = Crossing(Boundary.WRITE, ("notify", "session/cancel"), action=1, by_action=True)
    key = sched.event_key(cancel, hold.ref)
    hold.observe(0, _key(W0, hold))
    hold.observe(1, _key(M1, hold))
    hold.observe(2, _key(W2, hold))
    assert hold.would_wait(key, cancel)  # M3, the agent's message in action 1, has not come
    hold.observe(3, sched.event_key(M3, hold.ref))
    assert not hold.would_wait(key, cancel)
    assert hold.divergence is not None and "not in the recording" in hold.divergence.what


def test_nothing_waits_for_what_the_agent_reports_as_it_likes() -> None:
    """A usage or commands update, a notification of the agent's own: their number follows
    the agent's timing. An input recorded after one does not wait for it."""
    usage = Crossing(Boundary.MESSAGE, ("update", "usage_update"), session=1, action=1, t=0.2)
    notice = Crossing(Boundary.MESSAGE, ("notify", "_auth/status_update"), action=1, t=0.2)
    assert usage.soft and notice.soft and not M1.soft and not W2.soft
    hold = Hold(_schedule(W0, usage, notice, W2), deadline=30.0)
    hold.observe(0, _key(W0, hold))
    assert not hold.would_wait(_key(W2, hold), W2)


def test_past_the_recording_the_replay_runs_free() -> None:
    hold = Hold(_schedule(W0, M1), deadline=30.0)
    hold.left_behind(1)
    assert hold.free and hold.divergence is None
    extra = Crossing(Boundary.WRITE, ("request", "_acp_model/sync"), action=1, by_action=True)
    assert hold.admit(sched.event_key(extra, hold.ref), extra) is None


def test_replaying_the_program_that_recorded_it_an_agent_s_event_may_take_the_deadline(
        ) -> None:
    """A measurement of the reported program (``exact``) waits for a late agent message up
    to the deadline: a slower machine is no divergence. Its own inputs, and a smaller
    program's trials, keep the recorded allowance."""
    trial = Hold(_schedule(W0, M1, W2, M3), deadline=5.0)
    exact = Hold(_schedule(W0, M1, W2, M3), deadline=5.0, exact=True)
    assert trial.expect.allowance(1) == pytest.approx(holding.FLOOR + holding.SLOWER * 0.1)
    assert exact.expect.allowance(1) == 5.0 and exact.expect.allowance(3) == 5.0
    assert exact.expect.allowance(2) == trial.expect.allowance(2) < 5.0  # the client's own sync


def _chunk_run(t: float) -> Crossing:
    return Crossing(Boundary.MESSAGE, ("update", "agent_message_chunk"), session=1, action=0,
                 t=t)


def test_a_count_that_differs_is_left_out_soon_and_the_replay_stays_held(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The recording had more runs of text (or a tool call's progress) than the agent writes
    this time: a count, not another branch. Even replaying the program that recorded it
    (``exact``) the input after them waits only their allowance, and however many are left
    out the replay stays held to the rest, its first divergence recorded."""
    monkeypatch.setattr(holding, "FLOOR", 0.05)
    runs = [_chunk_run(0.1 + 0.001 * n) for n in range(holding.MAX_LEFT_OUT + 2)]
    progress = Crossing(Boundary.MESSAGE, ("update", "tool_call_update", "in_progress"),
                     session=1, action=0, t=0.11)
    assert not runs[0].essential and not progress.essential and M1.essential
    hold = Hold(_schedule(W0, M1, *runs, progress, W2), deadline=30.0, exact=True)
    hold.observe(0, _key(W0, hold))
    hold.observe(1, _key(M1, hold))
    hold.observe(2, _key(runs[0], hold))  # the content began (the branch's, see below)
    assert hold.expect.allowance(3) < 1.0  # not the deadline, exact as the replay is
    assert hold.admit(_key(W2, hold), W2) == len(runs) + 3
    assert hold.skipped == len(runs) > holding.MAX_LEFT_OUT and hold.left_out == 0
    assert not hold.free
    assert hold.divergence is not None and "a count that differs" in hold.divergence.what
    said = holding.describe_divergence(hold)
    assert said is not None and "held to the end" in said and "0 of its branch" in said


def test_a_response_of_another_outcome_takes_the_recorded_one_s_place_at_once() -> None:
    """The agent took another branch: it refused the sync the recording saw answered. The
    input recorded after that answer does not wait the deadline for it: the refusal takes its
    place, and the divergence says so."""
    refused = Crossing(Boundary.MESSAGE, ("response", "error"), cause=2, action=1, t=0.3)
    answered = Crossing(Boundary.MESSAGE, ("response", "result"), cause=2, action=1, t=0.3)
    w4 = Crossing(Boundary.WRITE, ("notify", "session/cancel"), action=2, by_action=True, t=0.4)
    hold = Hold(Schedule((W0, M1, W2, answered, w4), 3), deadline=30.0, exact=True)
    for n, e in enumerate((W0, M1, W2)):
        hold.observe(n, _key(e, hold))
    assert hold.would_wait(_key(w4, hold), w4)
    hold.observe(3, sched.event_key(refused, hold.ref))
    assert not hold.would_wait(_key(w4, hold), w4)
    assert hold.left_out == 1 and not hold.free
    assert hold.divergence is not None and "answered with error" in hold.divergence.what


def test_an_agent_message_of_a_branch_the_recording_lacks_is_the_divergence() -> None:
    hold = Hold(_schedule(W0, M1, W2, M3), deadline=30.0)
    hold.observe(0, _key(W0, hold))
    hold.observe(1, sched.event_key(_chunk_run(0.05), hold.ref))  # a count: no divergence
    assert hold.divergence is None and hold.extra == 1
    asked = Crossing(Boundary.MESSAGE, ("request", "session/request_permission"), session=1)
    hold.observe(2, sched.event_key(asked, hold.ref))
    assert hold.divergence is not None and "another branch" in hold.divergence.what
    assert "request_permission" in hold.divergence.what and not hold.free


def _update_of(kind: str, t: float, session: int = 1) -> Crossing:
    return Crossing(Boundary.MESSAGE, ("update", kind), session=session, action=1, t=t)


PROMPT = Crossing(Boundary.WRITE, ("request", "session/prompt"), session=1, action=1,
               by_action=True, t=0.3)
SET_MODE = Crossing(Boundary.WRITE, ("request", "session/set_mode"), session=1, action=2,
                 by_action=True, t=0.32)


def test_content_begins_where_a_stretch_of_counted_updates_meets_our_next_input() -> None:
    """A stretch of a session's counted updates runs from our last input or its last
    essential output: its first update is the branch's when one of our inputs ends it; the
    later ones are counts. What ends on the session's own essential output (the turn's
    response) is not: that output holds the order. Another session's does not end it."""
    text, thought, more = (_update_of("agent_message_chunk", 0.31),
                           _update_of("agent_thought_chunk", 0.311),
                           _update_of("agent_message_chunk", 0.312))
    other_session = Crossing(Boundary.MESSAGE, ("response", "result"), cause=0, action=1, t=0.313)
    usage = _update_of("usage_update", 0.314)
    sched_ = _schedule(W0, M1, PROMPT, text, thought, more, other_session, usage, SET_MODE)
    assert sched_.content_begins() == {3: (4, 5)}
    ended = Crossing(Boundary.MESSAGE, ("response", "result"), cause=2, action=1, t=0.315)
    answered = _schedule(W0, M1, PROMPT, text, ended, SET_MODE)
    assert answered.session_of(4) == 1 and answered.content_begins() == {}
    hold = Hold(sched_, deadline=5.0, exact=True)
    assert hold.expect.branch(3) and not hold.expect.branch(4) and not hold.expect.branch(5)
    assert hold.expect.allowance(3) == 5.0 and hold.expect.allowance(4) < 1.0


def test_the_first_update_of_content_before_our_input_holds_the_input_until_it_comes(
        ) -> None:
    """The recording read the agent's first chunk 10 ms after the prompt and wrote the
    set_mode next (codex-acp v1 CANCEL-09, s7 matrix); replaying it, the chunk comes 1.5 s
    late. The set_mode waits for it: the race is the recording's. (Before, the hold gave the
    chunk 0.5 s + 3 x 10 ms and wrote the set_mode first.)"""
    chunk = _update_of("agent_message_chunk", 0.31)
    hold = Hold(_schedule(W0, M1, PROMPT, chunk, SET_MODE), deadline=5.0, exact=True)
    for n, e in enumerate((W0, M1, PROMPT)):
        hold.observe(n, _key(e, hold))
    admitted = threading.Event()

    def write_set_mode() -> None:
        hold.admit(_key(SET_MODE, hold), SET_MODE)
        admitted.set()

    writer = threading.Thread(target=write_set_mode)
    writer.start()
    assert not admitted.wait(1.5)  # the chunk is 1.5 s late: the set_mode still waits
    hold.observe(3, _key(chunk, hold))
    writer.join(10)
    assert admitted.is_set() and hold.divergence is None and hold.skipped == 0


def test_a_later_update_of_the_content_that_never_comes_is_left_out_soon(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The content began (its first chunk came) but the thought and the second run of text
    the recording had do not: counts, left out after their short allowance, the replay held.
    And a stretch whose first update (a thought) does not come while a later one (text) did
    began all the same: the thought is a count too."""
    monkeypatch.setattr(holding, "FLOOR", 0.05)
    text, thought, more = (_update_of("agent_message_chunk", 0.31),
                           _update_of("agent_thought_chunk", 0.311),
                           _update_of("agent_message_chunk", 0.312))
    hold = Hold(_schedule(W0, M1, PROMPT, text, thought, more, SET_MODE), deadline=30.0,
                exact=True)
    for n, e in enumerate((W0, M1, PROMPT, text)):
        hold.observe(n, _key(e, hold))
    started = time.monotonic()
    assert hold.admit(_key(SET_MODE, hold), SET_MODE) == 6
    assert time.monotonic() - started < 5.0  # not the deadline
    assert hold.skipped == 2 and hold.left_out == 0 and not hold.free
    assert hold.divergence is not None and "a count that differs" in hold.divergence.what
    thought_first = Hold(_schedule(W0, M1, PROMPT, thought, text, SET_MODE), deadline=30.0,
                         exact=True)
    assert thought_first.expect.branch(3) and thought_first.expect.allowance(3) == 30.0
    for n, e in enumerate((W0, M1, PROMPT, text)):
        thought_first.observe(n, _key(e, thought_first))
    assert not thought_first.expect.branch(3) and thought_first.expect.allowance(3) < 1.0
    assert thought_first.admit(_key(SET_MODE, thought_first), SET_MODE) == 5
    assert thought_first.left_out == 0 and not thought_first.free


def test_an_action_s_input_never_waits_for_an_earlier_one_of_the_same_action_to_come(
        ) -> None:
    """The recording's teardown cancelled, then looked; the replay's client looks first (a
    recording of an older client). The look's recorded match comes after the cancel, which
    the same action can only write after this look: it goes at once, the order said, and
    the cancel still meets its own recorded place."""
    cancel = Crossing(Boundary.WRITE, ("notify", "session/cancel"), session=1, action=1,
                   by_action=True, t=0.2)
    look = Crossing(Boundary.LOOK, ("look",), action=1, by_action=True, t=0.21)
    hold = Hold(_schedule(W0, M1, cancel, look), deadline=30.0, exact=True)
    for n, e in enumerate((W0, M1)):
        hold.observe(n, _key(e, hold))
    assert not hold.would_wait(_key(look, hold), look)
    assert hold.admit(_key(look, hold), look) is None
    assert hold.divergence is not None and "the same action did first" in hold.divergence.what
    hold.observe(2, _key(look, hold))
    assert hold.admit(_key(cancel, hold), cancel) == 2 and not hold.free
    # another action's input (a reaction, the model) still waits for its turn
    other = Hold(_schedule(W0, M1, cancel, look), deadline=30.0, exact=True)
    other.observe(0, _key(W0, other))
    assert other.would_wait(_key(cancel, other), cancel)


def test_the_replay_ends_after_the_agent_messages_the_recording_had_before_its_end() -> None:
    """The recording read the agent's response after the teardown's last input (the chunk
    that broke CANCEL-09 came after codex-acp's last look, s7 matrix): the replay's end
    waits for it, but not for an answer to a request the replay never wrote."""
    never = Crossing(Boundary.WRITE, ("request", "session/set_mode"), session=1, action=1, t=0.35)
    answer = Crossing(Boundary.MESSAGE, ("response", "result"), cause=4, action=1, t=0.36)
    hold = Hold(_schedule(W0, M1, W2, M3, never, answer), deadline=30.0, exact=True)
    for n, e in enumerate((W0, M1, W2)):
        hold.observe(n, _key(e, hold))
    ended = threading.Event()

    def end() -> None:
        hold.settle()
        ended.set()

    closer = threading.Thread(target=end)
    closer.start()
    assert not ended.wait(0.3)  # M3 has not come
    hold.observe(3, _key(M3, hold))
    closer.join(10)
    assert ended.is_set() and hold.skipped == 0 and hold.divergence is None


def test_an_input_follows_the_agent_message_before_it_no_sooner_than_in_the_recording(
        ) -> None:
    """Pacing (Expectation.pace): the recording wrote the sync 0.3 s after the agent's answer
    and released the model's start 0.25 s after it; the replay's order allows both the
    moment the answer came, yet each waits that long after it (never more than PACE_MAX)."""
    late = Crossing(Boundary.WRITE, ("request", "_acp_model/sync"), action=1, by_action=True,
                 t=0.4)
    hold = Hold(_schedule(W0, M1, late, M3), deadline=30.0)
    hold.observe(0, _key(W0, hold))
    hold.observe(1, _key(M1, hold))
    came = time.monotonic()
    assert hold.admit(_key(late, hold), late) == 2
    assert time.monotonic() - came >= 0.3 - 0.01
    # a model release is paced the same way, on the model's event loop
    release = Crossing(Boundary.RELEASE, ("model", "0", "1", "start", "0"), cause=2, t=0.35)
    held = Hold(_schedule(W0, M1, release), deadline=30.0)
    held.observe(0, _key(W0, held))
    held.observe(1, _key(M1, held))
    came = time.monotonic()
    asyncio.run(held.admit_async((Boundary.RELEASE, release.what, None, 2, None), release))
    assert time.monotonic() - came >= 0.25 - 0.01
    # a gap longer than PACE_MAX is cut to it; an agent message is never paced
    far = Crossing(Boundary.WRITE, ("request", "_acp_model/sync"), action=1, by_action=True,
                t=0.1 + holding.PACE_MAX + 5)
    capped = Hold(_schedule(W0, M1, far, M3), deadline=30.0)
    for n, e in enumerate((W0, M1)):
        capped.observe(n, _key(e, capped))
    assert capped.expect.pace(2, capped.happened.at, time.monotonic()) <= holding.PACE_MAX
    assert capped.expect.pace(3, capped.happened.at, time.monotonic()) == 0.0


def test_a_divergence_names_the_teardown_and_a_spare_session_s_write_by_their_place() -> None:
    """codex-acp's SDK-PROMPT-03 (3 actions) read "write request session/set_config_option
    (action 4) waited 5.0 s": action 4 was the teardown, and the write was the session
    factory's, made ahead for a spare session, not an action's (s11 codex run)."""
    spare = Crossing(Boundary.WRITE, ("request", "session/set_config_option"), action=3,
                     by_action=False)
    cancel = Crossing(Boundary.WRITE, ("notify", "session/cancel"), action=3, by_action=True)
    prompt = Crossing(Boundary.WRITE, ("request", "session/prompt"), action=1, by_action=True)
    assert spare.describe(3) == ("write request session/set_config_option (a spare session's, "
                                 "made ahead during the teardown)")
    assert cancel.describe(3) == "write notify session/cancel (the teardown)"
    assert prompt.describe(3) == "write request session/prompt (action 2)"
    assert cancel.describe() == "write notify session/cancel (action 4)"  # no count: a number
    assert Schedule((W0, M1, spare), 3).said(2) == spare.describe(3)


RUN = Path(__file__).resolve().parents[2] / "docs" / "matrix-run"


def test_what_crossed_is_typed_and_a_kept_schedule_reads_and_writes_as_it_was() -> None:
    """A crossing's first word is a :class:`Crossed` member, whoever made it (a schedule file,
    an older caller's string); each kept run's schedule reads with every event typed, keys as
    it did, and writes back the same JSON; a first word no crossing has is no schedule."""
    assert Crossing(Boundary.WRITE, ("request", "session/new")).kind is Crossed.REQUEST
    assert Crossing(Boundary.WRITE, ("request", "session/new")) == \
        Crossing(Boundary.WRITE, (Crossed.REQUEST, "session/new"))
    files = sorted(RUN.rglob("schedule.json"))
    assert files
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        schedule = Schedule.from_json(data)
        assert all(type(e.kind) is Crossed for e in schedule.events), path
        assert json.loads(json.dumps(schedule.to_json())) == data, path
    with pytest.raises(ScheduleError):
        Schedule.from_json({"format": sched.FORMAT, "actions": 1,
                            "events": [{"b": "write", "w": ["shout", "x"]}]})


def _first_word(node: ast.expr) -> bool:
    """``x.what[0]`` or ``x.what[:1]``: a crossing's first word."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "what"):
        return False
    index = node.slice
    if isinstance(index, ast.Constant):
        return index.value == 0
    return isinstance(index, ast.Slice) and index.lower is None \
        and isinstance(index.upper, ast.Constant) and index.upper.value == 1


def _words_only(node: ast.expr) -> bool:
    """A string, or a tuple, list or set of strings (what a first word was compared with)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, ast.Tuple | ast.List | ast.Set) and bool(node.elts) \
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)


def test_what_crossed_is_compared_as_a_member_never_as_its_word() -> None:
    """A crossing's first word is a :class:`Crossed` member: code compares members (``kind is
    Crossed.REQUEST``), not the word the member equals (held.py and inconclusive.py did, s13)."""
    package = Path(__file__).resolve().parents[2] / "acp_model"
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(map(_first_word, sides)) and any(map(_words_only, sides)):
                    found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert not found, found
