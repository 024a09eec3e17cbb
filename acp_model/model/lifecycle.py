"""The session machine: its states and the classified wire events that move them.

The guards (``cond``) and actions (``on``) are named here and defined on
:class:`~acp_model.model.session.SessionModel`, the machine's model object; the engine compiles
this declaration into a table (``engine.compile_machine``).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from functools import reduce
from typing import TYPE_CHECKING, Any

from statemachine import State, StateMachine
from statemachine.transition_list import TransitionList

if TYPE_CHECKING:
    from acp_model.model.session import SessionModel

# The checks on every idle that ends reported work.
_ENDING = ["stop_reason_present", "cancel_honoured", "cancel_probably_honoured",
           "cancel_after_reopen_honoured", "held_prompt_cancelled", "cancelled_has_cause",
           "cancelled_not_only_by_order", "idle_cancel_not_swallowed"]


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
    prompt = stay(unreported, idle, running, requires_action, custom,
                  cond="prompt_while_busy_allowed", on="note_prompt")
    cancel = stay(unreported, idle, running, requires_action, custom, on="note_cancel")
    prompt_cancel_request = stay(unreported, idle, running, requires_action, custom,
                                 on="note_prompt_cancel_request")
    permission_answer = stay(unreported, idle, running, requires_action, custom,
                             cond="answer_honours_cancel", on="note_permission_answer")
    elicitation_answer = stay(unreported, idle, running, requires_action, custom,
                              on="note_elicitation_answer")

    # ---- agent -> client: the prompt's response and the user message --------------------
    prompt_accepted = stay(unreported, idle, running, requires_action, custom,
                           cond=["acknowledgement_only", "idle_cancel_answered",
                                 "receipt_names_a_new_message"],
                           on="note_accept")
    prompt_rejected = stay(unreported, idle, running, requires_action, custom,
                           cond="no_error_after_insertion", on="note_reject")
    user_message = stay(unreported, idle, running, requires_action, custom,
                        cond=["user_message_after_accept", "rejected_prompt_not_inserted"],
                        on="note_user_message")

    # ---- agent -> client: foreground state ----------------------------------------------
    running_reported = (
        unreported.to(running, cond=["work_has_a_prompt", "running_after_user_message",
                                     "idle_cancel_answered"], on=["start_work", "note_overlap"])
        | idle.to(running, cond=["work_has_a_prompt", "running_after_user_message",
                                 "idle_cancel_answered"], on=["start_work", "note_overlap"])
        | stay(running, cond="blocked_state_reported", on=["note_resumed", "note_overlap"])
        | requires_action.to(running, on=["note_resumption", "note_overlap"])
        | custom.to(running, cond="blocked_state_reported", on=["note_resumed", "note_overlap"])
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
        | running.to(idle, cond=[*_ENDING, "blocked_state_reported"], on="end_work")
        | requires_action.to(idle, cond=[*_ENDING, "blocking_elicitations_withdrawn"],
                             on="end_work")
        | custom.to(idle, cond=[*_ENDING, "blocked_state_reported"], on="end_work")
    )

    # ---- agent -> client: permissions, tools, other output ------------------------------
    permission_request = (stay(unreported, idle, on="note_permission_request")
                          | stay(running, requires_action, custom,
                                 cond="no_new_work_after_cancel", on="note_permission_request"))
    permission_withdrawn = stay(unreported, idle, running, requires_action, custom,
                                on="note_withdraw")
    # a session-scoped elicitation: a user-action wait like a permission request (STATE-05/06)
    elicitation_request = (stay(unreported, idle, on="note_elicitation_request")
                           | stay(running, requires_action, custom,
                                  cond="no_new_elicitation_after_cancel",
                                  on="note_elicitation_request"))
    tool_update = (
        stay(unreported, idle, cond=["tool_titled_on_first_report", "tool_respects_answer",
                                     "not_after_cancelled_idle", "content_before_cancelled_end",
                                     "content_before_turn_end"],
             on="note_tool_update")
        | stay(running, custom, cond=["tool_titled_on_first_report", "tool_respects_answer"],
               on="note_tool_update")
        | stay(requires_action, cond=["tool_titled_on_first_report", "tool_respects_answer",
                                      "resumption_reported"], on="note_tool_update")
    )
    output = (stay(unreported, idle, cond=["content_before_cancelled_end",
                                            "content_before_turn_end"], on="note_output")
              | stay(running, requires_action, custom, on="note_output"))


def quiescent(models: Iterable[SessionModel]) -> bool:
    """No session owes anything."""
    return not any(m.obligations() for m in models)
