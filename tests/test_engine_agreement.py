"""The derived transition table and python-statemachine itself agree on random event streams."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_model.model import snapshot
from acp_model.model.connection import ConnectionLifecycle, ConnectionModel
from acp_model.model.context import Context
from acp_model.model.engine import LibraryEngine, TableEngine, compile_machine
from acp_model.model.events import Ev
from acp_model.model.session import EVENTS, SessionLifecycle, SessionModel
from acp_model.model.vocab import ConnEvent
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
    "kind": st.sampled_from(["update", "chunk"]),
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
        a = fast.fire(fast_model, event, Ev(idx, **fields))
        b = slow.fire(slow_model, event, Ev(idx, **fields))
        assert _summary(a) == _summary(b), (event, fields)
        assert snapshot.snapshot(fast_model) == snapshot.snapshot(slow_model)
    assert fast.exercised == slow.exercised


conn_payloads = st.fixed_dictionaries({
    "id": st.sampled_from(["s1", "s2"]),
    "error_code": st.sampled_from([None, -32601, -32603]),
    "kind": st.sampled_from([2, 1]),
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
        a = fast.fire(fast_model, event, Ev(idx, **fields))
        b = slow.fire(slow_model, event, Ev(idx, **fields))
        assert _summary(a) == _summary(b), (event, fields)
        assert (fast_model.state, fast_model.session_ids) == (slow_model.state,
                                                              slow_model.session_ids)
    assert fast.exercised == slow.exercised


def test_table_covers_every_state_event_pair() -> None:
    assert len(TABLE.transitions) == len(TABLE.states) * len(TABLE.events)
    assert set(TABLE.events) == set(EVENTS)
    for tr in TABLE.transitions.values():
        for chk in tr.checks:
            assert chk.rule and chk.doc, chk.name


def test_every_check_explains_itself_in_whole_sentences() -> None:
    """A violation says "Expected: <the check's docstring summary>": never cut mid-sentence."""
    from acp_model.model.engine import compile_machine
    from acp_model.model.session import SessionLifecycle, SessionModel

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
    from acp_model.model.session import SessionLifecycle, SessionModel

    assert compile_machine(SessionLifecycle, SessionModel) is compile_machine(SessionLifecycle,
                                                                              SessionModel)
