"""Wire traces as Mermaid ``sequenceDiagram`` text (pastes straight into a GitHub issue)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from acp_model.trace.describe import summarize
from acp_model.trace.format import Record


def _label(text: str, limit: int = 110) -> str:
    # Mermaid reads '#' as an entity escape and ';' as a statement end inside messages.
    clean = text.replace("#", "no.").replace(";", ",").replace("\n", " ")
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


def _arrow(direction: str, text: str) -> str:
    src, dst = ("Client", "Agent") if direction == "c2a" else ("Agent", "Client")
    if text.startswith(("result ", "error ")):
        return f"{src}-->>{dst}"  # a response
    if " id=" in text.split(" [", 1)[0] or text.startswith("session/request_permission"):
        return f"{src}->>{dst}"  # a request
    return f"{src}-){dst}"  # a notification (or an unparseable line)


def sequence_diagram(records: Iterable[Record | dict[str, Any]],
                     highlight: Mapping[int, str] | None = None, *,
                     title: str | None = None) -> str:
    """One arrow per record; records in ``highlight`` get a note with the given text."""
    marks = dict(highlight or {})
    lines = ["sequenceDiagram"]
    if title:
        lines.append(f"    title {_label(title)}")
    lines += ["    participant Client", "    participant Agent"]
    for n, (direction, text) in enumerate(summarize(records)):
        prefix = "⚠ " if n in marks else ""
        lines.append(f"    {_arrow(direction, text)}: {prefix}{n}: {_label(text)}")
        if n in marks:
            lines.append(f"    Note over Client,Agent: {_label(marks[n], 200)}")
    return "\n".join(lines) + "\n"
