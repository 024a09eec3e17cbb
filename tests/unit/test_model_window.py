"""The fuzzer's side of CANCEL-07's end-of-turn window (``fuzzing/model_window.py``): what it
writes on a cancel's record, and when it voids it."""

from __future__ import annotations

from typing import Any

from acp_model.fuzzing.model_window import ModelWindow
from acp_model.fuzzing.transcript import Transcript

S = "s1"


def _window() -> tuple[Transcript, ModelWindow]:
    log = Transcript(1 << 20)
    return log, ModelWindow.of(log)


def _write(log: Transcript, method: str, params: dict[str, Any], rid: Any = None, *,
           probe: bool = False) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if rid is not None:
        msg["id"] = rid
    record: dict[str, Any] = {"dir": "c2a", "t": 0.0, "msg": msg}
    if probe:
        record["probe"] = True
    log.append(record, 1)
    return record


def _agent(log: Transcript) -> dict[str, Any]:
    record = {"dir": "a2c", "t": 0.0, "msg": {"jsonrpc": "2.0", "method": "session/update",
                                              "params": {"sessionId": S}}}
    log.append(record, 1)
    return record


def test_a_cancel_after_the_final_response_carries_where_it_was_released() -> None:
    log, window = _window()
    _write(log, "session/prompt", {"sessionId": S}, 7)
    window.requested(S)
    _agent(log)
    window.answered(S, final=True)
    cancel = _write(log, "session/cancel", {"sessionId": S})
    assert cancel["turn_done"] == 1
    withdraw = _write(log, "$/cancel_request", {"requestId": 7})
    assert withdraw["turn_done"] == 1


def test_no_fact_while_a_request_is_open_or_the_response_called_a_tool() -> None:
    log, window = _window()
    _write(log, "session/prompt", {"sessionId": S}, 7)
    window.requested(S)
    window.answered(S, final=False)  # a tool call: the agent has work left
    assert "turn_done" not in _write(log, "session/cancel", {"sessionId": S})
    window.requested(S)
    window.answered(S, final=True)
    window.requested(S)  # the agent asks again before the cancel
    assert "turn_done" not in _write(log, "session/cancel", {"sessionId": S})


def test_a_new_prompt_forgets_the_last_turn() -> None:
    log, window = _window()
    _write(log, "session/prompt", {"sessionId": S}, 7)
    window.requested(S)
    window.answered(S, final=True)
    _write(log, "session/prompt", {"sessionId": S}, 8)
    assert "turn_done" not in _write(log, "session/cancel", {"sessionId": S})


def test_a_deliberately_broken_prompt_keeps_the_last_turn() -> None:
    """The client's own breach (a prompt without its content, ``"probe": true``) starts no
    turn of the agent's: the next cancel still follows the turn the model finished (s10
    matrix, kilo: the probe #12, answered -32602, turned CANCEL-07's end-of-turn warning into
    a failure). Should the agent take it up anyway, it asks the model: that voids the fact."""
    log, window = _window()
    _write(log, "session/prompt", {"sessionId": S}, 7)
    window.requested(S)
    _agent(log)
    window.answered(S, final=True)
    _write(log, "session/prompt", {"sessionId": S}, 1000000, probe=True)
    assert _write(log, "session/cancel", {"sessionId": S})["turn_done"] == 1


def test_a_request_after_the_cancel_marks_the_next_record_once() -> None:
    log, window = _window()
    _write(log, "session/prompt", {"sessionId": S}, 7)
    window.requested(S)
    window.answered(S, final=True)
    _write(log, "session/cancel", {"sessionId": S})
    window.requested(S)
    window.requested("other")  # (no cancel of it said its turn was done)
    assert _agent(log)["model_asked"] == [S]
    assert "model_asked" not in _agent(log)
