"""Reducers: the merge rules of message upserts/chunks, tool calls, plans and usage."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_model.model import views, wire_table
from acp_model.model.views import (
    MessageReport,
    SessionView,
    ToolCall,
    apply_permission_subject,
    reduce_plan,
    reduce_tool_call,
    reduce_usage,
    rendered_text,
    view_summary,
)
from tests.helpers import reduced

texts = st.text(alphabet="abcxyz", min_size=1, max_size=4)
blocks = texts.map(lambda s: {"type": "text", "text": s})


def upsert(content: Any = ..., mid: str = "m", kind: str = "agent_message", **extra: Any
           ) -> dict[str, Any]:
    u: dict[str, Any] = {"sessionUpdate": kind, "messageId": mid, **extra}
    if content is not ...:
        u["content"] = content
    return u


def chunk(block: dict[str, Any], mid: str = "m", kind: str = "agent_message_chunk"
          ) -> dict[str, Any]:
    return {"sessionUpdate": kind, "messageId": mid, "content": block}


def reduce_message(messages: Any, update: dict[str, Any]) -> Any:
    """A message update as its kind's row reduces it (the family and chunk of its reducer)."""
    report = wire_table.updates()[update["sessionUpdate"]].reduce
    assert isinstance(report, MessageReport)
    return views.reduce_message(messages, update, report.family, chunk=report.chunk)


def test_seed_example_a_then_chunk_b_then_c() -> None:
    a, b, c, d = ({"type": "text", "text": x} for x in "ABCD")
    m = reduce_message({}, upsert([a]))
    m = reduce_message(m, chunk(b))
    assert m["m"].content == (a, b)
    m = reduce_message(m, upsert([c]))
    assert m["m"].content == (c,)
    m = reduce_message(m, chunk(d))
    assert rendered_text(m["m"]) == "CD"


def test_omitted_null_and_empty_content() -> None:
    a = {"type": "text", "text": "A"}
    m = reduce_message({}, upsert([a], _meta={"k": 1}))
    kept = reduce_message(m, upsert(_meta={"k": 2}))
    assert kept["m"].content == (a,) and kept["m"].meta == {"k": 2}
    assert reduce_message(m, upsert(None))["m"].content == ()
    assert reduce_message(m, upsert([]))["m"].content == ()
    assert reduce_message(m, upsert(_meta=None))["m"].meta is None


def test_chunk_meta_is_chunk_scoped() -> None:
    m = reduce_message({}, upsert([], _meta={"msg": True}))
    m = reduce_message(m, {**chunk({"type": "text", "text": "x"}), "_meta": {"chunk": 1}})
    assert m["m"].meta == {"msg": True}


@given(st.lists(st.tuples(st.booleans(), st.lists(blocks, max_size=3)), max_size=12))
def test_content_is_the_last_upsert_plus_later_chunks(ops: list[tuple[bool, list]]) -> None:
    messages: dict[str, Any] = {}
    expected: list[dict[str, Any]] = []
    for is_upsert, items in ops:
        if is_upsert:
            messages = reduce_message(messages, upsert(items))
            expected = list(items)
        else:
            for block in items:
                messages = reduce_message(messages, chunk(block))
                expected.append(block)
    touched = any(is_upsert or items for is_upsert, items in ops)
    assert ("m" in messages) == touched
    assert (list(messages["m"].content) if touched else []) == expected


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), blocks), max_size=10))
def test_messages_are_keyed_by_message_id(ops: list[tuple[str, dict]]) -> None:
    messages: dict[str, Any] = {}
    for mid, block in ops:
        messages = reduce_message(messages, chunk(block, mid))
    for mid in ("a", "b"):
        want = tuple(block for m, block in ops if m == mid)
        assert (messages[mid].content if mid in messages else ()) == want


@given(st.lists(blocks, max_size=5))
def test_reducers_never_mutate_their_input(items: list[dict[str, Any]]) -> None:
    before = reduce_message({}, upsert(list(items)))
    snapshot = dict(before)
    reduce_message(before, chunk({"type": "text", "text": "z"}))
    reduce_message(before, upsert(None))
    assert dict(before) == snapshot


def test_tool_call_defaults_patches_and_content_replacement() -> None:
    tools = reduce_tool_call({}, {"sessionUpdate": "tool_call_update", "toolCallId": "t",
                                  "title": "Run"})
    assert tools["t"] == ToolCall(title="Run")  # documented defaults: pending, other
    item = {"type": "content", "content": {"type": "text", "text": "x"}}
    tools = reduce_tool_call(tools, {"sessionUpdate": "tool_call_content_chunk",
                                     "toolCallId": "t", "content": item}, chunk=True)
    tools = reduce_tool_call(tools, {"sessionUpdate": "tool_call_content_chunk",
                                     "toolCallId": "t", "content": item}, chunk=True)
    assert len(tools["t"].content) == 2
    tools = reduce_tool_call(tools, {"sessionUpdate": "tool_call_update", "toolCallId": "t",
                                     "status": "completed", "content": [item]})
    assert tools["t"].content == (item,) and tools["t"].status == "completed"
    tools = reduce_tool_call(tools, {"sessionUpdate": "tool_call_update", "toolCallId": "t",
                                     "title": None, "locations": [{"path": "/a"}]})
    assert tools["t"].title is None and tools["t"].status == "completed"
    assert tools["t"].locations == ({"path": "/a"},)
    tools = reduce_tool_call(tools, {"sessionUpdate": "tool_call_update", "toolCallId": "t",
                                     "content": None})
    assert tools["t"].content == ()


@given(st.lists(st.sampled_from(["pending", "in_progress", "completed", None]), min_size=1))
def test_tool_status_is_the_last_value_sent(statuses: list[str | None]) -> None:
    tools: dict[str, ToolCall] = {}
    for s in statuses:
        tools = reduce_tool_call(tools, {"sessionUpdate": "tool_call_update",
                                         "toolCallId": "t", "status": s})
    assert tools["t"].status == statuses[-1]


def test_plans_replace_wholesale_and_usage_is_a_snapshot() -> None:
    p1 = {"type": "items", "planId": "p", "entries": [{"content": "a"}, {"content": "b"}]}
    p2 = {"type": "items", "planId": "p", "entries": [{"content": "c"}]}
    plans = reduce_plan(reduce_plan({}, {"plan": p1}), {"plan": p2})
    assert dict(plans) == {"p": p2}
    u = reduce_usage(None, {"used": 5, "size": 10, "cost": {"amount": 1, "currency": "USD"}})
    u = reduce_usage(u, {"used": 6, "size": 10})
    assert (u.used, u.cost) == (6, {"amount": 1, "currency": "USD"})
    assert reduce_usage(u, {"used": 7, "size": 10, "cost": None}).cost is None


def test_session_view_routes_updates_and_permission_subjects() -> None:
    view = SessionView()
    for upd in [upsert([{"type": "text", "text": "hi"}], "u1", "user_message"),
                {"sessionUpdate": "state_update", "state": "running"},
                {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
                {"sessionUpdate": "_vendor", "x": 1}]:
        view = reduced(view, upd)
    assert tuple(view.order) == ("u1",) and view.state == "idle" and view.stop_reason == "end_turn"
    view = apply_permission_subject(view, {"title": "Prompt copy", "subject": {
        "type": "tool_call", "toolCall": {"toolCallId": "t9", "title": "Real title"}}})
    assert view.tools["t9"].title == "Real title"


def test_the_view_summary_lists_the_tool_calls_reported_last() -> None:
    """A violation carries the client's view in a few numbers: the last tool calls reported
    (a persistent map has no order of its own; the view keeps the recent ids)."""
    view = SessionView()
    for n in range(12):
        view = reduced(view, {"sessionUpdate": "tool_call_update",
                                     "toolCallId": f"t{n}", "status": "pending"})
    view = reduced(view, {"sessionUpdate": "tool_call_update", "toolCallId": "t0",
                                 "status": "completed"})
    summary = view_summary(view)["tool_calls"]
    assert list(summary) == [f"t{n}" for n in range(5, 12)] + ["t0"]
    assert summary["t0"] == "completed" and len(view.tools) == 12


@pytest.mark.parametrize("update", [
    {"sessionUpdate": "agent_message_chunk", "messageId": "m9",
     "content": {"type": "text", "text": "x"}},
    {"sessionUpdate": "tool_call_update", "toolCallId": "t9", "status": "pending"},
    {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p9", "entries": []}},
    {"sessionUpdate": "usage_update", "used": 1, "size": 2},
    {"sessionUpdate": "state_update", "state": "running"},
    {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn",
     "background": [{"type": "terminal", "terminalId": "x"}]},
    {"sessionUpdate": "terminal_update", "terminalId": "x9", "exitStatus": {"exitCode": 0}},
])
def test_an_update_keeps_every_view_field_it_does_not_own(update: dict[str, Any]) -> None:
    """An update's reducer builds views field by field (for speed): a field added to SessionView
    must be carried over by every branch, which this test sees for each field."""
    import dataclasses

    view = SessionView(**{f.name: _sentinel(f.name) for f in dataclasses.fields(SessionView)})
    after = reduced(view, update)
    owned = {"agent_message_chunk": {"messages", "order"},
             "tool_call_update": {"tools", "recent_tools"}, "plan_update": {"plans"},
             "usage_update": {"usage"},
             "state_update": {"state", "stop_reason", "background", "background_listed"},
             "terminal_update": {"terminals"}}
    for f in dataclasses.fields(SessionView):
        if f.name not in owned[update["sessionUpdate"]]:
            assert getattr(after, f.name) is getattr(view, f.name), f.name


def _sentinel(name: str) -> Any:
    from rpds import HashTrieMap, Queue

    return {"messages": HashTrieMap(), "tools": HashTrieMap(), "plans": HashTrieMap(),
            "order": Queue(), "recent_tools": ("t0",), "background": (("terminal", "y"),),
            "background_listed": True, "usage": None,
            "terminals": HashTrieMap()}.get(name, object())
