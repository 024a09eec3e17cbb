"""``acp-model diagram --style docs``: generated from the model (an edge the model lacks, or
a flow the check rejects, stops generation), checked in without drift (sources and the
renders made from them), and rendered by mermaid-cli on a real Chromium, like every other
Mermaid text the tool writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_model.cli.main import main
from acp_model.model.vocab import Event, State
from acp_model.render.docs import (
    CONCERNS,
    RENDERS,
    Concern,
    DocsDrift,
    DrawnEdge,
    docs_sources,
    flow_mermaid,
    source_digest,
    state_mermaid,
)
from acp_model.render.graphs import session_table
from acp_model.render.mermaid_cli import render
from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from acp_model.trace.sequence import sequence_diagram
from tests.helpers import S, base, turn_start
from tests.services.browser import colour_share

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "diagrams" / "docs"


@pytest.mark.parametrize("revision", ["seed", "sdk-2.4.0", "v1"])
def test_checked_in_docs_diagrams_match_the_model(revision: str) -> None:
    folder = DOCS if revision == "seed" else DOCS / revision
    sources = docs_sources(DEFAULT.parse([f"SPEC={revision}"]))
    for name, text in sources.items():
        assert (folder / name).read_text(encoding="utf-8") == text, \
            f"{folder / name} drifted: run acp-model diagram --style docs" + \
            ("" if revision == "seed" else f" --spec {revision}")
    renders = json.loads((folder / RENDERS).read_text())
    for name, text in sources.items():
        for fmt in ("svg", "png"):
            picture = f"{Path(name).stem}.{fmt}"
            assert (folder / picture).is_file(), picture
            assert renders[picture] == source_digest(text), \
                f"{folder / picture} was rendered from an older source"


def test_the_docs_speak_the_spec_s_words() -> None:
    turn = docs_sources()["docs-turn.mmd"]
    assert "Foreground work is in progress." in turn  # the seed's Session States text
    assert "state_update running" in turn and "session/prompt" in turn
    for concern in CONCERNS:  # no guard function names on any edge; rules in the legend only
        text = state_mermaid(concern, session_table())
        edges = [line.replace("[*]", "") for line in text.splitlines() if "-->" in line]
        assert all("[" not in e and "_honoured" not in e and "~" not in e for e in edges)
        assert "Rules checked on these transitions" in text


def test_an_edge_the_model_does_not_have_stops_generation() -> None:
    wrong = Concern("x", "x", (DrawnEdge(State.IDLE, Event.IDLE_REPORTED, State.RUNNING, "idle"),))
    with pytest.raises(DocsDrift, match="leads to idle"):
        state_mermaid(wrong, session_table())


def test_a_flow_the_check_rejects_stops_generation() -> None:
    def bad(receipts: bool) -> TraceBuilder:
        return turn_start(base(), 10).cancel(S).sync().idle(S, "end_turn")

    with pytest.raises(DocsDrift, match="CANCEL-07"):
        flow_mermaid("bad", "bad", bad)


@pytest.mark.external  # mermaid-cli (npm) and Chromium
def test_every_mermaid_text_renders_with_mermaid_cli(tmp_path: Path) -> None:
    diagrams = dict(docs_sources())
    for name in ("session-lifecycle.mmd", "connection.mmd", "reachable.mmd"):
        diagrams[name] = (ROOT / "diagrams" / name).read_text(encoding="utf-8")
    t = turn_start(base(), 10).cancel(S).sync().idle(S, "end_turn")
    diagrams["counterexample.mmd"] = sequence_diagram(t.records, {len(t.records) - 1: "CANCEL-07"})
    written = render(diagrams, tmp_path, "svg")
    assert [p.stem for p in written] == [Path(n).stem for n in diagrams]
    for path in written:
        svg = path.read_text(encoding="utf-8")
        assert "<svg" in svg and "Syntax error" not in svg, path.name
    png = render({"docs-turn.mmd": diagrams["docs-turn.mmd"]}, tmp_path, "png")[0]
    assert colour_share(png, (255, 255, 255)) < 0.97  # something was drawn on the white


def test_diagram_style_docs_cli(tmp_path: Path) -> None:
    assert main(["diagram", "--style", "docs", "--format", "mermaid", "--out",
                 str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(docs_sources())


def test_v1_docs_speak_v1_s_words() -> None:
    """v1's pictures: the prompt turn ended by the prompt's response, no state_update, and
    every flow passes the check under v1."""
    sources = docs_sources(DEFAULT.parse(["SPEC=v1"]))
    assert sorted(sources) == ["docs-cancellation.mmd", "docs-flow-cancel-during-permission.mmd",
                               "docs-flow-cancel-during-work.mmd", "docs-flow-typical.mmd",
                               "docs-permissions.mmd", "docs-turn.mmd"]
    text = "".join(sources.values())
    assert "state_update" not in text and "requires_action" not in text
    assert "prompt_turn" in text and "stopReason cancelled (the turn ends)" in text
