"""Smoke tests for the example ACP v2 agents built on the official SDKs (examples/sdk-*).

Each agent runs as a real subprocess behind :class:`acp_model.transport.AgentProcess`. The tests
check that the basic prompt lifecycle shows up on the wire (prompt answered, user message,
running, tool call guarded by a permission request, usage, idle with a stop reason, cancel ending
``cancelled``). They deliberately do not assert what the SDKs legitimately do differently from
the stable v2 text (for example the prompt response carrying a ``messageId``, or the user
message arriving before that response); docs/sdk-agents.md lists those differences, and
``test_documented_sdk_behaviour`` pins the ones observed so the document stays true.

An agent whose setup has not been run is skipped (``bash examples/sdk-python/setup.sh``,
``bash examples/sdk-typescript/setup.sh``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acp_model.fuzzing.transport import AgentProcess, is_response_to
from acp_model.oracle.offline import check_records

pytestmark = pytest.mark.external  # the SDK example agents (make examples: a venv, npm ci)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TIMEOUT = 10.0  # generous: a loaded 2-core machine; a healthy turn takes ~0.2 s


@dataclass(frozen=True)
class AgentSpec:
    name: str
    argv: list[str]
    missing: str | None  # why the agent cannot run here, or None


def _python_spec() -> AgentSpec:
    python = EXAMPLES / "sdk-python" / ".venv" / "bin" / "python"
    missing = None
    if not python.exists():
        missing = "examples/sdk-python/.venv missing: run bash examples/sdk-python/setup.sh"
    return AgentSpec("python", [str(python), str(EXAMPLES / "sdk-python" / "agent.py")], missing)


def _typescript_spec() -> AgentSpec:
    here = EXAMPLES / "sdk-typescript"
    node = shutil.which("node")
    missing = None
    if node is None:
        missing = "node not found (Node.js >= 20 is needed for the TypeScript SDK agent)"
    elif not (here / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json").exists():
        missing = (
            "examples/sdk-typescript/node_modules missing: "
            "run bash examples/sdk-typescript/setup.sh"
        )
    return AgentSpec("typescript", [node or "node", str(here / "agent.mjs")], missing)


SPECS = {spec.name: spec for spec in (_python_spec(), _typescript_spec())}


def _update(msg: Any, session_id: str | None = None) -> dict[str, Any] | None:
    """The ``update`` object of a session/update notification (optionally for one session)."""
    if not isinstance(msg, dict) or msg.get("method") != "session/update" or "id" in msg:
        return None
    params = msg.get("params") or {}
    if session_id is not None and params.get("sessionId") != session_id:
        return None
    update = params.get("update")
    return update if isinstance(update, dict) else None


def _is_stop(session_id: str) -> Callable[[Any], bool]:
    def pred(msg: Any) -> bool:
        update = _update(msg, session_id)
        return bool(
            update
            and update.get("sessionUpdate") == "state_update"
            and update.get("state") == "idle"
            and update.get("stopReason")
        )

    return pred


def _is_permission(session_id: str) -> Callable[[Any], bool]:
    def pred(msg: Any) -> bool:
        return (
            isinstance(msg, dict)
            and msg.get("method") == "session/request_permission"
            and "id" in msg
            and (msg.get("params") or {}).get("sessionId") == session_id
        )

    return pred


class Client:
    """A tiny scripted ACP client over AgentProcess (indices are transcript positions)."""

    def __init__(self, agent: AgentProcess) -> None:
        self.agent = agent

    def initialize(self) -> dict[str, Any]:
        return self.agent.calls.call(
            "initialize",
            {
                "protocolVersion": 2,
                "capabilities": {},
                "info": {"name": "acp-model-smoke", "version": "0"},
            },
            timeout=TIMEOUT,
        )

    def new_session(self) -> str:
        result = self.agent.calls.call("session/new", {"cwd": str(ROOT), "mcpServers": []}, TIMEOUT)
        return result["sessionId"]

    def prompt(self, session_id: str, text: str) -> tuple[int, int]:
        """Send a prompt; returns (transcript index of the request, request id)."""
        start = self.agent.mark()
        request_id = self.agent.calls.request(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
        )
        return start, request_id

    def wait(self, pred: Callable[[Any], bool], start: int, what: str) -> int:
        index = self.agent.calls.wait_for_index(pred, TIMEOUT, start=start)
        assert index is not None, f"{what} not seen; stderr:\n{self.agent.stderr_text()}"
        return index

    def msg(self, index: int) -> Any:
        return self.agent.records()[index]["msg"]

    def answer_permission(self, index: int, outcome: dict[str, Any]) -> None:
        self.agent.calls.respond(self.msg(index)["id"], {"outcome": outcome})

    def a2c(self, start: int, end: int | None = None) -> list[tuple[int, Any]]:
        records = self.agent.records()
        stop = len(records) if end is None else end + 1
        return [
            (i, r["msg"])
            for i, r in enumerate(records[start:stop], start)
            if r["dir"] == "a2c" and "msg" in r
        ]

    def updates(self, session_id: str, start: int, end: int) -> list[tuple[int, dict[str, Any]]]:
        out = []
        for i, msg in self.a2c(start, end):
            update = _update(msg, session_id)
            if update is not None:
                out.append((i, update))
        return out


def _barrier(c: Client) -> int:
    """Send a request the agent must answer and wait for its answer: stdio is FIFO, so every
    message the agent wrote before it read the request is in the transcript by then (a causal
    wait, where a sleep would only make absence likely)."""
    start = c.agent.mark()
    rid = c.agent.calls.request("_acp_model/sync", {})
    c.wait(lambda m: is_response_to(m, rid), start, "the barrier's answer")
    return rid


@pytest.fixture(params=sorted(SPECS))
def client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Client]:
    spec = SPECS[request.param]
    if spec.missing:
        pytest.skip(spec.missing)
    env = dict(os.environ)
    # Wide enough that a cancel sent on seeing a chunk lands mid-turn on a loaded machine.
    env["ACP_EXAMPLE_DELAY_MS"] = "50"
    agent = AgentProcess(spec.argv, cwd=ROOT, env=env)
    try:
        yield Client(agent)
    finally:
        # Keep the wire for post-mortems (pytest keeps the last few tmp dirs).
        agent.write_trace(tmp_path / f"{spec.name}.jsonl")
        agent.close()


def _assert_turn(
    c: Client,
    session_id: str,
    start: int,
    request_id: int,
    stop_reason: str,
    *,
    tool_status: str | None,
) -> list[dict[str, Any]]:
    """Wait for the turn's stop and check the lifecycle on the wire; returns its updates."""
    stop = c.wait(_is_stop(session_id), start, f"idle with stopReason in {session_id}")
    response = c.wait(lambda m: is_response_to(m, request_id), start, "prompt response")
    assert "result" in c.msg(response), c.msg(response)
    assert response < stop, "prompt answered only after the turn stopped"
    updates = c.updates(session_id, start, stop)
    kinds = [u["sessionUpdate"] for _, u in updates]
    states = [u.get("state") for _, u in updates if u["sessionUpdate"] == "state_update"]
    assert updates[-1][1]["stopReason"] == stop_reason, updates[-1]

    user = [u for _, u in updates if u["sessionUpdate"] in ("user_message", "user_message_chunk")]
    assert user and all(u.get("messageId") for u in user), kinds
    # Newer drafts put the inserted messageId in the response; if present it must match.
    receipt = c.msg(response)["result"].get("messageId")
    if receipt is not None:
        assert {u["messageId"] for u in user} == {receipt}
    assert states[0] == "running", states
    assert states[-1] == "idle" and states.count("idle") == 1, states
    chunks = [u for _, u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert all(u.get("messageId") for u in chunks), chunks

    tools = [u for _, u in updates if u["sessionUpdate"] == "tool_call_update"]
    if tool_status is None:
        assert tools == [], tools
    else:
        assert tools, kinds
        first = tools[0]
        assert first["status"] == "pending" and first.get("title") and first.get("kind"), first
        assert tools[-1]["status"] == tool_status, tools
    if stop_reason != "cancelled":
        assert chunks, kinds
        assert "usage_update" in kinds, kinds
    return [u for _, u in updates]


def _permission_turn(c: Client, session_id: str, outcome: dict[str, Any]) -> tuple[int, int]:
    """Prompt, wait for requires_action + the permission request, answer it."""
    start, request_id = c.prompt(session_id, "Please count the characters of this prompt.")
    perm = c.wait(_is_permission(session_id), start, "session/request_permission")
    params = c.msg(perm)["params"]
    assert params["title"] and params["options"], params
    assert params.get("subject", {}).get("type") == "tool_call", params
    before = [u.get("state") for _, u in c.updates(session_id, start, perm) if "state" in u]
    assert before[-1:] == ["requires_action"], before
    c.answer_permission(perm, outcome)
    return start, request_id


def test_prompts_allowed_and_rejected(client: Client) -> None:
    c = client
    init = c.initialize()
    assert init["protocolVersion"] == 2
    assert isinstance(init["capabilities"].get("session"), dict)
    assert init["info"]["name"] and init["info"]["version"]
    s1, s2 = c.new_session(), c.new_session()
    assert s1 != s2

    start, rid = _permission_turn(c, s1, {"outcome": "selected", "optionId": "allow-once"})
    updates = _assert_turn(c, s1, start, rid, "end_turn", tool_status="completed")
    statuses = [u.get("status") for u in updates if u["sessionUpdate"] == "tool_call_update"]
    assert statuses == ["pending", "in_progress", "completed"], statuses
    assert any(u["sessionUpdate"] == "tool_call_content_chunk" for u in updates)
    states = [u["state"] for u in updates if u["sessionUpdate"] == "state_update"]
    assert states == ["running", "requires_action", "running", "idle"], states

    start, rid = _permission_turn(c, s2, {"outcome": "selected", "optionId": "reject-once"})
    updates = _assert_turn(c, s2, start, rid, "end_turn", tool_status="failed")
    statuses = [u.get("status") for u in updates if u["sessionUpdate"] == "tool_call_update"]
    assert "in_progress" not in statuses and "completed" not in statuses, statuses


def test_concurrent_sessions_and_held_prompt(client: Client) -> None:
    c = client
    c.initialize()
    s1, s2 = c.new_session(), c.new_session()
    # Two sessions at once, both blocked on permission at the same time.
    a_start, a_id = c.prompt(s1, "first session")
    b_start, b_id = c.prompt(s2, "second session")
    a_perm = c.wait(_is_permission(s1), a_start, "permission s1")
    b_perm = c.wait(_is_permission(s2), b_start, "permission s2")
    c.answer_permission(b_perm, {"outcome": "selected", "optionId": "allow-once"})
    c.answer_permission(a_perm, {"outcome": "selected", "optionId": "allow-once"})
    _assert_turn(c, s1, a_start, a_id, "end_turn", tool_status="completed")
    _assert_turn(c, s2, b_start, b_id, "end_turn", tool_status="completed")

    # A prompt sent while the session is busy is held until the first turn's idle.
    first_start, first_id = c.prompt(s1, "no tools please")
    second_start, second_id = c.prompt(s1, "no tools again")
    first_stop = c.wait(_is_stop(s1), first_start, "first idle")
    second_answer = c.wait(lambda m: is_response_to(m, second_id), second_start, "held answer")
    assert second_answer > first_stop
    _assert_turn(c, s1, first_start, first_id, "end_turn", tool_status=None)
    _assert_turn(c, s1, first_stop + 1, second_id, "end_turn", tool_status=None)


ATTEMPTS = 5  # turns a cancel sent on the first chunk gets to land mid-turn


def test_cancel_mid_turn(client: Client) -> None:
    c = client
    c.initialize()
    sid = c.new_session()

    # 1. Cancel while the permission request is pending; the client answers it "cancelled".
    start, rid = c.prompt(sid, "count this, then get cancelled")
    perm = c.wait(_is_permission(sid), start, "permission")
    c.agent.calls.notify("session/cancel", {"sessionId": sid})
    c.answer_permission(perm, {"outcome": "cancelled"})
    updates = _assert_turn(c, sid, start, rid, "cancelled", tool_status="cancelled")
    assert "running" in [u.get("state") for u in updates]
    stop = c.wait(_is_stop(sid), start, "cancelled idle")

    # 2. Cancel while the agent streams text (before any tool call). Its window is the
    # agent's pauses between chunks, which a loaded machine can outrun: a turn that ended
    # before the cancel came is tried again (a cancel while idle changes nothing), until a
    # cancel lands mid-turn. An agent that ignored cancels would never get there.
    for _ in range(ATTEMPTS):
        start, rid = c.prompt(sid, "say something, no tools")
        c.wait(
            lambda m: (_update(m, sid) or {}).get("sessionUpdate") == "agent_message_chunk",
            start,
            "first agent chunk",
        )
        c.agent.calls.notify("session/cancel", {"sessionId": sid})
        stop = c.wait(_is_stop(sid), start, "idle")
        reason = _update(c.msg(stop), sid)["stopReason"]  # type: ignore[index]
        if reason == "cancelled":
            break
        assert reason == "end_turn", reason
    _assert_turn(c, sid, start, rid, "cancelled", tool_status=None)

    # 3. The cancels do not leak into the next turn, and nothing follows a cancelled idle.
    start, rid = c.prompt(sid, "a normal turn, no tools")
    _assert_turn(c, sid, start, rid, "end_turn", tool_status=None)
    _barrier(c)  # whatever the agent wrote before reading this is in the transcript
    late = [u for _, u in c.updates(sid, stop + 1, None) if u.get("stopReason") == "cancelled"]
    assert late == [], late
    assert c.agent.alive


@pytest.mark.parametrize("case", ["old-version", "batch"])
def test_documented_sdk_behaviour(client: Client, case: str) -> None:
    """Pins the SDK deviations described in docs/sdk-agents.md (update both together)."""
    c = client
    name = "python" if "sdk-python" in " ".join(c.agent.argv) else "typescript"
    if case == "old-version":
        start = c.agent.mark()
        request_id = c.agent.calls.request(
            "initialize",
            {"protocolVersion": 1, "capabilities": {}, "info": {"name": "old", "version": "0"}},
        )
        index = c.wait(lambda m: is_response_to(m, request_id), start, "initialize answer")
        error = c.msg(index).get("error")
        # Stable v2 text: answer with the latest supported version. Both SDKs refuse instead.
        assert error is not None, c.msg(index)
        assert error["code"] == {"python": -32602, "typescript": -32022}[name], error
        return
    c.initialize()
    start = c.agent.mark()
    c.agent.send([{"jsonrpc": "2.0", "id": 900, "method": "session/list", "params": {}}])
    if name == "typescript":
        index = c.wait(lambda m: isinstance(m, dict) and "error" in m, start, "batch error")
        assert c.msg(index)["id"] is None and c.msg(index)["error"]["code"] == -32600
    else:
        # rc3 logs "Ignoring non-object JSON-RPC message" and answers nothing (rc2 crashed).
        barrier = _barrier(c)
        assert [m for _, m in c.a2c(start) if not is_response_to(m, barrier)] == []
        assert c.agent.alive
    # Either way the connection keeps working.
    assert "sessions" in c.agent.calls.call("session/list", {}, TIMEOUT)


def test_a_cancel_read_while_idle_does_not_reach_the_next_prompt(client: Client) -> None:
    """A session/cancel sent while the session is idle, then a prompt in the same write.

    The cancel met no work, so the prompt's turn must run to its own end. The Python SDK does;
    the TypeScript SDK 2.4.0 dispatches each message through its handler chain concurrently,
    the cancel (registered last) reaches its handler after the prompt's, and the new turn ends
    ``cancelled``: docs/findings.md F5, no longer a failure (the prompt's receipt proves the
    cancel was read before that work began, not that it was handled after the prompt).
    """
    c = client
    name = "python" if "sdk-python" in " ".join(c.agent.argv) else "typescript"
    c.initialize()
    sid = c.new_session()
    start = c.agent.mark()
    cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}
    prompt = {"jsonrpc": "2.0", "id": 500, "method": "session/prompt",
              "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi, no tools"}]}}
    c.agent.send_many([cancel, prompt])
    stop = c.wait(_is_stop(sid), start, "the turn's idle")
    reason = _update(c.msg(stop), sid)["stopReason"]  # type: ignore[index]
    report = check_records(c.agent.records(), spec="auto")
    failed = {v["rule"]: v for v in report["violations"] if v["level"] == "fail"}
    if name == "python":
        assert reason == "end_turn" and "CANCEL-11" not in failed, (reason, failed)
        return
    assert reason == "cancelled", c.a2c(start)
    # the cancel and the prompt came in one write: the text does not order their handling, so
    # the cancel may have reached the new work before it showed anything: a defensible
    # behaviour, which the default accepts (docs/findings.md F5)
    assert not failed, report["violations"]
