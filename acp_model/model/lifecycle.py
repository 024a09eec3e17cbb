"""The session machine: its states and the classified wire events that move them.

The guards (``cond``) are the checks of the model's parts, named by reference
(``guards(CancelRules.cancel_honoured)``); the actions (``on``) are named here and defined on
:class:`~acp_model.model.session.SessionModel`, the machine's model object. The engine compiles
this declaration into a table (``engine.compile_machine``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from functools import reduce
from typing import TYPE_CHECKING, Any

from statemachine import State, StateMachine
from statemachine.transition_list import TransitionList

from acp_model.model.cancel_rules import CancelRules
from acp_model.model.engine import guards
from acp_model.model.prompt_rules import PromptRules
from acp_model.model.state_rules import StateRules

if TYPE_CHECKING:
    from acp_model.model.session import SessionModel

# The checks on every idle that ends reported work.
_ENDING = (StateRules.stop_reason_present, CancelRules.cancel_honoured,
           CancelRules.cancel_probably_honoured, CancelRules.cancel_after_reopen_honoured,
           CancelRules.cancel_after_done_honoured, CancelRules.held_prompt_cancelled,
           CancelRules.cancelled_has_cause, CancelRules.cancelled_not_only_by_order,
           CancelRules.idle_cancel_not_swallowed)
# ... on work that starts from a quiet session, that blocks from one, on an idle that settles
_STARTING = (PromptRules.work_has_a_prompt, PromptRules.running_after_user_message,
             CancelRules.idle_cancel_answered)
_BLOCKING = (StateRules.running_before_blocking, CancelRules.idle_cancel_answered)
_SETTLING = (StateRules.prompt_work_announced, StateRules.one_stop_reason,
             CancelRules.cancelled_has_cause)
# ... on every tool report, and on content that comes while nothing runs
_TOOL = (StateRules.tool_titled_on_first_report, StateRules.tool_respects_answer)
_LATE = (CancelRules.content_before_cancelled_end, CancelRules.content_before_turn_end)


def stay(*states: State, cond: list[Callable[[Any, Any], bool]] | None = None,
         on: str | list[str] | None = None) -> TransitionList:
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
    prompt = stay(unreported, idle, running, requires_action, custom,
                  cond=guards(PromptRules.prompt_while_busy_allowed), on="note_prompt")
    cancel = stay(unreported, idle, running, requires_action, custom, on="note_cancel")
    prompt_cancel_request = stay(unreported, idle, running, requires_action, custom,
                                 on="note_prompt_cancel_request")
    permission_answer = stay(unreported, idle, running, requires_action, custom,
                             cond=guards(CancelRules.answer_honours_cancel),
                             on="note_permission_answer")
    elicitation_answer = stay(unreported, idle, running, requires_action, custom,
                              on="note_elicitation_answer")

    # ---- agent -> client: the prompt's response and the user message --------------------
    prompt_accepted = stay(unreported, idle, running, requires_action, custom,
                           cond=guards(PromptRules.acknowledgement_only,
                                       CancelRules.idle_cancel_answered,
                                       PromptRules.receipt_names_a_new_message),
                           on="note_accept")
    prompt_rejected = stay(unreported, idle, running, requires_action, custom,
                           cond=guards(PromptRules.no_error_after_insertion), on="note_reject")
    user_message = stay(unreported, idle, running, requires_action, custom,
                        cond=guards(PromptRules.user_message_after_accept,
                                    PromptRules.rejected_prompt_not_inserted),
                        on="note_user_message")

    # ---- agent -> client: foreground state ----------------------------------------------
    running_reported = (
        unreported.to(running, cond=guards(*_STARTING), on=["start_work", "note_overlap"])
        | idle.to(running, cond=guards(*_STARTING), on=["start_work", "note_overlap"])
        | stay(running, cond=guards(StateRules.blocked_state_reported),
               on=["note_resumed", "note_overlap"])
        | requires_action.to(running, on=["note_resumption", "note_overlap"])
        | custom.to(running, cond=guards(StateRules.blocked_state_reported),
                    on=["note_resumed", "note_overlap"])
    )
    requires_action_reported = (
        unreported.to(requires_action, cond=guards(*_BLOCKING), on=["start_work", "note_blocked"])
        | idle.to(requires_action, cond=guards(*_BLOCKING), on=["start_work", "note_blocked"])
        | running.to(requires_action, on="note_blocked")
        | stay(requires_action, on="note_blocked")
        | custom.to(requires_action, on="note_blocked")
    )
    custom_reported = (
        unreported.to(custom, cond=guards(CancelRules.idle_cancel_answered), on="start_work")
        | idle.to(custom, cond=guards(CancelRules.idle_cancel_answered), on="start_work")
        | running.to(custom)
        | requires_action.to(custom)
        | stay(custom)
    )
    idle_reported = (
        unreported.to(idle, cond=guards(*_SETTLING), on="settle_idle")
        | stay(idle, cond=guards(*_SETTLING), on="settle_idle")
        | running.to(idle, cond=guards(*_ENDING, StateRules.blocked_state_reported),
                     on="end_work")
        | requires_action.to(idle, cond=guards(*_ENDING,
                                               CancelRules.blocking_elicitations_withdrawn),
                             on="end_work")
        | custom.to(idle, cond=guards(*_ENDING, StateRules.blocked_state_reported),
                    on="end_work")
    )

    # ---- agent -> client: permissions, tools, other output ------------------------------
    permission_request = (stay(unreported, idle, on="note_permission_request")
                          | stay(running, requires_action, custom,
                                 cond=guards(CancelRules.no_new_work_after_cancel),
                                 on="note_permission_request"))
    permission_withdrawn = stay(unreported, idle, running, requires_action, custom,
                                on="note_withdraw")
    # a session-scoped elicitation: a user-action wait like a permission request (STATE-05/06)
    elicitation_request = (stay(unreported, idle, on="note_elicitation_request")
                           | stay(running, requires_action, custom,
                                  cond=guards(CancelRules.no_new_elicitation_after_cancel),
                                  on="note_elicitation_request"))
    tool_update = (
        stay(unreported, idle, cond=guards(*_TOOL, CancelRules.not_after_cancelled_idle, *_LATE),
             on="note_tool_update")
        | stay(running, custom, cond=guards(*_TOOL), on="note_tool_update")
        | stay(requires_action, cond=guards(*_TOOL, StateRules.resumption_reported),
               on="note_tool_update")
    )
    output = (stay(unreported, idle, cond=guards(*_LATE), on="note_output")
              | stay(running, requires_action, custom, on="note_output"))


def quiescent(models: Iterable[SessionModel]) -> bool:
    """No session owes anything."""
    return not any(m.obligations() for m in models)
