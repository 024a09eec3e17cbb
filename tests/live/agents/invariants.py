"""Lifecycle invariants the reference agent guarantees, checked on a recorded trace.

These are the test suite's own assertions, deliberately simpler and stricter than the model's:
they encode the readings the reference agent follows (diagram order, no duplicate `running`,
cancelled idle only for a cancel sent after the turn's prompt, nothing about a cancelled turn
after its idle, ...), so a reference-agent regression shows up here without trusting the oracle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .schema_check import KNOWN_STOP_REASONS


@dataclass
class _Session:
    state: str = "none"
    accepted: int = 0  # prompts answered with a result
    user_ids: set[str] = field(default_factory=set)
    awaiting_user_msg: int = 0
    last_accepted_prompt_at: int = -1  # record index of the c2a prompt last accepted
    last_cancel_at: int = -1  # record index of the last c2a cancel
    turn_tools: set[str] = field(default_factory=set)
    turn_msgs: set[str] = field(default_factory=set)
    dead_tools: set[str] = field(default_factory=set)
    dead_msgs: set[str] = field(default_factory=set)
    pending_perms: set[Any] = field(default_factory=set)
    must_cancel: bool = False
    asked_since_running: bool = False
    turns: int = 0
    idles: int = 0


def _key(request_id: Any) -> tuple[str, Any]:
    """A hashable key that keeps 1 and "1" (and garbage ids) apart."""
    hashable = request_id is None or isinstance(request_id, str | int | float)
    return (type(request_id).__name__, request_id if hashable else repr(request_id))


def check_reference_trace(records: list[dict[str, Any]], *, complete: bool = True) -> list[str]:
    """Problems found (empty = the trace is what the reference agent must produce).

    ``complete`` means the scenario waited for every turn to end, so liveness is checked too.
    """
    problems: list[str] = []
    sessions: dict[str, _Session] = {}
    requests: dict[tuple[str, Any], tuple[str, dict[str, Any], int]] = {}
    answered: dict[tuple[str, Any], int] = {}
    perms: dict[Any, tuple[str, str | None]] = {}  # agent request id -> (sid, toolCallId)
    not_approved: set[str] = set()

    def bad(i: int, text: str) -> None:
        problems.append(f"record {i}: {text}")

    for i, record in enumerate(records):
        if "msg" not in record:
            if record.get("dir") == "a2c":
                bad(i, f"unparseable agent output ({record.get('error')})")
            continue
        msgs = record["msg"] if isinstance(record["msg"], list) else [record["msg"]]
        for msg in msgs:
            if not isinstance(msg, dict):
                continue
            if record["dir"] == "c2a":
                _client(i, msg, sessions, requests, perms, not_approved)
            else:
                _agent(i, msg, sessions, requests, answered, perms, not_approved, bad)
    if complete:
        for key, (method, _params, i) in requests.items():
            if answered.get(key, 0) == 0 and method != "session/cancel":
                bad(i, f"{method} id {key[1]!r} never answered")
        for sid, s in sessions.items():
            if s.state in ("running", "requires_action"):
                problems.append(f"session {sid}: turn never reported idle")
            if s.accepted != len(s.user_ids):
                problems.append(
                    f"session {sid}: {s.accepted} accepted prompts but "
                    f"{len(s.user_ids)} user messages"
                )
    return problems


def _client(
    i: int,
    msg: dict[str, Any],
    sessions: dict[str, _Session],
    requests: dict[tuple[str, Any], tuple[str, dict[str, Any], int]],
    perms: dict[Any, tuple[str, str | None]],
    not_approved: set[str],
) -> None:
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    if "method" in msg and "id" in msg:
        requests[_key(msg["id"])] = (msg["method"], params, i)
    if msg.get("method") in ("session/cancel", "session/close"):  # close cancels too (SESS-10)
        s = sessions.get(params.get("sessionId"))
        if s is not None:
            s.last_cancel_at = i
            # the agent is blocked on a permission request: it will read this cancel mid-turn
            if s.pending_perms and s.state in ("running", "requires_action"):
                s.must_cancel = True
    elif "method" not in msg and msg.get("id") in perms:
        sid, tool = perms[msg["id"]]
        outcome = (msg.get("result") or {}).get("outcome") if "result" in msg else None
        allowed = (
            isinstance(outcome, dict)
            and outcome.get("outcome") == "selected"
            and outcome.get("optionId") in ("allow-once", "allow-always")
        )
        s = sessions.get(sid)
        if s is not None:
            s.pending_perms.discard(msg["id"])
        if tool and not allowed:
            not_approved.add(tool)


def _agent(
    i: int,
    msg: dict[str, Any],
    sessions: dict[str, _Session],
    requests: dict[tuple[str, Any], tuple[str, dict[str, Any], int]],
    answered: dict[tuple[str, Any], int],
    perms: dict[Any, tuple[str, str | None]],
    not_approved: set[str],
    bad: Any,
) -> None:
    method = msg.get("method")
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    if method is None:  # a response
        key = _key(msg.get("id"))
        if key not in requests:
            bad(i, f"response to unknown request {msg.get('id')!r}")
            return
        answered[key] = answered.get(key, 0) + 1
        if answered[key] > 1:
            bad(i, f"request {msg.get('id')!r} answered twice")
        req_method, req_params, req_at = requests[key]
        if req_method == "session/new" and "result" in msg:
            sid = msg["result"].get("sessionId")
            if sid in sessions:
                bad(i, f"duplicate sessionId {sid}")
            sessions[sid] = _Session()
        if req_method == "session/prompt" and "result" in msg:
            s = sessions.get(req_params.get("sessionId"))
            if s is not None:
                s.accepted += 1
                s.awaiting_user_msg += 1
                s.last_accepted_prompt_at = max(s.last_accepted_prompt_at, req_at)
        # answering a request sent after a cancel proves the agent read that cancel
        for s in sessions.values():
            busy = s.state in ("running", "requires_action")
            if busy and s.last_cancel_at >= 0 and req_at > s.last_cancel_at:
                s.must_cancel = True
        return
    if method == "session/request_permission":
        sid = params.get("sessionId")
        s = sessions.get(sid)
        if s is None:
            bad(i, f"permission request for unknown session {sid!r}")
            return
        subject = params.get("subject") or {}
        tool = (subject.get("toolCall") or {}).get("toolCallId")
        perms[msg.get("id")] = (sid, tool)
        s.pending_perms.add(msg.get("id"))
        s.asked_since_running = True
        return
    if method == "$/cancel_request":
        target = params.get("requestId")
        if target in perms:
            s = sessions.get(perms[target][0])
            if s is not None and s.state in ("running", "requires_action"):
                s.must_cancel = True
        return
    if method != "session/update":
        bad(i, f"unexpected agent message {method!r}")
        return
    sid = params.get("sessionId")
    s = sessions.get(sid)
    update = params.get("update") or {}
    kind = update.get("sessionUpdate")
    if s is None:
        bad(i, f"update for unknown session {sid!r}")
        return
    if kind in ("user_message", "user_message_chunk"):
        mid = update.get("messageId")
        if mid not in s.user_ids:
            if s.awaiting_user_msg <= 0:
                bad(i, "user message without an accepted prompt before it (A-03 order)")
            s.awaiting_user_msg -= 1
            s.user_ids.add(mid)
        return
    tool = update.get("toolCallId")
    mid = update.get("messageId")
    if tool in s.dead_tools or mid in s.dead_msgs:
        bad(i, f"update {kind} for work of a cancelled turn after its idle")
    if kind in ("tool_call_update", "tool_call_content_chunk") and tool:
        if s.state in ("running", "requires_action"):
            s.turn_tools.add(tool)
        if update.get("status") == "in_progress" and tool in not_approved:
            bad(i, f"tool {tool} in_progress although its permission was not granted")
    elif mid and s.state in ("running", "requires_action"):
        s.turn_msgs.add(mid)
    if kind != "state_update":
        return
    state = update.get("state")
    if state == "running":
        if s.state == "running":
            bad(i, "duplicate running")
        elif s.state in ("none", "idle"):
            if s.awaiting_user_msg > 0 or not s.user_ids:
                bad(i, "running before the prompt's user message (A-03 order)")
            s.turns += 1
            s.turn_tools, s.turn_msgs = set(), set()
        s.asked_since_running = False
        s.state = "running"
    elif state == "requires_action":
        if s.state != "running":
            bad(i, f"requires_action from {s.state}")
        if not s.asked_since_running:
            bad(i, "requires_action without a permission request before it")
        s.state = "requires_action"
    elif state == "idle":
        reason = update.get("stopReason")
        if s.state not in ("running", "requires_action"):
            bad(i, f"idle from {s.state}")
        if not isinstance(reason, str) or not (reason in KNOWN_STOP_REASONS or reason[:1] == "_"):
            bad(i, f"idle with stop reason {reason!r}")
        if reason == "cancelled":
            if s.last_cancel_at < s.last_accepted_prompt_at or s.last_cancel_at < 0:
                bad(i, "idle cancelled without a cancel sent after the turn's prompt")
            s.dead_tools |= s.turn_tools
            s.dead_msgs |= s.turn_msgs
        elif s.must_cancel:
            bad(i, f"turn ended {reason!r} although the agent had read a cancel (A-11)")
        s.must_cancel = False
        s.state = "idle"
        s.idles += 1
    else:
        bad(i, f"unexpected state {state!r}")
