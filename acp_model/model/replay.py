"""What v1 says about replayed history: session/load replays it before it answers, and
session/resume replays none of it.

Both are judged as warnings: content on the agent's stream cannot say whether it is history
or something the agent wrote for another reason (a late update of an earlier turn), so a
replay out of place is probable, never proven.
"""

from __future__ import annotations

from acp_model.model.check import check
from acp_model.model.vocab import Level

# sessionUpdate kinds that carry conversation history (v1 session-setup.mdx §Loading Sessions)
HISTORY_KINDS = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk",
                           "tool_call", "tool_call_update", "plan"})


@check("V1-LOAD-01", level=Level.WARN)
def load_replays_before_answering(kind: object, load_response: int | None) -> str | None:
    """session/load streams the conversation before its response: no history for the loaded
    session after the response while no prompt came since (probable, so a warning)."""
    if load_response is None or kind not in HISTORY_KINDS:
        return None
    return (f"{kind} for a loaded session after the session/load response #{load_response} "
            "and before any prompt: probably history replayed after the agent answered")


@check("V1-RESUME-01", level=Level.WARN)
def resume_replays_nothing(kind: object, resume_request: int | None) -> str | None:
    """session/resume replays no history: no conversation content between the request and
    its response (the agent may have written it before it read the request: a warning)."""
    if resume_request is None or kind not in HISTORY_KINDS:
        return None
    return (f"{kind} between session/resume #{resume_request} and its response: probably "
            "replayed history, which resume must not send")
