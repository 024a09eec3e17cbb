"""Every diagram ``acp-model diagram`` writes, and the legends drawn under them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import networkx as nx

from acp_model.render.draw import Style, draw
from acp_model.render.graphs import (
    connection_table,
    drawing_exploration,
    graph_structure,
    machine_graph,
    reachable_graph,
    session_table,
)
from acp_model.render.text import to_dot, to_mermaid
from acp_model.spec.readings import DEFAULT, Readings

FORMATS = ("png", "svg", "dot", "mermaid")


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
    "Reachable configurations of one session (explorer, readings A-03=diagram, A-07=forbid "
    "unless the revision decides it; 1 prompt, 1 cancel, lean alphabet),",
    "from the first quiescent idle on; requires_action is left out (here it behaves like "
    "running). Parallel events share one arrow.",
    "Label: state, p: prompts (pending/accepted/inserted), c: cancels (W sent during work, I "
    "while quiet, A ambiguous; r provably read).",
    "sync: a client request answered at once (proves the agent read everything before it). "
    "Green: initial; blue: quiescent.",
    "Events: running/requires_action/idle(reason) are state_update reports, accepted the "
    "prompt response, user_msg the user message.",
)


def sequence_diagram(records: Iterable[Any], highlight: dict[int, str] | None = None, *,
                     title: str | None = None) -> str:
    """A Mermaid ``sequenceDiagram`` of trace records, offending messages noted.

    One implementation serves the fuzzer and the explorer: this delegates to
    :func:`acp_model.trace.sequence.sequence_diagram`.
    """
    from acp_model.trace.sequence import sequence_diagram as draw_sequence

    return draw_sequence(records, highlight, title=title)


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
