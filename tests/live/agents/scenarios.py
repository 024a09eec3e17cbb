"""Scripted client scenarios (name -> callable(client)) for the reference agent.

Each scenario takes a freshly spawned :class:`~.client.ScriptedClient` (not initialized yet),
drives one connection through a situation (permissions answered every way, cancels at every
point, prompts while busy, two sessions, close, resume, ...) and returns a dict of facts for
the tests' own assertions. The transcript stays in ``client.proc.transcript``; write it with
``client.save(path)``.

``SCENARIOS`` only contains scenarios in which the *client* follows the protocol, so a correct
agent's traces must pass ``acp-model check`` with zero failures and zero warnings.
``ODD_CLIENT_SCENARIOS`` deliberately send garbage or break client-side rules (late/duplicate
permission answers, unoffered option ids, ...) to show the agent survives; expect client-side
findings from the checker on those.

Usage::

    from tests.live.agents.scenarios import SCENARIOS, run_scenario
    path = run_scenario("cancel_during_permission", "real", tmp_path)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .client import (
    ScriptedClient,
    flatten,
    is_idle,
    is_permission_request,
    two_permissions,
    update_of,
    with_permission,
    without_permission,
)

Facts = dict[str, Any]
Scenario = Callable[[ScriptedClient], Facts]


def _setup(c: ScriptedClient, sessions: int = 1) -> list[str]:
    c.initialize()
    return [c.new_session() for _ in range(sessions)]


def _perm_turn(c: ScriptedClient, how: str) -> Facts:
    (sid,) = _setup(c)
    text = c.prompt_text(with_permission)
    start = c.mark()
    idle = c.run_turn(sid, text, how)
    return {"sid": sid, "idle": idle, "start": start}


def single_prompt(c: ScriptedClient) -> Facts:
    (sid,) = _setup(c)
    idle = c.run_turn(sid, c.prompt_text(without_permission))
    return {"sid": sid, "idles": [idle]}


def sequential_prompts(c: ScriptedClient) -> Facts:
    (sid,) = _setup(c)
    idles = [c.run_turn(sid, f"step {n}: keep going") for n in range(4)]
    c.quiesce()
    return {"sid": sid, "idles": idles}


def permission_allow(c: ScriptedClient) -> Facts:
    return _perm_turn(c, "allow")


def permission_allow_always(c: ScriptedClient) -> Facts:
    return _perm_turn(c, "allow_always")


def permission_reject(c: ScriptedClient) -> Facts:
    return _perm_turn(c, "reject")


def permission_reject_always(c: ScriptedClient) -> Facts:
    return _perm_turn(c, "reject_always")


def permission_cancelled_outcome(c: ScriptedClient) -> Facts:
    return _perm_turn(c, "cancelled")


def permission_error(c: ScriptedClient) -> Facts:
    return _perm_turn(c, "error")


def permission_error_cancelled(c: ScriptedClient) -> Facts:
    return _perm_turn(c, "error_cancelled")


def permission_custom_outcome(c: ScriptedClient) -> Facts:
    return _perm_turn(c, "custom")


def two_permissions_at_once(c: ScriptedClient) -> Facts:
    """Two permission requests outstanding together (PERM-13); one allowed, one rejected."""
    (sid,) = _setup(c)
    text = c.prompt_text(two_permissions)
    start = c.mark()
    rid = c.send_prompt(sid, text)
    c.wait_response(rid, start)
    first = c.wait_permission(sid, start)
    second = c.wait(lambda m: is_permission_request(m, sid) and m["id"] != first["id"], start)
    c.answer(second, "reject")
    c.answer(first, "allow")
    # From the prompt on: the idle may already have arrived while we answered.
    idle = c.drive(sid, start)
    return {"sid": sid, "idle": idle, "perms": [first["id"], second["id"]]}


def cancel_while_running(c: ScriptedClient) -> Facts:
    """Cancel right after acceptance: mid-turn in real/slow timing, maybe after it in fast."""
    (sid,) = _setup(c)
    c.prompt(sid, c.prompt_text(without_permission))
    c.cancel(sid)
    idle = c.wait_idle(sid, 0)
    return {"sid": sid, "idle": idle}


def cancel_during_permission(c: ScriptedClient) -> Facts:
    """Cancel while the agent waits for a permission: the turn must end cancelled."""
    (sid,) = _setup(c)
    start = c.mark()
    c.prompt(sid, c.prompt_text(with_permission))
    perm = c.wait_permission(sid, start)
    c.cancel(sid)
    # its response before the idle proves the agent read the cancel during the turn
    probe = c.proc.calls.request("session/list", {})
    c.answer(perm, "cancelled")
    idle = c.wait_idle(sid, start)
    c.wait_response(probe, start)
    c.quiesce()
    return {"sid": sid, "idle": idle, "perm": perm["id"]}


def cancel_during_permission_twice(c: ScriptedClient) -> Facts:
    """Two turns cancelled during a permission: the agent alternates A-14 (i) drop and
    (ii) `$/cancel_request`; the client answers (i) with the cancelled outcome and (ii) with
    error -32800 once the `$/cancel_request` arrived."""
    (sid,) = _setup(c)
    idles, announced = [], []
    for n in range(2):
        start = c.mark()
        c.prompt(sid, c.prompt_text(with_permission, tag=f"turn{n}"))
        perm = c.wait_permission(sid, start)
        c.cancel(sid)
        if n == 0:
            c.answer(perm, "cancelled")
        else:
            c.wait(
                lambda m, p=perm: (
                    m.get("method") == "$/cancel_request" and m["params"]["requestId"] == p["id"]
                ),
                start,
            )
            c.answer(perm, "error_cancelled")
        idles.append(c.wait_idle(sid, start))
        announced.append(
            c.index_of(
                lambda m: isinstance(m, dict) and m.get("method") == "$/cancel_request", start
            )
            is not None
        )
    c.quiesce()
    return {"sid": sid, "idles": idles, "announced": announced}


def cancel_before_acceptance(c: ScriptedClient) -> Facts:
    """Prompt and cancel in one write: the agent reads the cancel before accepting (A-10)."""
    (sid,) = _setup(c)
    start = c.mark()
    rid = c.prompt_then_cancel(sid, c.prompt_text(without_permission))
    response = c.wait_response(rid, start)
    idle = c.wait_idle(sid, start) if "result" in response else None
    c.quiesce()
    return {"sid": sid, "response": response, "idle": idle}


def cancel_twice(c: ScriptedClient) -> Facts:
    (sid,) = _setup(c)
    start = c.mark()
    c.prompt(sid, c.prompt_text(with_permission))
    perm = c.wait_permission(sid, start)
    c.cancel(sid)
    c.cancel(sid)
    c.answer(perm, "cancelled")
    idle = c.wait_idle(sid, start)
    c.cancel(sid)  # and once more after the idle: a no-op
    c.quiesce()
    return {"sid": sid, "idle": idle, "start": start}


def cancel_while_idle(c: ScriptedClient) -> Facts:
    """A cancel with no foreground work is a no-op and must not affect the next turn (A-04)."""
    (sid,) = _setup(c)
    first = c.run_turn(sid, c.prompt_text(without_permission))
    mark = c.mark()
    c.cancel(sid)
    quiesced = c.quiesce()
    quiet_after_cancel = not flatten(c.records[mark:quiesced], "a2c")
    second = c.run_turn(sid, c.prompt_text(without_permission, tag="next"))
    return {"sid": sid, "idles": [first, second], "quiet": quiet_after_cancel}


def cancel_then_prompt(c: ScriptedClient) -> Facts:
    """Cancel during a permission and immediately send the next prompt: the cancel must end
    the first turn only."""
    (sid,) = _setup(c)
    start = c.mark()
    c.prompt(sid, c.prompt_text(with_permission))
    perm = c.wait_permission(sid, start)
    c.cancel(sid)
    c.answer(perm, "cancelled")
    rid = c.send_prompt(sid, c.prompt_text(without_permission, tag="after"))
    first = c.wait_idle(sid, start)
    c.wait_response(rid, start)
    second_start = c.index_of(lambda m: is_idle(m, sid), start)
    assert second_start is not None
    second = c.drive(sid, second_start + 1)
    return {"sid": sid, "idles": [first, second]}


def prompt_while_busy(c: ScriptedClient) -> Facts:
    """A second prompt while the turn waits on a permission joins the turn (A-01)."""
    (sid,) = _setup(c)
    start = c.mark()
    c.prompt(sid, c.prompt_text(with_permission))
    perm = c.wait_permission(sid, start)
    rid = c.send_prompt(sid, c.prompt_text(without_permission, tag="busy"))
    response = c.wait_response(rid, start)
    c.answer(perm, "allow")
    idle = c.drive(sid, start)
    c.quiesce()
    return {"sid": sid, "idle": idle, "response": response, "start": start}


def prompt_while_running(c: ScriptedClient) -> Facts:
    """Two prompts in one write: the second is read while the first is starting."""
    (sid,) = _setup(c)
    start = c.mark()
    texts = [c.prompt_text(without_permission, tag=t) for t in ("one", "two")]
    first = c.proc.calls._new_id()
    second = c.proc.calls._new_id()
    c.proc.send_many(
        [
            {"jsonrpc": "2.0", "id": rid, "method": "session/prompt",
             "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}}
            for rid, text in ((first, texts[0]), (second, texts[1]))
        ]
    )  # fmt: skip
    c.wait_response(first, start)
    c.wait_response(second, start)
    idle = c.drive(sid, start)
    c.quiesce()
    return {"sid": sid, "idle": idle, "start": start}


def two_sessions(c: ScriptedClient) -> Facts:
    """Both sessions blocked on permissions; cancel one, allow the other."""
    a, b = _setup(c, 2)
    start = c.mark()
    c.prompt(a, c.prompt_text(with_permission, tag="a"))
    c.prompt(b, c.prompt_text(with_permission, tag="b"))
    perm_a = c.wait_permission(a, start)
    perm_b = c.wait_permission(b, start)
    c.cancel(a)
    c.answer(perm_a, "cancelled")
    c.answer(perm_b, "allow")
    idle_a = c.wait_idle(a, start)
    idle_b = c.drive(b, start)
    return {"sessions": [a, b], "idles": [idle_a, idle_b]}


def two_sessions_interleaved(c: ScriptedClient) -> Facts:
    a, b = _setup(c, 2)
    start = c.mark()
    c.send_prompt(a, c.prompt_text(without_permission, tag="left"))
    c.send_prompt(b, c.prompt_text(without_permission, tag="right"))
    return {"sessions": [a, b], "idles": [c.drive(a, start), c.drive(b, start)]}


def close_during_turn(c: ScriptedClient) -> Facts:
    """session/close while blocked on a permission: cancelled idle, then `{}` (A-19)."""
    (sid,) = _setup(c)
    start = c.mark()
    c.prompt(sid, c.prompt_text(with_permission))
    perm = c.wait_permission(sid, start)
    close_id = c.proc.calls.request("session/close", {"sessionId": sid})
    c.answer(perm, "cancelled")
    response = c.wait_response(close_id, start)
    idle = c.wait_idle(sid, start)
    after = c.mark()
    rid = c.send_prompt(sid, "are you still there?")
    rejected = c.wait_response(rid, after)
    return {"sid": sid, "idle": idle, "close": response, "after_close": rejected}


def resume_and_list(c: ScriptedClient) -> Facts:
    (sid,) = _setup(c)
    c.run_turn(sid, c.prompt_text(without_permission))
    listed = c.proc.calls.call("session/list", {})
    start = c.mark()
    plain = c.proc.calls.call("session/resume", {"sessionId": sid, "cwd": c.cwd})
    no_replay = len([m for m in c.a2c(start) if m.get("method") == "session/update"])
    start = c.mark()
    replayed = c.proc.calls.call(
        "session/resume", {"sessionId": sid, "cwd": c.cwd, "replayFrom": {"type": "start"}}
    )
    replay = [update_of(m) for m in c.a2c(start) if m.get("method") == "session/update"]
    idle = c.run_turn(sid, c.prompt_text(without_permission, tag="again"))
    return {"sid": sid, "list": listed, "resume": [plain, replayed], "no_replay": no_replay,
            "replay": replay, "idle": idle}  # fmt: skip


SCENARIOS: dict[str, Scenario] = {
    f.__name__: f
    for f in (
        single_prompt,
        sequential_prompts,
        permission_allow,
        permission_allow_always,
        permission_reject,
        permission_reject_always,
        permission_cancelled_outcome,
        permission_error,
        permission_error_cancelled,
        permission_custom_outcome,
        two_permissions_at_once,
        cancel_while_running,
        cancel_during_permission,
        cancel_during_permission_twice,
        cancel_before_acceptance,
        cancel_twice,
        cancel_while_idle,
        cancel_then_prompt,
        prompt_while_busy,
        prompt_while_running,
        two_sessions,
        two_sessions_interleaved,
        close_during_turn,
        resume_and_list,
    )
}


# ----------------------------------------------------------------- odd clients

GARBAGE_LINES: list[bytes] = [
    b"this is not json",
    b"\xff\xfe\x00 invalid utf-8 \xc3\x28",
    b'{"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp"',  # cut
    b"[]",
    b"42",
    b'"a string"',
    b"null",
    b"[1, 2, 3]",
    b'{"id": 900, "method": "session/list"}',  # no jsonrpc
    b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "session/list"}',  # bad id type
    b'{"jsonrpc": "2.0", "id": 901, "method": 5}',
    b'{"jsonrpc": "2.0", "id": 902, "method": "session/list", "params": "nope"}',
    b'{"jsonrpc": "2.0", "id": 903}',
    b'{"jsonrpc": "2.0", "id": 904, "method": "no/such/method"}',
    b'{"jsonrpc": "2.0", "id": 905, "method": "_vendor/unknown", "params": {}}',
    b'{"jsonrpc": "2.0", "method": "no/such/notification", "params": {}}',
    b'{"jsonrpc": "2.0", "id": 777, "result": {"outcome": {"outcome": "cancelled"}}}',
    b'{"jsonrpc": "2.0", "id": 906, "method": "session/prompt", "params": {"sessionId": "nope",'
    b' "prompt": []}}',
    b'{"jsonrpc": "2.0", "id": 907, "method": "session/new", "params": {"cwd": "relative/dir"}}',
    b'{"jsonrpc": "2.0", "id": 908, "method": "session/cancel", "params": {"sessionId": "x"}}',
    b'[{"jsonrpc": "2.0", "id": 909, "method": "session/list"}, 7,'
    b' {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x"}}]',
    b'[{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x"}}]',
    b'{"jsonrpc": "2.0", "id": 910, "method": "initialize", "params": {"protocolVersion": 2}}',
]


def garbage(c: ScriptedClient, huge_bytes: int = 40 * 1024 * 1024) -> Facts:
    """Garbage of every kind, before and after initialize; the agent must keep working."""
    before = c.mark()
    c.proc.send_raw(b'{"jsonrpc": "2.0", "id": 899, "method": "session/list", "params": {}}')
    c.wait_response(899, before)
    c.initialize()
    start = c.mark()
    for line in GARBAGE_LINES:
        c.proc.send_raw(line)
    c.proc.send_raw(
        b'{"jsonrpc": "2.0", "id": 911, "method": "x", "pad": "' + b"a" * huge_bytes + b'"}'
    )
    c.quiesce()  # everything before it has been processed
    sid = c.new_session()
    idle = c.run_turn(sid, c.prompt_text(with_permission))
    replies = flatten(c.records[start:], "a2c")
    return {"sid": sid, "idle": idle, "replies": replies, "alive": c.proc.alive}


def late_permission_answers(c: ScriptedClient) -> Facts:
    """After a cancel, answer the dropped permission late with `allow`, then twice more; the
    agent must ignore all of it and keep the turn cancelled."""
    (sid,) = _setup(c)
    start = c.mark()
    c.prompt(sid, c.prompt_text(with_permission))
    perm = c.wait_permission(sid, start)
    c.cancel(sid)
    idle = c.wait_idle(sid, start)
    c.answer(perm, "allow")
    c.answer(perm, "allow")
    c.proc.calls.respond(12345, result={"outcome": {"outcome": "cancelled"}})
    c.quiesce()
    after = [m for m in c.a2c(start) if m.get("method") == "session/update"]
    second = c.run_turn(sid, c.prompt_text(without_permission, tag="late"))
    return {"sid": sid, "idle": idle, "perm": perm, "updates": after, "second": second}


def unknown_option(c: ScriptedClient) -> Facts:
    """A selected optionId that was never offered (A-12) is a rejection."""
    return _perm_turn(c, "unknown_option")


def version_negotiation(c: ScriptedClient) -> Facts:
    result = c.initialize(version=7)
    return {"result": result}


ODD_CLIENT_SCENARIOS: dict[str, Scenario] = {
    f.__name__: f for f in (garbage, late_permission_answers, unknown_option, version_negotiation)
}


def run_scenario(
    name: str, timing: str, out_dir: str | Path, *, mutant: str | None = None, seed: int = 0
) -> Path:
    """Spawn the reference agent (or a mutant), run one scenario, write its trace; return it."""
    scenario = SCENARIOS.get(name) or ODD_CLIENT_SCENARIOS[name]
    client = ScriptedClient.spawn(mutant=mutant, timing=timing, seed=seed)
    try:
        scenario(client)
    finally:
        client.close()
        path = client.save(Path(out_dir) / f"{name}-{timing}.jsonl")
    return path
