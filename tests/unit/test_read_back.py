"""What a maintainer reads in a report (issue 49, the s12 reader's O5, O7, O8): actions that
wrote nothing say so, the proof window keeps the turn that started after an error, and the
scripted model's name is explained where an agent's notice names it."""

from __future__ import annotations

from typing import Any

from acp_model.report.proof import TURN_STARTS_ROLE, proof_lines

SID = "s-1"


def _update(n: int, kind: str, **more: Any) -> dict[str, Any]:
    return {"dir": "a2c", "n": n, "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": SID, "update": {"sessionUpdate": kind, **more}}}}


# codex-acp v2's SDK-PROMPT-03 (s12): the prompt withdrawn by $/cancel_request is answered
# -32800, then its turn starts anyway and its user message comes
WITHDRAWN = [
    {"dir": "c2a", "n": 0, "msg": {"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
                                   "params": {"sessionId": SID, "prompt": []}}},
    {"dir": "c2a", "n": 1, "msg": {"jsonrpc": "2.0", "method": "$/cancel_request",
                                   "params": {"requestId": 7}}},
    {"dir": "a2c", "n": 2, "msg": {"jsonrpc": "2.0", "id": 7,
                                   "error": {"code": -32800, "message": "cancelled"}}},
    _update(3, "notice", severity="warning", title="a notice"),
    _update(4, "usage_update"),
    _update(5, "state_update", state="running"),
    _update(6, "usage_update"),
    _update(7, "session_info_update"),
    _update(8, "available_commands_update"),
    _update(9, "user_message_chunk", content={"type": "text", "text": "[acpm:c3]"}),
]
EVIDENCE = [{"index": 0, "role": "the prompt"}, {"index": 2, "role": "its error response"},
            {"index": 9, "role": "the user message"}]


def test_the_proof_keeps_the_turn_that_starts_after_the_error() -> None:
    """O7: the window folded the `running` between the -32800 and the user message (more than
    a bridge of records apart), the very line that shows the refused prompt's turn ran."""
    lines = proof_lines(WITHDRAWN, 9, EVIDENCE)
    (running,) = [line for line in lines if "state_update running" in line]
    assert running.endswith(f"<- {TURN_STARTS_ROLE}")
    assert "#5" in running


def test_no_turn_start_is_named_without_an_error_before_it() -> None:
    evidence = [e for e in EVIDENCE if e["index"] != 2]
    assert not any(TURN_STARTS_ROLE in line
                   for line in proof_lines(WITHDRAWN[:2] + WITHDRAWN[3:], 9, evidence))
