"""What a session still owes: the liveness obligations, and which one an open request breaks.

One place decides it for the monitor (what is owed at the end of a trace or of a fuzz example)
and for the explorer (a configuration is quiescent when nothing is owed). The request-shaped
obligations (``REQUEST_OBLIGATIONS``) are judged by the monitor's open-request table for every
method alike; :meth:`Obligations.unanswered_rule` says which one an unanswered permission
request breaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_model.model.check import CheckMeta, declare
from acp_model.model.race_facts import ModelSession
from acp_model.model.vocab import WORK, Level, PermState, PromptStatus, Role


def _liveness(rule_id: str, name: str, doc: str, **kw: Any) -> CheckMeta:
    return declare(rule_id, name, doc, module=__name__, role=Role.OBLIGATION, **kw)


# Liveness obligations: what a session still owes is judged at the end of a trace (or of a
# fuzz example) with a deadline; the explorer calls a configuration quiescent when none is open.
PROMPT_ANSWERED = _liveness("PROMPT-04", "prompt_answered",
                            "Every session/prompt is eventually answered.")
USER_MESSAGE_REPORTED = _liveness("PROMPT-06", "user_message_reported",
                                  "Every accepted prompt is followed by its user message.")
WORK_ENDS = _liveness("STATE-02", "work_ends", "Foreground work eventually ends with an idle.")
CANCEL_ENDS_WORK = _liveness("CANCEL-06", "cancel_ends_work",
                             "A cancel sent during foreground work is answered with "
                             "idle(cancelled).")
IDLE_CANCEL_REPLIED = _liveness("A-04.idle-cancelled", "idle_cancel_replied",
                                "Under A-04=idle-cancelled every cancel is answered with "
                                "idle(cancelled).")
PERMISSION_ANSWERED = _liveness("PERM-12", "permission_answered",
                                "Every permission request is eventually answered.")
# The narrow obligations below are special cases of the one a request's row owes (``narrows``,
# ``wire_table.roots``): CANCEL-04,
# "The Client MUST respond to all pending session/request_permission requests with the
# cancelled outcome" (v1 prompt-turn.mdx §Cancellation), is PERM-12's answer owed to every
# permission request, at a cancel; CANCEL-14, "MUST send one of these responses for the
# original request" ($/cancel_request, v1 schema.json and cancellation.mdx), is PROMPT-04's
# "the Agent MUST respond to the original session/prompt request" (prompt-turn.mdx §Check for
# Completion) and PERM-12's, for a request the client withdrew. An agent that answers no
# prompt breaks PROMPT-04, withdrawn or not: minimizing takes the broad rule's failure on the
# same request as the narrow one's, and reports it under the broad rule when the withdrawal
# is not needed.
CANCELLED_PERMISSION_ANSWERED = _liveness(
    "CANCEL-04", "cancelled_permission_answered",
    "A permission request pending at a cancel is answered with the cancelled outcome.",
    narrows=True, circumstance="cancel")
ELICITATION_ANSWERED = _liveness("ACPM-ANSWER", "elicitation_answered",
                                  "Every elicitation/create is eventually answered.")
WITHDRAWN_ANSWERED = _liveness("CANCEL-14", "withdrawn_answered",
                               "A request withdrawn with $/cancel_request is still answered.",
                               narrows=True, circumstance="withdrawal ($/cancel_request)")
RECEIPT_ECHOED = _liveness("SDK-RECEIPT-02", "receipt_echoed",
                           "The user message a prompt receipt names is reported with that "
                           "messageId.", reading="SPEC",
                           levels={"seed": "off", "sdk-2.4.0": "rule"})
# Obligations about a request's answer: the monitor judges open requests of every method the
# same way (with these metas), so it skips them among a session's obligations.
REQUEST_OBLIGATIONS = frozenset({PROMPT_ANSWERED, PERMISSION_ANSWERED,
                                 CANCELLED_PERMISSION_ANSWERED, WITHDRAWN_ANSWERED,
                                 ELICITATION_ANSWERED})


@dataclass(frozen=True, slots=True)
class Obligation:
    """Something still owed: the decision (rule, check), the index that created it, what."""

    check: CheckMeta
    idx: int  # -1: the end of the trace
    what: str
    # Owed because of a client message at ``idx`` (the agent knew only if it read it), rather
    # than because of work the agent accepted or reported itself.
    by_client: bool = False
    # The trace index from which it is owed, when not ``idx``: the start of the work that owes
    # its end. A client that last looked before it gave it no deadline (the fuzzer's drain).
    owed_from: int = -1

    @property
    def since(self) -> int:
        return self.owed_from if self.owed_from >= 0 else self.idx


class Obligations:
    """What one :class:`~acp_model.model.session.SessionModel` still owes: a view that owns no
    state."""

    __slots__ = ("m",)

    def __init__(self, m: ModelSession) -> None:
        self.m = m

    def unanswered_rule(self, perm_id: Any) -> CheckMeta:
        """Which obligation an unanswered permission request (or elicitation) breaks."""
        perm = self.m.perm_book.perm(perm_id)
        if perm is not None and perm.state == PermState.WITHDRAWN:
            return WITHDRAWN_ANSWERED
        if perm is not None and perm.elicitation:
            return ELICITATION_ANSWERED
        if perm is not None and perm.owed_cancel:
            return CANCELLED_PERMISSION_ANSWERED
        return PERMISSION_ANSWERED

    # --- what is still owed; what can be forgotten -----------------------------------------
    def obligations(self) -> list[Obligation]:
        """Liveness obligations still open (empty: the session is quiescent).

        The monitor judges these at the end of a trace (or of a fuzz example), the explorer
        calls a configuration quiescent when the list is empty.
        """
        m = self.m
        out: list[Obligation] = []
        for p in m.queue.prompts:
            if p.status == PromptStatus.PENDING:
                # a withdrawn prompt is still owed its answer: CANCEL-14 says so, as the
                # monitor's open-request table does for every withdrawn request
                out.append(Obligation(WITHDRAWN_ANSWERED if p.withdrawn else PROMPT_ANSWERED,
                                      p.idx, f"session/prompt #{p.idx} was never answered"))
            elif p.status == PromptStatus.ACCEPTED:
                out.append(Obligation(USER_MESSAGE_REPORTED, p.idx,
                                      f"session/prompt #{p.idx} was accepted but no user message "
                                      "reported where it entered the history"))
            elif m.state not in WORK and not p.ran:
                out.append(Obligation(WORK_ENDS, p.idx,
                                      f"session/prompt #{p.idx} was accepted and its user "
                                      "message reported, but its work never ran to an idle"))
        for perm in m.perm_book.perms.values():
            if perm.state != PermState.ANSWERED:
                what = "elicitation/create" if perm.elicitation else "permission request"
                out.append(Obligation(self.unanswered_rule(perm.id), perm.idx,
                                      f"the client never answered {what} #{perm.idx}"))
        if m.state in WORK:
            # A cancel read while this work's prompt was held behind earlier work binds it
            # only under A-10=cancel: otherwise this is new work, owed only its end.
            cancel = next((c for c in m.cancel_book.cancels if m.facts.concerns_work(c)), None)
            if cancel is not None:
                out.append(Obligation(CANCEL_ENDS_WORK, cancel.idx,
                                      f"session/cancel #{cancel.idx} was sent during foreground "
                                      f"work but the session is still {m.state}; expected "
                                      "idle with stopReason cancelled",
                                      owed_from=max(cancel.idx, m.work.began)))
            else:
                out.append(Obligation(WORK_ENDS, -1, f"foreground work is still {m.state}: "
                                      "it never ended with an idle state_update",
                                      owed_from=max(0, m.work.began)))
        if RECEIPT_ECHOED.level(m.ctx.readings) != Level.OFF:  # receipts' revisions
            out += [Obligation(RECEIPT_ECHOED, idx, f"the receipt #{idx} names user message "
                               f"{mid!r}, which was never reported")
                    for mid, idx in m.queue.receipts_owed.items()]
        if m.state not in WORK and m.facts.replies_owed():
            out += [Obligation(IDLE_CANCEL_REPLIED, c.idx,
                               f"session/cancel #{c.idx} was never answered with "
                               "idle(cancelled) (reading A-04=idle-cancelled)", by_client=True)
                    for c in m.cancel_book.quiet() if c.owes_reply]
        return out
