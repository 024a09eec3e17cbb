"""Race and scenario tests for the reference agent, in fast, real and slow timing.

Every scenario's trace must (1) validate per method against the v2 schema, (2) satisfy the
suite's own lifecycle invariants (``invariants.py``) and (3) show the scenario-specific outcome
the reference agent's readings promise (A-01, A-04, A-10, A-11, A-14, A-19 ...).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acp_model.fuzzing.transport import is_response_to
from acp_model.oracle.offline import check_trace

from .client import Msg, ScriptedClient, is_idle, is_update, update_of
from .invariants import check_reference_trace
from .scenarios import GARBAGE_LINES, ODD_CLIENT_SCENARIOS, SCENARIOS
from .schema_check import check_agent_messages

Facts = dict[str, Any]

SLOW_SUBSET = (
    "cancel_while_running",
    "cancel_during_permission",
    "cancel_before_acceptance",
    "cancel_then_prompt",
    "prompt_while_busy",
    "two_sessions_interleaved",
    "close_during_turn",
)


def _updates(c: ScriptedClient, sid: str, start: int = 0) -> list[dict[str, Any]]:
    return [update_of(m) for m in c.a2c(start) if is_update(m, sid)]


def _idles(c: ScriptedClient, sid: str, start: int = 0) -> list[dict[str, Any]]:
    return [u for u in _updates(c, sid, start) if u["sessionUpdate"] == "state_update"
            and u["state"] == "idle"]  # fmt: skip


def _tool_statuses(c: ScriptedClient, sid: str, tool: str) -> list[str]:
    return [
        u["status"]
        for u in _updates(c, sid)
        if u.get("toolCallId") == tool and u["sessionUpdate"] == "tool_call_update"
        and "status" in u
    ]  # fmt: skip


def _perm_tool(c: ScriptedClient, index: int = 0) -> str:
    perms = [m for m in c.a2c() if m.get("method") == "session/request_permission"]
    return perms[index]["params"]["subject"]["toolCall"]["toolCallId"]


def _expect_permission(final: set[str], ran: bool) -> Callable[[ScriptedClient, Facts, str], None]:
    def check(c: ScriptedClient, f: Facts, timing: str) -> None:
        statuses = _tool_statuses(c, f["sid"], _perm_tool(c))
        assert ("in_progress" in statuses) == ran, statuses
        assert statuses[-1] in final, statuses
        assert f["idle"]["stopReason"] == "end_turn"

    return check


def e_single(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert [i["stopReason"] for i in f["idles"]] == ["end_turn"]


def e_sequential(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert len(f["idles"]) == 4 and all(i.get("stopReason") for i in f["idles"])
    kinds = [u["sessionUpdate"] for u in _updates(c, f["sid"])]
    idle_positions = [n for n, u in enumerate(_updates(c, f["sid"])) if u.get("state") == "idle"]
    # background updates right after the 2nd and 4th idle, while idle
    assert kinds[idle_positions[1] + 1] == "available_commands_update"
    assert kinds[idle_positions[3] + 1] == "usage_update"


def e_two_permissions(c: ScriptedClient, f: Facts, timing: str) -> None:
    allowed, rejected = _perm_tool(c, 0), _perm_tool(c, 1)
    assert "in_progress" in _tool_statuses(c, f["sid"], allowed)
    assert _tool_statuses(c, f["sid"], rejected)[-1] == "failed"
    assert "in_progress" not in _tool_statuses(c, f["sid"], rejected)
    states = [u["state"] for u in _updates(c, f["sid"]) if u["sessionUpdate"] == "state_update"]
    assert states.count("requires_action") == 1


def e_cancel_while_running(c: ScriptedClient, f: Facts, timing: str) -> None:
    # fast timing may finish before the cancel is read (A-11 race): both outcomes are legal
    allowed = {"cancelled"} if timing == "slow" else {"cancelled", "end_turn"}
    assert f["idle"]["stopReason"] in allowed


def e_cancel_during_permission(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert f["idle"]["stopReason"] == "cancelled"
    updates = _updates(c, f["sid"])
    cut = next(n for n, u in enumerate(updates) if u.get("state") == "idle")
    tool = _perm_tool(c)
    assert [u.get("status") for u in updates[:cut] if u.get("toolCallId") == tool][-1] == (
        "cancelled"
    )
    assert updates[cut + 1 :] == []
    assert _tool_statuses(c, f["sid"], tool).count("in_progress") == 0
    # A-14 (i): the first cancel with a pending permission just drops it
    assert not any(m.get("method") == "$/cancel_request" for m in c.a2c())


def e_cancel_twice_perm(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert [i["stopReason"] for i in f["idles"]] == ["cancelled", "cancelled"]
    assert f["announced"] == [False, True]  # A-14 alternates drop / $/cancel_request


def e_cancel_before_acceptance(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert "result" in f["response"]  # accepted anyway...
    allowed = {"cancelled", "end_turn"} if timing == "fast" else {"cancelled"}
    assert f["idle"]["stopReason"] in allowed  # ...and then cancelled
    kinds = [u["sessionUpdate"] for u in _updates(c, f["sid"])]
    assert kinds.index("user_message") < kinds.index("state_update")


def e_cancel_twice(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert f["idle"]["stopReason"] == "cancelled"
    assert len(_idles(c, f["sid"], f["start"])) == 1


def e_cancel_while_idle(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert f["quiet"], "a cancel with no foreground work must send nothing (A-04)"
    assert f["idles"][1]["stopReason"] != "cancelled"


def e_cancel_then_prompt(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert f["idles"][0]["stopReason"] == "cancelled"
    assert f["idles"][1]["stopReason"] != "cancelled"


def e_one_combined_turn(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert len(_idles(c, f["sid"], f["start"])) == 1  # one turn, one idle
    users = {u["messageId"] for u in _updates(c, f["sid"], f["start"])
             if u["sessionUpdate"].startswith("user_message")}  # fmt: skip
    assert len(users) == 2
    running = [u for u in _updates(c, f["sid"], f["start"]) if u.get("state") == "running"]
    resumes = [u for u in _updates(c, f["sid"], f["start"]) if u.get("state") == "requires_action"]
    assert len(running) == 1 + len(resumes)  # no second `running` for the joined prompt


def e_two_sessions(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert [i["stopReason"] for i in f["idles"]] == ["cancelled", "end_turn"]


def e_interleaved(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert [i["stopReason"] for i in f["idles"]] == ["end_turn", "end_turn"]
    if timing == "slow":  # the two turns really run concurrently
        order = [m["params"]["sessionId"] for m in c.a2c() if is_update(m)]
        switches = sum(1 for x, y in itertools.pairwise(order) if x != y)
        assert switches >= 3, order


def e_close(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert f["idle"]["stopReason"] == "cancelled"
    assert f["close"]["result"] == {}
    msgs = c.a2c()
    idle_at = next(n for n, m in enumerate(msgs) if is_idle(m, f["sid"]))
    close_at = next(n for n, m in enumerate(msgs) if m is f["close"])
    assert idle_at < close_at  # the cancelled idle precedes the close response
    assert f["after_close"]["error"]["code"] == -32602


def e_resume(c: ScriptedClient, f: Facts, timing: str) -> None:
    assert [s["sessionId"] for s in f["list"]["sessions"]] == [f["sid"]]
    assert f["resume"] == [{}, {}]
    assert f["no_replay"] == 0
    kinds = {u["sessionUpdate"] for u in f["replay"]}
    assert "user_message" in kinds and "agent_message" in kinds
    assert all("messageId" in u for u in f["replay"])


EXPECT: dict[str, Callable[[ScriptedClient, Facts, str], None]] = {
    "single_prompt": e_single,
    "sequential_prompts": e_sequential,
    "permission_allow": _expect_permission({"completed", "failed"}, ran=True),
    "permission_allow_always": _expect_permission({"completed", "failed"}, ran=True),
    "permission_reject": _expect_permission({"failed"}, ran=False),
    "permission_reject_always": _expect_permission({"failed"}, ran=False),
    "permission_cancelled_outcome": _expect_permission({"cancelled"}, ran=False),
    "permission_error": _expect_permission({"failed"}, ran=False),
    "permission_error_cancelled": _expect_permission({"failed"}, ran=False),
    "permission_custom_outcome": _expect_permission({"failed"}, ran=False),
    "two_permissions_at_once": e_two_permissions,
    "cancel_while_running": e_cancel_while_running,
    "cancel_during_permission": e_cancel_during_permission,
    "cancel_during_permission_twice": e_cancel_twice_perm,
    "cancel_before_acceptance": e_cancel_before_acceptance,
    "cancel_twice": e_cancel_twice,
    "cancel_while_idle": e_cancel_while_idle,
    "cancel_then_prompt": e_cancel_then_prompt,
    "prompt_while_busy": e_one_combined_turn,
    "prompt_while_running": e_one_combined_turn,
    "two_sessions": e_two_sessions,
    "two_sessions_interleaved": e_interleaved,
    "close_during_turn": e_close,
    "resume_and_list": e_resume,
}

CASES = (
    [(name, "fast") for name in SCENARIOS]
    + [(name, "real") for name in SCENARIOS]
    + [(name, "slow") for name in SLOW_SUBSET]
)


def test_every_scenario_has_expectations() -> None:
    assert set(EXPECT) == set(SCENARIOS)


@pytest.mark.parametrize(("name", "timing"), CASES)
def test_scenario(name: str, timing: str, tmp_path: Path) -> None:
    client = ScriptedClient.spawn(timing=timing)
    try:
        facts = SCENARIOS[name](client)
    finally:
        code = client.close()
        client.save(tmp_path / f"{name}-{timing}.jsonl")
    assert code == 0, client.proc.stderr_text()
    assert client.proc.stderr_text() == ""  # no warnings or tracebacks logged
    assert check_agent_messages(client.records) == []
    assert check_reference_trace(client.records) == []
    EXPECT[name](client, facts, timing)
    # The oracle itself: the reference agent's trace passes with no failure and no warning.
    report = check_trace(tmp_path / f"{name}-{timing}.jsonl")
    assert report["violations"] == [], report["violations"]
    assert report["verdict"] == "pass"


def _response(replies: list[Msg], rid: int) -> Msg:
    return next(m for m in replies if is_response_to(m, rid))


@pytest.mark.parametrize("timing", ["fast", "real"])
def test_garbage_input_never_kills_the_agent(timing: str, tmp_path: Path) -> None:
    client = ScriptedClient.spawn(timing=timing)
    try:
        facts = ODD_CLIENT_SCENARIOS["garbage"](client)
    finally:
        client.close()
        client.save(tmp_path / f"garbage-{timing}.jsonl")
    assert facts["alive"] and facts["idle"]["stopReason"] == "end_turn"
    assert check_agent_messages(client.records) == []
    first = client.a2c()[0]  # the request sent before initialize
    assert first["id"] == 899 and first["error"]["code"] == -32600
    replies = facts["replies"]
    codes = {rid: _response(replies, rid)["error"]["code"]
             for rid in (900, 901, 902, 903, 904, 905, 906, 907, 908, 910)}  # fmt: skip
    assert codes == {900: -32600, 901: -32600, 902: -32600, 903: -32600, 904: -32601,
                     905: -32601, 906: -32602, 907: -32602, 908: -32600, 910: -32600}  # fmt: skip
    null_errors = [m["error"]["code"] for m in replies if "error" in m and m["id"] is None]
    # -32700: not JSON, invalid UTF-8, cut JSON, the huge line
    assert null_errors.count(-32700) == 4
    # -32600: [], 42, "a string", null, [1, 2, 3] (one per entry), an object id, the 7 in
    # the mixed batch
    assert null_errors.count(-32600) == 9
    batches = [
        r["msg"] for r in client.records if r["dir"] == "a2c" and isinstance(r.get("msg"), list)
    ]
    assert len(batches) == 2  # [1, 2, 3] and the mixed batch; never a reply to notifications
    mixed = next(b for b in batches if any(m.get("id") == 909 for m in b))
    assert len(mixed) == 2 and {m["id"] for m in mixed} == {909, None}
    assert len(GARBAGE_LINES) > 20


def test_late_and_duplicate_permission_answers_are_ignored(tmp_path: Path) -> None:
    client = ScriptedClient.spawn()
    try:
        facts = ODD_CLIENT_SCENARIOS["late_permission_answers"](client)
    finally:
        client.close()
        client.save(tmp_path / "late.jsonl")
    assert facts["idle"]["stopReason"] == "cancelled"
    tool = facts["perm"]["params"]["subject"]["toolCall"]["toolCallId"]
    statuses = [update_of(m).get("status") for m in facts["updates"]
                if update_of(m).get("toolCallId") == tool]  # fmt: skip
    assert "in_progress" not in statuses and statuses[-1] == "cancelled"
    assert facts["second"]["stopReason"] != "cancelled"
    assert check_agent_messages(client.records) == []
    assert check_reference_trace(client.records) == []


def test_unoffered_option_is_a_rejection(tmp_path: Path) -> None:
    with ScriptedClient.spawn() as client:
        facts = ODD_CLIENT_SCENARIOS["unknown_option"](client)
        statuses = _tool_statuses(client, facts["sid"], _perm_tool(client))
    assert "in_progress" not in statuses and statuses[-1] == "failed"


def test_version_negotiation_answers_its_only_version() -> None:
    with ScriptedClient.spawn() as client:
        facts = ODD_CLIENT_SCENARIOS["version_negotiation"](client)
    assert facts["result"]["protocolVersion"] == 2
    assert facts["result"]["info"]["name"]
    assert "authMethods" not in facts["result"]


def test_stdin_close_mid_turn_exits_cleanly() -> None:
    client = ScriptedClient.spawn(timing="slow")
    client.initialize()
    sid = client.new_session()
    client.prompt(sid, "a long task")
    client.proc.close_stdin()
    assert client.proc.wait_exit(5.0) == 0
    client.close()


def test_same_seed_same_trace_shape() -> None:
    """Determinism: the same prompts give the same messages (ids included) in fast timing."""
    shapes = []
    for _ in range(2):
        with ScriptedClient.spawn(seed=7) as client:
            SCENARIOS["sequential_prompts"](client)
            shapes.append([r["msg"] for r in client.records if r["dir"] == "a2c"])
    assert shapes[0] == shapes[1]


def test_agent_package_is_independent_of_the_model() -> None:
    """The agent imports nothing from acp_model outside acp_model.agents (uncorrelated bugs)."""
    import ast

    import acp_model.agents

    root = Path(acp_model.agents.__file__).parent
    for source in root.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                if name == "acp_model" or name.startswith("acp_model."):
                    assert name.startswith("acp_model.agents"), f"{source.name} imports {name}"


def test_faults_see_the_agent_only_through_agent_ops() -> None:
    """Every operation a planted bug performs on the agent is one of ``AgentOps``, and the
    reference agent provides each with the same parameters (issue 23: the fault plug-in is
    typed against a small protocol of agent operations)."""
    import inspect
    import re

    from acp_model.agents.reference import faults
    from acp_model.agents.reference.agent import Agent

    ops = {n for n in vars(faults.AgentOps) if not n.startswith("_")}
    ops |= set(faults.AgentOps.__annotations__)
    used = set(re.findall(r"\b(?:agent|a)\.(\w+)", inspect.getsource(faults)))
    assert used and used <= ops, used - ops
    for name in ops:
        assert hasattr(Agent, name) or name in inspect.signature(Agent.__init__).parameters \
            or name in Agent.__init__.__code__.co_names, name
        proto = getattr(faults.AgentOps, name, None)
        if callable(proto):
            mine = inspect.signature(getattr(Agent, name))
            assert list(mine.parameters) == list(inspect.signature(proto).parameters), name


@pytest.mark.parametrize("timing", ["fast", "slow"])
def test_quiesce_is_answered_only_after_the_work_already_started(timing: str) -> None:
    """``_acp_model/quiesce`` (the tests' causal wait) is answered after the idle of a turn
    that was running when it was read, and before anything the client has yet to cause."""
    with ScriptedClient.spawn(timing=timing) as c:
        c.initialize()
        sid = c.new_session()
        start = c.mark()
        c.prompt(sid, c.prompt_text(lambda p: p.permissions == 0 and len(p.steps) >= 3))
        answered = c.quiesce()
        idle = c.index_of(lambda m: is_idle(m, sid), start)
        assert idle is not None and idle < answered, "quiesce answered while the turn ran"
        start = c.mark()
        c.prompt(sid, c.prompt_text(lambda p: p.permissions == 1, tag="perm"))
        answered = c.quiesce()  # blocked on the client's answer: nothing more will come
        assert c.index_of(lambda m: m.get("method") == "session/request_permission",
                          start) is not None
        assert c.index_of(lambda m: is_idle(m, sid), start) is None


def test_a_close_during_a_turn_keeps_the_close_order_of_sdk_2_4_0(tmp_path: Path) -> None:
    """The reference agent speaking sdk-2.4.0, closed while a turn waits on a permission and a
    prompt is held behind it: the cancelled work's idle before the close response
    (SDK-CLOSE-01), the held prompt answered -32800 (SDK-CLOSE-02), nothing for the session
    after the close response (SDK-CLOSE-03); the oracle finds nothing under that revision."""
    from acp_model.fuzzing.transport import AgentProcess
    from acp_model.oracle.offline import check_records
    from acp_model.spec.readings import DEFAULT

    from .client import agent_argv, with_permission

    argv = [*agent_argv(design="busy=queue-reject"), "--spec", "sdk-2.4.0"]
    client = ScriptedClient(AgentProcess(argv))
    try:
        client.initialize()
        sid = client.new_session()
        start = client.mark()
        client.send_prompt(sid, client.prompt_text(with_permission))
        perm = client.wait_permission(sid, start)
        held = client.send_prompt(sid, "and then this")
        close_id = client.proc.calls.request("session/close", {"sessionId": sid})
        client.answer(perm, "cancelled")
        closed = client.wait_response(close_id, start)
        held_answer = client.wait_response(held, start)
        client.barrier()
    finally:
        client.close()
        client.save(tmp_path / "close.jsonl")
    msgs = client.a2c()
    idle_at = next(n for n, m in enumerate(msgs) if is_idle(m, sid))
    assert idle_at < next(n for n, m in enumerate(msgs) if m is closed)
    assert held_answer["error"]["code"] == -32800
    report = check_records(client.records, readings=DEFAULT.parse(["SPEC=sdk-2.4.0"]))
    assert report["violations"] == [], report["violations"]
