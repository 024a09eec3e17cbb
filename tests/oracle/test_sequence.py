"""Mermaid sequence diagrams of traces."""

from __future__ import annotations

from acp_model.trace.sequence import sequence_diagram
from tests.helpers import S, base, turn_start


def test_arrows_by_message_kind_and_highlight() -> None:
    t = turn_start(base(), 10).permission(S, 50).answer(50, "allow").cancel(S)
    t.idle(S, "cancelled")
    text = sequence_diagram(t.records, {t.log.last: "CANCEL-11: why; #because"}, title="demo")
    lines = text.splitlines()
    assert lines[0] == "sequenceDiagram" and "title demo" in lines[1]
    arrows = [line for line in lines if ": " in line and "Note" not in line
              and "title" not in line]
    assert len(arrows) == len(t.records)
    assert any("Client->>Agent" in a and "session/prompt" in a for a in arrows)
    assert any("Agent-->>Client" in a and "(session/prompt)" in a for a in arrows)
    assert any("Agent->>Client" in a and "request_permission" in a for a in arrows)
    assert any("Client-)Agent" in a and "session/cancel" in a for a in arrows)
    note = next(line for line in lines if "Note over" in line)
    assert "#" not in note and ";" not in note and "CANCEL-11" in note
    assert arrows[-1].split(": ", 1)[1].startswith("⚠")
