"""The revisions' translators are pure: a wire message in, the model's events out, with no
oracle behind them; the rules a revision adds are declared checks with revision levels."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from acp_model.model import replay_order
from acp_model.model.check import CHECKS, CheckMeta, meta_of
from acp_model.model.replay_order import Position
from acp_model.model.vocab import ErrorCode, Event, Level
from acp_model.oracle import dialects, monitor, turns_v1
from acp_model.spec.rules import RULES

S = "s1"
TEXT = [{"type": "text", "text": "hello"}]


def _events(steps: dialects.Steps) -> list[Event]:
    return [event for event, _, _ in steps]


def _run(dialect: dialects.Dialect, *seen: dialects.Seen) -> list[dialects.Steps]:
    """Translate ``seen`` in order, threading the memory: the steps of each message."""
    memory, out = dialect.start, []
    for one in seen:
        memory, steps = dialect.translate(one, memory)
        out.append(steps)
    return out


def test_a_translator_is_built_from_nothing_and_imports_no_oracle_part() -> None:
    """No store, machines, rpc or reopens: what it remembers of the connection is a value it
    is handed and returns."""
    assert not inspect.signature(dialects.V1).parameters
    assert not inspect.signature(dialects.V2).parameters
    for module in (dialects, turns_v1):
        tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {f"{node.module}.{alias.name}" for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module == "acp_model.oracle"
                     for alias in node.names}
        oracle = {m for m in imported if m.startswith("acp_model.oracle.")}
        assert oracle <= {"acp_model.oracle.turns_v1"}, (module.__name__, oracle)


def test_translate_is_pure_the_memory_before_a_message_is_unchanged() -> None:
    """The same message on the same memory gives the same steps, and the memory handed in
    is left as it was: a translation can be replayed, compared and tested alone."""
    v1 = dialects.V1()
    memory, _ = v1.translate(dialects.Prompted(S, 7, 3, TEXT), v1.start)
    assert v1.start == {} and len(memory[S]) == 1
    chunk = dialects.Updated(S, "agent_message_chunk", False, 4, "chunk")
    after, steps = v1.translate(chunk, memory)
    again, steps_again = v1.translate(chunk, memory)
    assert [(e, repr(ev), w) for e, ev, w in steps] \
        == [(e, repr(ev), w) for e, ev, w in steps_again]
    assert after == again and not memory[S][0].started and after[S][0].started
    with pytest.raises(TypeError):
        memory[S] = ()  # type: ignore[index]


def test_the_oracle_holds_the_memory_and_fires_the_steps() -> None:
    translator = dialects.Translator(dialects.V1())
    assert translator(dialects.Prompted(S, 1, 0, TEXT)) == ()
    assert _events(translator(dialects.AskedUser(S, 1, "permission"))) == [
        Event.PROMPT_ACCEPTED, Event.USER_MESSAGE, Event.RUNNING_REPORTED]
    assert translator.memory[S][0].shown


def test_v1_a_turn_is_derived_from_its_prompt_its_content_and_its_response() -> None:
    prompted, first, second, ended = _run(
        dialects.V1(), dialects.Prompted(S, 7, 3, TEXT),
        dialects.Updated(S, "agent_message_chunk", False, 4, "chunk"),
        dialects.Updated(S, "agent_message_chunk", False, 5, "chunk"),
        dialects.Answered(S, 7, 6, {"stopReason": "end_turn"}, False, None, "response"))
    assert prompted == () and second == ()  # the turn already runs
    assert _events(first) == [Event.PROMPT_ACCEPTED, Event.USER_MESSAGE,
                              Event.RUNNING_REPORTED]
    assert _events(ended) == [Event.IDLE_REPORTED] and ended[0][1].reason == "end_turn"
    assert ended[0][1].id == 7


def test_a_response_ends_its_own_prompt_and_the_next_runs_again_at_its_content() -> None:
    """Two open prompts: the oldest's turn is the content's; the idle its response becomes
    ends the span of work, so the other prompt's next content shows it running again."""
    *_, ended, resumed = _run(
        dialects.V1(), dialects.Prompted(S, 1, 0, TEXT), dialects.Prompted(S, 2, 1, TEXT),
        dialects.Updated(S, "agent_message_chunk", False, 2, "chunk"),
        dialects.Answered(S, 1, 3, {"stopReason": "end_turn"}, False, None, "response"),
        dialects.Updated(S, "agent_message_chunk", False, 4, "chunk"))
    assert _events(ended) == [Event.IDLE_REPORTED] and ended[0][1].id == 1
    assert _events(resumed) == [Event.PROMPT_ACCEPTED, Event.USER_MESSAGE,
                                Event.RUNNING_REPORTED]
    assert resumed[0][1].id == 2


def test_v1_reads_its_first_tool_report_as_an_upsert_and_history_starts_nothing() -> None:
    v1 = dialects.V1()
    row = dialects.wire_table.updates()["tool_call"]
    assert v1.read_as(row) == "tool_call_update" and dialects.V2().read_as(row) is None
    _, history = _run(v1, dialects.Prompted(S, 1, 0, TEXT),
                      dialects.Updated(S, "tool_call", True, 1, "tool"))
    assert history == ()  # replayed history is no turn content
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
    seen: list[dialects.Seen] = [dialects.Prompted(S, 1, 0, TEXT)]
    if cancelled:
        seen.append(dialects.Cancelled(S))
    seen.append(dialects.Answered(S, 1, 2, None, True, ErrorCode.INTERNAL_ERROR, "error"))
    derived = _run(dialects.V1(), *seen)[-1]
    assert _events(derived) == expected
    if cancelled:
        assert derived[-1][1].maybe_refusal is True


def test_a_withdrawn_prompt_answered_32800_ends_its_shown_turn_cancelled() -> None:
    *_, ended = _run(
        dialects.V1(), dialects.Prompted(S, 1, 0, TEXT), dialects.AskedUser(S, 1, "ask"),
        dialects.Withdrawn(S, 1),
        dialects.Answered(S, 1, 3, None, True, ErrorCode.REQUEST_CANCELLED, "error"))
    assert _events(ended) == [Event.IDLE_REPORTED] and ended[0][1].reason == "cancelled"
    *_, rejected = _run(
        dialects.V1(), dialects.Prompted(S, 1, 0, TEXT), dialects.Withdrawn(S, 1),
        dialects.Answered(S, 1, 3, None, True, ErrorCode.REQUEST_CANCELLED, "error"))
    assert _events(rejected) == [Event.PROMPT_REJECTED]


def test_v1_shown_turn_ended_by_an_error_is_no_refusal() -> None:
    *_, derived = _run(
        dialects.V1(), dialects.Prompted(S, 1, 0, TEXT),
        dialects.AskedUser(S, 1, "permission request"),
        dialects.Answered(S, 1, 2, None, True, ErrorCode.INTERNAL_ERROR, "error"))
    assert _events(derived) == [Event.IDLE_REPORTED] and not derived[0][1].maybe_refusal


def test_v2_derives_nothing_from_content_and_reads_its_receipt() -> None:
    v2 = dialects.V2()
    prompted, content, accepted, rejected = _run(
        v2, dialects.Prompted(S, 1, 0, TEXT),
        dialects.Updated(S, "agent_message_chunk", False, 1, "chunk"),
        dialects.Answered(S, 1, 2, {"messageId": "m1"}, False, None, "response"),
        dialects.Answered(S, 2, 3, None, True, ErrorCode.INTERNAL_ERROR, "error"))
    assert prompted == () and content == ()
    assert _events(accepted) == [Event.PROMPT_ACCEPTED]
    assert accepted[0][1].message_id == "m1" and accepted[0][1].result_keys == ("messageId",)
    assert _events(rejected) == [Event.PROMPT_REJECTED]
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


def test_every_v1_rule_is_a_declared_check_that_judges_under_v1_alone() -> None:
    """v1's own rules are decided where every rule is, each by a declared check that the
    revisions' data (the catalogue's ``Rule.revisions``, a ``SPEC`` level) turns on under v1
    and off under both v2 revisions: no translator runs one."""
    def judges(meta: CheckMeta, rev: str) -> bool:
        return RULES[meta.rule].applies(rev) and (
            meta.reading != "SPEC" or dict(meta.levels).get(rev) is not Level.OFF)

    assert monitor.Monitor  # imported: every check of the oracle is registered
    v1_checks = [meta for meta in CHECKS.values() if meta.rule.startswith("V1-")]
    assert {meta.rule for meta in v1_checks} >= {
        "V1-LOAD-01", "V1-RESUME-01", "V1-TOOL-01", "V1-TURN-01", "V1-NOTICE-01"}
    for meta in v1_checks:
        assert judges(meta, "v1") and not judges(meta, "seed") \
            and not judges(meta, "sdk-2.4.0"), meta
        assert not meta.module.startswith("acp_model.oracle.dialects"), meta
