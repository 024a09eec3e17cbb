"""The scripted model's timing as a dimension of the program: drawn by Hypothesis, carried by
the prompt's script into the replay file, applied by the model server, and dropped by the
minimizer where the failure does not need it."""

from __future__ import annotations

import dataclasses
import http.client
import json
import threading
import time
from typing import Any

import pytest
from hypothesis import find, settings
from hypothesis.errors import NoSuchExample

from acp_model.fuzzing import shrink
from acp_model.fuzzing.actions import Action, Cancel, NewSession, Prompt, Wait, from_json
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.machine import model_scripts
from acp_model.fuzzing.program import Program
from acp_model.fuzzing.replay import ReplayOutcome
from acp_model.fuzzing.schedule import Schedule
from acp_model.llm.script import ScriptError, Stall, Text, Tools, reply_from_json
from acp_model.llm.server import ScriptedModel, tag_text

QUICK = settings(database=None, max_examples=2000)


def _timed_tools(script: tuple[Any, ...]) -> bool:
    return any(isinstance(r, Tools) and r.pause_ms and r.first_byte_ms for r in script)


def test_a_drawn_timing_is_in_the_program_and_its_replay_file() -> None:
    """Hypothesis draws a time to first byte and a pause before a tool call; the prompt that
    carries the script writes both into the replay file's action, which reads back the same
    and says them to people."""
    script = find(model_scripts(), _timed_tools, settings=QUICK)
    prompt = Prompt(0, [{"type": "text", "text": "fix"}], model=script)
    stored = json.loads(json.dumps(Program((NewSession(), prompt)).actions[1].to_json()))
    tools = next(r for r in stored["model"] if r["reply"] == "tools" and "pause_ms" in r)
    assert tools["pause_ms"] > 0 and tools["first_byte_ms"] > 0
    assert from_json(stored) == prompt
    assert "ms pause" in prompt.describe() and "first byte after" in prompt.describe()


def test_without_model_timing_nothing_is_drawn_and_old_files_read_as_untimed() -> None:
    with pytest.raises(NoSuchExample):
        find(model_scripts(timing=False), lambda s: any(r.timed for r in s), settings=QUICK)
    old = reply_from_json({"reply": "tools", "tool": "shell", "count": 1})
    assert not old.timed and "pause_ms" not in old.to_json()
    assert Text(2, 50, first_byte_ms=300).untimed() == Text(2, 0)
    with pytest.raises(ScriptError, match="milliseconds"):
        Stall(first_byte_ms=-1)


TOOLS = [{"type": "function", "function": {
    "name": "exec_cmd", "description": "Run a program line in the project.",
    "parameters": {"type": "object", "required": ["cmdline"],
                   "properties": {"cmdline": {"type": "string"}}}}}]


def test_the_scripted_model_starts_late_and_pauses_before_its_tool_call() -> None:
    """The response's headers come no sooner than its time to first byte, the tool call no
    sooner than the pause after them (lower bounds: a busy machine only adds)."""
    with ScriptedModel("openai-chat", workspace="/tmp") as model:
        tag = model.register((Tools("shell", 1, pause_ms=400, first_byte_ms=300),))
        body = json.dumps({"model": "m", "stream": True, "tools": TOOLS, "messages": [
            {"role": "user", "content": f"hi {tag_text(tag)}"}]})
        conn = http.client.HTTPConnection("127.0.0.1", model.port, timeout=20)
        start = time.monotonic()
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        headers = time.monotonic() - start
        call = next(time.monotonic() - start for line in resp if b"tool_calls" in line)
        conn.close()
    # Both bounds from the request's start: the server sleeps its first byte, sends the
    # headers, then sleeps the pause; when the headers reach the client is no server fact.
    assert headers >= 0.3, headers
    assert call >= 0.3 + 0.4, (headers, call)


class _NeedsCancelInPause:
    """Stands in for fresh-process replays: the failure shows when the program cancels a turn
    whose model pauses before its tool call (``pause``: only then), whatever else it has."""

    def __init__(self, pause: bool) -> None:
        self.pause = pause
        self.lock = threading.Lock()
        self.tried: list[list[Action]] = []

    def __call__(self, cfg: FuzzConfig, actions: list[Action], rule: str | None,
                 abort: threading.Event | None = None, **kw: Any) -> ReplayOutcome:
        with self.lock:
            self.tried.append(actions)
        prompts = [a for a in actions if isinstance(a, Prompt)]
        shows = any(isinstance(a, Cancel) for a in actions) and prompts and (
            not self.pause or any(isinstance(r, Tools) and r.pause_ms for r in prompts[0].model))
        return ReplayOutcome(bool(shows), [], [], None,
                             performed=len(actions) if shows else None,
                             schedule=Schedule((), len(actions)),
                             held=kw.get("schedule") is not None)


def _program() -> list[Action]:
    model = (Tools("shell", 2, pause_ms=500, first_byte_ms=1000), Text(3, 300, first_byte_ms=50))
    return [NewSession(), Prompt(0, [{"type": "text", "text": "fix the tests"}], model=model),
            Wait(0, "tick"), Cancel(0, True)]


def _delays(program: list[Action]) -> list[tuple[int, ...]]:
    return [tuple(getattr(r, f.name) for f in dataclasses.fields(r) if f.name.endswith("_ms"))
            for a in program if isinstance(a, Prompt) for r in a.model]


@pytest.mark.parametrize("needs_pause", [False, True])
def test_minimizing_drops_a_delay_the_failure_does_not_need(
        monkeypatch: pytest.MonkeyPatch, needs_pause: bool) -> None:
    """Delays are content like any other: the minimizer tries the program without them and
    keeps that when it still fails; a pause the failure needs stays."""
    fake = _NeedsCancelInPause(needs_pause)
    monkeypatch.setattr(shrink, "replay_once", fake)
    cfg = FuzzConfig(["true"], model_api="openai-chat")
    got = shrink.delta_debug(cfg, "CANCEL-07", _program(), time.monotonic() + 60)
    prompt = next(a for a in got if isinstance(a, Prompt))
    if needs_pause:
        assert [r.pause_ms for r in prompt.model if isinstance(r, Tools)] == [500], got
        assert all(not r.first_byte_ms for r in prompt.model), _delays(got)
    else:
        assert all(not r.timed for r in prompt.model), _delays(got)

