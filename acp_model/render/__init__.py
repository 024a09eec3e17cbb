"""Diagrams of the model: state machines, reachable graphs and counterexample transcripts.

Everything is derived from the same objects the oracle runs: the machine diagrams from the
``Table`` that ``compile_machine`` reads off the python-statemachine classes, the reachable graph
from :func:`acp_model.explorer.search.explore`. Text formats (DOT, Mermaid) are written here
rather than by python-statemachine, whose DOT output embeds object ids and changes between
runs; every output of this module is deterministic, so ``diagrams/`` can be checked for drift.

Drawing uses networkx for the structure and layering and matplotlib for the picture (no system
Graphviz): columns are BFS layers from the initial state, a pair of opposite transitions is
drawn as two arcs bending apart, labels sit on their arc, and each state's self-loops are
collapsed into one loop with one label listing the events.
"""

from acp_model.render.draw import Style, draw
from acp_model.render.graphs import (
    connection_table,
    drawing_exploration,
    graph_structure,
    machine_graph,
    reachable_graph,
    session_table,
)
from acp_model.render.outputs import (
    FORMATS,
    diagram_sources,
    render_all,
    sequence_diagram,
    text_outputs,
)
from acp_model.render.text import to_dot, to_mermaid

__all__ = ["FORMATS", "Style", "connection_table", "diagram_sources", "draw",
           "drawing_exploration", "graph_structure", "machine_graph", "reachable_graph",
           "render_all", "sequence_diagram", "session_table", "text_outputs", "to_dot",
           "to_mermaid"]
