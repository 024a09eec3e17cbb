"""The mutant zoo: each entry plants one deviation into the reference agent.

Each mutant breaks one wire-observable rule of the catalogue (``RULES.md`` IDs) and must be
caught by the fuzzer under that rule; what it plants is a hook of ``faults.py``. Behaviour the
text allows is not a mutant but a point of the design space (``design.py``): those measure
false positives. Every trigger is a protocol situation a random client reaches
quickly (the Nth prompt of a session, a cancel during a permission request, a second session,
...), never a magic prompt word. Mutants whose bug needs a mid-turn sync point force a
permission request (or a tool call, plan, usage update) into every turn so that the trigger is
reliable even in ``fast`` timing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    rule: str
    trigger: str
    description: str
    force_permission: bool = False
    force_tool: bool = False
    force_plan: bool = False
    force_usage: bool = False
    design: str = ""  # the design choices the fault needs (e.g. prompts held while busy)
    # The spec revisions in which it is a bug (the agent runs in the first one, --spec).
    revisions: tuple[str, ...] = ("seed",)
    # What the client must advertise for the trigger to exist (--client-capabilities JSON;
    # empty: what every client advertises)
    client_capabilities: str = ""


def _bug(name: str, rule: str, trigger: str, description: str, design: str = "",
         revisions: tuple[str, ...] = ("seed",), client_capabilities: str = "",
         **force: bool) -> Mutant:
    return Mutant(name, rule, trigger, description, design=design, revisions=revisions,
                  client_capabilities=client_capabilities, **force)


SDK = ("sdk-2.4.0",)
FORM_ELICITATION = '{"elicitation": {"form": {}}}'  # a client offering form elicitation


MUTANTS: tuple[Mutant, ...] = (
    # --- initialization / framing -------------------------------------------------------
    _bug("init_without_info", "INIT-09", "initialize",
         "initialize result has no `info`"),
    _bug("init_wrong_version", "INIT-04", "initialize",
         "answers protocolVersion 1 although 2 was requested and is supported"),
    _bug("stdout_banner", "RPC-04", "initialize",
         "prints a human banner line on stdout after the initialize response"),
    _bug("invalid_utf8", "RPC-02", "any prompt",
         "one agent_message_chunk line per turn carries a raw invalid UTF-8 byte"),
    _bug("answers_cancel", "CANCEL-02", "any session/cancel",
         "replies to the session/cancel notification with a null-id result"),
    _bug("empty_batch_reply", "RPC-09", "client sends a notification-only batch",
         "replies `[]` to a batch that holds only notifications"),
    # --- sessions -------------------------------------------------------------------------
    _bug("duplicate_session_id", "SESS-01", "2nd session/new on the connection",
         "session/new returns the first session's id again"),
    _bug("prompt_method_not_found", "INIT-10", "2nd prompt on a session",
         "answers session/prompt with -32601 although `session` is advertised"),
    _bug("updates_wrong_session", "PROMPT-06", "prompt on the 2nd session of the connection",
         "the turn's session/updates carry the first session's id: the prompted session never "
         "gets its user message (and the other one gets a turn it never had)"),
    _bug("updates_unknown_session", "SESS-12", "2nd prompt on a session",
         "the turn's session/updates carry a sessionId that was never created"),
    # --- prompt acceptance ----------------------------------------------------------------
    _bug("prompt_never_answered", "PROMPT-04", "2nd prompt on a session",
         "the prompt's work runs but the session/prompt request never gets a response"),
    _bug("prompt_answered_twice", "PROMPT-04", "any prompt",
         "session/prompt is answered twice (before and after the user message)"),
    _bug("no_user_message", "PROMPT-06", "2nd prompt on a session",
         "accepted prompt gets no user_message / user_message_chunk"),
    _bug("busy_prompt_deadlock", "PROMPT-04", "prompt while a turn is running / blocked",
         "a prompt read while busy is never answered nor processed",
         force_permission=True),
    _bug("busy_prompt_dropped", "PROMPT-06", "prompt while a turn is running / blocked",
         "a prompt read while busy is answered `{}` but silently dropped (no user message)",
         force_permission=True),
    _bug("cancelled_prompt_unanswered", "PROMPT-04", "prompt while busy, then session/cancel",
         "prompts read while busy are queued unanswered; a cancel drops them without a response",
         design="busy=queue", force_permission=True),
    _bug("withdrawn_prompt_unanswered", "CANCEL-14",
         "prompt while busy, then $/cancel_request for it",
         "a prompt withdrawn with $/cancel_request before it was accepted gets no response "
         "(the reference answers -32800); every prompt not withdrawn is answered",
         design="busy=queue", force_permission=True),
    # --- state reporting ------------------------------------------------------------------
    _bug("no_running", "STATE-01", "any prompt",
         "turns never report `running`; updates and idle come straight from idle"),
    _bug("requires_action_from_idle", "STATE-01", "any prompt (permission forced first)",
         "the turn's first state_update is `requires_action`, without `running` before it",
         force_permission=True),
    _bug("never_idle", "CANCEL-06", "2nd prompt on a session",
         "from the 2nd turn on the agent finishes its work but never reports idle, not even "
         "after session/cancel (the fuzzer's drain cancels, so STATE-02 shows as CANCEL-06)"),
    _bug("idle_without_stop_reason", "STATE-03", "any prompt",
         "the idle that ends a turn has no stopReason"),
    _bug("unknown_stop_reason", "STOP-03", "any prompt",
         "turns end with the unknown non-`_` stop reason `done`"),
    _bug("unknown_state", "STATE-09", "any prompt",
         "reports the non-`_` state `thinking` mid-turn (then `running` again)"),
    _bug("unknown_update_kind", "ENUM-02", "any prompt",
         "sends the non-`_` sessionUpdate kind `progress` mid-turn"),
    # --- message / tool / plan / usage payloads ----------------------------------------
    _bug("chunk_without_message_id", "MSG-01", "any prompt",
         "the first agent_message_chunk of each turn has no messageId"),
    _bug("unknown_tool_status", "TOOL-14", "any prompt (tool forced)",
         "tool call status `running` instead of `in_progress`", force_tool=True),
    _bug("unknown_tool_kind", "TOOL-15", "any prompt (tool forced)",
         "tool call kind `shell` (non-`_`, not a ToolKind)", force_tool=True),
    _bug("relative_tool_location", "TOOL-19", "any prompt (tool forced)",
         "tool call locations carry a relative path", force_tool=True),
    _bug("tool_content_unwrapped", "TOOL-07", "any prompt (tool forced)",
         "tool_call_content_chunk carries a bare ContentBlock instead of a `content` wrapper",
         force_tool=True),
    _bug("plan_missing_plan_id", "PLAN-02", "any prompt (plan forced)",
         "plan_update without planId", force_plan=True),
    _bug("usage_bad_currency", "USAGE-04", "any prompt (usage forced)",
         "usage_update cost currency `usd` (not an ISO 4217 code shape)", force_usage=True),
    _bug("usage_negative", "USAGE-02", "any prompt (usage forced)",
         "usage_update with `used: -1`", force_usage=True),
    # --- permissions ----------------------------------------------------------------------
    _bug("empty_permission_options", "PERM-02", "any prompt (permission forced)",
         "session/request_permission with `options: []`", force_permission=True),
    _bug("perm_custom_outcome_approves", "PERM-11", "permission answered with a custom outcome",
         "an unknown `_` outcome is treated as approval: the tool goes in_progress",
         force_permission=True),
    _bug("perm_reject_proceeds", "PERM-11", "permission rejected (reject option / cancelled)",
         "a reject or cancelled outcome is treated as approval: the tool goes in_progress",
         force_permission=True),
    # --- cancellation ---------------------------------------------------------------------
    _bug("cancel_as_end_turn", "CANCEL-07", "session/cancel during a turn",
         "a cancelled turn ends with stopReason end_turn", force_permission=True),
    _bug("cancel_no_idle", "CANCEL-06", "session/cancel during a turn",
         "a cancelled turn stops but never reports idle", force_permission=True),
    _bug("late_cancel_kills_next_turn", "CANCEL-11", "session/cancel while idle, then a prompt",
         "a cancel read while idle is remembered and ends the next turn as `cancelled`"),
    _bug("second_stop_reason", "CANCEL-11", "cancel during a turn, then the next prompt",
         "the turn after a cancelled one ends with idle end_turn and then a 2nd idle cancelled",
         force_permission=True),
    _bug("updates_after_cancelled_idle", "CANCEL-09", "session/cancel during a turn",
         "sends idle cancelled first, then the cancelled tool calls' updates",
         force_permission=True),
    _bug("stale_answer_resumes_tool", "CANCEL-09", "session/cancel during a permission request",
         "the client's late answer to a permission cancelled with the turn resumes the tool "
         "(in_progress/completed after the cancelled idle)", force_permission=True),
    _bug("stale_allow_next_permission", "PERM-11", "a stray permission answer, then a turn",
         "a client's duplicate (or withdrawn-request) allow is kept and taken for the next "
         "permission request: that tool runs while its own request is unanswered",
         force_permission=True),
    _bug("late_allow_next_permission", "PERM-11",
         "a late allow for cancelled work, then a turn",
         "a client's allow for a permission request of cancelled work, read after that work's "
         "cancelled idle, is kept and taken for the session's next permission request: that "
         "tool runs while its own request is unanswered", force_permission=True),
    _bug("cancel_crosses_sessions", "CANCEL-11", "two sessions busy, cancel one",
         "session/cancel also cancels every other session's turn", force_permission=True),
    # --- reopening a session ---------------------------------------------------------------
    _bug("replay_shares_message_id", "SESS-08", "session/resume with replay after a turn",
         "every replayed message (the user's and the agent's) carries one and the same "
         "messageId"),
    # --- the sdk-2.4.0 revision (the agent runs with --spec sdk-2.4.0) -------------------
    _bug("receipt_id_differs", "SDK-RECEIPT-02", "any prompt",
         "the receipt names another messageId than the user message it reports",
         revisions=SDK),
    _bug("receipt_id_reused", "SDK-RECEIPT-03", "2nd prompt on a session",
         "every prompt of a session is inserted (and receipted) under the first one's id",
         revisions=SDK),
    _bug("early_receipt", "SDK-RECEIPT-02", "prompt while busy",
         "a held prompt is answered with a receipt at once and inserted later under another "
         "id (a receipt before insertion)", design="busy=queue-reject", revisions=SDK,
         force_permission=True),
    _bug("error_after_insertion", "SDK-PROMPT-02", "2nd prompt on a session",
         "every 2nd prompt is inserted (its user message reported) and then answered with an "
         "error", revisions=SDK),
    _bug("held_prompt_outlives_cancel", "A-10.cancel", "prompt while busy, then cancel",
         "held prompts outlive a cancel and run afterwards (legal in the seed, a warning "
         "there)", design="busy=queue", revisions=SDK, force_permission=True),
    _bug("cancelled_as_error", "CANCEL-07", "session/cancel during a turn",
         "a cancelled turn ends with stopReason error", revisions=SDK, force_permission=True),
    _bug("background_dropped", "SDK-BG-01", "the turn after every 3rd",
         "the running snapshot of the turn after a watcher started omits the background list",
         revisions=SDK),
    _bug("background_removed_early", "SDK-BG-03", "the turn after every 3rd",
         "a finished watcher leaves the background list before its completed status",
         revisions=SDK),
    _bug("elicitation_left_pending", "SDK-ELICIT-01",
         "session/cancel while a form elicitation is open (a client offering form elicitation)",
         "a cancelled turn leaves the elicitation it was blocked on pending: no "
         "$/cancel_request before its cancelled idle", revisions=SDK,
         client_capabilities=FORM_ELICITATION),
)  # fmt: skip

BY_NAME: dict[str, Mutant] = {m.name: m for m in MUTANTS}

# The mutants that are bugs in v1 too (the reference agent speaks v1 when the client asks), and
# the rule v1 reports each under: v1 ends a turn with the prompt's response, so an unanswered
# cancelled turn is PROMPT-04 (v2: CANCEL-06), a turn ended with an error after a cancel is
# CANCEL-07 ("Agents MUST catch these errors"), and content after the cancelled response is
# CANCEL-09 ("before responding to the session/prompt request").
V1_RULES: dict[str, str] = {
    "prompt_never_answered": "PROMPT-04", "cancel_no_idle": "PROMPT-04",
    "cancel_as_end_turn": "CANCEL-07", "cancelled_as_error": "CANCEL-07",
    "late_cancel_kills_next_turn": "CANCEL-11", "updates_after_cancelled_idle": "CANCEL-09",
    "perm_reject_proceeds": "PERM-11", "duplicate_session_id": "SESS-01",
    "answers_cancel": "CANCEL-02", "stdout_banner": "RPC-04", "invalid_utf8": "RPC-02",
}


def get(name: str | None) -> Mutant | None:
    """The mutant called ``name`` (None for the reference agent); KeyError if unknown."""
    if name is None or name in ("", "none", "reference"):
        return None
    return BY_NAME[name]


def table() -> str:
    """A plain-text table for ``--list-mutants``."""
    rows = [("name", "rule", "trigger", "description")]
    rows += [(m.name, m.rule, m.trigger, m.description) for m in MUTANTS]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = []
    for r in rows:
        lines.append(
            "  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3]
        )
    return "\n".join(lines)
