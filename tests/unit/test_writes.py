"""The parts each transition's actions may write (explorer.writes): what copy on write trusts."""

from __future__ import annotations

import dataclasses

import pytest

from acp_model.explorer import Bounds, Exploration, explore, make_event
from acp_model.explorer.writes import action_writes, transition_writes
from acp_model.model import snapshot
from acp_model.model.context import Context
from acp_model.model.engine import TableEngine
from acp_model.model.events import Payload
from acp_model.model.session import SessionModel
from acp_model.spec.readings import DEFAULT

PARTS = frozenset(snapshot.parts(SessionModel))
# Two small one-session explorations that between them fire every transition of the default
# one-session bounds that runs an action: cancels without permission requests, and the reverse.
SMALL = (Bounds.default(1, max_permissions=0), Bounds.default(1, max_cancels=0))


@pytest.fixture(scope="module", params=range(len(SMALL)))
def small(request: pytest.FixtureRequest) -> Exploration:
    return explore(bounds=SMALL[request.param])


def test_no_part_outside_a_transitions_set_changes(small: Exploration) -> None:
    """Every allowed event from a sample of the configurations, fired on a full copy: the parts
    its set leaves out are equal to the original's afterwards (the explorer shares them)."""
    writes = transition_writes(small.table)
    engine = TableEngine(small.table, DEFAULT)
    fired: set[tuple[str, str]] = set()
    for node in range(0, small.nodes, 4):  # every 4th: replaying each costs its depth
        cfg, *_ = small.replay(small.path_to(node))
        for edge in small.out_edges(node):
            if edge.action.session is None or not edge.allowed & 1:
                continue
            m = cfg.models[0]
            ev, frontier = make_event(cfg, edge.action)
            ctx = cfg.ctx.derive()
            ctx.frontier = frontier
            copy = snapshot.clone(m, ctx)
            key = (m.state, edge.action.event)
            engine.apply(copy, edge.action.event, ev)
            changed = {p for p in PARTS if getattr(copy, p) != getattr(m, p)}
            assert changed <= writes[key], (key, changed - writes[key])
            fired.add(key)
    acting = {(e.src_state, e.action.event) for e in small.edges if e.action.session is not None
              and e.allowed & 1 and small.table.transitions[e.src_state, e.action.event].actions}
    assert fired >= acting  # the sample fired every transition with actions there is


@pytest.mark.slow  # the default one-session exploration: seconds
def test_the_small_explorations_fire_every_acting_transition_of_the_defaults() -> None:
    """What the test above covers: every transition with actions that the default one-session
    exploration fires (the two small ones are cheaper than it)."""
    fired = [{(e.src_state, e.action.event) for e in explore(bounds=b).edges
              if e.action.session is not None} for b in (Bounds.default(1), *SMALL)]
    table = explore(bounds=SMALL[0]).table
    acting = {k for k in fired[0] if table.transitions[k].actions}
    assert acting and acting <= fired[1] | fired[2]


def test_copier_copies_the_named_parts_and_shares_the_rest() -> None:
    m = SessionModel("s1")
    m.note_prompt(Payload(3, id=3))
    copy = snapshot.copier(SessionModel, frozenset({"queue"}))(m, Context(DEFAULT))
    assert copy.queue == m.queue and copy.queue is not m.queue
    assert copy.queue.prompts[0] is not m.queue.prompts[0]
    assert all(getattr(copy, p) is getattr(m, p) for p in PARTS - {"queue"})
    assert snapshot.snapshot(copy) == snapshot.snapshot(m)
    with pytest.raises(ValueError, match="no parts"):
        snapshot.copier(SessionModel, frozenset({"facts"}))


def test_what_the_reading_cannot_follow_writes_every_part() -> None:
    @dataclasses.dataclass
    class Dynamic(SessionModel):
        def note_dynamic(self, ev: Payload) -> None:
            getattr(self, "qu" + "eue").add(ev)

        def note_unknown(self, ev: Payload) -> None:
            self.elsewhere.add(ev)  # type: ignore[attr-defined]

        def note_via_method(self, ev: Payload) -> None:
            self.note_dynamic(ev)

    assert action_writes(Dynamic, "note_dynamic") == PARTS
    assert action_writes(Dynamic, "note_unknown") == PARTS
    assert action_writes(Dynamic, "note_via_method") == PARTS
    assert action_writes(Dynamic, "note_cancel") == {"cancel_book", "perm_book"}
    assert action_writes(Dynamic, "note_accept") == {"queue"}  # a method of the queue
