"""Wire traces as Mermaid ``sequenceDiagram`` text (pastes straight into a GitHub issue)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from acp_model.trace.describe import summarize
from acp_model.trace.format import Record, numbers_of


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


def sequence_diagram(records: Sequence[Record | dict[str, Any]],
                     highlight: Mapping[int, str] | None = None, *,
                     title: str | None = None, numbers: Sequence[int] | None = None) -> str:
    """One arrow per record, labelled with its message number (``numbers``, or the records'
    own); records in ``highlight`` (positions) get a note with the given text, and where an
    excerpt left messages out a note says which."""
    marks = dict(highlight or {})
    nums = list(numbers) if numbers is not None else numbers_of(records)
    lines = ["sequenceDiagram"]
    if title:
        lines.append(f"    title {_label(title)}")
    lines += ["    participant Client", "    participant Agent"]
    expect = 0
    for n, (direction, text) in enumerate(summarize(records)):
        if nums[n] > expect:
            lines.append(f"    Note over Client,Agent: messages {expect}-{nums[n] - 1} left out")
        expect = nums[n] + 1
        prefix = "⚠ " if n in marks else ""
        lines.append(f"    {_arrow(direction, text)}: {prefix}{nums[n]}: {_label(text)}")
        if n in marks:
            lines.append(f"    Note over Client,Agent: {_label(marks[n], 200)}")
    return "\n".join(lines) + "\n"
