"""The session lifecycle: one explicit python-statemachine machine plus its extended state.

Control states are the foreground states a session reports (``unreported`` until the first
``state_update``, then ``idle`` / ``running`` / ``requires_action`` / ``custom`` for ``_x`` and
future states). Everything else the rules need (prompts awaiting acceptance, accepted prompts
awaiting their user message, open permission requests, outstanding cancels, tool calls of the
current work) lives in :class:`SessionModel`, which is also the machine's model object.

Events are classified wire messages in both directions (see ``EVENTS``). Every transition's
guards are *checks*: pure predicates tagged with the rule they enforce (``@check``). When a check
fails, the transition is refused, which is a violation of that rule; the monitor records it and
then takes the transition anyway (the client must keep following what the agent reports), so
one bug does not drown the rest of the trace in follow-up errors.

Race soundness. The agent runs concurrently with the client; the trace is in the order the
client sent and received messages. Stdio is FIFO per direction, so once the agent has answered a
client request sent at trace index ``i`` it has provably read every client message up to ``i``:
``Context.frontier`` is the highest such index. A check never relies on the agent having read
something unless the frontier proves it. The cancel bookkeeping (``CancelRec``) is the small
automaton that follows each ``session/cancel`` through that reasoning:

* ``W`` -- sent while the client saw foreground work. Once provably read, the work must end
  with ``cancelled`` (CANCEL-07); until then an ``end_turn`` is a legal race and the cancel
  becomes ``I``.
* ``I`` -- sent (or left over) while the session was quiet. At the next work start it is
  *stale* if the agent provably read it before that work began and no prompt sent before it was
  still unfinished: it cannot justify a ``cancelled`` stop reason (CANCEL-11, the "late cancel
  kills the next turn" bug). Otherwise it becomes ``A``. While quiet it tolerates one
  ``idle(cancelled)`` in reply (reading A-04).
* ``A`` -- ambiguous: it may or may not have been read before the work began, so it justifies a
  ``cancelled`` stop reason but creates no obligation.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce
from typing import Any, TypeVar

from statemachine import State, StateMachine
from statemachine.transition_list import TransitionList

from acp_model.spec.readings import DEFAULT, Readings

WORK = frozenset({"running", "requires_action", "custom"})
QUIET = frozenset({"unreported", "idle"})
FINAL_TOOL_STATUSES = frozenset({"completed", "failed", "cancelled"})
PROCEEDING_TOOL_STATUSES = frozenset({"in_progress", "completed"})

F = TypeVar("F", bound=Callable[..., Any])


def check(rule_id: str, reading: str | None = None, levels: dict[str, str] | None = None,
          ) -> Callable[[F], F]:
    """Tag a guard with the rule it enforces.

    ``reading``/``levels`` say how a reading changes the consequence of a failure: a level is
    ``"rule"`` (the rule's own strength), ``"fail"``, ``"warn"`` or ``"off"``.
    """

    def mark(fn: F) -> F:
        fn._acpm_rule = rule_id  # type: ignore[attr-defined]
        fn._acpm_reading = reading  # type: ignore[attr-defined]
        fn._acpm_levels = levels or {}  # type: ignore[attr-defined]
        return fn

    return mark


def allowance(*rule_ids: str) -> Callable[[F], F]:
    """Tag an action with the rules it exercises without judging them: MAY rules (counted,
    never reported) and liveness obligations it discharges (judged at the end)."""

    def mark(fn: F) -> F:
        fn._acpm_allows = rule_ids  # type: ignore[attr-defined]
        return fn

    return mark


class Ev:
    """Payload of one classified wire event (all fields optional)."""

    __slots__ = ("answer", "error_code", "has_title", "id", "idx", "kind", "message_id",
                 "options", "reason", "result_keys", "status", "tool_call_id")

    def __init__(self, idx: int = -1, **fields: Any) -> None:
        self.idx = idx
        for name in self.__slots__:
            if name != "idx":
                setattr(self, name, fields.pop(name, None))
        if fields:
            raise TypeError(f"unknown event fields: {sorted(fields)}")

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__
                         if getattr(self, n) is not None)
        return f"Ev({body})"


@dataclass(slots=True)
class Context:
    """What sessions of one connection share: readings, capabilities, the read frontier."""

    readings: Readings = DEFAULT
    frontier: int = -1
    session_advertised: bool = True


@dataclass(slots=True)
class PromptRec:
    idx: int
    id: Any
    status: str = "pending"  # pending -> accepted -> inserted (user message seen)
    ran: bool = False  # foreground work started or ended while this prompt was open


@dataclass(slots=True)
class CancelRec:
    idx: int
    status: str  # "W", "I" or "A" (see the module docstring)
    prior: bool = False  # a prompt sent before this cancel may still be unfinished
    owes_reply: bool = False  # met no work to cancel: reading A-04=idle-cancelled wants an idle


@dataclass(slots=True)
class PermRec:
    id: Any
    idx: int
    tool_call_id: str | None
    options: dict[str, str]
    state: str = "open"  # open | withdrawn | answered
    owed_cancel: bool = False  # CANCEL-04: must be answered with the cancelled outcome
    answer: str | None = None  # allow | reject | cancelled | custom | error
    answer_idx: int = -1
    unreported_block: bool = False  # STATE-05: no requires_action seen since the request


@dataclass(slots=True)
class ToolRec:
    perm: Any = None  # id of the permission request guarding it (PERM-11, STATE-06)


@dataclass
class SessionModel:
    """Extended state of one session, and every lifecycle check and action."""

    sid: str
    ctx: Context = field(default_factory=Context)
    state: str = "unreported"
    prompts: list[PromptRec] = field(default_factory=list)
    early_user_messages: int = 0
    user_ids: set[str] = field(default_factory=set)
    cancels: list[CancelRec] = field(default_factory=list)
    perms: dict[Any, PermRec] = field(default_factory=dict)
    tools: dict[str, ToolRec] = field(default_factory=dict)
    work_tools: set[str] = field(default_factory=set)
    cancelled_tools: set[str] = field(default_factory=set)

    # --- derived views -----------------------------------------------------------------
    def count(self, status: str) -> int:
        return sum(1 for p in self.prompts if p.status == status)

    def _prompt_work_pending(self) -> bool:
        """Accepted prompts whose work has not been ended by an idle."""
        return any(p.status != "pending" for p in self.prompts)

    def _ends_work(self, ev: Ev) -> bool:
        """An idle ends work when work was reported, or carries a reason after prompt work."""
        return self.state in WORK or (ev.reason is not None and self._prompt_work_pending())

    def _read(self, idx: int) -> bool:
        return idx <= self.ctx.frontier

    def _is_stale(self, c: CancelRec) -> bool:
        return c.status == "I" and self._read(c.idx) and not c.prior

    def _justifying(self) -> list[CancelRec]:
        """Cancels that can explain a cancelled stop reason for the work now ending."""
        if self.state in WORK:
            return [c for c in self.cancels if c.status in ("W", "A")]
        return [c for c in self.cancels if c.status in ("W", "A")
                or (c.status == "I" and not self._is_stale(c))]

    def _replies_owed(self) -> bool:
        """Only reading A-04=idle-cancelled makes a cancel that met no work owe an idle."""
        return self.ctx.readings["A-04"] == "idle-cancelled"

    def _owing_cancel(self) -> bool:
        return any(c.status in ("W", "A") for c in self.cancels)

    def _prior(self, c_idx: int) -> bool:
        return any(p.idx < c_idx for p in self.prompts)

    def _accepted_after(self, c_idx: int) -> bool:
        return any(p.idx > c_idx and p.status != "pending" for p in self.prompts)

    # =====================================================================================
    # Checks (guards). Pure: they read the model and the event, never change anything.
    # =====================================================================================

    @check("PROMPT-10", reading="A-01", levels={"join": "off", "forbid": "fail"})
    def prompt_while_busy_allowed(self, ev: Ev) -> bool:
        """Under reading A-01=forbid the client may only prompt a quiet session."""
        return self.state not in WORK

    @check("CANCEL-04", reading="A-14", levels={"both": "rule", "outcome-only": "rule"})
    def answer_honours_cancel(self, ev: Ev) -> bool:
        """After session/cancel the client answers pending permissions with `cancelled`."""
        perm = self.perms.get(ev.id)
        if perm is None or not perm.owed_cancel:
            return True
        if ev.answer == "cancelled":
            return True
        withdrawn_ok = self.ctx.readings["A-14"] == "both" and perm.state == "withdrawn"
        return withdrawn_ok and ev.answer == "error" and ev.error_code == -32800

    @check("PROMPT-05")
    def acknowledgement_only(self, ev: Ev) -> bool:
        """The prompt result acknowledges acceptance; a v1-style stopReason is a leftover."""
        return not ev.result_keys or "stopReason" not in ev.result_keys

    @check("INIT-10")
    def rejection_not_method_missing(self, ev: Ev) -> bool:
        """An agent advertising `session` must implement session/prompt."""
        return not (self.ctx.session_advertised and ev.error_code == -32601)

    @check("PROMPT-06", reading="A-03", levels={"free": "off", "diagram": "fail"})
    def user_message_after_accept(self, ev: Ev) -> bool:
        """Diagram order: the user message follows the prompt response."""
        if ev.message_id in self.user_ids:
            return True
        return self.count("accepted") > 0 or self.count("pending") == 0

    @check("PROMPT-06", reading="A-03", levels={"free": "off", "diagram": "fail"})
    def running_after_user_message(self, ev: Ev) -> bool:
        """Diagram order: running follows the prompt response and the user message."""
        if self.count("accepted") > 0:
            return False
        return not (self.count("pending") > 0 and self.count("inserted") == 0)

    @check("PROMPT-08", reading="A-07", levels={"allow": "off", "forbid": "fail"})
    def work_has_a_prompt(self, ev: Ev) -> bool:
        """Under A-07=forbid, foreground work only exists because of a prompt."""
        return bool(self.prompts)

    @check("STATE-01", reading="A-16", levels={"strict": "rule", "lenient": "warn",
                                               "allow": "off"})
    def running_before_blocking(self, ev: Ev) -> bool:
        """requires_action straight from a quiet session skips the running report."""
        return False

    @check("STATE-01", reading="A-09", levels={"strict": "rule", "lenient": "warn"})
    def prompt_work_announced(self, ev: Ev) -> bool:
        """An idle with a stop reason after accepted prompts ends work that never ran."""
        return not (ev.reason is not None and self._prompt_work_pending())

    @check("CANCEL-06", reading="A-04", levels={"noop": "off", "idle-cancelled": "fail"})
    def idle_cancel_answered(self, ev: Ev) -> bool:
        """Under A-04=idle-cancelled a cancel read while idle is answered before new work
        (or a newer prompt's acceptance) begins."""
        return not any(c.owes_reply and self._is_stale(c) for c in self.cancels)

    @check("STATE-03")
    def stop_reason_present(self, ev: Ev) -> bool:
        """The idle that ends foreground work names why it ended."""
        return ev.reason is not None

    @check("CANCEL-07", reading="A-11", levels={"provable": "rule", "sent": "rule",
                                                "never": "off"})
    def cancel_honoured(self, ev: Ev) -> bool:
        """Work during which the agent read session/cancel ends with `cancelled` (provably
        read, or under reading A-11=sent merely sent while the work was reported)."""
        if ev.reason == "cancelled":
            return True
        if self.ctx.readings["A-11"] == "sent":
            return not any(c.status == "W" for c in self.cancels)
        # A cancel sent during observed work, or while a prompt it could cancel was still
        # open (read before that prompt's work ended, it cancels it under every A-10 reading)
        # unless a prompt sent after the cancel was accepted: this work may be that one's.
        return not any((c.status == "W" or (c.status == "A" and c.prior
                                            and not self._accepted_after(c.idx)))
                       and self._read(c.idx) for c in self.cancels)

    @check("CANCEL-06", reading="A-04", levels={"noop": "off", "idle-cancelled": "fail"})
    def idle_cancel_not_swallowed(self, ev: Ev) -> bool:
        """Under A-04=idle-cancelled, a cancel the agent provably read before this work ended
        is answered with `cancelled`: read during the work it cancels it, read before the
        work began it was owed an idle(cancelled) before that work."""
        if ev.reason == "cancelled":
            return True
        return not any(c.status == "A" and c.owes_reply and self._read(c.idx)
                       for c in self.cancels)

    @check("CANCEL-11")
    def cancelled_has_cause(self, ev: Ev) -> bool:
        """`cancelled` answers a cancel that could still apply to the work being ended."""
        if ev.reason != "cancelled":
            return True
        if self._ends_work(ev):
            return bool(self._justifying())
        return any(c.status == "I" for c in self.cancels)

    @check("ACPM-ONE-STOP", reading="A-05", levels={"forbid": "rule", "allow": "off"})
    def one_stop_reason(self, ev: Ev) -> bool:
        """An idle that ends no work carries no stop reason (a cancelled reply excepted)."""
        return ev.reason is None or ev.reason == "cancelled" or self._prompt_work_pending()

    @check("STATE-05")
    def blocked_state_reported(self, ev: Ev) -> bool:
        """A permission wait that is over should have been reported as requires_action."""
        return not any(p.unreported_block and p.state != "open" for p in self.perms.values())

    @check("CANCEL-05")
    def no_new_work_after_cancel(self, ev: Ev) -> bool:
        """After provably reading a cancel, the agent does not ask for more permissions."""
        return not any(c.status == "W" and self._read(c.idx) for c in self.cancels)

    @check("TOOL-02")
    def tool_titled_on_first_report(self, ev: Ev) -> bool:
        """The first tool_call_update of a toolCallId should carry its title."""
        return ev.tool_call_id in self.tools or bool(ev.has_title) or ev.kind != "update"

    @check("PERM-11")
    def tool_respects_answer(self, ev: Ev) -> bool:
        """A tool guarded by a permission proceeds only after an allow option was selected."""
        if ev.status not in PROCEEDING_TOOL_STATUSES:
            return True
        tool = self.tools.get(ev.tool_call_id or "")
        perm = self.perms.get(tool.perm) if tool is not None else None
        if perm is None or perm.answer is None or perm.answer == "allow":
            return True
        if perm.answer == "custom-option":
            return True  # a custom option kind means whatever the agent defined
        return not self._read(perm.answer_idx)

    @check("STATE-06")
    def resumption_reported(self, ev: Ev) -> bool:
        """An approved tool that starts while requires_action is still shown: no running."""
        if self.state != "requires_action" or ev.status not in PROCEEDING_TOOL_STATUSES:
            return True
        tool = self.tools.get(ev.tool_call_id or "")
        perm = self.perms.get(tool.perm) if tool is not None else None
        if perm is None or perm.answer != "allow":
            return True
        return any(p.state == "open" for p in self.perms.values())

    @check("CANCEL-09", reading="A-13", levels={"fail": "rule", "warn": "warn", "allow": "off"})
    def not_after_cancelled_idle(self, ev: Ev) -> bool:
        """Tool calls of cancelled work get no updates after the cancelled idle."""
        return ev.tool_call_id not in self.cancelled_tools

    # =====================================================================================
    # Actions. They run after the checks and update the extended state.
    # =====================================================================================

    @allowance("PROMPT-10", "PROMPT-08")
    def note_prompt(self, ev: Ev) -> None:
        self.prompts.append(PromptRec(ev.idx, ev.id))

    @allowance("CANCEL-01")
    def note_cancel(self, ev: Ev) -> None:
        if self.state in WORK:
            self.cancels.append(CancelRec(ev.idx, "W"))
        else:
            prior = self._prior(ev.idx)
            self.cancels.append(CancelRec(ev.idx, "I", prior=prior, owes_reply=not prior))
        for perm in self.perms.values():
            if perm.state != "answered":
                perm.owed_cancel = True

    @allowance("CANCEL-13")
    def note_prompt_cancel_request(self, ev: Ev) -> None:
        """$/cancel_request for a pending prompt: the response is still owed (CANCEL-14)."""

    @allowance("PERM-09")
    def note_permission_answer(self, ev: Ev) -> None:
        perm = self.perms.get(ev.id)
        if perm is None:
            return
        perm.state = "answered"
        perm.answer = ev.answer
        perm.answer_idx = ev.idx

    def note_accept(self, ev: Ev) -> None:
        for p in self.prompts:
            if p.id == ev.id and p.status == "pending":
                if self.early_user_messages:
                    self.early_user_messages -= 1
                    p.status = "inserted"
                else:
                    p.status = "accepted"
                break

    def note_reject(self, ev: Ev) -> None:
        self.prompts = [p for p in self.prompts if not (p.id == ev.id and p.status == "pending")]
        for c in self.cancels:  # a rejected prompt is no longer work a cancel could stop
            c.prior = c.prior and self._prior(c.idx)
        self._settle_prompts()

    @allowance("MSG-02", "PROMPT-06")
    def note_user_message(self, ev: Ev) -> None:
        if ev.message_id is None or ev.message_id in self.user_ids:
            return
        self.user_ids.add(ev.message_id)
        accepted = [p for p in self.prompts if p.status == "accepted"]
        if accepted:
            # Which prompt it belongs to is not on the wire; marking the latest one
            # keeps the earliest prompts "unfinished", the cautious choice for CANCEL-11.
            accepted[-1].status = "inserted"
        else:
            self.early_user_messages += 1

    def start_work(self, ev: Ev) -> None:
        """Quiet -> work: sort leftover cancels into stale (dropped) and ambiguous."""
        kept = []
        for c in self.cancels:
            if c.status == "I":
                if self._is_stale(c):
                    continue
                c.status = "A"
            kept.append(c)
        self.cancels = kept
        self.cancelled_tools = set()
        self.work_tools = set()
        for p in self.prompts:
            p.ran = True

    def note_blocked(self, ev: Ev) -> None:
        for perm in self.perms.values():
            perm.unreported_block = False

    def note_resumed(self, ev: Ev) -> None:
        for perm in self.perms.values():
            if perm.state != "open":
                perm.unreported_block = False

    @allowance("STATE-04", "STATE-02", "CANCEL-06")
    def end_work(self, ev: Ev) -> None:
        """An idle that ends foreground work: settle cancels, prompts and tool calls."""
        if self.state in QUIET:
            self.start_work(ev)  # unreported work (already reported under STATE-01)
        cancelled = ev.reason == "cancelled"
        served: list[CancelRec] = []  # cancels this idle answered or already judged
        if cancelled:
            justifying = [c for c in self.cancels if c.status in ("W", "A")]
            served += justifying[:1]
            self.cancelled_tools = set(self.work_tools)
        # Read during this work: judged by CANCEL-07 above.
        served += [c for c in self.cancels if c.status == "W" and self._read(c.idx)
                   and c not in served]
        self.prompts = [p for p in self.prompts if p.status != "inserted"]
        for p in self.prompts:
            p.ran = True
        kept = []
        for c in self.cancels:
            if c in served:
                if not self._prior(c.idx):
                    continue
                # A prompt sent before it is still open (not yet accepted, say): the same cancel
                # may stop that prompt too, with a cancelled idle of its own.
                c.status, c.prior, c.owes_reply = "I", True, False
            elif c.status in ("W", "A"):
                # Unread when the work ended (a race): the agent meets it while quiet. After a
                # cancelled idle it may already have been answered.
                c.owes_reply = not cancelled and (c.status == "W" or c.owes_reply)
                c.status = "I"
                c.prior = self._prior(c.idx)
            kept.append(c)
        self.cancels = kept
        self._settle_prompts()
        self.work_tools = set()
        self.note_resumed(ev)

    def settle_idle(self, ev: Ev) -> None:
        """An idle that ends no work; a cancelled one answers a cancel read while quiet."""
        if self._ends_work(ev):
            self.end_work(ev)
            return
        if ev.reason == "cancelled":
            quiet = [c for c in self.cancels if c.status == "I"]
            if quiet:  # under A-04=idle-cancelled, answer the one that owes a reply first
                owing = [c for c in quiet if c.owes_reply] if self._replies_owed() else []
                self.cancels.remove((owing or quiet)[0])
        self.note_resumed(ev)

    def _settle_prompts(self) -> None:
        if not self.prompts:
            for c in self.cancels:
                c.prior = False

    @allowance("PERM-01", "PERM-13")
    def note_permission_request(self, ev: Ev) -> None:
        perm = PermRec(ev.id, ev.idx, ev.tool_call_id, dict(ev.options or {}))
        perm.owed_cancel = self._owing_cancel()
        perm.unreported_block = self.state == "running"
        self.perms[ev.id] = perm
        if ev.tool_call_id is not None:
            tool = self.tools.setdefault(ev.tool_call_id, ToolRec())
            tool.perm = ev.id
            if self.state in WORK:
                self.work_tools.add(ev.tool_call_id)

    def note_withdraw(self, ev: Ev) -> None:
        perm = self.perms.get(ev.id)
        if perm is not None and perm.state == "open":
            perm.state = "withdrawn"

    @allowance("TOOL-10", "CANCEL-08")
    def note_tool_update(self, ev: Ev) -> None:
        self.tools.setdefault(ev.tool_call_id or "", ToolRec())
        if self.state in WORK:
            self.work_tools.add(ev.tool_call_id or "")

    @allowance("STATE-07", "USAGE-01", "PROMPT-13")
    def note_output(self, ev: Ev) -> None:
        """Other session updates: legal in every state; they never change the state."""

    # --- what is still owed; copies -------------------------------------------------------
    def obligations(self) -> list[tuple[str, int, str]]:
        """Liveness obligations still open: (rule, index that created it, what is owed).

        The monitor judges these at the end of a trace (or of a fuzz example), the explorer
        calls a configuration quiescent when the list is empty. Index -1: the end of the trace.
        """
        out: list[tuple[str, int, str]] = []
        for p in self.prompts:
            if p.status == "pending":
                out.append(("PROMPT-04", p.idx, f"session/prompt #{p.idx} was never answered"))
            elif p.status == "accepted":
                out.append(("PROMPT-06", p.idx, f"session/prompt #{p.idx} was accepted but no "
                            "user message reported where it entered the history"))
            elif self.state not in WORK and not p.ran:
                out.append(("STATE-02", p.idx, f"session/prompt #{p.idx} was accepted and its "
                            "user message reported, but its work never ran to an idle"))
        for perm in self.perms.values():
            if perm.state != "answered":
                rule = ("CANCEL-14" if perm.state == "withdrawn"
                        else "CANCEL-04" if perm.owed_cancel else "PERM-12")
                out.append((rule, perm.idx, f"the client never answered permission request "
                            f"#{perm.idx}"))
        if self.state in WORK:
            cancel = next((c for c in self.cancels if c.status in ("W", "A")), None)
            if cancel is not None:
                out.append(("CANCEL-06", cancel.idx, f"session/cancel #{cancel.idx} was sent "
                            f"during foreground work but the session is still {self.state}; "
                            "expected idle with stopReason cancelled"))
            else:
                out.append(("STATE-02", -1, f"foreground work is still {self.state}: it never "
                            "ended with an idle state_update"))
        elif self._replies_owed():
            out += [("CANCEL-06", c.idx, f"session/cancel #{c.idx} was never answered with "
                     "idle(cancelled) (reading A-04=idle-cancelled)")
                    for c in self.cancels if c.status == "I" and c.owes_reply]
        return out

    def clone(self, ctx: Context | None = None) -> SessionModel:
        """A copy that shares nothing mutable (~4 µs; ``copy.deepcopy`` costs ~80 µs).

        ``user_ids`` is copied too: it decides whether a message id is new.
        """
        c = object.__new__(type(self))
        c.__dict__.update(self.__dict__)
        c.ctx = self.ctx if ctx is None else ctx
        # (the explorer clones on every edge: empty collections skip the comprehensions)
        c.prompts = [PromptRec(p.idx, p.id, p.status, p.ran) for p in self.prompts] \
            if self.prompts else []
        c.user_ids = set(self.user_ids)
        c.cancels = [CancelRec(x.idx, x.status, x.prior, x.owes_reply) for x in self.cancels] \
            if self.cancels else []
        c.perms = {k: PermRec(p.id, p.idx, p.tool_call_id, p.options, p.state, p.owed_cancel,
                              p.answer, p.answer_idx, p.unreported_block)
                   for k, p in self.perms.items()} if self.perms else {}
        c.tools = {k: ToolRec(t.perm) for k, t in self.tools.items()} if self.tools else {}
        c.work_tools = set(self.work_tools)
        c.cancelled_tools = set(self.cancelled_tools)
        c.__dict__.pop("_acpm_machine", None)  # a library machine is bound to the original
        return c

    def forget_permission(self, perm_id: Any) -> None:
        self.perms.pop(perm_id, None)

    def indices(self) -> set[int]:
        """Every trace index the extended state still refers to."""
        out = {c.idx for c in self.cancels}
        for p in self.prompts:
            out.add(p.idx)
        for q in self.perms.values():
            if q.answer_idx >= 0:
                out.add(q.answer_idx)
        return out

    def snapshot(self, rank: dict[int, int] | None = None) -> tuple[Any, ...]:
        """Canonical, hashable abstraction of the state (used by the explorer).

        Trace indices only matter relative to each other and to the read frontier, so they are
        replaced by dense ranks (everything already read collapses to -1). The result is exact:
        two models with equal snapshots accept the same futures. Sessions sharing a frontier
        pass a ``rank`` computed over all their ``indices()`` (see ``joint_ranks``).
        """
        frontier = self.ctx.frontier
        if rank is None:
            rank = joint_ranks([self])
        busy = self.state in WORK
        # ``ran`` is read only while quiet, and every work end sets it: in work it is noise.
        prompts = tuple([(-1 if p.idx <= frontier else rank[p.idx], p.status, p.ran or busy)
                         for p in self.prompts])
        owed = self._replies_owed()  # nothing reads owes_reply under the other readings
        cancels = tuple([(-1 if c.idx <= frontier else rank[c.idx], c.status, c.prior,
                          c.owes_reply and owed) for c in self.cancels])
        perm_ids = {pid: n for n, pid in enumerate(self.perms)} if self.perms else {}
        perms = tuple([(perm_ids[p.id], p.state, p.owed_cancel, p.answer,
                        None if p.answer_idx < 0 else
                        -1 if p.answer_idx <= frontier else rank[p.answer_idx],
                        p.unreported_block, p.tool_call_id) for p in self.perms.values()])
        tools = tuple(sorted((k, perm_ids.get(v.perm)) for k, v in self.tools.items())) \
            if self.tools else ()
        return (self.state, prompts, self.early_user_messages, cancels, perms, tools,
                tuple(sorted(self.work_tools)) if self.work_tools else (),
                tuple(sorted(self.cancelled_tools)) if self.cancelled_tools else ())


def joint_ranks(models: list[SessionModel]) -> dict[int, int]:
    """Dense ranks of the unread indices of sessions that share one read frontier."""
    frontier = models[0].ctx.frontier if models else -1
    unread = sorted({i for m in models for i in m.indices() if i > frontier})
    return {i: n for n, i in enumerate(unread)}


def stay(*states: State, cond: str | list[str] | None = None, on: str | list[str] | None = None,
         ) -> TransitionList:
    """The same internal self-transition on each of ``states`` (most events move no state)."""
    kw: dict[str, Any] = {"internal": True}
    if cond is not None:
        kw["cond"] = cond
    if on is not None:
        kw["on"] = on
    return reduce(operator.or_, (s.to.itself(**kw) for s in states))


class SessionLifecycle(StateMachine):
    """Foreground states of one session and the classified wire events that move them.

    Naming: client events are what the client sends (``prompt``, ``cancel``...), agent events
    what the agent sends (``prompt_accepted``, ``running_reported``...). Each (state, event)
    pair has exactly one transition; its ``cond`` lists the checks guarding it.
    """

    unreported = State("Unreported", initial=True)
    idle = State("Idle")
    running = State("Running")
    requires_action = State("Requires action")
    custom = State("Custom state")

    # ---- client -> agent --------------------------------------------------------------
    prompt = (stay(unreported, idle, on="note_prompt")
              | stay(running, requires_action, custom, cond="prompt_while_busy_allowed",
                     on="note_prompt"))
    cancel = stay(unreported, idle, running, requires_action, custom, on="note_cancel")
    prompt_cancel_request = stay(unreported, idle, running, requires_action, custom,
                                 on="note_prompt_cancel_request")
    permission_answer = stay(unreported, idle, running, requires_action, custom,
                             cond="answer_honours_cancel", on="note_permission_answer")

    # ---- agent -> client: the prompt's response and the user message --------------------
    prompt_accepted = stay(unreported, idle, running, requires_action, custom,
                           cond=["acknowledgement_only", "idle_cancel_answered"],
                           on="note_accept")
    prompt_rejected = stay(unreported, idle, running, requires_action, custom,
                           cond="rejection_not_method_missing", on="note_reject")
    user_message = stay(unreported, idle, running, requires_action, custom,
                        cond="user_message_after_accept", on="note_user_message")

    # ---- agent -> client: foreground state ----------------------------------------------
    running_reported = (
        unreported.to(running, cond=["work_has_a_prompt", "running_after_user_message",
                                     "idle_cancel_answered"], on="start_work")
        | idle.to(running, cond=["work_has_a_prompt", "running_after_user_message",
                                 "idle_cancel_answered"], on="start_work")
        | stay(running, cond="blocked_state_reported", on="note_resumed")
        | requires_action.to(running, on="note_resumed")
        | custom.to(running, cond="blocked_state_reported", on="note_resumed")
    )
    requires_action_reported = (
        unreported.to(requires_action, cond=["running_before_blocking", "idle_cancel_answered"],
                      on=["start_work", "note_blocked"])
        | idle.to(requires_action, cond=["running_before_blocking", "idle_cancel_answered"],
                  on=["start_work", "note_blocked"])
        | running.to(requires_action, on="note_blocked")
        | stay(requires_action, on="note_blocked")
        | custom.to(requires_action, on="note_blocked")
    )
    custom_reported = (
        unreported.to(custom, cond="idle_cancel_answered", on="start_work")
        | idle.to(custom, cond="idle_cancel_answered", on="start_work")
        | running.to(custom)
        | requires_action.to(custom)
        | stay(custom)
    )
    idle_reported = (
        unreported.to(idle, cond=["prompt_work_announced", "one_stop_reason",
                                  "cancelled_has_cause"], on="settle_idle")
        | stay(idle, cond=["prompt_work_announced", "one_stop_reason", "cancelled_has_cause"],
               on="settle_idle")
        | running.to(idle, cond=["stop_reason_present", "cancel_honoured", "cancelled_has_cause",
                                 "idle_cancel_not_swallowed", "blocked_state_reported"],
                     on="end_work")
        | requires_action.to(idle, cond=["stop_reason_present", "cancel_honoured",
                                         "cancelled_has_cause", "idle_cancel_not_swallowed"],
                             on="end_work")
        | custom.to(idle, cond=["stop_reason_present", "cancel_honoured", "cancelled_has_cause",
                                "idle_cancel_not_swallowed", "blocked_state_reported"],
                    on="end_work")
    )

    # ---- agent -> client: permissions, tools, other output ------------------------------
    permission_request = (stay(unreported, idle, on="note_permission_request")
                          | stay(running, requires_action, custom,
                                 cond="no_new_work_after_cancel", on="note_permission_request"))
    permission_withdrawn = stay(unreported, idle, running, requires_action, custom,
                                on="note_withdraw")
    tool_update = (
        stay(unreported, idle, cond=["tool_titled_on_first_report", "tool_respects_answer",
                                     "not_after_cancelled_idle"], on="note_tool_update")
        | stay(running, custom, cond=["tool_titled_on_first_report", "tool_respects_answer"],
               on="note_tool_update")
        | stay(requires_action, cond=["tool_titled_on_first_report", "tool_respects_answer",
                                      "resumption_reported"], on="note_tool_update")
    )
    output = stay(unreported, idle, running, requires_action, custom, on="note_output")


CLIENT_EVENTS = ("prompt", "cancel", "prompt_cancel_request", "permission_answer")
AGENT_EVENTS = ("prompt_accepted", "prompt_rejected", "user_message", "running_reported",
                "requires_action_reported", "custom_reported", "idle_reported",
                "permission_request", "permission_withdrawn", "tool_update", "output")
EVENTS = CLIENT_EVENTS + AGENT_EVENTS
