"""The machines and the reachable graph as networkx graphs (what every diagram is drawn from)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx

from acp_model.model.engine import Table, compile_machine
from acp_model.model.vocab import Level
from acp_model.spec import revisions
from acp_model.spec.readings import DEFAULT, Readings


def session_table() -> Table:
    from acp_model.model.lifecycle import SessionLifecycle
    from acp_model.model.session import SessionModel

    return compile_machine(SessionLifecycle, SessionModel)


def connection_table() -> Table:
    from acp_model.model.connection import ConnectionLifecycle, ConnectionModel

    return compile_machine(ConnectionLifecycle, ConnectionModel)


def machine_graph(table: Table, readings: Readings = DEFAULT) -> nx.MultiDiGraph:
    """The machine as a graph: one edge per (state, event), keyed by the event.

    Edge attributes: ``guards`` (check names active under ``readings``, a ``~`` suffix when the
    check only warns), ``rules`` (their rule IDs), ``actions``, ``internal``. Checks that are
    off under the readings are left out, so ``--reading`` changes the picture; so are the
    states the revision's wire cannot show (v1 reports no state: no requires_action, no
    custom state) and their edges.
    """
    g = nx.MultiDiGraph(name=table.machine.__name__, initial=table.initial,
                        readings=readings.changed())
    shown = set(revisions.get(readings.revision).states)
    if not shown or not shown <= set(table.states):  # the states name the session machine
        shown = set(table.states)
    for s in table.states:
        if s in shown:
            g.add_node(s, name=table.state_names[s], initial=s == table.initial)
    for (src, event), tr in table.transitions.items():
        if src not in shown or tr.target not in shown:
            continue
        guards, rules = [], []
        for c in tr.checks:
            level = c.level(readings)
            if level == Level.OFF:
                continue
            guards.append(c.name + ("~" if level == Level.WARN else ""))
            rules.append(c.rule)
        g.add_edge(src, tr.target, key=event, event=event, guards=tuple(guards),
                   rules=tuple(rules), actions=tr.actions, internal=tr.internal)
    return g


_SHORT = {"running_reported": "running", "requires_action_reported": "requires_action",
          "custom_reported": "custom", "idle_reported": "idle", "prompt_accepted": "accepted",
          "prompt_rejected": "rejected", "user_message": "user_msg"}


def reachable_graph(exp: Any, *, start: str | None = None, hide_states: Sequence[str] = ()
                    ) -> nx.MultiDiGraph:
    """The reachable graph of an exploration, merged by compact label (state and records), with
    parallel events between two labels collapsed into one edge listing them.

    ``start`` (a label) and ``hide_states`` (control states) cut out a readable view: what is
    reachable from that configuration without passing through the hidden states.
    """
    g = nx.MultiDiGraph(name="reachable", initial=exp.info[0]["label"],
                        bounds=exp.bounds.to_json(), readings=exp.readings[0].changed())
    for n in range(exp.nodes):
        label = exp.info[n]["label"]
        if label not in g:
            g.add_node(label, name=label, initial=n == 0, depth=exp.depth[n],
                       quiescent=not exp.info[n]["obligations"][0],
                       state=exp.info[n]["states"][0])
    events: dict[tuple[str, str], set[str]] = {}
    for e in exp.edges:
        if not e.allowed & 1:
            continue
        a, b = exp.info[e.src]["label"], exp.info[e.dst]["label"]
        text = _SHORT.get(e.action.event, e.action.event)
        if e.action.payload and e.action.event not in ("prompt_accepted", "prompt_rejected"):
            text += f"({e.action.payload})"
        if e.action.session is not None and exp.bounds.sessions > 1:
            text = f"s{e.action.session + 1} {text}"
        events.setdefault((a, b), set()).add(text)
    for (a, b), evs in sorted(events.items()):
        g.add_edge(a, b, key="|".join(sorted(evs)), event=", ".join(sorted(evs)), guards=(),
                   rules=(), actions=(), internal=a == b)
    if start is None and not hide_states:
        return g
    keep = [n for n, d in g.nodes(data=True) if d["state"] not in hide_states]
    view = g.subgraph(keep)
    root = start if start is not None else g.graph["initial"]
    reach = [n for n in g.nodes if n == root or n in nx.descendants(view, root)]
    out = nx.MultiDiGraph(g.subgraph(reach))
    for n, d in out.nodes(data=True):
        d["initial"] = n == root
    out.graph.update(initial=root, hidden_states=list(hide_states))
    return out


def drawing_exploration(readings: Readings = DEFAULT) -> Any:
    """The small exploration drawn as ``reachable.*``: one session, one prompt, one cancel,
    the lean alphabet, stop reasons end_turn and cancelled."""
    from acp_model.explorer import Bounds, explore

    return explore(bounds=Bounds(max_prompts=1, max_cancels=1, max_permissions=0,
                                 custom=False, lean=True, reasons=("end_turn", "cancelled")),
                   readings=readings.parse([r for r in ("A-03=diagram", "A-07=forbid")
                                            if r.split("=")[0] not in readings.decided()]))


def graph_structure(g: nx.MultiDiGraph) -> dict[str, Any]:
    """Plain, sorted structure of a graph (what the drift test compares)."""
    return {"nodes": sorted(str(n) for n in g.nodes),
            "edges": sorted([str(u), str(v), str(k), list(d.get("guards", ()))]
                            for u, v, k, d in g.edges(keys=True, data=True))}
