"""The revisions' translators are pure: a wire message in, the model's events out, with no
oracle behind them; the rules a revision adds are declared checks with revision levels."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from acp_model.model import replay_order
from acp_model.model.check import meta_of
from acp_model.model.replay_order import Position
from acp_model.model.vocab import ErrorCode, Event
from acp_model.oracle import dialects, turns_v1

S = "s1"
TEXT = [{"type": "text", "text": "hello"}]


def _events(derived: turns_v1.Derived) -> list[Event]:
    return [event for event, _, _ in derived]


def test_a_translator_is_built_from_nothing_and_imports_no_oracle_part() -> None:
    """No store, machines, rpc or reopens: what it needs of the connection it remembers."""
    assert not inspect.signature(dialects.V1).parameters
    assert not inspect.signature(dialects.V2).parameters
    for module in (dialects, turns_v1):
        tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module}
        oracle = {m for m in imported if m.startswith("acp_model.oracle")}
        assert oracle <= {"acp_model.oracle.turns_v1"}, (module.__name__, oracle)


def test_v1_a_turn_is_derived_from_its_prompt_its_content_and_its_response() -> None:
    v1 = dialects.V1()
    v1.prompt(S, 7, 3, TEXT)
    chunk = {"sessionUpdate": "agent_message_chunk", "content": TEXT[0]}
    read, derived = v1.update(S, chunk, "agent_message_chunk", False, 4, "chunk")
    assert read is chunk
    assert _events(derived) == [Event.PROMPT_ACCEPTED, Event.USER_MESSAGE,
                                Event.RUNNING_REPORTED]
    assert v1.update(S, chunk, "agent_message_chunk", False, 5, "chunk")[1] == []  # running
    ended = v1.prompt_answered(S, 7, 6, {"stopReason": "end_turn"}, False, None, "response")
    assert _events(ended) == [Event.IDLE_REPORTED] and ended[0][1].reason == "end_turn"
    assert ended[0][1].id == 7


def test_v1_reads_its_first_tool_report_as_an_upsert_and_history_starts_nothing() -> None:
    v1 = dialects.V1()
    v1.prompt(S, 1, 0, TEXT)
    tool = {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x"}
    read, derived = v1.update(S, tool, "tool_call", True, 1, "tool")
    assert read["sessionUpdate"] == "tool_call_update" and tool["sessionUpdate"] == "tool_call"
    assert derived == []  # replayed history is no turn content
    assert v1.event_of(dialects.wire_table.updates()["user_message_chunk"]) \
        is not dialects.V2().event_of(dialects.wire_table.updates()["user_message_chunk"])


@pytest.mark.parametrize(("cancelled", "expected"), [
    (False, [Event.PROMPT_REJECTED]),
    (True, [Event.PROMPT_ACCEPTED, Event.USER_MESSAGE, Event.RUNNING_REPORTED,
            Event.IDLE_REPORTED])])
def test_v1_an_error_for_a_silent_turn_is_a_rejection_or_maybe_one(
        cancelled: bool, expected: list[Event]) -> None:
    """After a cancel, an error for a prompt whose turn showed nothing ended that turn, or
    refused the prompt: the idle says it may be a refusal (revision-neutral), and CANCEL-07
    then warns only."""
    v1 = dialects.V1()
    v1.prompt(S, 1, 0, TEXT)
    if cancelled:
        v1.cancel(S)
    derived = v1.prompt_answered(S, 1, 2, None, True, ErrorCode.INTERNAL_ERROR, "error")
    assert _events(derived) == expected
    if cancelled:
        assert derived[-1][1].maybe_refusal is True


def test_v1_shown_turn_ended_by_an_error_is_no_refusal() -> None:
    v1 = dialects.V1()
    v1.prompt(S, 1, 0, TEXT)
    v1.turn_content(S, 1, "permission request")
    derived = v1.prompt_answered(S, 1, 2, None, True, ErrorCode.INTERNAL_ERROR, "error")
    assert _events(derived) == [Event.IDLE_REPORTED] and not derived[0][1].maybe_refusal


def test_v2_derives_nothing_from_content_and_reads_its_receipt() -> None:
    v2 = dialects.V2()
    v2.prompt(S, 1, 0, TEXT)
    update = {"sessionUpdate": "agent_message_chunk", "content": TEXT[0]}
    assert v2.update(S, update, "agent_message_chunk", False, 1, "chunk") == (update, [])
    accepted = v2.prompt_answered(S, 1, 2, {"messageId": "m1"}, False, None, "response")
    assert _events(accepted) == [Event.PROMPT_ACCEPTED]
    assert accepted[0][1].message_id == "m1" and accepted[0][1].result_keys == ("messageId",)
    assert not v2.prompts_are_the_conversation and dialects.V1().prompts_are_the_conversation


@pytest.mark.parametrize(("rev", "rules"), [
    ("v1", {"V1-LOAD-01", "V1-RESUME-01"}),
    ("seed", {"SESS-06", "SESS-07"}),
    ("sdk-2.4.0", {"SESS-06"})])
def test_the_replay_order_checks_of_a_revision_are_its_data(rev: str, rules: set[str]) -> None:
    """Which replay-order rules judge is the catalogue's revisions and the checks' SPEC
    levels (SESS-07's order check is off under v1, whose V1-LOAD-01 states it)."""
    assert {meta.rule for _, meta in replay_order.table(rev)} == rules
    assert meta_of(replay_order.resume_replays_before_answering).reading == "SPEC"


def test_a_user_message_proven_replayed_after_a_load_is_one_failure_not_two() -> None:
    """One root cause, one verdict: a proven replay is V1-LOAD-01's failure and not also its
    probable-replay warning; unproven history is the warning alone."""
    proven = Position("user_message_chunk", None, None, 5, "a user message", "it carries ...")
    found = {fn.__name__ for fn, _ in replay_order.table("v1") if fn(proven) is not None}
    assert found == {"load_history_after_answer"}
    unproven = Position("agent_message_chunk", None, None, 5, None, None)
    found = {fn.__name__ for fn, _ in replay_order.table("v1") if fn(unproven) is not None}
    assert found == {"load_replays_before_answering"}
    quiet = Position("agent_message_chunk", None, None, None, None, None)
    assert all(fn(quiet) is None for rev in ("v1", "seed", "sdk-2.4.0")
               for fn, _ in replay_order.table(rev))
