"""Reachable-state exploration: properties, broken models, witnesses, reading diffs, coverage."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from acp_model.explorer import (
    Bounds,
    Config,
    Exploration,
    Move,
    actions,
    check_properties,
    contradictions,
    coverage,
    diff_readings,
    explore,
    make_event,
    parse_diff,
)
from acp_model.explorer.config import Observer, _edge_breaks, _observe
from acp_model.model.cancel_rules import CancelRules
from acp_model.model.check import CHECKS, CheckMeta, check
from acp_model.model.engine import CheckSpec, TableEngine, compile_machine
from acp_model.model.lifecycle import SessionLifecycle
from acp_model.model.session import SessionModel, View
from acp_model.model.vocab import WORK, Event, Role
from acp_model.oracle.offline import check_records
from acp_model.spec.readings import DEFAULT, ReadingError
from tests.helpers import S, base

LEAN_2 = Bounds(sessions=2, max_prompts=1, max_cancels=1, max_permissions=0, custom=False,
                lean=True, reasons=("end_turn", "cancelled"))
# One session, one prompt and one cancel, no permission request, the core alphabet: a couple of
# hundred states, yet every cancel story of a single turn (cancel before, during or after the
# work, read by a sync or by the prompt's response, each idle reason). The broken models and
# readings below find in it the very shortest witnesses the default bounds (25k states) find.
CANCEL_ONLY = Bounds(max_permissions=0, custom=False, lean=True)


@pytest.fixture(scope="module")
def one() -> Exploration:
    return explore()


@pytest.fixture(scope="module")
def two() -> Exploration:
    return explore(bounds=LEAN_2)


def _props(exp: Exploration) -> dict[str, Any]:
    return {p.id: p for p in check_properties(exp, limit=2)}


def _fails(report: dict[str, Any]) -> set[tuple[str, int]]:
    return {(v["rule"], v["index"]) for v in report["violations"] if v["level"] == "fail"}


# --- the real model ------------------------------------------------------------------------


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_one_session_every_property_holds(one: Exploration) -> None:
    props = _props(one)
    assert all(p.holds for p in props.values()), {k: p.summary for k, p in props.items()}
    c = props["c"].details
    assert c["unreached_states"] == [] and c["missing_transitions"] == []
    assert c["never_attempted"] == []
    # quiet -> requires_action only exists to report STATE-01 (reading A-16=strict)
    assert {(v["transition"], tuple(v["refused_by"])) for v in c["violation_only"]} == {
        ("unreported:requires_action_reported", ("STATE-01",)),
        ("idle:requires_action_reported", ("STATE-01",))}
    # (the default bounds try no tool call and no elicitation: test_elicitation_waits below)
    assert set(c["outside_alphabet"]) == {f"{s}:{e}" for s in one.table.states for e in (
        "tool_update", "elicitation_request", "elicitation_answer")}
    assert props["b"].checked > 0 and props["a"].details["quiescent_states"] > 0
    assert one.nodes > 1000 and max(one.depth) >= 8
    assert any("STATE-05" in e.warns[0] for e in one.edges)  # unreported permission wait


def test_graph_view_has_every_configuration_and_edge() -> None:
    """The networkx view (a few seconds for the default bounds' 260k edges: a small one)."""
    exp = explore(bounds=CANCEL_ONLY)
    g = exp.graph  # nodes are configurations, edges keyed by event label
    assert g.number_of_nodes() == exp.nodes and g.number_of_edges() == len(exp.edges)
    _, _, data = next(iter(g.out_edges(0, data=True)))
    assert {"event", "payload", "session", "party", "warnings", "source_state"} <= set(data)
    assert {(u, v, k) for u, v, k in g.edges(keys=True)} == {
        (e.src, e.dst, e.action.label) for e in exp.edges}
    assert any(d["warnings"] for _, _, d in g.edges(data=True))
    assert all(g.nodes[n]["quiescent"] == (not exp.info[n]["obligations"][0])
               for n in range(exp.nodes))


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_two_sessions_share_the_frontier_and_properties_hold(two: Exploration) -> None:
    props = _props(two)
    assert all(p.holds for p in props.values()), {k: p.summary for k, p in props.items()}
    # symmetry: one session's lean graph squared is an upper bound the product stays under
    alone = explore(bounds=dataclasses.replace(LEAN_2, sessions=1))
    assert alone.nodes < two.nodes < alone.nodes ** 2
    # a prompt response on one session proves the agent read a cancel sent on the other:
    # the explorer finds an end_turn refused (CANCEL-07) with no sync on the path
    found = None
    for rf in two.refusals:
        if rf.action.event == "idle_reported" and "CANCEL-07" in rf.rules[0]:
            w = two.witness(two.path_to(rf.src), rf.action)
            acting = w.steps[-1].session
            if all(a.event != "sync" for a in w.steps) and any(
                    a.event == "prompt_accepted" and a.session != acting for a in w.steps):
                found = w
                break
    assert found is not None
    assert _fails(check_records(found.records)) >= {("CANCEL-07", found.index)}


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_replaying_any_path_reaches_the_same_configuration(one: Exploration,
                                                           two: Exploration) -> None:
    rng = random.Random(5)
    for exp in (one, two):
        for _ in range(60):
            node, path = 0, []
            for _ in range(rng.randint(1, 14)):
                outs = exp.out_edges(node)
                if not outs:
                    break
                e = rng.choice(outs)
                path.append(e)
                node = e.dst
            cfg, *_ = exp.replay(path)
            assert cfg.canonical()[0] == exp.keys[node]


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_quiescence_mirrors_the_monitor_end_of_trace_judgement(one: Exploration) -> None:
    rng = random.Random(3)
    for n in rng.sample(range(one.nodes), 120):
        report = check_records(one.witness(one.path_to(n)).records)
        failing = [v for v in report["violations"]
                   if v["level"] == "fail" and v.get("kind") != "liveness"]
        assert not failing, failing  # a path of allowed edges is a legal trace
        live = {v["rule"] for v in report["violations"] if v.get("kind") == "liveness"}
        assert live == set(one.info[n]["obligations"][0])


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_every_refusal_witness_fails_check_at_its_record(one: Exploration) -> None:
    rng = random.Random(9)
    for rf in rng.sample(one.refusals, 80):
        w = one.witness(one.path_to(rf.src), rf.action)
        found = _fails(check_records(w.records))
        assert {(rule, w.index) for rule in rf.rules[0]} <= found, (rf, found)


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_compaction_merges_only_equivalent_configurations() -> None:
    b = Bounds(max_prompts=1, max_cancels=1, max_permissions=1, custom=False, lean=True)
    full = explore(bounds=b, compact=False)
    small = explore(bounds=b)

    def asks_again(exp: Exploration) -> bool:  # a second request once the first is answered
        return any(e.action.event == Event.PERMISSION_REQUEST and any(
            x.action.event == Event.PERMISSION_ANSWER for x in exp.path_to(e.src))
            for e in exp.edges)

    assert asks_again(small) and not asks_again(full)  # settled requests free their slot

    def signature(exp: Exploration) -> set[tuple[Any, ...]]:
        legal = {(e.src_state, e.action.event, e.action.arg if e.action.event
                  not in ("permission_answer", "permission_withdrawn") else None)
                 for e in exp.edges}
        refused = {(r.src_state, r.action.event, r.rules[0]) for r in exp.refusals}
        return legal | refused

    assert signature(full) == signature(small)
    assert {p.id: p.holds for p in check_properties(full)} == \
        {p.id: p.holds for p in check_properties(small)}
    for n in random.Random(1).sample(range(full.nodes), 200):
        cfg, *_ = full.replay(full.path_to(n))
        for m in cfg.models:
            m.compact()
        assert cfg.canonical()[0] in set(small.keys)


def _step(exp: Exploration, engine: TableEngine, cfg: Config, act: Move
          ) -> tuple[Any, Config]:
    """Fire ``act`` on a copy of ``cfg`` as the explorer does; the verdict it got."""
    ev, frontier = make_event(cfg, act)
    new = cfg.derive(act.session)
    new.ctx.frontier = frontier
    verdict: Any = None
    if act.session is not None:
        m = new.models[act.session]
        src = m.state
        if (src, act.event) in exp.table.transitions:
            ok, failures = engine.allowed(m, act.event, ev)
            verdict = (ok, sorted({(engine.rule_of(c), str(lv)) for c, lv in failures}))
            engine.apply(m, act.event, ev)
            m.compact()
        new.obs[act.session] = _observe(cfg.obs[act.session], src, act, ev.idx)
    new.next_idx += 1
    return verdict, new


# bounds that reach the other snapshot paths: siblings, a guarded request, a second prompt.
# Each adds one dimension to a core alphabet (the product of all of them has ~50k states, and
# "one" already merges cancels with a permission request): sibling requests need no cancel
# (sibling_answered is set by an answer), a tool call guarded by a request none, and the tool
# calls a cancelled idle ends (cancelled_tools, work_tools) no request.
WIDER = {
    "two_requests": Bounds(max_permissions=2, max_cancels=0, custom=False, lean=True),
    "two_prompts_two_cancels": Bounds(max_prompts=2, max_cancels=2, max_permissions=0,
                                      custom=False, lean=True),
    "guarded_tool_call": Bounds(max_tools=1, max_cancels=0, custom=False, lean=True),
    "cancelled_tool_call": Bounds(max_tools=1, max_permissions=0, custom=False, lean=True),
}


@pytest.mark.slow  # an exploration of seconds: `make test`
@pytest.mark.parametrize("which", ["one", "two", *WIDER])
def test_merged_configurations_accept_the_same_futures(which: str,
                                                       request: pytest.FixtureRequest) -> None:
    """Exactness of the keys: where the explorer merged two different histories into one
    node, both concrete configurations meet every continuation with the same verdicts and
    keys. (It once merged a cancel read before a prompt with one read after it: trace indices
    the agent had read all collapsed to one rank, and CANCEL-07 differs between them.)"""
    exp: Exploration = explore(bounds=WIDER[which], readings=DEFAULT.parse(
        ["A-04=idle-cancelled", "A-10=cancel"])) if which in WIDER \
        else request.getfixturevalue(which)
    engine = TableEngine(exp.table, exp.readings[0])
    rng = random.Random(7)
    merged = [e for e in exp.edges if exp.parent[e.dst] is not e and e.order is None]
    assert merged  # the bounds merge histories, or this would prove nothing

    def canonical(cfg: Config) -> tuple[Any, ...]:  # sessions in canonical order, as stored
        key, order = cfg.canonical()
        cfg.reorder(order)
        return key

    for e in rng.sample(merged, min(300, len(merged))):
        a, *_ = exp.replay([*exp.path_to(e.src), e])
        b, *_ = exp.replay(exp.path_to(e.dst))
        assert canonical(a) == canonical(b)
        for _ in range(10):
            acts = actions(a, exp.bounds)
            assert acts == actions(b, exp.bounds)
            act = rng.choice(acts)
            va, a = _step(exp, engine, a, act)
            vb, b = _step(exp, engine, b, act)
            assert va == vb, (e.action, act)
            assert canonical(a) == canonical(b), (e.action, act)


def test_the_alphabet_is_the_wire_tables_forms() -> None:
    """Each form of the table is tried with the arguments its kind offers, in the table's
    order (forms next to each other of one kind argument by argument), its payload and its
    label derived from its row: here two pending prompts and a permission request."""
    from acp_model.model import wire_table

    bounds = Bounds(max_prompts=2, max_permissions=1, max_tools=1, custom=False)
    table = compile_machine(SessionLifecycle, SessionModel)
    engine = TableEngine(table, DEFAULT)
    cfg = Config.initial(SessionModel, 1, DEFAULT)
    for event, arg in ((Event.PROMPT, None), (Event.PROMPT, None),
                       (Event.PERMISSION_REQUEST, "t1")):
        ev, _ = make_event(cfg, Move(0, event, arg))
        engine.fire(cfg.models[0], event, ev)
        cfg.next_idx += 1
    acts = [a for a in actions(cfg, bounds) if a.session is not None]  # (sync: the frontier)
    labels = [a.label for a in acts]
    tried = list(dict.fromkeys(a.event for a in acts))
    assert tried == [form.event for form in wire_table.FORMS if form.event in tried]
    assert labels[labels.index("s1 prompt_accepted(p0)"):][:4] == [
        "s1 prompt_accepted(p0)", "s1 prompt_rejected(p0)", "s1 prompt_accepted(p1)",
        "s1 prompt_rejected(p1)"]
    assert {"s1 prompt_cancel_request(p0)", "s1 permission_answer(q0=allow)",
            "s1 permission_withdrawn(q0)", "s1 tool_update(t1=completed)",
            "s1 idle_reported(none)"} <= set(labels)
    assert "s1 prompt" not in labels  # two prompts held: max_prompts spent
    assert "s1 permission_request(t1)" not in labels  # one request held: max_permissions spent
    by_label = {a.label: a for a in acts}
    p1 = cfg.models[0].queue.prompts[1]
    rejected, _ = make_event(cfg, by_label["s1 prompt_rejected(p1)"])
    assert (rejected.id, rejected.error_code) == (p1.id, -32603)
    assert make_event(cfg, by_label["s1 prompt_accepted(p1)"])[1] >= p1.idx  # read up to it
    assert make_event(cfg, by_label["s1 prompt_cancel_request(p0)"])[1] == cfg.ctx.frontier
    first, _ = make_event(cfg, by_label["s1 tool_update(t1=in_progress)"])
    assert (first.tool_call_id, first.update, first.first_report) == ("t1", "update", False)
    assert make_event(cfg, Move(0, Event.PROMPT))[0].id == cfg.next_idx  # a new request


# --- broken model variants: the right property fails, with a replayable witness -------------


class CancelForgotten(SessionModel):
    """``cancel`` records nothing: CANCEL-07 can never fire."""

    def note_cancel(self, ev: Any) -> None:
        pass


class _NoCause(CancelRules):
    __slots__ = ()

    @check("CANCEL-11", role=Role.GUARD)
    def cancelled_has_cause(self, ev: Any) -> bool:
        return True


# a planted guard, not a decision of the project: out of the registry that the rule map and
# the catalogue's tests read, whichever test module is imported first
CHECKS.pop(f"{__name__}.cancelled_has_cause")


class CancelledWithoutCause(SessionModel):
    """No ``cancelled_has_cause`` guard anywhere: any idle may say cancelled."""

    cancel_rules = View(_NoCause)


def test_forgotten_cancel_breaks_property_b_with_a_witness() -> None:
    # running, cancel, sync, idle(end_turn): depth 4, the same witness as in the default bounds
    exp = explore(model=CancelForgotten, bounds=CANCEL_ONLY)
    props = _props(exp)
    assert not props["b"].holds
    assert props["a"].holds and props["d"].holds
    w = props["b"].violations[0]["witness"]
    events = w["events"]
    assert events[-1] == "s1 idle_reported(end_turn)"
    assert "s1 cancel" in events and ("sync" in events or any("accepted" in e
                                                              for e in events))
    # the real model rejects the very same trace at the offending record
    assert _fails(check_records(w["trace"])) == {("CANCEL-07", w["offending_record"])}


def test_unguarded_cancelled_idle_breaks_property_e() -> None:
    # idle(cancelled) first thing (depth 1), the same witness as in the default bounds
    props = _props(explore(model=CancelledWithoutCause, bounds=CANCEL_ONLY))
    assert not props["e"].holds and props["b"].holds
    w = props["e"].violations[0]["witness"]
    assert w["events"][-1] == "s1 idle_reported(cancelled)"
    assert "s1 cancel" not in w["events"]
    assert _fails(check_records(w["trace"])) == {("CANCEL-11", w["offending_record"])}


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_missing_transition_fails_c_and_strands_work_in_a() -> None:
    table = compile_machine(SessionLifecycle, SessionModel)
    gone = {("requires_action", "idle_reported"), ("requires_action", "running_reported"),
            ("requires_action", "custom_reported")}
    broken = dataclasses.replace(table, transitions={k: v for k, v in table.transitions.items()
                                                     if k not in gone})
    props = _props(explore(table=broken, max_permissions=0))
    c = props["c"]
    assert not c.holds
    assert set(c.details["missing_transitions"]) == {f"{s}:{e}" for s, e in gone}
    assert not props["a"].holds  # requires_action can no longer be left
    stuck = props["a"].violations[0]
    assert stuck["state"].startswith("requires_action")
    assert stuck["witness"]["events"][-1] == "s1 requires_action_reported"


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_prompt_refused_after_a_turn_breaks_property_d() -> None:
    table = compile_machine(SessionLifecycle, SessionModel)
    never = CheckSpec(CheckMeta("no_second_turn", "PROMPT-01", __name__, Role.GUARD,
                                "a broken guard: idle refuses prompts"), lambda m, ev: False)
    tr = table.transitions[("idle", "prompt")]
    broken = dataclasses.replace(table, transitions={
        **table.transitions, ("idle", "prompt"): dataclasses.replace(tr, checks=(never,))})
    props = _props(explore(table=broken, max_permissions=0))
    assert not props["d"].holds and props["a"].holds
    w = props["d"].violations[0]["witness"]
    assert w["events"][-1] in ("s1 idle_reported(end_turn)", "s1 idle_reported(cancelled)")
    assert any(e.endswith(("running_reported", "custom_reported")) for e in w["events"])


# --- findings the explorer makes on the real model under non-default readings -------------


def test_idle_cancelled_reading_has_no_deadlock() -> None:
    """Regression: A-04=idle-cancelled used to deadlock after cancel, prompt, running, accept,
    idle(end_turn): the cancel, provably read, could then be answered by no legal move. The
    model now refuses the idle that swallows it (CANCEL-06), where the violation is provable."""
    strict = DEFAULT.parse(["A-04=idle-cancelled"])
    props = _props(explore(readings=strict, bounds=CANCEL_ONLY))
    assert all(p.holds for p in props.values()), {k: p.summary for k, p in props.items()}
    # the bounds are large enough to show the deadlock: without that refusal it comes back,
    # found by property (a). (The old bug's own path, cancel then prompt with nothing read in
    # between, no longer sticks: the cancel may have been read together with the prompt, so
    # that prompt's work may end cancelled. With the cancel read first, it does.)
    table = compile_machine(SessionLifecycle, SessionModel)
    unfixed = dataclasses.replace(table, transitions={k: dataclasses.replace(tr, checks=tuple(
        c for c in tr.checks if c.name != "idle_cancel_not_swallowed"))
        for k, tr in table.transitions.items()})
    stuck = _props(explore(readings=strict, bounds=CANCEL_ONLY, table=unfixed))["a"]
    assert not stuck.holds
    assert stuck.violations[0]["witness"]["events"] == [
        "s1 cancel", "s1 running_reported", "sync", "s1 prompt", "s1 prompt_accepted(p0)",
        "s1 idle_reported(end_turn)"]
    t = base().cancel(S).prompt(S, 10).running(S).accepted(10).user_message(S)
    t.idle(S, "end_turn")
    assert ("A-04.idle-cancelled", t.log.last) in _fails(check_records(t.records, readings=strict))
    assert check_records(t.records)["verdict"] == "pass"


def test_reading_never_turns_off_cancel_honoured() -> None:
    props = _props(explore(readings=DEFAULT.parse(["A-11=never"]), bounds=CANCEL_ONLY))
    assert not props["b"].holds and props["a"].holds


# --- reading diffs ----------------------------------------------------------------------------


def _assert_diff_verdicts(d: dict[str, Any], a: Any, b: Any) -> None:
    """Each witness passes check under the reading that allows it and fails, at the
    offending record, with the claimed rule under the one that refuses it."""
    names = {d["a"]: a, d["b"]: b}
    assert d["differences"]
    for item in d["differences"]:
        w = item["witness"]
        allowing, refusing = names[item["allowed_by"]], names[item["refused_by"]]
        ok = check_records(w["trace"], readings=allowing)
        assert ok["verdict"] == "pass", (item["transition"], ok["violations"])
        bad = _fails(check_records(w["trace"], readings=refusing))
        assert {(r, w["offending_record"]) for r in item["rules"]} <= bad


def test_diff_prompt_while_running_a01() -> None:
    (a, b), = parse_diff("A-01=join,forbid")
    # two prompts (one while the other is open) and every state they can meet: custom kept
    d = diff_readings(a, b, bounds=Bounds(max_prompts=2, max_permissions=0, lean=True))
    # forbid: a prompt while work runs, or while an earlier prompt is unanswered or unended
    assert {i["transition"] for i in d["differences"]} == {
        "running:prompt", "requires_action:prompt", "custom:prompt", "idle:prompt",
        "unreported:prompt"}
    assert all(i["allowed_by"] == "A-01=join" and i["rules"] == ["A-01.forbid"]
               for i in d["differences"])
    assert d["only_reachable"]["A-01=join"]["states"] > 0
    assert d["only_reachable"]["A-01=forbid"]["states"] == 0
    _assert_diff_verdicts(d, a, b)


def test_diff_cancel_while_idle_a04() -> None:
    (a, b), = parse_diff("A-04")
    # a second prompt: its acceptance proves a cancel read, and it is a newer prompt's start.
    # The default alphabet adds the same refusals from the custom state (work like running)
    d = diff_readings(a, b, bounds=Bounds(max_prompts=2, max_permissions=0, custom=False,
                                          lean=True))
    assert d["a"] == "A-04=noop" and d["b"] == "A-04=idle-cancelled"
    items = d["differences"]
    assert {i["rules"][0] for i in items} == {"A-04.idle-cancelled"}
    starts = {i["transition"] for i in items}
    assert {"idle:running_reported", "unreported:running_reported", "running:idle_reported",
            "unreported:prompt_accepted"} <= starts
    for i in items:
        events = i["witness"]["events"][: i["witness"]["offending_step"] + 1]
        assert "s1 cancel" in events
        # the cancel was provably read: a sync, or the acceptance of a later prompt
        assert "sync" in events or any(e.startswith("s1 prompt_accepted") for e in events)
    _assert_diff_verdicts(d, a, b)


def test_parse_diff_rejects_bad_input() -> None:
    with pytest.raises(ReadingError):
        parse_diff("A-01=join")
    with pytest.raises(ReadingError):
        parse_diff("A-01=join,maybe")
    with pytest.raises(ReadingError):
        parse_diff("A-99=x,y")
    assert len(parse_diff("A-11")) == 2  # default against each other value


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_strength_contradictions_report() -> None:
    rep = contradictions(explore_kw={"max_permissions": 0})
    by_id = {c["id"]: c for c in rep["contradictions"]}
    assert {e["rule"] for e in by_id["C-01"]["model_effect"]} == {"STATE-03"}
    assert "liveness" in by_id["C-02"]["note"]
    assert "A-14" in by_id["C-07"]["note"]
    assert set(rep["alt_strength_rules"]) >= {"STATE-03", "CANCEL-06", "STATE-06", "INIT-03"}


# --- coverage -------------------------------------------------------------------------------


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_coverage_of_check_reports(one: Exploration) -> None:
    node = next(n for n in range(one.nodes) if one.info[n]["states"][0] == "running")
    report = check_records(one.witness(one.path_to(node)).records)
    cov = coverage([report, {"runs": [report]}], one)
    exercised = set(cov["exercised"])
    assert exercised and all(cov["exercised"][k] % 2 == 0 for k in exercised)  # summed twice
    assert any(k.endswith(":running_reported") for k in exercised)
    assert "running:idle_reported" in cov["not_exercised_reachable"]
    assert "idle:requires_action_reported" in cov["not_exercised_never_legal"]
    assert cov["rules_not_exercised"] and "CANCEL-07" in cov["rules_not_exercised"]


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_observer_work_cancels_follow_reported_work(one: Exploration) -> None:
    for n, key in enumerate(one.keys):
        (snap, work_cancels, _cancelled), = key
        if work_cancels:
            assert one.info[n]["states"][0] in WORK or snap[0] in WORK


def test_exploration_restores_the_garbage_collector() -> None:
    import gc

    bounds = Bounds(sessions=1, max_prompts=1, max_cancels=0, max_permissions=0, custom=False,
                    lean=True, reasons=("end_turn",))
    assert gc.isenabled()
    explore(bounds=bounds)
    assert gc.isenabled()
    gc.disable()
    try:
        explore(bounds=bounds)
        assert not gc.isenabled()  # a caller's choice is kept too
    finally:
        gc.enable()
    with pytest.raises(ValueError):
        explore(bounds=bounds, readings=())
    assert gc.isenabled()  # and restored when exploration raises


def test_diff_between_spec_revisions() -> None:
    """What the newer revision allows and the seed forbids (work starting blocked, an idle
    without stop reason as a warning) and the other way round (a held prompt outliving a
    cancel); every witness passes check under the revision that allows it."""
    (a, b), = parse_diff("SPEC=seed,sdk-2.4.0")
    # a second prompt held behind the first one's work when a cancel comes; custom
    # states would add the running cases again, from custom
    d = diff_readings(a, b, bounds=Bounds(max_prompts=2, max_permissions=0, custom=False,
                                          lean=True))
    by_rule = {(i["refused_by"], r) for i in d["differences"] for r in i["rules"]}
    assert ("spec sdk-2.4.0", "A-10.cancel") in by_rule
    assert ("spec seed", "STATE-01") in by_rule and ("spec seed", "STATE-03") in by_rule
    _assert_diff_verdicts(d, a, b)


@pytest.mark.slow  # an exploration of seconds: `make test`
def test_elicitation_waits() -> None:
    """With an elicitation bound the explorer tries session-scoped elicitations and their
    answers: the waits STATE-05 reads (output needs the full alphabet), and under sdk-2.4.0
    SDK-ELICIT-01's cancelled end."""
    exp = explore(bounds=Bounds(max_permissions=0, max_elicitations=1, custom=False,
                                reasons=("end_turn", "cancelled")),
                  readings=DEFAULT.parse(["SPEC=sdk-2.4.0"]))
    c = _props(exp)["c"].details
    assert {t for t in c["outside_alphabet"] if "elicitation" in t} == {
        "custom:elicitation_request", "custom:elicitation_answer"}  # (custom states off)
    warned = {w for e in exp.edges for w in e.warns}
    assert any("STATE-05" in w for w in warned) and any("SDK-ELICIT-01" in w for w in warned)
    assert exp.bounds.to_json()["max_elicitations"] == 1


def test_an_idle_ending_work_without_a_reason_is_judged_by_its_revision_s_rule() -> None:
    """STATE-03 asks for a stop reason where an idle ends work: a MUST in the seed (the edge is
    refused), a SHOULD in sdk-2.4.0 (allowed, with its warning). Property (e) holds in both;
    it breaks only where the model would allow the idle with no word from that rule."""
    sdk = DEFAULT.parse(["SPEC=sdk-2.4.0"])
    for readings, allowed in ((DEFAULT, False), (sdk, True)):
        exp = explore(bounds=CANCEL_ONLY, readings=readings)
        bare = [e for e in exp.edges if e.action.event == Event.IDLE_REPORTED
                and e.action.arg is None and e.src_state in WORK]
        assert bool(bare) is allowed
        assert all("STATE-03" in e.warns[0] for e in bare)
        assert _props(exp)["e"].holds
    act = Move(0, Event.IDLE_REPORTED, None)
    assert "e" in _edge_breaks(Observer((), False), "running", act, 0)
    assert "e" not in _edge_breaks(Observer((), False), "running", act, 0, ("STATE-03",))
