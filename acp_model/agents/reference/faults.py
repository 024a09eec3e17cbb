"""Planted bugs as hooks: each part of the reference agent asks its own hooks at its decisions.

A :class:`Fault` is one hooks object per part of the agent (the connection, the sessions, the
prompts, the turns, the permissions, the payloads of updates), each answering the conforming way,
so the agent's own code reads as the correct protocol and every deviation lives here. A mutant is
a subclass of one part's hooks that overrides one or two of them (``FAULTS`` maps mutant names to
the fault that plants it; ``mutants.py`` holds what each plants and which rule catches it). A
part is handed its hooks when it is made, so it asks only its own. Hooks receive the agent
objects they need and return what the agent should do. The agent appears to a hook only as
:class:`AgentOps`, the few operations a planted bug performs; a bug that remembers something (a
stale cancel, a stray allow) keeps it on its own hooks object, so the conforming agent's state
holds nothing for any mutant.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import orjson

if TYPE_CHECKING:
    import asyncio

    from acp_model.agents.reference.state import PendingPrompt, PermWait, Session, Turn
    from acp_model.agents.reference.wire import Ctx

METHOD_NOT_FOUND = -32601


class AgentOps(Protocol):
    """What a fault may do to the agent: write to the client and start a task."""

    first_session: Session | None

    def send(self, msg: Any) -> None: ...

    def send_raw(self, line: bytes) -> None: ...

    def reply(self, ctx: Ctx, result: Any) -> None: ...

    def route(self, s: Session) -> str: ...

    def update(self, s: Session, update: dict[str, Any]) -> None: ...

    def state(self, s: Session, state: str, stop_reason: str | None = None) -> None: ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]: ...

    def judge(self, answer: tuple[str, Any]) -> str: ...


class Hooks:
    """One part's hooks; ``part`` names the :class:`Fault` field they fill, and a mutant's
    subclass carries the mutant's ``name``."""

    part: ClassVar[str]
    name: ClassVar[str] = "reference"


class ConnectionHooks(Hooks):
    """The connection: initialize, batches, notifications (the agent and its inbox)."""

    part = "connection"

    def initialize_result(self, result: dict[str, Any]) -> dict[str, Any]:
        return result

    def after_initialize(self, agent: AgentOps) -> None:
        """Right after the initialize response."""

    def empty_batch_reply(self) -> bool:
        """Answer a notification-only batch with ``[]``?"""
        return False

    def on_cancel_notification(self, agent: AgentOps) -> None:
        """Right after reading session/cancel."""


class SessionHooks(Hooks):
    """The sessions: their ids, the sessionId on their updates, a replay (``sessions.py``)."""

    part = "sessions"
    replay_id: ClassVar[str | None] = None  # one messageId for every replayed message

    def session_id(self, agent: AgentOps, fresh: str) -> str:
        return fresh

    def route(self, agent: AgentOps, s: Session) -> str:
        """The sessionId put on the session's updates."""
        return s.id

    def cancels_other_sessions(self) -> bool:
        """Does a session/cancel also cancel the other sessions' work?"""
        return False


class PromptHooks(Hooks):
    """A prompt from its request to its turn: read, held, accepted (``prompts.py``)."""

    part = "prompts"

    def check_prompt(self, s: Session, index: int) -> int | None:
        """An error code to answer the ``index``-th prompt of the session with (None: none)."""
        return None

    def ignores_busy_prompt(self) -> bool:
        """Neither answer nor process a prompt read while busy?"""
        return False

    def drops_busy_prompt(self) -> bool:
        """Answer a prompt read while busy but silently drop it?"""
        return False

    def answers_prompt(self, pend: PendingPrompt) -> bool:
        return True

    def answers_twice(self) -> bool:
        return False

    def reports_user_message(self, pend: PendingPrompt) -> bool:
        return True

    def drops_queued_on_cancel(self) -> bool:
        """Drop prompts queued behind the work, unanswered, when it is cancelled?"""
        return False

    def answers_withdrawn(self) -> bool:
        """Answer a prompt the client withdrew ($/cancel_request) before it was accepted?"""
        return True

    # --- the sdk-2.4.0 revision -------------------------------------------------------------
    def receipt_id(self, message_id: str) -> str:
        """The messageId a receipt names: the inserted user message's."""
        return message_id

    def user_message_id(self, s: Session, fresh: str) -> str:
        return fresh

    def prompt_held(self, agent: AgentOps, s: Session, pend: PendingPrompt) -> None:
        """A prompt was just held behind the running turn (not inserted, not answered)."""

    def keeps_held_prompts(self) -> bool:
        """Do held prompts outlive a cancel (the seed allows it, the newer revision not)?"""
        return False

    def errors_after_insertion(self, s: Session, pend: PendingPrompt) -> bool:
        return False


class TurnHooks(Hooks):
    """A turn from its start to its idle, and what a cancel does to it (``work.py``; the
    cancel, ``cancels.py``, and the state reports of the agent)."""

    part = "turns"

    def reports_running(self) -> bool:
        """Report running when a turn starts?"""
        return True

    def starts_cancelled(self, s: Session) -> bool:
        """Start a new turn as already cancelled?"""
        return False

    def turn_started(self, agent: AgentOps, s: Session, turn: Turn) -> None:
        """Right after a turn started (payload bugs every turn carries)."""

    def stop_reason(self, reason: str | None) -> str | None:
        return reason

    def skips_idle(self, turn: Turn) -> bool:
        """Finish the turn without reporting idle?"""
        return False

    def after_idle(self, agent: AgentOps, s: Session) -> None:
        """Right after the idle that ends a turn that was not cancelled."""

    def cancel_while_idle(self, s: Session) -> None:
        """A cancel met no work (and no pending prompt)."""

    def turn_cancelled(self, s: Session) -> None:
        """A running turn of the session was cancelled."""

    def cancelled_reason(self) -> str | None:
        """The stop reason of a cancelled turn (None: no idle at all)."""
        return "cancelled"

    def tools_after_cancelled_idle(self) -> bool:
        """Finalise the cancelled turn's tool calls after its idle instead of before?"""
        return False

    # --- the sdk-2.4.0 revision -------------------------------------------------------------
    def lists_background(self, s: Session, state: str) -> bool:
        """Include the background list on this state update (once one was listed)?"""
        return True

    def removes_background_early(self) -> bool:
        """Drop a finished watcher from the list before reporting its final status?"""
        return False


class PermissionHooks(Hooks):
    """Permission requests, their answers, and what a cancel does to the open ones
    (``permissions.py``)."""

    part = "permissions"

    def permission_options(self, options: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return options

    def decision(self, decision: str) -> str:
        """What the agent makes of a permission answer (allow / reject / cancelled / error /
        unknown): only allow approves."""
        return decision

    def keeps_listening(self) -> bool:
        """After a cancel, keep the pending permission requests' answers meaningful?"""
        return False

    def withdraw(self, default: bool) -> bool:
        """Send $/cancel_request for the pending permission requests of a cancelled turn?"""
        return default

    def withdraws_elicitation(self) -> bool:
        """Send $/cancel_request for an elicitation a cancelled turn no longer needs?"""
        return True

    def late_answer(self, agent: AgentOps, wait: PermWait) -> None:
        """An answer to a permission request of a turn that was cancelled."""

    def stray_answer(self, agent: AgentOps, msg: dict[str, Any]) -> None:
        """A response to no request the agent is waiting on (a duplicate, a withdrawn or an
        unknown request): the conforming agent ignores it."""

    def early_answer(self, agent: AgentOps, waiting: PermWait) -> tuple[str, Any] | None:
        """An answer taken for a permission request as it is sent (None: the client's)."""
        return None


class PayloadHooks(Hooks):
    """The payloads of a turn's updates: tool calls, plans, usage (``work.py``)."""

    part = "payloads"

    def tool_call(self, update: dict[str, Any]) -> dict[str, Any]:
        return update

    def tool_path(self, s: Session, relative: str) -> str:
        """The path a tool call reports for a file of the session's workspace."""
        return s.abs_path(relative)

    def running_tool_status(self) -> str:
        return "in_progress"

    def tool_chunk(self, item: dict[str, Any]) -> dict[str, Any]:
        return item

    def plan(self, plan: dict[str, Any]) -> dict[str, Any]:
        return plan

    def usage(self, update: dict[str, Any]) -> dict[str, Any]:
        return update


@dataclass(frozen=True)
class Fault:
    """The hooks of every part: the conforming behaviour (the reference agent without a
    mutant), or one part's hooks replaced by a mutant's (:meth:`planting`)."""

    name: str = "reference"
    connection: ConnectionHooks = field(default_factory=ConnectionHooks)
    sessions: SessionHooks = field(default_factory=SessionHooks)
    prompts: PromptHooks = field(default_factory=PromptHooks)
    turns: TurnHooks = field(default_factory=TurnHooks)
    permissions: PermissionHooks = field(default_factory=PermissionHooks)
    payloads: PayloadHooks = field(default_factory=PayloadHooks)

    @classmethod
    def planting(cls, hooks: type[Hooks]) -> Fault:
        """The conforming agent's hooks but one part's: a fresh ``hooks`` (its own memory)."""
        return dataclasses.replace(cls(hooks.name), **{hooks.part: hooks()})


def _fault(name: str, part: type[Hooks], **hooks: Any) -> type[Hooks]:
    """A mutant that overrides hooks of one part: ``part``'s subclass named ``name``."""
    return type(f"{part.__name__}_{name}", (part,), {"name": name, **hooks})


def _initial_message_chunk(agent: AgentOps, s: Session, turn: Turn) -> None:
    agent.update(s, {"sessionUpdate": "agent_message_chunk",
                     "content": {"type": "text", "text": "Starting."}})


def _invalid_utf8(agent: AgentOps, s: Session, turn: Turn) -> None:
    msg = {"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": agent.route(s),
        "update": {"sessionUpdate": "agent_message_chunk", "messageId": s.new_id("msg_agent"),
                   "content": {"type": "text", "text": "caf@@"}}}}
    agent.send_raw(orjson.dumps(msg).replace(b"caf@@", b"caf\xe9"))


def _unknown_state(agent: AgentOps, s: Session, turn: Turn) -> None:
    agent.state(s, "thinking")
    agent.state(s, "running")


def _route_to_first(self: SessionHooks, agent: AgentOps, s: Session) -> str:
    return agent.first_session.id if s.index >= 2 and agent.first_session else s.id


def _route_unknown(self: SessionHooks, agent: AgentOps, s: Session) -> str:
    return "sess_unknown" if s.prompts_read >= 2 else s.id


class _LateCancel(TurnHooks):
    """A cancel read while idle is remembered and ends the next turn as cancelled."""

    name = "late_cancel_kills_next_turn"

    def __init__(self) -> None:
        self.stale: set[str] = set()  # sessions with a remembered cancel

    def cancel_while_idle(self, s: Session) -> None:
        self.stale.add(s.id)

    def starts_cancelled(self, s: Session) -> bool:
        if s.id not in self.stale:
            return False
        self.stale.discard(s.id)
        return True


class _SecondStop(TurnHooks):
    """The turn after a cancelled one ends with end_turn and then a second idle cancelled."""

    name = "second_stop_reason"

    def __init__(self) -> None:
        self.after_cancel: set[str] = set()  # sessions whose last turn was cancelled

    def turn_cancelled(self, s: Session) -> None:
        self.after_cancel.add(s.id)

    def after_idle(self, agent: AgentOps, s: Session) -> None:
        if s.id in self.after_cancel:
            self.after_cancel.discard(s.id)
            agent.state(s, "idle", "cancelled")


class _StaleAnswer(PermissionHooks):
    """A late answer to a permission of a cancelled turn resumes its tool."""

    name = "stale_answer_resumes_tool"

    def keeps_listening(self) -> bool:
        return True

    def withdraw(self, default: bool) -> bool:
        return False

    def late_answer(self, agent: AgentOps, wait: PermWait) -> None:
        agent.spawn(self._resume(agent, wait))

    async def _resume(self, agent: AgentOps, waiting: PermWait) -> None:
        """Once the cancelled turn is over, run its tool as if the answer still counted."""
        await waiting.turn.done.wait()
        s = waiting.turn.session
        done = {"type": "content", "content": {"type": "text", "text": "Done."}}
        agent.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": waiting.tool_id,
                         "status": "in_progress"})
        agent.update(s, {"sessionUpdate": "tool_call_update", "toolCallId": waiting.tool_id,
                         "status": "completed", "content": [done]})


class _StaleAllow(PermissionHooks):
    """A stray allow (a client's duplicate, or an answer to a withdrawn request) is kept for
    its session and taken for that session's next permission request, which then proceeds
    while its own request is still unanswered: a permission bypass."""

    name = "stale_allow_next_permission"

    def __init__(self) -> None:
        self.asked: dict[Any, str] = {}  # every permission request id -> its session
        self.spare: dict[str, tuple[str, Any]] = {}  # session -> the stray allow kept

    def stray_answer(self, agent: AgentOps, msg: dict[str, Any]) -> None:
        answer = ("result", msg.get("result"))
        sid = self.asked.get(msg.get("id"))
        if sid is not None and "result" in msg and agent.judge(answer) == "allow":
            self.spare[sid] = answer

    def early_answer(self, agent: AgentOps, waiting: PermWait) -> tuple[str, Any] | None:
        sid = waiting.turn.session.id
        self.asked[waiting.request_id] = sid
        return self.spare.pop(sid, None)


# What a request's wait ends with when the cancel, not an answer, ended it
# (permissions.CANCELLED_BY_AGENT; that module imports this one).
_CANCELLED_BY_AGENT = "cancelled-by-agent"


class _LateAllow(_StaleAllow):
    """A stray allow of the narrower kind only: a late one for a request the cancel left
    unanswered (its wait ended cancelled by the agent, not by an answer: a duplicate of an
    answer read in time is not late), read once that work has ended (its cancelled idle
    sent)."""

    name = "late_allow_next_permission"

    def __init__(self) -> None:
        super().__init__()
        self.waits: dict[int, PermWait] = {}  # every permission request id -> its wait

    def early_answer(self, agent: AgentOps, waiting: PermWait) -> tuple[str, Any] | None:
        self.waits[waiting.request_id] = waiting
        return super().early_answer(agent, waiting)

    def stray_answer(self, agent: AgentOps, msg: dict[str, Any]) -> None:
        waiting = self.waits.get(msg.get("id"))  # type: ignore[arg-type]
        if waiting is not None and waiting.turn.cancelled and waiting.turn.done.is_set() \
                and waiting.future.done() and waiting.future.result()[0] == _CANCELLED_BY_AGENT:
            super().stray_answer(agent, msg)


class _EarlyReceipt(PromptHooks):
    """A held prompt is answered with a receipt at once and inserted later, under another id:
    the receipt named a message that was never inserted."""

    name = "early_receipt"

    def __init__(self) -> None:
        # the held prompts answered at once (kept alive here: a dropped one's id() could be
        # reused by a later prompt)
        self.answered: list[PendingPrompt] = []

    def prompt_held(self, agent: AgentOps, s: Session, pend: PendingPrompt) -> None:
        agent.reply(pend.ctx, {"messageId": s.new_id("msg_user")})
        self.answered.append(pend)

    def answers_prompt(self, pend: PendingPrompt) -> bool:
        return not any(p is pend for p in self.answered)

    def drops_queued_on_cancel(self) -> bool:
        return True  # they were "answered" already


class _ReusedId(PromptHooks):
    """Every prompt of a session is inserted under the first prompt's message id."""

    name = "receipt_id_reused"

    def __init__(self) -> None:
        self.first: dict[str, str] = {}  # session -> its first user message id

    def user_message_id(self, s: Session, fresh: str) -> str:
        return self.first.setdefault(s.id, fresh)


class _DroppedBackground(TurnHooks):
    """The turn after a watcher started reports running without the background list."""

    name = "background_dropped"

    def lists_background(self, s: Session, state: str) -> bool:
        return state != "running"  # idle snapshots keep it; running ones drop it


MUTANT_HOOKS: tuple[type[Hooks], ...] = (
    _fault("init_without_info", ConnectionHooks,
           initialize_result=lambda self, r: {k: v for k, v in r.items() if k != "info"}),
    _fault("init_wrong_version", ConnectionHooks,
           initialize_result=lambda self, r: {**r, "protocolVersion": 1}),
    _fault("stdout_banner", ConnectionHooks,
           after_initialize=lambda self, a: a.send_raw(b"acp-model reference agent ready")),
    _fault("invalid_utf8", TurnHooks, turn_started=lambda self, a, s, t: _invalid_utf8(a, s, t)),
    _fault("answers_cancel", ConnectionHooks, on_cancel_notification=lambda self, a: a.send(
        {"jsonrpc": "2.0", "id": None, "result": None})),
    _fault("empty_batch_reply", ConnectionHooks, empty_batch_reply=lambda self: True),
    _fault("duplicate_session_id", SessionHooks, session_id=lambda self, a, fresh: (
        a.first_session.id if a.first_session is not None else fresh)),
    _fault("prompt_method_not_found", PromptHooks, check_prompt=lambda self, s, index: (
        METHOD_NOT_FOUND if index >= 2 else None)),
    _fault("updates_wrong_session", SessionHooks, route=_route_to_first),
    _fault("updates_unknown_session", SessionHooks, route=_route_unknown),
    _fault("prompt_never_answered", PromptHooks, answers_prompt=lambda self, p: p.index < 2),
    _fault("prompt_answered_twice", PromptHooks, answers_twice=lambda self: True),
    _fault("no_user_message", PromptHooks, reports_user_message=lambda self, p: p.index < 2),
    _fault("busy_prompt_deadlock", PromptHooks, ignores_busy_prompt=lambda self: True),
    _fault("busy_prompt_dropped", PromptHooks, drops_busy_prompt=lambda self: True),
    _fault("cancelled_prompt_unanswered", PromptHooks, drops_queued_on_cancel=lambda self: True),
    _fault("withdrawn_prompt_unanswered", PromptHooks, answers_withdrawn=lambda self: False),
    _fault("no_running", TurnHooks, reports_running=lambda self: False),
    _fault("requires_action_from_idle", TurnHooks, reports_running=lambda self: False),
    _fault("never_idle", TurnHooks, skips_idle=lambda self, turn: turn.index >= 2),
    _fault("idle_without_stop_reason", TurnHooks, stop_reason=lambda self, reason: None),
    _fault("unknown_stop_reason", TurnHooks, stop_reason=lambda self, reason: "done"),
    _fault("unknown_state", TurnHooks, turn_started=lambda self, a, s, t: _unknown_state(a, s, t)),
    _fault("unknown_update_kind", TurnHooks, turn_started=lambda self, a, s, t: a.update(
        s, {"sessionUpdate": "progress", "percent": 10})),
    _fault("chunk_without_message_id", TurnHooks,
           turn_started=lambda self, a, s, t: _initial_message_chunk(a, s, t)),
    _fault("unknown_tool_status", PayloadHooks, running_tool_status=lambda self: "running"),
    _fault("unknown_tool_kind", PayloadHooks, tool_call=lambda self, u: {**u, "kind": "shell"}),
    _fault("relative_tool_location", PayloadHooks, tool_path=lambda self, s, relative: relative),
    _fault("tool_content_unwrapped", PayloadHooks, tool_chunk=lambda self, item: item["content"]),
    _fault("plan_missing_plan_id", PayloadHooks,
           plan=lambda self, p: {k: v for k, v in p.items() if k != "planId"}),
    _fault("usage_bad_currency", PayloadHooks, usage=lambda self, u: {
        **u, "cost": {"amount": (u.get("cost") or {}).get("amount", 0.0), "currency": "usd"}}),
    _fault("usage_negative", PayloadHooks, usage=lambda self, u: {**u, "used": -1}),
    _fault("empty_permission_options", PermissionHooks,
           permission_options=lambda self, options: []),
    _fault("perm_custom_outcome_approves", PermissionHooks,
           decision=lambda self, d: "allow" if d == "unknown" else d),
    _fault("perm_reject_proceeds", PermissionHooks,
           decision=lambda self, d: "allow" if d in ("reject", "cancelled") else d),
    _fault("cancel_as_end_turn", TurnHooks, cancelled_reason=lambda self: "end_turn"),
    _fault("cancel_no_idle", TurnHooks, cancelled_reason=lambda self: None),
    _LateCancel,
    _SecondStop,
    _fault("updates_after_cancelled_idle", TurnHooks, tools_after_cancelled_idle=lambda self: True),
    _StaleAnswer,
    _StaleAllow,
    _LateAllow,
    _fault("cancel_crosses_sessions", SessionHooks, cancels_other_sessions=lambda self: True),
    _fault("replay_shares_message_id", SessionHooks, replay_id="msg_replayed"),
    # --- the sdk-2.4.0 revision -------------------------------------------------------------
    _fault("receipt_id_differs", PromptHooks, receipt_id=lambda self, mid: f"{mid}_receipt"),
    _ReusedId,
    _EarlyReceipt,
    _fault("error_after_insertion", PromptHooks,
           errors_after_insertion=lambda self, s, p: p.index % 2 == 0),
    _fault("held_prompt_outlives_cancel", PromptHooks, keeps_held_prompts=lambda self: True),
    _fault("cancelled_as_error", TurnHooks, cancelled_reason=lambda self: "error"),
    _DroppedBackground,
    _fault("background_removed_early", TurnHooks, removes_background_early=lambda self: True),
    _fault("elicitation_left_pending", PermissionHooks,
           withdraws_elicitation=lambda self: False),
)

# mutant name -> the fault that plants it (a fresh one per agent: some hooks remember)
FAULTS: dict[str, Callable[[], Fault]] = {
    hooks.name: functools.partial(Fault.planting, hooks) for hooks in MUTANT_HOOKS}
