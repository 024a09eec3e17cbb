"""The derived transition table and python-statemachine itself agree on random event streams."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_model.model import snapshot
from acp_model.model.connection import ConnectionLifecycle, ConnectionModel
from acp_model.model.context import Context, Proof
from acp_model.model.engine import LibraryEngine, TableEngine, compile_machine
from acp_model.model.events import Payload
from acp_model.model.lifecycle import SessionLifecycle
from acp_model.model.session import SessionModel
from acp_model.model.vocab import EVENTS, ConnEvent, ConnState, Event
from acp_model.spec.readings import DEFAULT, READING_DEFS, Readings
from acp_model.spec.revisions import REVISIONS

TABLE = compile_machine(SessionLifecycle, SessionModel)
CONNECTION = compile_machine(ConnectionLifecycle, ConnectionModel)

payloads = st.fixed_dictionaries({
    "id": st.sampled_from([1, 2, 3]),
    "reason": st.sampled_from([None, "end_turn", "cancelled", "_custom", "max_tokens"]),
    "message_id": st.sampled_from(["u1", "u2", "u3"]),
    "tool_call_id": st.sampled_from(["t1", "t2", None]),
    "status": st.sampled_from([None, "pending", "in_progress", "completed"]),
    "answer": st.sampled_from(["allow", "reject", "cancelled", "error", "custom"]),
    "error_code": st.sampled_from([None, -32800, -32601]),
    "options": st.just({"a": "allow_once", "r": "reject_once"}),
    "has_title": st.booleans(),
    "update": st.sampled_from(["update", "chunk"]),
    "result_keys": st.sampled_from([None, (), ("stopReason",)]),
    "new_message": st.booleans(),
    "first_report": st.booleans(),
    "content_key": st.sampled_from([None, "k1"]),
})
steps = st.lists(st.tuples(st.sampled_from(EVENTS), payloads, st.booleans()), max_size=40)
readings = st.builds(
    lambda picks: DEFAULT.parse([f"SPEC={picks['SPEC']}"] + [
        f"{k}={v}" for k, v in picks.items()
        if k != "SPEC" and k not in REVISIONS[picks["SPEC"]].decides]),
    st.fixed_dictionaries({k: st.sampled_from(list(d.values)) for k, d in READING_DEFS.items()}))


def _summary(failures: list) -> list[tuple[str, str]]:
    return [(c.name, lv) for c, lv in failures]


@settings(max_examples=150)
@given(steps=steps, chosen=readings)
def test_table_and_library_agree(steps: list, chosen: Readings) -> None:
    fast_model = SessionModel("s", Context(readings=chosen))
    slow_model = SessionModel("s", Context(readings=chosen))
    fast = TableEngine(TABLE, chosen)
    slow = LibraryEngine(TABLE, chosen)
    for idx, (event, fields, proof) in enumerate(steps):
        if proof:  # a response arrived: the agent has read everything so far
            fast_model.ctx.frontier = slow_model.ctx.frontier = idx
        a = fast.fire(fast_model, event, Payload(idx, **fields))
        b = slow.fire(slow_model, event, Payload(idx, **fields))
        assert _summary(a) == _summary(b), (event, fields)
        assert snapshot.snapshot(fast_model) == snapshot.snapshot(slow_model)
    assert fast.exercised == slow.exercised


def _as_the_monitor_delivers(steps: list) -> list:
    """Drop a second answer to a permission request id: the monitor routes duplicate
    responses to the RPC checks, never to the model (a new request may reuse the id)."""
    out, answered = [], set()
    for event, fields, proof in steps:
        if event == Event.PERMISSION_REQUEST:
            answered.discard(fields["id"])
        elif event == Event.PERMISSION_ANSWER:
            if fields["id"] in answered:
                continue
            answered.add(fields["id"])
        out.append((event, fields, proof))
    return out


_TURN = [(Event.PROMPT, {"id": 9}), (Event.PROMPT_ACCEPTED, {"id": 9}),
         (Event.RUNNING_REPORTED, {"id": 9})]


def _cycle(fields: dict) -> list:
    """A permission request that blocks the work, is answered and is acted on."""
    return [(e, fields, proof) for e, proof in (
        (Event.PERMISSION_REQUEST, False), (Event.REQUIRES_ACTION_REPORTED, False),
        (Event.PERMISSION_ANSWER, False), (Event.RUNNING_REPORTED, False))]


# a turn whose random events are mixed with whole permission cycles, where requests settle
permission_steps = st.lists(st.one_of(
    st.tuples(st.sampled_from(EVENTS), payloads, st.booleans()).map(lambda x: [x]),
    payloads.map(_cycle)), max_size=12).map(
        lambda parts: [(e, f, False) for e, f in _TURN] + [x for p in parts for x in p])


def _beyond_proof(ctx: Context) -> tuple[int, list[Proof]]:
    return (max(ctx.probable, ctx.frontier), [h for h in ctx.hints if h.request > ctx.frontier])


@settings(max_examples=300)
@given(steps=st.one_of(steps, permission_steps), chosen=readings)
def test_retiring_settled_permission_requests_changes_no_verdict(steps: list,
                                                                 chosen: Readings) -> None:
    """The monitor retires settled requests out of the scans (``SessionModel.retire``); a
    model that retires after every event judges every event as one that never retires."""
    kept = SessionModel("s", Context(readings=chosen, keep_proofs=True))
    lean = SessionModel("s", Context(readings=chosen, keep_proofs=True))
    engine = TableEngine(TABLE, chosen)
    for idx, (event, fields, proof) in enumerate(_as_the_monitor_delivers(steps)):
        if proof:
            kept.ctx.frontier = lean.ctx.frontier = idx
        a = engine.fire(kept, event, Payload(idx, **fields))
        b = engine.fire(lean, event, Payload(idx, **fields))
        lean.retire()
        assert _summary(a) == _summary(b), (idx, event, fields)
        assert [(o.check.name, o.idx) for o in kept.obligations()] == \
            [(o.check.name, o.idx) for o in lean.obligations()]
        # what it probably read beyond what it provably read (the rest no verdict asks)
        assert _beyond_proof(kept.ctx) == _beyond_proof(lean.ctx)
        for pid in {f["id"] for _, f, _ in steps}:
            assert kept.facts.required_answers(pid) == lean.facts.required_answers(pid)
            assert kept.owed.unanswered_rule(pid) == lean.owed.unanswered_rule(pid)
    assert len(lean.perm_book.perms) <= len(kept.perm_book.perms)


conn_payloads = st.fixed_dictionaries({
    "id": st.sampled_from(["s1", "s2"]),
    "error_code": st.sampled_from([None, -32601, -32603]),
    "version": st.sampled_from([2, 1]),
})
conn_steps = st.lists(st.tuples(st.sampled_from(list(ConnEvent)), conn_payloads,
                                st.booleans()), max_size=30)


@settings(max_examples=150)
@given(steps=conn_steps, chosen=readings)
def test_connection_table_and_library_agree(steps: list, chosen: Readings) -> None:
    """The connection machine too: a guard sharing a name with an event once made the library
    call the event instead of the check, and only the session machine was compared."""
    fast_model = ConnectionModel(ctx=Context(readings=chosen))
    slow_model = ConnectionModel(ctx=Context(readings=chosen))
    fast = TableEngine(CONNECTION, chosen)
    slow = LibraryEngine(CONNECTION, chosen)
    for idx, (event, fields, advertised) in enumerate(steps):
        fast_model.ctx.session_advertised = slow_model.ctx.session_advertised = advertised
        a = fast.fire(fast_model, event, Payload(idx, **fields))
        b = slow.fire(slow_model, event, Payload(idx, **fields))
        assert _summary(a) == _summary(b), (event, fields)
        assert (fast_model.state, fast_model.session_ids) == (slow_model.state,
                                                              slow_model.session_ids)
    assert fast.exercised == slow.exercised


def test_the_library_machines_go_with_their_engine() -> None:
    """The library engine keeps each model's machine itself (not on the model): one machine
    per model while the engine lives, and both freed with it. A finaliser keyed on the model
    once kept every model it drove alive for the life of the process (its machine holds it)."""
    import gc
    import weakref

    engine = LibraryEngine(CONNECTION, DEFAULT)
    model = ConnectionModel(ctx=Context(readings=DEFAULT))
    engine.fire(model, ConnEvent.INITIALIZE, Payload(0, version=2))
    machine = engine._machine(model)
    engine.fire(model, ConnEvent.INITIALIZED, Payload(1, version=2))
    assert engine._machine(model) is machine
    assert machine.model is model and model.state == ConnState.READY
    gone = weakref.ref(model), weakref.ref(machine)
    del engine, model, machine
    gc.collect()
    assert [ref() for ref in gone] == [None, None]


def test_table_covers_every_state_event_pair() -> None:
    assert len(TABLE.transitions) == len(TABLE.states) * len(TABLE.events)
    assert set(TABLE.events) == set(EVENTS)
    for tr in TABLE.transitions.values():
        for chk in tr.checks:
            assert chk.rule and chk.doc, chk.name


def test_every_check_explains_itself_in_whole_sentences() -> None:
    """A violation says "Expected: <the check's docstring summary>": never cut mid-sentence."""
    from acp_model.model.engine import compile_machine
    from acp_model.model.lifecycle import SessionLifecycle
    from acp_model.model.session import SessionModel

    table = compile_machine(SessionLifecycle, SessionModel)
    docs = {c.name: c.doc for c in table.check_names().values()}
    assert docs
    cut = {name: doc for name, doc in docs.items() if not doc.rstrip("`").endswith((".", ")"))}
    assert cut == {}
    assert "merely sent while the work was reported" in docs["cancel_honoured"]


def test_the_table_is_compiled_once_per_machine() -> None:
    """Explorer runs, reading diffs and the renderer all ask for the table: introspecting the
    machine again each time would be wasted work."""
    from acp_model.model.engine import compile_machine
    from acp_model.model.lifecycle import SessionLifecycle
    from acp_model.model.session import SessionModel

    assert compile_machine(SessionLifecycle, SessionModel) is compile_machine(SessionLifecycle,
                                                                              SessionModel)


@settings(max_examples=300)
@given(steps=st.one_of(steps, permission_steps), chosen=readings)
def test_a_failing_guard_always_has_its_proof(steps: list, chosen: Readings) -> None:
    """Whenever an evidence-bearing check fails at its own level, its evidence says why: the
    guard and its proof ask the same named query, so a failure never silently becomes a
    warning (the monitor demotes a failure it cannot prove)."""
    model = SessionModel("s", Context(readings=chosen, keep_proofs=True))
    engine = TableEngine(TABLE, chosen)
    for idx, (event, fields, proof) in enumerate(_as_the_monitor_delivers(steps)):
        if proof:  # a response to a request sent just before: it read everything so far
            model.ctx.answered(idx - 1, idx)
        for chk, level in engine.fire(model, event, Payload(idx, **fields)):
            if chk.meta.evidence is not None and level == "fail":
                assert engine.evidence[chk.name] is not None, (idx, event, chk.name)
