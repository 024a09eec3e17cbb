"""Pictures (PNG/SVG) of a graph with networkx layering and matplotlib, no system Graphviz:
columns are BFS layers from the initial state, a pair of opposite transitions is drawn as two
arcs bending apart, labels sit on their arc, and each state's self-loops are collapsed into one
loop with one label listing the events."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from acp_model.render.text import _event_text, _groups


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

    paths = [Path(path)] if isinstance(path, str | Path) else [Path(p) for p in path]
    # settings for this drawing only: the caller's matplotlib state stays as it was
    with matplotlib.rc_context({"svg.hashsalt": "acp-model", "svg.fonttype": "none"}):
        return _draw(g, paths, title=title, legend=legend, style=style,
                     node_colors=node_colors)


def _draw(g: nx.MultiDiGraph, paths: list[Path], *, title: str, legend: Sequence[str],
          style: Style, node_colors: dict[Any, str] | None) -> list[Path]:
    start = next(n for n, d in g.nodes(data=True) if d.get("initial"))
    groups = _groups(g)
    shared = common_loops(g)
    shared_events = {d["event"] for d in shared}
    loops = {u: [d for d in ds if d["event"] not in shared_events] for u, v, ds in groups
             if u == v}
    legend = list(legend)
    if shared:
        legend += ["", "In every state, unchanged (one loop per state, not drawn): "
                   + _wrap(", ".join(_event_text(d) for d in shared), 110)]
    picture = _Picture(layered_positions(g, start, style), style)
    picture.states(g, node_colors)
    pairs = {(u, v) for u, v, _ in groups if u != v}
    for u, v, ds in groups:
        if u != v:
            picture.arrow(u, v, ds, paired=(v, u) in pairs)
    for n, ds in loops.items():
        if ds:
            picture.loop(n, ds)
    picture.fit(title, legend)
    return picture.save(paths)


class _Picture:
    """One drawing on a canvas of its own (not pyplot's: no backend is chosen for the whole
    process): the states' positions and boxes, whose half sizes (data units) clip the
    arrows and place the loops."""

    def __init__(self, pos: dict[Any, tuple[float, float]], style: Style) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.pos, self.style = pos, style
        xs = [p[0] for p in pos.values()]
        ys = [p[1] for p in pos.values()]
        margin = 8.0
        lim = (min(xs) - margin, max(xs) + margin, min(ys) - margin, max(ys) + margin)
        self.fig = Figure(figsize=(lim[1] - lim[0], lim[3] - lim[2]), dpi=style.dpi)
        FigureCanvasAgg(self.fig)
        self.ax = ax = self.fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(lim[0], lim[1])
        ax.set_ylim(lim[2], lim[3])
        ax.set_aspect("equal")
        ax.axis("off")
        self.mid_y = (max(ys) + min(ys)) / 2
        self.boxes: dict[Any, Any] = {}
        self.half: dict[Any, tuple[float, float]] = {}

    def states(self, g: nx.MultiDiGraph, node_colors: dict[Any, str] | None) -> None:
        """A box per state; then the figure is drawn once, for the boxes' extents."""
        for n, d in g.nodes(data=True):
            colour = (node_colors or {}).get(n) or ("#d9f2d9" if d.get("initial")
                                                    else "#eef3fb")
            self.boxes[n] = self.ax.text(
                *self.pos[n], d.get("name", str(n)), ha="center", va="center",
                fontsize=self.style.font, fontweight="bold", zorder=5,
                bbox={"boxstyle": "round,pad=0.55", "fc": colour, "ec": "#34495e", "lw": 1.4})
        self.fig.canvas.draw()  # box extents are needed to clip arrows and place loops
        self.to_data = self.ax.transData.inverted()
        for n, t in self.boxes.items():
            bb = t.get_bbox_patch().get_window_extent().transformed(self.to_data)
            self.half[n] = (bb.width / 2, bb.height / 2)

    def arrow(self, u: Any, v: Any, ds: list[dict[str, Any]], *, paired: bool) -> None:
        """The transitions from ``u`` to ``v``: one arc (bent apart from its opposite when
        ``paired``), one label on it."""
        from matplotlib.patches import FancyArrowPatch

        (x1, y1), (x2, y2) = self.pos[u], self.pos[v]
        rad = 0.2 if paired else 0.08
        if abs(x1 - x2) < 1e-9 and abs(y1 - y2) > self.style.row * 1.5:
            rad = 0.3  # same column, not neighbours: bow out around the states between
        warn_only = all(d.get("guards") and all(gd.endswith("~") for gd in d["guards"])
                        for d in ds)
        colour = "#7f8c8d" if warn_only else "#2c3e50"
        # clip at the boxes ourselves (shrink in points, 1 data unit = 1 inch), so the
        # result does not depend on which renderer draws last
        cx, cy = (x1 + x2) / 2 + rad * (y2 - y1), (y1 + y2) / 2 - rad * (x2 - x1)
        self.ax.add_patch(FancyArrowPatch(
            (x1, y1), (x2, y2), shrinkA=_to_border(self.half[u], cx - x1, cy - y1) * 72 + 2,
            shrinkB=_to_border(self.half[v], x2 - cx, y2 - cy) * 72 + 2, arrowstyle="-|>",
            mutation_scale=14, lw=1.2, color=colour, connectionstyle=f"arc3,rad={rad}",
            zorder=2))
        # the label sits on its own curve; a pair's labels are moved towards their sources
        lx, ly = _bezier((x1, y1), (x2, y2), rad, 0.4 if paired else 0.5)
        text = "\n".join(_wrap(_event_text(d), self.style.wrap) for d in ds)
        self.ax.text(lx, ly, text, ha="center", va="center", fontsize=self.style.edge_font,
                     zorder=4, color=colour, bbox={"boxstyle": "round,pad=0.25", "fc": "white",
                                                   "ec": "#bdc3c7", "lw": 0.6, "alpha": 0.95})

    def loop(self, n: Any, ds: list[dict[str, Any]]) -> None:
        """State ``n``'s self-loops as one loop (above the box in the upper half, below it in
        the lower) with one label."""
        from matplotlib.patches import FancyArrowPatch

        x, y = self.pos[n]
        wrap = self.style.wrap + 8
        bb = self.boxes[n].get_window_extent().transformed(self.to_data)
        up = y >= self.mid_y
        edge_y = bb.y1 if up else bb.y0
        left, right = x - bb.width * 0.25, x + bb.width * 0.25
        self.ax.add_patch(FancyArrowPatch((left, edge_y), (right, edge_y),
                                          arrowstyle="-|>", mutation_scale=11, lw=1.0,
                                          color="#8e44ad", zorder=3,
                                          connectionstyle=f"arc3,rad={-0.9 if up else 0.9}"))
        plain = [d["event"] for d in ds if not d["guards"]]
        guarded = [_event_text(d) for d in ds if d["guards"]]
        text = _wrap(", ".join(plain), wrap) if plain else ""
        if guarded:
            text += ("\n" if text else "") + "\n".join(_wrap(t, wrap) for t in guarded)
        gap = (right - left) * 0.9 / 2 + 0.1  # above the loop's apex (arc3 height)
        self.ax.text(x, edge_y + (gap if up else -gap), text, ha="center",
                     va="bottom" if up else "top", fontsize=self.style.loop_font,
                     color="#6c3483", zorder=4, bbox={"boxstyle": "round,pad=0.25",
                                                      "fc": "#f8f1fb", "ec": "#d2b4de",
                                                      "lw": 0.6})

    def fit(self, title: str, legend: Sequence[str]) -> None:
        """Fit the figure to the content (same scale), then title above and legend below."""
        from matplotlib.transforms import Bbox

        ax, fig = self.ax, self.fig
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        content = Bbox.union([a.get_window_extent(renderer) for a in [*ax.texts, *ax.patches]])
        box = content.transformed(self.to_data)
        x0, y0, y1 = box.x0 - 0.3, box.y0 - 0.3, box.y1 + 0.3
        extra = [ax.text(x0, y1 + 0.15, title, ha="left", va="bottom",
                         fontsize=self.style.font + 3, fontweight="bold")]
        if legend:
            extra.append(ax.text(x0, y0 - 0.15, "\n".join(legend), ha="left", va="top",
                                 fontsize=self.style.edge_font + 0.5, color="#2c3e50",
                                 bbox={"boxstyle": "round,pad=0.4", "fc": "#fbfcfc",
                                       "ec": "#bdc3c7"}))
        fig.canvas.draw()
        whole = Bbox.union([content, *(a.get_window_extent(renderer) for a in extra)])
        box = whole.transformed(self.to_data)
        x0, x1, y0, y1 = box.x0 - 0.25, box.x1 + 0.25, box.y0 - 0.25, box.y1 + 0.25
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        fig.set_size_inches(x1 - x0, y1 - y0)

    def save(self, paths: list[Path]) -> list[Path]:
        written = []
        for p in paths:
            p.parent.mkdir(parents=True, exist_ok=True)
            meta: dict[str, Any] = ({"Date": None, "Creator": None} if p.suffix == ".svg"
                                    else {"Software": None})
            self.fig.savefig(p, dpi=self.style.dpi, metadata=meta)
            written.append(p)
        return written
