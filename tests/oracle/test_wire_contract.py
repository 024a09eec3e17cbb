"""The wire table's ``becomes`` and ``answered`` columns are a contract: every event the oracle
fires while it routes a message is one its row names (the message's own; its response's for
an answer; a ``session/update``'s, its kind's row's event as the revision reads it). Events the
revision's translator derives besides (v1's turn, from a prompt and its response) are the
translator's and are not counted. Driven over every trace of the rule tests, v2 and v1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from acp_model.model import wire_table
from acp_model.model.vocab import STATE_EVENTS, ConnEvent, Event
from acp_model.oracle.machines import Machines
from acp_model.oracle.monitor import Monitor
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.trace.builder import TraceBuilder
from acp_model.trace.methods import Method
from tests.helpers import S, base, turn_start
from tests.oracle import audit_cases
from tests.oracle.test_rule_violations import CASES, V1_CASES

V1 = DEFAULT.parse(["SPEC=v1"])
Fired = tuple[str, Event | ConnEvent]  # (what the row allows it under, the event)


def _traces() -> Iterator[tuple[str, Readings, Callable[[], TraceBuilder]]]:
    for rule, builders in CASES.items():
        for build in builders:
            yield rule, DEFAULT, build
    for rule, builders in V1_CASES.items():
        for build in builders:
            yield rule, V1, build
    for rule, readings, breaks, keeps in audit_cases.BOTH:
        yield rule, readings, breaks
        yield rule, readings, keeps


def _allowed(msg: dict[str, Any], requests: dict[tuple[str, Any], str], direction: str
             ) -> tuple[str, frozenset[Event | ConnEvent]]:
    """What the message's row lets it become (its name, the events)."""
    method = msg.get("method")
    if isinstance(method, str):
        row = wire_table.messages().get(method)
        allowed = set(row.becomes) if row is not None else set()
        update = (msg.get("params") or {}).get("update")
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        kind_row = wire_table.updates().get(kind) if isinstance(kind, str) else None
        if method == Method.UPDATE:  # a kind no row names is read as plain output
            allowed.add(Event.OUTPUT)
        if kind_row is not None:  # its kind's event, as either revision reads it
            read_as = wire_table.updates().get(kind_row.v1_as or "") or kind_row
            allowed |= {kind_row.event, read_as.event}
            allowed |= {kind_row.v1_event} - {None}
            if kind in wire_table.state_kinds():
                allowed |= set(STATE_EVENTS.values())
        return method, frozenset(allowed)
    other = "a2c" if direction == "c2a" else "c2a"
    method = requests.get((other, msg.get("id")))
    row = wire_table.messages().get(method) if method is not None else None
    return f"{method} response", frozenset(row.answered if row is not None else ())


def _fired_outside_rows(t: TraceBuilder, readings: Readings, monkeypatch: pytest.MonkeyPatch
                        ) -> list[str]:
    fired: list[Fired] = []
    derived = [False]
    session_event, conn_event, derive = (Machines.session_event, Machines.conn_event,
                                         Machines.derived)

    def on_session(self: Machines, sid: str, event: Event, ev: Any, what: str) -> None:
        if not derived[0]:
            fired.append(("", event))
        session_event(self, sid, event, ev, what)

    def on_conn(self: Machines, event: ConnEvent, ev: Any, what: str) -> None:
        fired.append(("", event))
        conn_event(self, event, ev, what)

    def on_derived(self: Machines, sid: str, events: Any) -> None:
        derived[0] = True
        try:
            derive(self, sid, events)
        finally:
            derived[0] = False

    monkeypatch.setattr(Machines, "session_event", on_session)
    monkeypatch.setattr(Machines, "conn_event", on_conn)
    monkeypatch.setattr(Machines, "derived", on_derived)
    monitor = Monitor(readings)
    requests: dict[tuple[str, Any], str] = {}
    outside = []
    for record in t.records:
        msg = record.msg
        before = len(fired)
        monitor.feed(record)
        if not isinstance(msg, dict):  # a batch or an unreadable line: not a row's
            continue
        if "method" in msg and "id" in msg:
            requests[(record.dir, msg["id"])] = msg["method"]
        name, allowed = _allowed(msg, requests, record.dir)
        outside += [f"{name} fired {event}" for _, event in fired[before:]
                    if event not in allowed]
    return outside


@pytest.mark.parametrize(("rule", "readings", "build"), list(_traces()),
                         ids=lambda x: x if isinstance(x, str) else getattr(x, "__name__", ""))
def test_every_event_a_message_fires_is_one_its_row_names(
        rule: str, readings: Readings, build: Callable[[], TraceBuilder],
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _fired_outside_rows(build(), readings, monkeypatch) == []


def test_the_contract_sees_an_event_outside_the_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """A handler that fires what its row does not name is caught: with a cancel's row that
    named only the unknown session, the cancel of a running turn fires CANCEL outside it."""
    rows = dict(wire_table.messages())
    rows["session/cancel"] = replace(rows["session/cancel"],
                                     becomes=(ConnEvent.UNKNOWN_SESSION_NAMED,))
    monkeypatch.setattr(wire_table, "messages", lambda: rows)
    t = turn_start(base(), 10).cancel(S)
    assert _fired_outside_rows(t, DEFAULT, monkeypatch) == ["session/cancel fired cancel"]
