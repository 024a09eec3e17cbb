"""Diagrams of the model: state machines, reachable graphs and counterexample transcripts.

Everything is derived from the same objects the oracle runs: the machine diagrams from the
``Table`` that ``compile_machine`` reads off the python-statemachine classes, the reachable graph
from :func:`acp_model.explore.explore`. Text formats (DOT, Mermaid) are written here rather than
by python-statemachine, whose DOT output embeds object ids and changes between runs; every
output of this module is deterministic, so ``diagrams/`` can be checked for drift.

Drawing uses networkx for the structure and layering and matplotlib for the picture (no system
Graphviz): columns are BFS layers from the initial state, a pair of opposite transitions is
drawn as two arcs bending apart, labels sit on their arc, and each state's self-loops are
collapsed into one loop with one label listing the events.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from acp_model.engine import Table, compile_machine
from acp_model.readings import DEFAULT, Readings

FORMATS = ("png", "svg", "dot", "mermaid")


# ------------------------------------------------------------------------------------------
# Graphs
# ------------------------------------------------------------------------------------------

def session_table() -> Table:
    from acp_model.lifecycle import SessionLifecycle, SessionModel

    return compile_machine(SessionLifecycle, SessionModel)


def connection_table() -> Table:
    from acp_model.connection import ConnectionLifecycle, ConnectionModel

    return compile_machine(ConnectionLifecycle, ConnectionModel)


def machine_graph(table: Table, readings: Readings = DEFAULT) -> nx.MultiDiGraph:
    """The machine as a graph: one edge per (state, event), keyed by the event.

    Edge attributes: ``guards`` (check names active under ``readings``, a ``~`` suffix when the
    check only warns), ``rules`` (their rule IDs), ``actions``, ``internal``. Checks that are
    off under the readings are left out, so ``--reading`` changes the picture.
    """
    g = nx.MultiDiGraph(name=table.machine.__name__, initial=table.initial,
                        readings=readings.changed())
    for s in table.states:
        g.add_node(s, name=table.state_names[s], initial=s == table.initial)
    for (src, event), tr in table.transitions.items():
        guards, rules = [], []
        for c in tr.checks:
            level = c.level(readings)
            if level == "off":
                continue
            guards.append(c.name + ("~" if level == "warn" else ""))
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
    from acp_model.explore import Bounds, explore

    return explore(bounds=Bounds(max_prompts=1, max_cancels=1, max_permissions=0,
                                 custom=False, lean=True, reasons=("end_turn", "cancelled")),
                   readings=readings.parse(["A-03=diagram", "A-07=forbid"]))


# ------------------------------------------------------------------------------------------
# Text formats
# ------------------------------------------------------------------------------------------

def _groups(g: nx.MultiDiGraph) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """Edges grouped by (source, target) in node order, events in graph order."""
    order = {n: i for i, n in enumerate(g.nodes)}
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for u, v, d in g.edges(data=True):
        out.setdefault((u, v), []).append(d)
    return [(u, v, ds) for (u, v), ds in sorted(out.items(),
                                                 key=lambda kv: (order[kv[0][0]],
                                                                 order[kv[0][1]]))]


def _event_text(d: dict[str, Any]) -> str:
    return d["event"] + (f" [{', '.join(d['guards'])}]" if d["guards"] else "")


def _dot_id(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(g: nx.MultiDiGraph, title: str | None = None) -> str:
    """Graphviz DOT, one edge per (source, target) listing its events and guards."""
    lines = [f"digraph {_dot_id(g.graph.get('name', 'G'))} {{", "  rankdir=LR;",
             '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", '
             'fontname="Helvetica"];', '  edge [fontname="Helvetica", fontsize=10];']
    if title:
        lines.append(f"  labelloc=t; label={_dot_id(title)};")
    lines.append('  __start [shape=point, width=0.15, label=""];')
    for n, d in g.nodes(data=True):
        extra = ', fillcolor="#d9f2d9"' if d.get("initial") else ""
        lines.append(f"  {_dot_id(n)} [label={_dot_id(d.get('name', n))}{extra}];")
    start = next((n for n, d in g.nodes(data=True) if d.get("initial")), None)
    if start is not None:
        lines.append(f"  __start -> {_dot_id(start)};")
    for u, v, ds in _groups(g):
        label = "\\n".join(_event_text(d).replace('"', "'") for d in ds)
        lines.append(f'  {_dot_id(u)} -> {_dot_id(v)} [label="{label}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_id(name: str, ids: dict[str, str]) -> str:
    if name not in ids:
        base = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_") or "s"
        cand, k = base, 1
        while cand in ids.values():
            k += 1
            cand = f"{base}_{k}"
        ids[name] = cand
    return ids[name]


def _mermaid_text(text: str) -> str:
    """Label text safe inside Mermaid (``#`` and ``;`` as entity codes, no colons)."""
    out = []
    for ch in text:
        if ch == "#":
            out.append("#35;")
        elif ch == ";":
            out.append("#59;")
        elif ch == ":":
            out.append("#58;")
        elif ch == "\n":
            out.append("<br/>")
        else:
            out.append(ch)
    return "".join(out)


def to_mermaid(g: nx.MultiDiGraph, title: str | None = None) -> str:
    """Mermaid ``stateDiagram-v2``, one transition per (source, target) listing its events."""
    ids: dict[str, str] = {}
    lines = []
    if title:
        lines += ["---", f"title: {title}", "---"]
    lines += ["stateDiagram-v2", "    direction LR"]
    for n, d in g.nodes(data=True):
        lines.append(f'    state "{_mermaid_text(d.get("name", n))}" as {_mermaid_id(n, ids)}')
    for n, d in g.nodes(data=True):
        if d.get("initial"):
            lines.append(f"    [*] --> {_mermaid_id(n, ids)}")
    for u, v, ds in _groups(g):
        label = "<br/>".join(_mermaid_text(_event_text(d)) for d in ds)
        lines.append(f"    {_mermaid_id(u, ids)} --> {_mermaid_id(v, ids)} : {label}")
    return "\n".join(lines) + "\n"


def graph_structure(g: nx.MultiDiGraph) -> dict[str, Any]:
    """Plain, sorted structure of a graph (what the drift test compares)."""
    return {"nodes": sorted(str(n) for n in g.nodes),
            "edges": sorted([str(u), str(v), str(k), list(d.get("guards", ()))]
                            for u, v, k, d in g.edges(keys=True, data=True))}


# ------------------------------------------------------------------------------------------
# Pictures
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Style:
    """Sizes of one picture (inches, points)."""

    col: float = 4.2  # distance between BFS layers
    row: float = 2.3  # distance between states in a layer
    font: float = 10.0
    edge_font: float = 7.5
    loop_font: float = 7.0
    wrap: int = 34  # characters per label line
    dpi: int = 110
    grid: bool = True  # big layers as two sub-columns (small machines)
    vertical: bool = False  # layers as rows, top to bottom (big graphs)


def _wrap(text: str, width: int) -> str:
    """Wrap on ', ' and spaces only (keeps event and guard names whole)."""
    out: list[str] = []
    for para in text.split("\n"):
        line = ""
        for word in re.split(r"(?<=,) ", para):
            if line and len(line) + 1 + len(word) > width:
                out.append(line)
                line = "  " + word
            else:
                line = f"{line} {word}" if line else word
        out.append(line)
    return "\n".join(out)


def layered_positions(g: nx.MultiDiGraph, start: Any, style: Style) -> dict[Any, tuple[float,
                                                                                     float]]:
    """BFS layers from ``start`` as columns (a dict-of-lists subset key keeps it deterministic).

    With ``style.grid`` a layer of three or more states is laid out as two sub-columns in
    snake order (the graph's node order, i.e. the machine's declaration order), so states
    declared next to each other, which usually exchange transitions, end up side by side.
    Otherwise states in a column are ordered by the rows of their predecessors.
    """
    order = {n: i for i, n in enumerate(g.nodes)}
    simple = nx.DiGraph()
    simple.add_nodes_from(g.nodes)
    simple.add_edges_from((u, v) for u, v in g.edges() if u != v)
    layers = [sorted(layer, key=order.__getitem__) for layer in nx.bfs_layers(simple, [start])]
    seen = {n for layer in layers for n in layer}
    rest = [n for n in g.nodes if n not in seen]
    if rest:
        layers.append(rest)
    base = nx.multipartite_layout(simple, subset_key={i: layer for i, layer in
                                                      enumerate(layers)})
    pos: dict[Any, tuple[float, float]] = {}
    x = 0.0
    for i, layer in enumerate(layers):
        if style.grid and len(layer) >= 3:
            rows = (len(layer) + 1) // 2
            for j, n in enumerate(layer):
                r, c = divmod(j, 2)
                if r % 2:
                    c = 1 - c
                pos[n] = (x + c * style.col, -(r - (rows - 1) / 2) * style.row)
            x += 2 * style.col
            continue
        if i:
            axis = 0 if style.vertical else 1

            def bary(n: Any, axis: int = axis) -> tuple[float, int]:
                ps = [pos[p][axis] for p in simple.predecessors(n) if p in pos]
                return (sum(ps) / len(ps) if ps else 0.0, -order[n])

            layer.sort(key=bary, reverse=not style.vertical)
        for j, n in enumerate(layer):
            off = (j - (len(layer) - 1) / 2) * style.row
            pos[n] = (-off, -x) if style.vertical else (x, -off)
        x += style.col
    assert set(pos) == set(base)  # same nodes as networkx's own multipartite layout
    return pos


def common_loops(g: nx.MultiDiGraph) -> list[dict[str, Any]]:
    """Self-loop events every state has with the same guards (drawn once, in a side box)."""
    per_state: dict[Any, dict[str, tuple[str, ...]]] = {n: {} for n in g.nodes}
    for u, v, d in g.edges(data=True):
        if u == v:
            per_state[u][d["event"]] = d["guards"]
    if len(per_state) < 2:
        return []
    first, *others = per_state.values()
    out = []
    for event, guards in first.items():
        if all(o.get(event, None) == guards for o in others):
            out.append({"event": event, "guards": guards})
    return out


def _bezier(p0: tuple[float, float], p2: tuple[float, float], rad: float, t: float
            ) -> tuple[float, float]:
    """Point at ``t`` on the quadratic Bézier curve matplotlib's ``arc3,rad=...`` draws."""
    (x1, y1), (x2, y2) = p0, p2
    cx, cy = (x1 + x2) / 2 + rad * (y2 - y1), (y1 + y2) / 2 - rad * (x2 - x1)
    a, b, c = (1 - t) ** 2, 2 * t * (1 - t), t * t
    return a * x1 + b * cx + c * x2, a * y1 + b * cy + c * y2


def _to_border(half: tuple[float, float], dx: float, dy: float) -> float:
    """Distance from a box's centre to its border in direction (dx, dy)."""
    norm = (dx * dx + dy * dy) ** 0.5 or 1.0
    ux, uy = abs(dx) / norm, abs(dy) / norm
    return min(half[0] / ux if ux > 1e-9 else float("inf"),
               half[1] / uy if uy > 1e-9 else float("inf"))


def draw(g: nx.MultiDiGraph, path: str | Path | Sequence[str | Path], *, title: str,
         legend: Sequence[str] = (), style: Style = Style(), node_colors: dict[Any, str]
         | None = None) -> list[Path]:
    """Draw a machine-like graph to PNG and/or SVG (the suffix decides).

    One data unit is one inch and the axes fill the figure, so the hand-drawn self-loops and
    the labels keep their size when the figure is fitted to its content at the end (which is
    why ``bbox_inches="tight"`` is not used).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.transforms import Bbox

    paths = [Path(path)] if isinstance(path, str | Path) else [Path(p) for p in path]
    matplotlib.rcParams["svg.hashsalt"] = "acp-model"
    matplotlib.rcParams["svg.fonttype"] = "none"
    start = next(n for n, d in g.nodes(data=True) if d.get("initial"))
    pos = layered_positions(g, start, style)

    groups = _groups(g)
    shared = common_loops(g)
    shared_events = {d["event"] for d in shared}
    loops = {u: [d for d in ds if d["event"] not in shared_events] for u, v, ds in groups
             if u == v}
    loops = {u: ds for u, ds in loops.items() if ds}
    legend = list(legend)
    if shared:
        legend += ["", "In every state, unchanged (one loop per state, not drawn): "
                   + _wrap(", ".join(_event_text(d) for d in shared), 110)]

    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    margin = 8.0
    lim = (min(xs) - margin, max(xs) + margin, min(ys) - margin, max(ys) + margin)
    fig = plt.figure(figsize=(lim[1] - lim[0], lim[3] - lim[2]), dpi=style.dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(lim[0], lim[1])
    ax.set_ylim(lim[2], lim[3])
    ax.set_aspect("equal")
    ax.axis("off")
    mid_y = (max(ys) + min(ys)) / 2

    boxes = {}
    for n, d in g.nodes(data=True):
        colour = (node_colors or {}).get(n) or ("#d9f2d9" if d.get("initial") else "#eef3fb")
        boxes[n] = ax.text(*pos[n], d.get("name", str(n)), ha="center", va="center",
                           fontsize=style.font, fontweight="bold", zorder=5,
                           bbox={"boxstyle": "round,pad=0.55", "fc": colour, "ec": "#34495e",
                                 "lw": 1.4})
    fig.canvas.draw()  # box extents are needed to clip arrows and place loops
    to_data = ax.transData.inverted()
    half = {}
    for n, t in boxes.items():
        bb = t.get_bbox_patch().get_window_extent().transformed(to_data)
        half[n] = (bb.width / 2, bb.height / 2)

    pairs = {(u, v) for u, v, _ in groups if u != v}
    for u, v, ds in groups:
        if u == v:
            continue
        (x1, y1), (x2, y2) = pos[u], pos[v]
        paired = (v, u) in pairs
        rad = 0.2 if paired else 0.08
        if abs(x1 - x2) < 1e-9 and abs(y1 - y2) > style.row * 1.5:
            rad = 0.3  # same column, not neighbours: bow out around the states between
        warn_only = all(d.get("guards") and all(gd.endswith("~") for gd in d["guards"])
                        for d in ds)
        colour = "#7f8c8d" if warn_only else "#2c3e50"
        # clip at the boxes ourselves (shrink in points, 1 data unit = 1 inch), so the
        # result does not depend on which renderer draws last
        cx, cy = (x1 + x2) / 2 + rad * (y2 - y1), (y1 + y2) / 2 - rad * (x2 - x1)
        ax.add_patch(FancyArrowPatch(
            (x1, y1), (x2, y2), shrinkA=_to_border(half[u], cx - x1, cy - y1) * 72 + 2,
            shrinkB=_to_border(half[v], x2 - cx, y2 - cy) * 72 + 2, arrowstyle="-|>",
            mutation_scale=14, lw=1.2, color=colour, connectionstyle=f"arc3,rad={rad}",
            zorder=2))
        # the label sits on its own curve; a pair's labels are moved towards their sources
        lx, ly = _bezier((x1, y1), (x2, y2), rad, 0.4 if paired else 0.5)
        text = "\n".join(_wrap(_event_text(d), style.wrap) for d in ds)
        ax.text(lx, ly, text, ha="center", va="center", fontsize=style.edge_font, zorder=4,
                color=colour, bbox={"boxstyle": "round,pad=0.25", "fc": "white",
                                    "ec": "#bdc3c7", "lw": 0.6, "alpha": 0.95})
    for n, ds in loops.items():
        x, y = pos[n]
        bb = boxes[n].get_window_extent().transformed(to_data)
        up = y >= mid_y
        edge_y = bb.y1 if up else bb.y0
        left, right = x - bb.width * 0.25, x + bb.width * 0.25
        ax.add_patch(FancyArrowPatch((left, edge_y), (right, edge_y),
                                     arrowstyle="-|>", mutation_scale=11, lw=1.0,
                                     color="#8e44ad", zorder=3,
                                     connectionstyle=f"arc3,rad={-0.9 if up else 0.9}"))
        plain = [d["event"] for d in ds if not d["guards"]]
        guarded = [_event_text(d) for d in ds if d["guards"]]
        text = _wrap(", ".join(plain), style.wrap + 8) if plain else ""
        if guarded:
            text += ("\n" if text else "") + "\n".join(_wrap(t, style.wrap + 8)
                                                       for t in guarded)
        gap = (right - left) * 0.9 / 2 + 0.1  # above the loop's apex (arc3 height)
        ax.text(x, edge_y + (gap if up else -gap), text, ha="center",
                va="bottom" if up else "top", fontsize=style.loop_font, color="#6c3483",
                zorder=4, bbox={"boxstyle": "round,pad=0.25", "fc": "#f8f1fb",
                                "ec": "#d2b4de", "lw": 0.6})

    # fit the figure to the content (same scale), then title above and legend below it
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    content = Bbox.union([a.get_window_extent(renderer) for a in [*ax.texts, *ax.patches]])
    box = content.transformed(to_data)
    x0, x1_, y0, y1_ = box.x0 - 0.3, box.x1 + 0.3, box.y0 - 0.3, box.y1 + 0.3
    t = ax.text(x0, y1_ + 0.15, title, ha="left", va="bottom", fontsize=style.font + 3,
                fontweight="bold")
    extra = [t]
    if legend:
        extra.append(ax.text(x0, y0 - 0.15, "\n".join(legend), ha="left", va="top",
                             fontsize=style.edge_font + 0.5, color="#2c3e50",
                             bbox={"boxstyle": "round,pad=0.4", "fc": "#fbfcfc",
                                   "ec": "#bdc3c7"}))
    fig.canvas.draw()
    whole = Bbox.union([content, *(a.get_window_extent(renderer) for a in extra)])
    box = whole.transformed(to_data)
    x0, x1_, y0, y1_ = box.x0 - 0.25, box.x1 + 0.25, box.y0 - 0.25, box.y1 + 0.25
    ax.set_xlim(x0, x1_)
    ax.set_ylim(y0, y1_)
    fig.set_size_inches(x1_ - x0, y1_ - y0)
    written = []
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        meta: dict[str, Any] = ({"Date": None, "Creator": None} if p.suffix == ".svg"
                                else {"Software": None})
        fig.savefig(p, dpi=style.dpi, metadata=meta)
        written.append(p)
    plt.close(fig)
    return written


MACHINE_LEGEND = (
    "Columns: BFS layers from the initial state (green); a layer of 3+ states takes two "
    "sub-columns. Arrows: transitions that change the state;",
    "purple loop and box: events that keep the state. [check, ...]: the guards (model checks) "
    "a transition must pass,",
    "each tagged with the rule it enforces; check~ only warns under the readings drawn; a "
    "grey arrow is guarded only by warnings.",
    "A failing check is a violation: the monitor reports it and still follows the wire.",
)

REACHABLE_LEGEND = (
    "Reachable configurations of one session (explorer, readings A-03=diagram, A-07=forbid; "
    "1 prompt, 1 cancel, lean alphabet),",
    "from the first quiescent idle on; requires_action is left out (here it behaves like "
    "running). Parallel events share one arrow.",
    "Label: state, p: prompts (pending/accepted/inserted), c: cancels (W sent during work, I "
    "while quiet, A ambiguous; r provably read).",
    "sync: a client request answered at once (proves the agent read everything before it). "
    "Green: initial; blue: quiescent.",
    "Events: running/requires_action/idle(reason) are state_update reports, accepted the "
    "prompt response, user_msg the user message.",
)


# ------------------------------------------------------------------------------------------
# Counterexample transcripts
# ------------------------------------------------------------------------------------------

def sequence_diagram(records: Iterable[Any], highlight: dict[int, str] | None = None, *,
                     title: str | None = None) -> str:
    """A Mermaid ``sequenceDiagram`` of trace records, offending messages noted.

    One implementation serves the fuzzer and the explorer: this delegates to
    :func:`acp_model.sequence.sequence_diagram`.
    """
    from acp_model.sequence import sequence_diagram as draw_sequence

    return draw_sequence(records, highlight, title=title)


# ------------------------------------------------------------------------------------------
# All diagrams
# ------------------------------------------------------------------------------------------

def diagram_sources(readings: Readings = DEFAULT) -> dict[str, tuple[nx.MultiDiGraph, str,
                                                                      tuple[str, ...]]]:
    """name -> (graph, title, legend) of every diagram ``acp-model diagram`` writes."""
    suffix = ""
    if readings.changed():
        suffix = " (" + ", ".join(f"{k}={v}" for k, v in readings.changed().items()) + ")"
    exp = drawing_exploration(readings)
    return {
        "session-lifecycle": (machine_graph(session_table(), readings),
                              "Session lifecycle (SessionLifecycle)" + suffix, MACHINE_LEGEND),
        "connection": (machine_graph(connection_table(), readings),
                       "Connection phase (ConnectionLifecycle)" + suffix, MACHINE_LEGEND),
        "reachable": (reachable_graph(exp, start="idle", hide_states=("requires_action",)),
                      "Reachable configurations of one session, from the first idle" + suffix,
                      REACHABLE_LEGEND),
    }


def text_outputs(readings: Readings = DEFAULT) -> dict[str, str]:
    """file name -> content of every text diagram (DOT, Mermaid, graph structure JSON)."""
    import json

    out = {}
    structure = {}
    for name, (g, title, _) in diagram_sources(readings).items():
        out[f"{name}.dot"] = to_dot(g, title)
        out[f"{name}.mmd"] = to_mermaid(g, title)
        structure[name] = graph_structure(g)
    out["structure.json"] = json.dumps(structure, indent=1) + "\n"
    return out


_STYLES = {
    "session-lifecycle": Style(col=6.0, row=4.6, wrap=30),
    "connection": Style(col=4.5, row=3.2, wrap=30),
    "reachable": Style(col=2.2, row=3.2, font=9.0, edge_font=7.5, loop_font=7.0, wrap=22,
                       dpi=110, grid=False, vertical=True),
}


def render_all(out: str | Path = "diagrams", formats: Sequence[str] = FORMATS,
               readings: Readings = DEFAULT) -> list[Path]:
    """Write every diagram in the given formats; returns the files written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    sources = diagram_sources(readings)
    if "dot" in formats or "mermaid" in formats:  # the graph structure the drift test reads
        p = out / "structure.json"
        p.write_text(text_outputs(readings)["structure.json"], encoding="utf-8")
        written.append(p)
    for name, (g, title, legend) in sources.items():
        if "dot" in formats:
            p = out / f"{name}.dot"
            p.write_text(to_dot(g, title), encoding="utf-8")
            written.append(p)
        if "mermaid" in formats:
            p = out / f"{name}.mmd"
            p.write_text(to_mermaid(g, title), encoding="utf-8")
            written.append(p)
        pics = [out / f"{name}.{f}" for f in ("png", "svg") if f in formats]
        if pics:
            colours = None
            if name == "reachable":
                colours = {n: "#d6eaf8" for n, d in g.nodes(data=True)
                           if d.get("quiescent") and not d.get("initial")}
            written += draw(g, pics, title=title, legend=legend, style=_STYLES[name],
                            node_colors=colours)
    return written
