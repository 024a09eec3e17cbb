"""A run's coverage of the agent's ACP layer: per file and in total, as the report states it
(``report.json`` ``coverage_agent``, the text report's line, ``--coverage-html``)."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_model.agentcov.scope import read_source


@dataclass
class FileFigures:
    """One file of the layer: the lines in scope that ran, of those that can, and its
    functions. A script no process loaded is listed but not counted (``counted``): a
    bundler copies modules into several chunks, and a run loads one of them."""

    path: str
    runtime: str  # "node" or "python"
    reached: set[int]
    lines: set[int]
    functions_reached: int
    functions: int
    loaded: bool = True
    span: set[int] | None = None  # the lines of a bundle's modules in scope (None: all)

    @property
    def counted(self) -> bool:
        return self.loaded or self.runtime == "python"

    def to_json(self, root: str | None = None) -> dict[str, Any]:
        return {"path": _rel(self.path, root), "runtime": self.runtime, "loaded": self.loaded,
                "lines": [len(self.reached), len(self.lines)],
                "functions": [self.functions_reached, self.functions]}


TOOLS = {"node": "v8", "python": "coverage.py"}


def _rel(path: str, root: str | None) -> str:
    return os.path.relpath(path, root) if root and path.startswith(root + os.sep) else path


def _figure(reached: int, total: int) -> dict[str, Any]:
    return {"reached": reached, "total": total,
            "percent": round(100 * reached / total, 1) if total else None}


@dataclass
class AgentCoverage:
    """The figures of one run (``coverage_agent`` in the report)."""

    scope: str
    runtimes: list[str]
    processes: int
    files: list[FileFigures]
    samples: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    root: str | None = None  # paths are shown relative to it (a profile's install folder)

    def totals(self) -> tuple[dict[str, Any], dict[str, Any]]:
        counted = [f for f in self.files if f.counted]
        return (_figure(sum(len(f.reached) for f in counted), sum(len(f.lines) for f in counted)),
                _figure(sum(f.functions_reached for f in counted),
                        sum(f.functions for f in counted)))

    def to_json(self) -> dict[str, Any]:
        """The report's ``coverage_agent``: ``lines`` and ``functions`` (``reached``,
        ``total``, ``percent``) over the files counted, then each file, the curve of lines
        reached over the run, and what limits the figures."""
        lines, functions = self.totals()
        return {"tool": "+".join(TOOLS.get(r, r) for r in self.runtimes) or "none",
                "scope": self.scope, "processes": self.processes,
                "lines": lines, "functions": functions,
                "files": [f.to_json(self.root) for f in self.files],
                "samples": self.samples, "notes": self.notes}

    def line(self) -> str:
        """One line for the text report."""
        lines, functions = self.totals()
        if not self.processes and not lines["total"]:
            return "agent coverage: not measured (" + "; ".join(self.notes) + ")"
        pct = f" ({lines['percent']}%)" if lines["percent"] is not None else ""
        fpct = f" ({functions['percent']}%)" if functions["percent"] is not None else ""
        loaded = sum(1 for f in self.files if f.counted)
        return (f"agent coverage ({'+'.join(self.runtimes) or 'no runtime'}, ACP layer: "
                f"{loaded} file(s)): {lines['reached']}/{lines['total']} lines{pct}, "
                f"{functions['reached']}/{functions['total']} functions{fpct}")

    def write_html(self, folder: str | os.PathLike[str]) -> Path:
        """``folder/index.html``: the files with their figures, each JavaScript file's
        annotated source (its layer's lines), and coverage.py's own report of the Python
        files (written by :meth:`Collector.result` into ``folder/python``)."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        rows = []
        for n, f in enumerate(self.files):
            name = html.escape(_rel(f.path, self.root))
            if f.runtime == "node" and f.loaded:
                page = f"file-{n}.html"
                (out / page).write_text(_source_page(f, name), encoding="utf-8")
                link = f'<a href="{page}">{name}</a>'
            elif f.runtime == "python" and (out / "python" / "index.html").is_file():
                link = f'<a href="python/index.html">{name}</a>'
            else:
                link = name
            pct = f"{100 * len(f.reached) / len(f.lines):.1f}%" if f.lines else "-"
            rows.append(f"<tr><td>{link}</td><td>{f.runtime}</td>"
                        f"<td>{len(f.reached)}/{len(f.lines)}</td><td>{pct}</td>"
                        f"<td>{f.functions_reached}/{f.functions}</td>"
                        f"<td>{'' if f.counted else 'not loaded (not counted)'}</td></tr>")
        lines, functions = self.totals()
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        index = (f"<!doctype html><meta charset=utf-8><title>Agent coverage</title>{_STYLE}"
                 f"<h1>The agent's ACP layer: what the run reached</h1>"
                 f"<p>Scope: {html.escape(self.scope)}</p>"
                 f"<p>Lines {lines['reached']}/{lines['total']}, functions "
                 f"{functions['reached']}/{functions['total']}; {self.processes} process(es) "
                 f"measured.</p><ul>{notes}</ul>"
                 "<table><tr><th>file</th><th>runtime</th><th>lines</th><th>%</th>"
                 f"<th>functions</th><th></th></tr>{''.join(rows)}</table>")
        (out / "index.html").write_text(index, encoding="utf-8")
        return out / "index.html"


_STYLE = ("<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
          "td,th{padding:2px 8px;text-align:left}pre{margin:0}"
          ".hit{background:#dfd}.miss{background:#fdd}.gap{color:#888}"
          "code{white-space:pre;font-family:monospace}</style>")


def _source_page(f: FileFigures, name: str) -> str:
    """A JavaScript file's lines in scope, reached (green) or not (red); the lines outside
    the layer (a bundle's other modules) are left out, a gap marked where they were."""
    text = read_source(f.path) or ""
    out, last = [], 0
    for number, src in enumerate(text.split("\n"), start=1):
        if f.span is not None and number not in f.span:
            continue
        if last and number != last + 1:
            out.append('<tr class="gap"><td>...</td><td></td></tr>')
        cls = "hit" if number in f.reached else "miss" if number in f.lines else ""
        out.append(f'<tr class="{cls}"><td>{number}</td><td><code>{html.escape(src)}'
                   "</code></td></tr>")
        last = number
    return (f"<!doctype html><meta charset=utf-8><title>{name}</title>{_STYLE}"
            f'<p><a href="index.html">all files</a></p><h1>{name}</h1>'
            f"<p>{len(f.reached)}/{len(f.lines)} lines, {f.functions_reached}/{f.functions} "
            f"functions</p><table>{''.join(out)}</table>")


__all__ = ["AgentCoverage", "FileFigures"]
