"""One scripted test per mutant: its planted behaviour really appears on the wire.

Each case pairs a *driver* (the protocol situation that triggers the mutant, written as client
steps that tolerate a misbehaving agent) with a *symptom* (a small predicate on the recorded
trace, not the model). A bug mutant must show the symptom and the reference agent, driven the
same way, must not. Each value of a design axis (the correct variants the text allows) is driven
the same way: it must show its behaviour and still send only schema-valid messages.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acp_model.agents import mutants as zoo
from acp_model.fuzzing.transport import is_response_to

from .client import (
    AGENT_MODULE,
    ANSWERS,
    Msg,
    ScriptedClient,
    is_idle,
    is_permission_request,
    is_update,
    update_of,
    with_permission,
)
from .recordings import judged, recorded
from .schema_check import check_agent_messages

pytestmark = pytest.mark.slow  # starts the whole zoo, one agent process per mutant and scenario

Facts = dict[str, Any]


def end_turn(plan: Any) -> bool:
    return plan.stop_reason == "end_turn"


def _init(c: ScriptedClient, sessions: int = 1) -> list[str]:
    c.initialize()
    return [c.new_session() for _ in range(sessions)]


def _turn(c: ScriptedClient, sid: str, tag: str = "task",
          plan: Callable[[Any], bool] = end_turn) -> tuple[int, int, Msg]:
    """A prompt driven to its end, permissions allowed: (its start mark, its id, the idle)."""
    start = c.mark()
    rid = c.send_prompt(sid, c.prompt_text(plan, tag=tag))
    return start, rid, c.settle_drive(sid, start, "allow", prompt_id=rid)


def _asking(c: ScriptedClient, sid: str, tag: str = "task") -> tuple[int, int, Msg]:
    """A prompt whose turn asks for permission first: (its start mark, its id, the request),
    the request left unanswered."""
    start = c.mark()
    rid = c.send_prompt(sid, c.prompt_text(with_permission, tag=tag))
    return start, rid, c.wait_permission(sid, start)


def _next_request_waits(c: ScriptedClient, sid: str) -> Facts:
    """After a sloppy answer: a second turn, whose permission request must wait for its own
    answer (rejected once seen)."""
    c.proc.calls.call("session/list", {})  # the sloppy answer is read before the next prompt
    start, _, second = _asking(c, sid, tag="second")
    c.barrier()
    c.answer(second, "reject")
    c.settle_drive(sid, start, "reject")
    return {"sid": sid, "perm": second}


# ------------------------------------------------------------------------- drivers


def d_init(c: ScriptedClient) -> Facts:
    start = c.mark()
    rid = c.proc.calls.request(
        "initialize",
        {"protocolVersion": 2, "capabilities": {}, "info": {"name": "t", "version": "1"}},
    )
    response = c.wait_or_quiesce(lambda m: is_response_to(m, rid), start)
    c.barrier()
    return {"init": response}


def d_one_turn(c: ScriptedClient) -> Facts:
    (sid,) = _init(c)
    start, rid, idle = _turn(c, sid)
    c.barrier()
    return {"sid": sid, "prompt": rid, "idle": idle, "start": start}


def d_turn_then_resume(c: ScriptedClient) -> Facts:
    """One turn, then session/resume of its session asking for the whole history."""
    facts = d_one_turn(c)
    start = c.mark()
    rid = c.proc.calls.request("session/resume", {"sessionId": facts["sid"], "cwd": c.cwd,
                                            "mcpServers": [], "replayFrom": {"type": "start"}})
    c.wait_response(rid, start)
    return {**facts, "resume": start}


def d_cancel_while_idle(c: ScriptedClient) -> Facts:
    (sid,) = _init(c)
    c.run_turn(sid, c.prompt_text(end_turn))
    cancel_at = c.mark()
    c.cancel(sid)
    c.barrier()
    start, _, idle = _turn(c, sid, tag="after")
    c.barrier()
    return {"sid": sid, "cancel_at": cancel_at, "start": start, "idle": idle}


def d_notification_batch(c: ScriptedClient) -> Facts:
    (sid,) = _init(c)
    start = c.mark()
    c.proc.send([{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}])
    c.barrier()
    return {"sid": sid, "start": start}


def d_two_sessions(c: ScriptedClient) -> Facts:
    return {"sessions": _init(c, 2)}


def d_prompt_second_session(c: ScriptedClient) -> Facts:
    a, b = _init(c, 2)
    start, _, idle = _turn(c, b)
    c.barrier()
    return {"sessions": [a, b], "start": start, "idle": idle}


def d_prompt_while_busy(c: ScriptedClient) -> Facts:
    (sid,) = _init(c)
    start, _, perm = _asking(c, sid)
    busy = c.send_prompt(sid, c.prompt_text(end_turn, tag="busy"))
    response = c.wait_or_quiesce(lambda m: is_response_to(m, busy), start)
    c.answer(perm, "allow")
    idle = c.settle_drive(sid, start, "allow")
    c.barrier()
    return {"sid": sid, "busy": busy, "response": response, "idle": idle}


def d_busy_then_cancel(c: ScriptedClient) -> Facts:
    (sid,) = _init(c)
    start, _, perm = _asking(c, sid)
    busy = c.send_prompt(sid, c.prompt_text(end_turn, tag="busy"))
    c.cancel(sid)
    c.answer(perm, "cancelled")
    idle = c.wait_or_quiesce(lambda m: is_idle(m, sid), start)
    response = c.wait_or_quiesce(lambda m: is_response_to(m, busy), start)
    c.barrier()
    return {"sid": sid, "busy": busy, "idle": idle, "response": response}


def d_busy_then_withdraw(c: ScriptedClient) -> Facts:
    """A prompt held behind a blocked turn, withdrawn with $/cancel_request, then the turn
    runs to its end: the held prompt is owed its answer all the same (CANCEL-14)."""
    (sid,) = _init(c)
    start, _, perm = _asking(c, sid)
    busy = c.send_prompt(sid, c.prompt_text(end_turn, tag="busy"))
    c.proc.calls.notify("$/cancel_request", {"requestId": busy})
    c.answer(perm, "allow")
    idle = c.settle_drive(sid, start, "allow")
    response = c.wait_or_quiesce(lambda m: is_response_to(m, busy), start)
    c.barrier()
    return {"sid": sid, "busy": busy, "idle": idle, "response": response}


def d_permission(how: str) -> Callable[[ScriptedClient], Facts]:
    def driver(c: ScriptedClient) -> Facts:
        (sid,) = _init(c)
        start, _, perm = _asking(c, sid)
        c.answer(perm, how)
        idle = c.settle_drive(sid, start, "allow")
        c.barrier()
        return {"sid": sid, "perm": perm, "idle": idle}

    driver.__name__ = f"d_permission_{how}"
    return driver


def d_cancel_during_permission(answer_delay: float = 0.0) -> Callable[[ScriptedClient], Facts]:
    def driver(c: ScriptedClient) -> Facts:
        (sid,) = _init(c)
        start, _, perm = _asking(c, sid)
        c.cancel(sid)
        # a request right behind the cancel: its response, if it precedes the idle, proves
        # the agent read the cancel before ending the turn (what an oracle needs, A-11)
        c.proc.calls.request("session/list", {})
        if answer_delay:  # a deliberately late answer: the delay is the scenario
            c.pause(answer_delay)
        c.answer(perm, "cancelled")
        idle = c.wait_or_quiesce(lambda m: is_idle(m, sid), start)
        c.barrier()
        return {"sid": sid, "perm": perm, "idle": idle, "start": start}

    driver.__name__ = f"d_cancel_during_permission_{answer_delay}"
    return driver


def d_cancel_during_elicitation(c: ScriptedClient) -> Facts:
    """A client offering form elicitation; a turn that asks about two tools (a permission
    request, allowed, then an elicitation: the agent alternates), cancelled while the
    elicitation is open, which is not answered until the cancelled turn has ended."""
    c.initialize(capabilities={"elicitation": {"form": {}}})
    sid = c.new_session()
    start = c.mark()
    c.send_prompt(sid, c.prompt_text(lambda plan: plan.permissions >= 2))
    c.answer(c.wait_permission(sid, start), "allow")
    elicitation = c.wait(lambda m: isinstance(m, dict)
                         and m.get("method") == "elicitation/create", start)
    c.cancel(sid)
    c.proc.calls.request("session/list", {})
    idle = c.wait_or_quiesce(lambda m: is_idle(m, sid), start)
    c.barrier()
    return {"sid": sid, "start": start, "elicitation": elicitation, "idle": idle}


def s_elicitation_left_pending(c: ScriptedClient, f: Facts) -> bool:
    """The cancelled turn ended with no $/cancel_request for its elicitation before it."""
    rid = f["elicitation"]["id"]
    end = c.index_of(lambda m: is_idle(m, f["sid"]), f["start"])
    withdrawn = c.index_of(lambda m: isinstance(m, dict) and m.get("method") ==
                           "$/cancel_request" and m["params"].get("requestId") == rid, f["start"])
    return end is not None and (withdrawn is None or withdrawn > end)


def d_duplicate_answer_then_turn(c: ScriptedClient) -> Facts:
    """A turn whose permission is allowed, the allow sent a second time (a sloppy client),
    then a second turn: its first permission request must wait for its own answer."""
    (sid,) = _init(c)
    start, first, perm = _asking(c, sid)
    c.answer(perm, "allow")
    c.wait_response(first, start)
    c.drive(sid, start, "allow")
    c.proc.calls.respond(perm["id"], result=ANSWERS["allow"])  # the duplicate
    return _next_request_waits(c, sid)


def d_late_allow_then_turn(c: ScriptedClient) -> Facts:
    """A turn cancelled while its permission request waits, the request left unanswered until
    the cancelled idle and then allowed (a sloppy client's late answer), then a second turn:
    its first permission request must wait for its own answer."""
    (sid,) = _init(c)
    start, _, perm = _asking(c, sid)
    c.cancel(sid)
    c.wait_or_quiesce(lambda m: is_idle(m, sid), start)
    c.answer(perm, "allow")  # late: its work has ended
    return _next_request_waits(c, sid)


def s_tool_ran_unanswered(c: ScriptedClient, f: Facts) -> bool:
    """The second request's tool went in_progress before any answer to it was sent."""
    tool = f["perm"]["params"]["subject"]["toolCall"]["toolCallId"]
    records = c.records
    at = next(n for n, r in enumerate(records)
              if isinstance(r.get("msg"), dict) and r["msg"].get("id") == f["perm"]["id"]
              and r["msg"].get("method") == "session/request_permission")
    for r in records[at:]:
        msg = r.get("msg")
        if r["dir"] == "c2a" and isinstance(msg, dict) and msg.get("id") == f["perm"]["id"]:
            return False  # answered first
        if r["dir"] == "a2c" and is_update(msg) and update_of(msg).get("toolCallId") == tool \
                and update_of(msg).get("status") == "in_progress":
            return True
    return False


def d_cancel_then_next_turn(c: ScriptedClient) -> Facts:
    facts = d_cancel_during_permission()(c)
    start, _, _ = _turn(c, facts["sid"], tag="next", plan=with_permission)
    c.barrier()
    return {**facts, "next_start": start}


def d_two_sessions_cancel_one(c: ScriptedClient) -> Facts:
    a, b = _init(c, 2)
    start = c.mark()
    c.send_prompt(a, c.prompt_text(with_permission, tag="a"))
    c.send_prompt(b, c.prompt_text(with_permission, tag="b"))
    perm_a = c.wait_permission(a, start)
    perm_b = c.wait_permission(b, start)
    c.cancel(a)
    c.answer(perm_a, "cancelled")
    c.wait_or_quiesce(lambda m: is_idle(m, a), start)
    c.answer(perm_b, "allow")
    idle_b = c.settle_drive(b, start, "allow")
    c.barrier()
    return {"sessions": [a, b], "idle_b": idle_b}


def d_cancel_before_acceptance(c: ScriptedClient) -> Facts:
    (sid,) = _init(c)
    start = c.mark()
    rid = c.prompt_then_cancel(sid, c.prompt_text(end_turn))
    response = c.wait_or_quiesce(lambda m: is_response_to(m, rid), start)
    c.barrier()
    return {"sid": sid, "response": response}


def d_turns(n: int) -> Callable[[ScriptedClient], Facts]:
    """``n`` plain turns on one session (the newer revision's watcher starts on the 3rd)."""

    def driver(c: ScriptedClient) -> Facts:
        (sid,) = _init(c)
        facts: Facts = {"sid": sid, "prompts": [], "idles": []}
        for k in range(n):
            _, rid, idle = _turn(c, sid, tag=f"turn{k}")
            facts["prompts"].append(rid)
            facts["idles"].append(idle)
        c.barrier()
        return facts

    driver.__name__ = f"d_turns_{n}"  # the reference agent's runs are kept by driver name
    return driver


d_two_turns = d_turns(2)


# ------------------------------------------------------------------------ symptoms


def msgs(c: ScriptedClient) -> list[Msg]:
    return c.a2c()


def updates(c: ScriptedClient, sid: str | None = None) -> list[tuple[int, Msg]]:
    return [(i, update_of(m)) for i, m in enumerate(msgs(c)) if is_update(m, sid)]


def s_replay_shares_id(c: ScriptedClient, f: Facts) -> bool:
    """Two messages of different families (the user's, the agent's) under one id: the turn
    gives each its own, so only the replay can have merged them."""
    families: dict[str, set[str]] = {}
    for _, u in updates(c, f["sid"]):
        family = str(u.get("sessionUpdate")).removesuffix("_chunk")
        if isinstance(u.get("messageId"), str) and family in (
                "user_message", "agent_message", "agent_thought"):
            families.setdefault(u["messageId"], set()).add(family)
    return any(len(kinds) > 1 for kinds in families.values())


def states(c: ScriptedClient, sid: str) -> list[tuple[int, str, Any]]:
    return [
        (i, u.get("state"), u.get("stopReason"))
        for i, u in updates(c, sid)
        if u.get("sessionUpdate") == "state_update"
    ]


def responses(c: ScriptedClient, rid: Any) -> list[Msg]:
    return [m for m in msgs(c) if is_response_to(m, rid)]


def user_ids(c: ScriptedClient, sid: str) -> set[str]:
    return {
        u["messageId"]
        for _, u in updates(c, sid)
        if u.get("sessionUpdate") in ("user_message", "user_message_chunk")
    }


def prompt_ids(c: ScriptedClient) -> list[int]:
    return [
        r["msg"]["id"]
        for r in c.records
        if r["dir"] == "c2a" and isinstance(r.get("msg"), dict)
        and r["msg"].get("method") == "session/prompt"
    ]  # fmt: skip


def any_update(c: ScriptedClient, test: Callable[[Msg], bool]) -> bool:
    return any(test(u) for _, u in updates(c))


def raw_errors(c: ScriptedClient) -> list[str | None]:
    return [r.get("error") for r in c.records if r["dir"] == "a2c" and "raw" in r]


def tool_went_in_progress_after(c: ScriptedClient, perm: Msg) -> bool:
    tool = perm["params"]["subject"]["toolCall"]["toolCallId"]
    return any(
        u.get("toolCallId") == tool and u.get("status") == "in_progress" for _, u in updates(c)
    )


def idle_index(c: ScriptedClient, sid: str) -> int | None:
    return next((i for i, state, _ in states(c, sid) if state == "idle"), None)


def s_answers_cancel(c: ScriptedClient, f: Facts) -> bool:
    return any("method" not in m and m.get("id") is None and "result" in m for m in msgs(c))


def s_dup_session(c: ScriptedClient, f: Facts) -> bool:
    return len(set(f["sessions"])) < len(f["sessions"])


def s_wrong_session(c: ScriptedClient, f: Facts) -> bool:
    a, b = f["sessions"]
    return bool(updates(c, a)) and not any(s == "idle" for _, s, _ in states(c, b))


def s_unknown_session(c: ScriptedClient, f: Facts) -> bool:
    return any(m["params"]["sessionId"] != f["sid"] for m in msgs(c) if is_update(m))


def s_second_prompt_unanswered(c: ScriptedClient, f: Facts) -> bool:
    second = f["prompts"][1]
    return not responses(c, second) and f["idles"][1] is not None


def s_answered_twice(c: ScriptedClient, f: Facts) -> bool:
    return len(responses(c, f["prompt"])) == 2


def s_no_user_message(c: ScriptedClient, f: Facts) -> bool:
    accepted = sum(1 for rid in f["prompts"] if any("result" in m for m in responses(c, rid)))
    return accepted == 2 and len(user_ids(c, f["sid"])) == 1


def s_busy_unanswered(c: ScriptedClient, f: Facts) -> bool:
    return f["idle"] is not None and not responses(c, f["busy"])


def s_busy_dropped(c: ScriptedClient, f: Facts) -> bool:
    ok = f["response"] is not None and "result" in f["response"]
    return ok and len(user_ids(c, f["sid"])) == 1


def s_no_running(c: ScriptedClient, f: Facts) -> bool:
    """The turn's first state_update is not `running` (idle or requires_action from idle)."""
    seq = states(c, f["sid"])
    return bool(seq) and seq[0][1] != "running"


def s_requires_action_first(c: ScriptedClient, f: Facts) -> bool:
    seq = states(c, f["sid"])
    return bool(seq) and seq[0][1] == "requires_action"


def s_never_idle(c: ScriptedClient, f: Facts) -> bool:
    seq = [s for _, s, _ in states(c, f["sid"])]
    return seq.count("idle") == 1 and seq[-1] == "running"


def s_idle_state(test: Callable[[Any], bool]) -> Callable[[ScriptedClient, Facts], bool]:
    def symptom(c: ScriptedClient, f: Facts) -> bool:
        return any(s == "idle" and test(r) for _, s, r in states(c, f["sid"]))

    return symptom


def s_cancel_no_idle(c: ScriptedClient, f: Facts) -> bool:
    return f["idle"] is None and not any(s == "idle" for _, s, _ in states(c, f["sid"]))


def s_late_cancel(c: ScriptedClient, f: Facts) -> bool:
    return f["idle"] is not None and f["idle"].get("stopReason") == "cancelled"


def s_second_stop_reason(c: ScriptedClient, f: Facts) -> bool:
    seq = [(s, r) for _, s, r in states(c, f["sid"])]
    return any(
        a == ("idle", "end_turn") and b == ("idle", "cancelled") for a, b in itertools.pairwise(seq)
    )


def s_updates_after_cancelled_idle(c: ScriptedClient, f: Facts) -> bool:
    sid = f["sid"]
    cut = idle_index(c, sid)
    if cut is None:
        return False
    before = {u.get("toolCallId") for i, u in updates(c, sid) if i < cut and u.get("toolCallId")}
    return any(u.get("toolCallId") in before for i, u in updates(c, sid) if i > cut)


def s_stale_resume(c: ScriptedClient, f: Facts) -> bool:
    sid = f["sid"]
    cut = idle_index(c, sid)
    tool = f["perm"]["params"]["subject"]["toolCall"]["toolCallId"]
    return cut is not None and any(
        u.get("toolCallId") == tool and u.get("status") == "in_progress"
        for i, u in updates(c, sid)
        if i > cut
    )


def s_crosses_sessions(c: ScriptedClient, f: Facts) -> bool:
    b = f["sessions"][1]
    return any(s == "idle" and r == "cancelled" for _, s, r in states(c, b))


def s_dup_running(c: ScriptedClient, f: Facts) -> bool:
    seq = [s for _, s, _ in states(c, f["sid"])]
    return any(a == b == "running" for a, b in itertools.pairwise(seq))


def s_running_before_response(c: ScriptedClient, f: Facts) -> bool:
    all_msgs = msgs(c)
    resp = next(i for i, m in enumerate(all_msgs) if is_response_to(m, f["prompt"]))
    return any(
        is_update(m, f["sid"], "state_update") and update_of(m)["state"] == "running"
        for m in all_msgs[:resp]
    )


def s_user_chunks_only(c: ScriptedClient, f: Facts) -> bool:
    kinds = {u["sessionUpdate"] for _, u in updates(c, f["sid"])}
    return "user_message_chunk" in kinds and "user_message" not in kinds


def s_batched(c: ScriptedClient, f: Facts) -> bool:
    return any(r["dir"] == "a2c" and isinstance(r.get("msg"), list) for r in c.records)


def s_chatty(c: ScriptedClient, f: Facts) -> bool:
    all_msgs = msgs(c)
    first_prompt_response = next(
        i for i, m in enumerate(all_msgs) if is_response_to(m, f["prompt"])
    )
    return any(is_update(m, f["sid"]) for m in all_msgs[:first_prompt_response])


def s_cancel_request_sent(c: ScriptedClient, f: Facts) -> bool:
    return any(
        m.get("method") == "$/cancel_request" and m["params"]["requestId"] == f["perm"]["id"]
        for m in msgs(c)
    )


def s_idle_after_answer(c: ScriptedClient, f: Facts) -> bool:
    """The cancelled idle came after the client's (delayed) answer to the permission."""
    answer_at = idle_at = None
    for n, r in enumerate(c.records):
        msg = r.get("msg")
        if r["dir"] == "c2a" and isinstance(msg, dict) and msg.get("id") == f["perm"]["id"]:
            answer_at = n
        if r["dir"] == "a2c" and is_idle(msg, f["sid"]):
            idle_at = n
    return answer_at is not None and idle_at is not None and idle_at > answer_at


def s_result_has(key: str) -> Callable[[ScriptedClient, Facts], bool]:
    def symptom(c: ScriptedClient, f: Facts) -> bool:
        got = responses(c, f["prompt"])
        return bool(got) and key in got[0].get("result", {})

    return symptom


def s_busy_error(code: int) -> Callable[[ScriptedClient, Facts], bool]:
    def symptom(c: ScriptedClient, f: Facts) -> bool:
        return f["response"] is not None and f["response"].get("error", {}).get("code") == code

    return symptom


def s_idle_cancel_echo(c: ScriptedClient, f: Facts) -> bool:
    window = c.records[f["cancel_at"] : f["start"]]
    return any(
        r["dir"] == "a2c"
        and is_idle(r.get("msg"), f["sid"])
        and update_of(r["msg"]).get("stopReason") == "cancelled"
        for r in window
    )


def s_whole_messages_only(c: ScriptedClient, f: Facts) -> bool:
    kinds = [u["sessionUpdate"] for _, u in updates(c, f["sid"])]
    return "user_message_chunk" not in kinds and kinds.count("user_message") >= 2


def s_busy_prompt_held(c: ScriptedClient, f: Facts) -> bool:
    """The prompt sent while busy was answered (a result) only after the cancelled idle."""
    all_msgs = msgs(c)
    answered = [i for i, m in enumerate(all_msgs) if is_response_to(m, f["busy"])]
    idle = next((i for i, m in enumerate(all_msgs) if is_idle(m, f["sid"])), None)
    return (bool(answered) and idle is not None and answered[0] > idle
            and "result" in all_msgs[answered[0]])


def s_cancelled_without_running(c: ScriptedClient, f: Facts) -> bool:
    seq = [(s, r) for _, s, r in states(c, f["sid"])]
    return ("idle", "cancelled") in seq and all(s != "running" for s, _ in seq)


def _receipts(c: ScriptedClient) -> list[str]:
    return [m["result"]["messageId"] for m in msgs(c) if isinstance(m.get("result"), dict)
            and isinstance(m["result"].get("messageId"), str)]


def _user_ids(c: ScriptedClient, sid: str) -> list[str]:
    return [u["messageId"] for _, u in updates(c, sid)
            if u["sessionUpdate"] in ("user_message", "user_message_chunk")]


def s_receipt_not_echoed(c: ScriptedClient, f: Facts) -> bool:
    return any(r not in _user_ids(c, f["sid"]) for r in _receipts(c))


def s_receipt_reused(c: ScriptedClient, f: Facts) -> bool:
    got = _receipts(c)
    return len(got) >= 2 and len(set(got)) < len(got)


def s_error_after_insertion(c: ScriptedClient, f: Facts) -> bool:
    all_msgs = msgs(c)
    rid = f["prompts"][1]
    answer = next((i for i, m in enumerate(all_msgs) if is_response_to(m, rid)), None)
    return answer is not None and "error" in all_msgs[answer] and any(
        is_update(m, f["sid"], "user_message") for m in all_msgs[:answer])


def _backgrounds(c: ScriptedClient, sid: str) -> list[tuple[str, Any]]:
    return [(u["state"], u.get("background")) for _, u in updates(c, sid)
            if u["sessionUpdate"] == "state_update"]


def s_background_dropped(c: ScriptedClient, f: Facts) -> bool:
    seen = False
    for _state, bg in _backgrounds(c, f["sid"]):
        if bg:
            seen = True
        elif seen and bg is None:
            return True
    return False


def s_background_removed_early(c: ScriptedClient, f: Facts) -> bool:
    """A watcher left the list before its completed status."""
    listed: set[str] = set()
    for _, u in updates(c, f["sid"]):
        if u["sessionUpdate"] == "state_update" and isinstance(u.get("background"), list):
            now = {i["toolCallId"] for i in u["background"]}
            if listed - now:
                return True  # removed while not yet completed
            listed = now
        elif u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed":
            listed.discard(u["toolCallId"])
    return False


def s_idle_after_new(c: ScriptedClient, f: Facts) -> bool:
    seq = states(c, f["sid"])
    return bool(seq) and seq[0][1] == "idle" and seq[0][2] is None


@dataclass(frozen=True)
class Case:
    driver: Callable[[ScriptedClient], Facts]
    symptom: Callable[[ScriptedClient, Facts], bool]


def _has_update(test: Callable[[Msg], bool]) -> Callable[[ScriptedClient, Facts], bool]:
    return lambda c, f: any_update(c, test)


CASES: dict[str, Case] = {
    "init_without_info": Case(d_init, lambda c, f: "info" not in f["init"]["result"]),
    "init_wrong_version": Case(d_init, lambda c, f: f["init"]["result"]["protocolVersion"] != 2),
    "stdout_banner": Case(d_init, lambda c, f: "not-json" in raw_errors(c)),
    "invalid_utf8": Case(d_one_turn, lambda c, f: "invalid-utf8" in raw_errors(c)),
    "answers_cancel": Case(d_cancel_while_idle, s_answers_cancel),
    "empty_batch_reply": Case(
        d_notification_batch, lambda c, f: any(r.get("msg") == [] for r in c.records)
    ),
    "duplicate_session_id": Case(d_two_sessions, s_dup_session),
    "prompt_method_not_found": Case(
        d_two_turns,
        lambda c, f: any(
            m.get("error", {}).get("code") == -32601 for m in responses(c, f["prompts"][1])
        ),
    ),
    "updates_wrong_session": Case(d_prompt_second_session, s_wrong_session),
    "updates_unknown_session": Case(d_two_turns, s_unknown_session),
    "prompt_never_answered": Case(d_two_turns, s_second_prompt_unanswered),
    "prompt_answered_twice": Case(d_one_turn, s_answered_twice),
    "no_user_message": Case(d_two_turns, s_no_user_message),
    "busy_prompt_deadlock": Case(d_prompt_while_busy, s_busy_unanswered),
    "busy_prompt_dropped": Case(d_prompt_while_busy, s_busy_dropped),
    "cancelled_prompt_unanswered": Case(d_busy_then_cancel, s_busy_unanswered),
    "withdrawn_prompt_unanswered": Case(d_busy_then_withdraw, s_busy_unanswered),
    "no_running": Case(d_one_turn, s_no_running),
    "requires_action_from_idle": Case(d_one_turn, s_requires_action_first),
    "never_idle": Case(d_two_turns, s_never_idle),
    "idle_without_stop_reason": Case(d_one_turn, s_idle_state(lambda r: r is None)),
    "unknown_stop_reason": Case(d_one_turn, s_idle_state(lambda r: r == "done")),
    "unknown_state": Case(d_one_turn, _has_update(lambda u: u.get("state") == "thinking")),
    "unknown_update_kind": Case(
        d_one_turn, _has_update(lambda u: u["sessionUpdate"] == "progress")
    ),
    "chunk_without_message_id": Case(
        d_one_turn,
        _has_update(lambda u: u["sessionUpdate"] == "agent_message_chunk" and "messageId" not in u),
    ),
    "unknown_tool_status": Case(d_one_turn, _has_update(lambda u: u.get("status") == "running")),
    "unknown_tool_kind": Case(d_one_turn, _has_update(lambda u: u.get("kind") == "shell")),
    "relative_tool_location": Case(
        d_one_turn,
        _has_update(
            lambda u: any(not loc["path"].startswith("/") for loc in u.get("locations") or [])
        ),
    ),
    "tool_content_unwrapped": Case(
        d_one_turn,
        _has_update(
            lambda u: (
                u["sessionUpdate"] == "tool_call_content_chunk"
                and u["content"].get("type") == "text"
            )
        ),
    ),
    "plan_missing_plan_id": Case(
        d_one_turn,
        _has_update(lambda u: u["sessionUpdate"] == "plan_update" and "planId" not in u["plan"]),
    ),
    "usage_bad_currency": Case(
        d_one_turn, _has_update(lambda u: (u.get("cost") or {}).get("currency") == "usd")
    ),
    "usage_negative": Case(
        d_one_turn, _has_update(lambda u: u["sessionUpdate"] == "usage_update" and u["used"] < 0)
    ),
    "empty_permission_options": Case(
        d_one_turn,
        lambda c, f: any(
            is_permission_request(m) and m["params"]["options"] == [] for m in msgs(c)
        ),
    ),
    "perm_custom_outcome_approves": Case(
        d_permission("custom"), lambda c, f: tool_went_in_progress_after(c, f["perm"])
    ),
    "perm_reject_proceeds": Case(
        d_permission("reject"), lambda c, f: tool_went_in_progress_after(c, f["perm"])
    ),
    "cancel_as_end_turn": Case(
        d_cancel_during_permission(),
        lambda c, f: f["idle"] is not None and update_of(f["idle"])["stopReason"] == "end_turn",
    ),
    "cancel_no_idle": Case(d_cancel_during_permission(), s_cancel_no_idle),
    "late_cancel_kills_next_turn": Case(d_cancel_while_idle, s_late_cancel),
    "second_stop_reason": Case(d_cancel_then_next_turn, s_second_stop_reason),
    "updates_after_cancelled_idle": Case(
        d_cancel_during_permission(), s_updates_after_cancelled_idle
    ),
    "stale_answer_resumes_tool": Case(d_cancel_during_permission(), s_stale_resume),
    "stale_allow_next_permission": Case(d_duplicate_answer_then_turn, s_tool_ran_unanswered),
    "late_allow_next_permission": Case(d_late_allow_then_turn, s_tool_ran_unanswered),
    "cancel_crosses_sessions": Case(d_two_sessions_cancel_one, s_crosses_sessions),
    "replay_shares_message_id": Case(d_turn_then_resume, s_replay_shares_id),
    # the sdk-2.4.0 revision (the mutant runs in it; the reference agent, driven the same
    # way, is the seed's)
    "receipt_id_differs": Case(d_one_turn, s_receipt_not_echoed),
    "receipt_id_reused": Case(d_two_turns, s_receipt_reused),
    "early_receipt": Case(d_prompt_while_busy, s_receipt_not_echoed),
    "error_after_insertion": Case(d_two_turns, s_error_after_insertion),
    "held_prompt_outlives_cancel": Case(d_busy_then_cancel, s_busy_prompt_held),
    "cancelled_as_error": Case(
        d_cancel_during_permission(),
        lambda c, f: f["idle"] is not None and update_of(f["idle"])["stopReason"] == "error",
    ),
    "background_dropped": Case(d_turns(4), s_background_dropped),
    "background_removed_early": Case(d_turns(4), s_background_removed_early),
    "elicitation_left_pending": Case(d_cancel_during_elicitation, s_elicitation_left_pending),
}

# One case per design value that shows on the wire (the design space, agents/design.py).
DESIGN_CASES: dict[str, Case] = {
    "running=repeat": Case(d_one_turn, s_dup_running),
    "order=message-first": Case(d_one_turn, s_running_before_response),
    "messages=chunks": Case(d_one_turn, s_user_chunks_only),
    "writes=batch-array": Case(d_one_turn, s_batched),
    "background=chatty": Case(d_one_turn, s_chatty),
    "perm_cancel=withdraw": Case(d_cancel_during_permission(), s_cancel_request_sent),
    "perm_cancel=wait": Case(d_cancel_during_permission(0.3), s_idle_after_answer),
    "result=meta": Case(d_one_turn, s_result_has("_meta")),
    "result=message-id": Case(d_one_turn, s_result_has("messageId")),
    "busy=reject": Case(d_prompt_while_busy, s_busy_error(-32602)),
    "busy=queue-reject": Case(d_busy_then_cancel, s_busy_error(-32800)),
    "pending_cancel=reject": Case(d_cancel_before_acceptance, s_busy_error(-32800)),
    "idle_cancel=echo": Case(d_cancel_while_idle, s_idle_cancel_echo),
    "initial_idle=yes": Case(d_one_turn, s_idle_after_new),
    "messages=whole": Case(d_two_turns, s_whole_messages_only),
    "busy=queue": Case(d_busy_then_cancel, s_busy_prompt_held),
    "instant=no-running": Case(d_cancel_before_acceptance, s_cancelled_without_running),
}
# Not shown by a short script: perm_cancel=drop and grace (the default drops on the first
# cancel too), background=none (a missing update), writes=lines/split (byte framing). The
# design campaign (fuzz/acp_zoo_campaign.py --plan designs) fuzzes them.


_reference_runs: dict[str, tuple[ScriptedClient, Facts]] = {}


def _run(
    mutant: str | None, driver: Callable[[ScriptedClient], Facts], design: str = ""
) -> tuple[ScriptedClient, Facts]:
    client = ScriptedClient.spawn(mutant=mutant, timing="fast", design=design)
    try:
        facts = driver(client)
    finally:
        client.close()
    return client, facts


def _reference(driver: Callable[[ScriptedClient], Facts]) -> tuple[ScriptedClient, Facts]:
    """The reference agent under the same driver (cached: several mutants share drivers)."""
    if driver.__name__ not in _reference_runs:
        _reference_runs[driver.__name__] = _run(None, driver)
    return _reference_runs[driver.__name__]


def test_every_mutant_has_a_case() -> None:
    assert set(CASES) == set(zoo.BY_NAME)
    assert len(zoo.MUTANTS) >= 25


def test_every_mutant_is_a_fault_hook() -> None:
    from acp_model.agents.reference.faults import FAULTS

    assert set(FAULTS) == set(zoo.BY_NAME)


@pytest.mark.parametrize("name", [m.name for m in zoo.MUTANTS])
def test_bug_mutant_shows_its_symptom(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    client, facts = _run(name, case.driver)
    client.save(tmp_path / f"{name}.jsonl")
    assert case.symptom(client, facts), f"{name}: symptom not on the wire (trace in {tmp_path})"
    reference, ref_facts = _reference(case.driver)
    assert not case.symptom(reference, ref_facts), f"reference agent shows the {name} symptom"
    recording = recorded().get(name)
    if recording is not None:  # the oracle tier judges its transcript: still what it does?
        assert judged(client.records, zoo.BY_NAME[name]).get(recording["rule"]) == \
            recording["level"], f"{name} no longer behaves as recorded: re-record " \
            "(python -m tests.live.agents.record_transcripts)"


@pytest.mark.parametrize("design", sorted(DESIGN_CASES))
def test_design_value_behaves_as_described(design: str, tmp_path: Path) -> None:
    case = DESIGN_CASES[design]
    client, facts = _run(None, case.driver, design)
    client.save(tmp_path / "design.jsonl")
    assert case.symptom(client, facts), f"{design}: the behaviour is not on the wire"
    assert check_agent_messages(client.records) == []
    reference, ref_facts = _reference(case.driver)
    assert not case.symptom(reference, ref_facts), f"the default design already does {design}"


def test_list_mutants_prints_every_mutant() -> None:
    out = subprocess.run(
        [sys.executable, "-m", AGENT_MODULE, "--list-mutants"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout  # fmt: skip
    for m in zoo.MUTANTS:
        assert m.name in out and m.rule in out
    assert out.splitlines()[0].split()[:3] == ["name", "rule", "trigger"]


def test_unknown_mutant_is_refused() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", AGENT_MODULE, "--mutant", "no_such_bug"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert proc.returncode == 2 and "no_such_bug" in proc.stderr
