"""The plan of a session/update kind (oracle/updates.py): built once per kind from the
declarations it points at, unknown kinds sharing one, v1's readings taken from its
translator."""

from __future__ import annotations

from acp_model.model import classify, messages, reducers, wire_table
from acp_model.model.check import meta_of
from acp_model.oracle import dialects, updates, wire


def test_a_plan_is_built_once_per_kind_and_unknown_kinds_share_one() -> None:
    plans = updates.Plans("seed", dialects.V2())
    chunk = plans["agent_message_chunk"]
    assert plans["agent_message_chunk"] is chunk
    assert plans["_invented"] is plans[None] is plans["another_invention"]
    assert set(plans) == {"agent_message_chunk", None}  # inventions grow nothing


def test_a_plan_holds_what_its_kind_declares() -> None:
    """The checks are the ones each module's dispatch gives the kind (not copies), the
    reducer and classifier its row's."""
    plan = updates.build("seed", dialects.V2(), "tool_call_update")
    row = wire_table.updates()["tool_call_update"]
    assert plan.checks == messages.update_checks("seed", "tool_call_update")
    assert plan.view_checks == reducers.view_checks("seed", "tool_call_update")
    assert plan.reduce is row.reduce and plan.classify is row.classify
    assert not plan.translated and plan.read_as is None  # v2's translator derives nothing
    state = updates.build("seed", dialects.V2(), "state_update")
    assert state.states and state.classify is classify.state
    assert [m.name for _, m in reducers.view_checks("seed", "agent_message_chunk")] == [
        "family_kept"]
    chunk = updates.build("seed", dialects.V2(), "agent_message_chunk")
    assert chunk.replayed_view_checks == ()  # a replay's reuse is judged there (SESS-08)


def test_v1_reads_a_first_tool_report_as_the_upsert_and_hears_turn_content() -> None:
    v1 = dialects.V1()
    plan = updates.build("v1", v1, "tool_call")
    upsert = wire_table.updates()["tool_call_update"]
    assert plan.read_as == "tool_call_update"
    assert plan.reduce is upsert.reduce
    assert plan.classify is wire.classifier(upsert, v1.event_of)
    assert plan.translated  # turn content: it may start the oldest open prompt's turn
    # a user message is replayed history to v1, plain output to its classifier
    assert updates.build("v1", v1, "user_message_chunk").classify is classify.output
    assert not updates.build("v1", v1, "plan_update").translated


def test_a_plan_finds_what_its_kinds_single_message_checks_find() -> None:
    usage = {"sessionUpdate": "usage_update", "used": 1, "size": 2,
             "cost": {"amount": 1, "currency": "ABC"}}
    plan = updates.build("seed", dialects.V2(), "usage_update")
    found = plan.check(usage)
    assert found is not None and plan.checks is not None
    assert [m.rule for m, _, _ in found.found] == ["USAGE-04"]
    # the kind's entries are counted by the plan's tally, not logged per update
    assert found.ran == [] and plan.tally.groups == (plan.kind_entry, plan.checks[0]) \
        and plan.tally.n == 1


def test_a_kind_is_judged_once_when_its_plan_is_built_and_reported_on_each_update() -> None:
    """The checks reading an update's kind alone (Reads.UPDATE_KIND) are decided with the plan
    of a kind the wire table has; every update of it still gets its own finding. The kinds the
    table lacks share one plan, which judges each update's kind."""
    plan = updates.build("seed", dialects.V2(), "tool_call")  # v1's: no v2 revision defines it
    assert plan.kind_once and [m.rule for m, _, _ in plan.kind_found] == ["ENUM-02"]
    first, second = (plan.check({"sessionUpdate": "tool_call", "toolCallId": "t"})
                     for _ in range(2))
    assert first is not None and second is not None and first is not second
    assert [m.rule for m, _, _ in first.found] == ["ENUM-02"] == \
        [m.rule for m, _, _ in second.found]
    assert plan.tally.n == 2
    shared = updates.build("seed", dialects.V2(), None)
    assert not shared.kind_once
    bogus = shared.check({"sessionUpdate": "bogus"})
    assert bogus is not None and [m.rule for m, _, _ in bogus.found] == ["ENUM-02"]
    assert shared.check({"sessionUpdate": "_mine"}) is None


def test_an_update_that_holds_makes_no_findings_and_its_rules_are_counted_per_kind() -> None:
    """A conforming update of a kind carrying no part returns nothing to report (no
    Findings object on the hot path); the store derives its rules' exercised counts from
    the plan's tally when a report asks."""
    from acp_model.oracle.store import ViolationStore
    from acp_model.spec.readings import DEFAULT

    store = ViolationStore(DEFAULT, {})
    plans = updates.Plans("seed", dialects.V2(), store)
    plan = plans["usage_update"]
    usage = {"sessionUpdate": "usage_update", "used": 1, "size": 2}
    assert plan.check(usage) is None and plan.check(usage) is None
    assert plan.checks is not None and plan.checks[0]
    rules = {meta.rule for _, meta in plan.checks[0]}
    assert all(store.exercised[rule] >= 2 for rule in rules)


def test_no_replay_order_check_judges_a_quiet_position() -> None:
    """The oracle counts the replay-order checks held without placing an update that no
    reopen is around (Position.quiet): each check of every revision holds on one, whatever
    the update is."""
    from acp_model.model import replay_order
    from acp_model.spec import revisions

    kinds = [*wire_table.updates(), "_custom", None]
    whys = [None, "a user message while no prompt was open"]
    quiet = [replay_order.Position(kind, None, None, None, earlier, replayed)
             for kind in kinds for earlier in whys for replayed in whys]
    assert all(at.quiet for at in quiet)
    for rev in revisions.NAMES:
        checks = replay_order.table(rev)
        assert checks
        for fn, meta in checks:
            assert [fn(at) for at in quiet] == [None] * len(quiet), (rev, meta.name)
    assert not replay_order.Position("user_message", None, None, 3, None, None).quiet


def test_the_views_checks_of_a_kind_are_counted_by_its_plans_tallies() -> None:
    """A chunk the view's checks pass returns nothing; family_kept is counted per update by
    the plan's view tally (a replay's reuse: by the replayed tally, without it)."""
    from acp_model.oracle.store import ViolationStore
    from acp_model.spec.readings import DEFAULT

    store = ViolationStore(DEFAULT, {})
    plan = updates.Plans("seed", dialects.V2(), store)["agent_message_chunk"]
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    assert plan.check_view(reducers.SessionView(), chunk, False) is None
    assert plan.check_view(reducers.SessionView(), chunk, True) is None
    assert (plan.view_tally.n, plan.replayed_view_tally.n) == (1, 1)
    assert plan.replayed_view_tally.groups == ()  # family_kept left out there (SESS-08)
    assert store.exercised[meta_of(reducers.family_kept).rule] == 1


def test_the_parts_an_update_carries_are_counted_per_part_found() -> None:
    """A chunk's content block is a part (its row's ``parts``): ENUM-02's content check runs
    once per block found, counted by the part's tally; a conforming chunk returns nothing,
    an unknown block type is found at its path."""
    from acp_model.oracle.store import ViolationStore
    from acp_model.spec.readings import DEFAULT

    store = ViolationStore(DEFAULT, {})
    plan = updates.Plans("seed", dialects.V2(), store)["agent_message_chunk"]
    (content,) = plan.parts
    assert content.entry == ((messages.content_blocks_known,
                              meta_of(messages.content_blocks_known)),)
    text = {"type": "text", "text": "x"}
    assert plan.check({"sessionUpdate": "agent_message_chunk", "content": text}) is None
    assert content.tally.n == 1
    found = plan.check({"sessionUpdate": "agent_message_chunk",
                        "content": {"type": "hologram"}})
    assert found is not None and content.tally.n == 2
    assert [(m.name, path) for m, path, _ in found.found] == [
        ("content_blocks_known", "params/update/content/type")]
