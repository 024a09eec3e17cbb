"""The parts an agent process is made of, without a process: the transcript (its cap, its
waits), its record listeners, and the login after initialize."""

from __future__ import annotations

import threading

import pytest

from acp_model.fuzzing.login import listed_methods
from acp_model.fuzzing.sessions import count_session_writes
from acp_model.fuzzing.stop import Interrupted
from acp_model.fuzzing.transcript import RECORD_OVERHEAD, Transcript


def _msg(n: int) -> dict:
    return {"dir": "a2c", "t": float(n), "msg": {"jsonrpc": "2.0", "id": n, "result": {}}}


def test_the_transcript_stops_storing_at_its_cap_and_counts_on() -> None:
    log = Transcript(max_bytes=3 * (10 + RECORD_OVERHEAD))
    numbers = [log.append(_msg(n), 10) for n in range(5)]
    assert numbers == [1, 2, 3, 4, 5]  # every record is queued for the listeners
    assert log.truncated
    assert [r.get("error") for r in log.records] == [None, None, None, "transcript-cap"]
    assert (log.dropped_records, log.dropped_bytes) == (2, 20)
    assert log.stored_bytes == 3 * (10 + RECORD_OVERHEAD)


def test_a_wait_for_an_agent_record_ends_at_eof_and_gives_up_on_a_stop() -> None:
    log = Transcript(max_bytes=1 << 20)
    log.append(_msg(1), 10)
    stop = threading.Event()
    assert log.wait_for_index(lambda m: m["id"] == 1, 0.0, stop=stop) == 0
    stop.set()
    with pytest.raises(Interrupted):
        log.wait_for_index(lambda m: m["id"] == 2, 5.0, stop=stop)
    log.end()
    assert log.wait_eof(0.0)
    assert log.wait_for_index(lambda m: m["id"] == 2, 5.0, stop=stop) is None  # no more


def test_listeners_hear_each_later_record_once_in_order_and_errors_are_kept() -> None:
    log = Transcript(max_bytes=1 << 20)
    done = threading.Event()
    log.listeners.start("test-deliver", done.is_set)
    seen: list[int] = []
    remove = log.listeners.add(lambda r: seen.append(r["msg"]["id"]))
    log.listeners.add(lambda r: 1 / 0)
    last = [log.append(_msg(n), 10) for n in range(3)][-1]
    assert log.listeners.wait(last, timeout=5)
    assert seen == [0, 1, 2]
    assert len(log.listeners.errors) == 3 and isinstance(log.listeners.errors[0],
                                                         ZeroDivisionError)
    remove()
    assert log.listeners.wait(log.append(_msg(3), 10), timeout=5)
    assert seen == [0, 1, 2]
    done.set()
    assert log.listeners.thread is not None
    log.listeners.thread.join(5)
    assert not log.listeners.thread.is_alive()


def test_session_writes_are_counted_per_session_in_batches_too() -> None:
    from collections import Counter

    writes: Counter[str] = Counter()
    note = {"method": "session/update", "params": {"sessionId": "a"}}
    count_session_writes(writes, note)
    count_session_writes(writes, [note, {"method": "x", "params": {"sessionId": "b"}}, 3])
    count_session_writes(writes, {"result": {}})
    assert writes == {"a": 2, "b": 1}


def test_login_methods_are_read_by_their_id_in_either_spelling() -> None:
    assert listed_methods([{"methodId": "key"}, {"id": "oauth"}, "junk"]) == {"key", "oauth"}
    assert listed_methods(None) == set()
