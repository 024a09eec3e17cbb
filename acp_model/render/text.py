"""Text formats of a graph: DOT and Mermaid ``stateDiagram-v2`` (deterministic, so ``diagrams/``
can be checked for drift)."""

from __future__ import annotations

import re
from typing import Any

import networkx as nx


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
