"""Diagrams: derived from the model, deterministic, legible formats, and no drift in diagrams/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from acp_model.render import (
    draw,
    graph_structure,
    machine_graph,
    reachable_graph,
    sequence_diagram,
    session_table,
    text_outputs,
    to_dot,
    to_mermaid,
)
from acp_model.spec.readings import DEFAULT
from tests.helpers import S, base, turn_start

DIAGRAMS = Path(__file__).resolve().parents[2] / "diagrams"


def test_machine_graph_is_the_table() -> None:
    table = session_table()
    g = machine_graph(table)
    assert list(g.nodes) == list(table.states)
    assert g.number_of_edges() == len(table.transitions)
    edge = g.get_edge_data("running", "idle", key="idle_reported")
    assert edge["guards"][:2] == ("stop_reason_present", "cancel_honoured")
    # probable violations and held prompts (A-10=any) warn only; so does STATE-05 (a SHOULD)
    # ... and so do a cancel after a reopen, one after the model's turn was done, and one
    # perhaps read together with the prompt
    assert edge["guards"][2:6] == ("cancel_probably_honoured~", "cancel_after_reopen_honoured~",
                                   "cancel_after_done_honoured~", "held_prompt_cancelled~")
    assert edge["guards"][6:] == ("cancelled_has_cause", "cancelled_not_only_by_order~",
                                  "blocked_state_reported~")
    assert "A-01.forbid" not in g.get_edge_data("running", "running", key="prompt")["rules"]


def test_readings_change_the_guards_drawn() -> None:
    forbid = machine_graph(session_table(), DEFAULT.parse(["A-01=forbid"]))
    assert forbid.get_edge_data("running", "running", key="prompt")["guards"] == (
        "prompt_while_busy_allowed",)
    assert forbid.graph["readings"] == {"A-01": "forbid"}


def test_dot_and_mermaid_text() -> None:
    g = machine_graph(session_table())
    dot = to_dot(g, "Session")
    assert dot.startswith('digraph "SessionLifecycle" {') and dot.rstrip().endswith("}")
    assert '"running" -> "idle" [label="idle_reported [stop_reason_present, ' in dot
    assert '__start -> "unreported";' in dot
    mmd = to_mermaid(g, "Session")
    lines = mmd.splitlines()
    assert lines[:5] == ["---", "title: Session", "---", "stateDiagram-v2", "    direction LR"]
    assert '    state "Requires action" as requires_action' in lines
    assert "    [*] --> unreported" in lines
    assert any(line.startswith("    running --> idle : idle_reported [") for line in lines)
    for line in lines:  # labels carry no raw ':' after the separator, ids are plain
        if " --> " in line and " : " in line:
            head, label = line.split(" : ", 1)
            assert re.fullmatch(r"    (\[\*\]|\w+) --> \w+", head)
            assert ":" not in label and ";" not in label.replace("#58;", "").replace("#59;", "")


def test_text_outputs_are_deterministic() -> None:
    assert text_outputs() == text_outputs()


def test_reachable_view_from_the_first_idle() -> None:
    from acp_model.render import drawing_exploration

    exp = drawing_exploration()
    full = reachable_graph(exp)
    view = reachable_graph(exp, start="idle", hide_states=("requires_action",))
    assert set(view.nodes) < set(full.nodes)
    assert [n for n, d in view.nodes(data=True) if d["initial"]] == ["idle"]
    assert not any(d["state"] == "requires_action" for _, d in view.nodes(data=True))
    # the cancel race is in the picture: a read work cancel leaves only idle(cancelled)
    node = "running p:i c:Wr"
    out = {k for _, v, k in view.out_edges(node, keys=True) if v != node}
    assert out == {"idle(cancelled)"}


def test_png_and_svg_are_drawn_and_svg_is_stable(tmp_path: Path) -> None:
    g = machine_graph(session_table())
    a = draw(g, [tmp_path / "a.png", tmp_path / "a.svg"], title="t", legend=["legend"])
    b = draw(g, [tmp_path / "b.svg"], title="t", legend=["legend"])
    assert [p.suffix for p in a] == [".png", ".svg"]
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "a.svg").read_bytes() == b[0].read_bytes()
    svg = (tmp_path / "a.svg").read_text()
    for state in ("Unreported", "Idle", "Running", "Requires action", "Custom state"):
        assert state in svg
    assert "running_reported" in svg and "legend" in svg


def test_sequence_diagram_marks_the_offending_message() -> None:
    t = turn_start(base(), 10).cancel(S).sync().idle(S, "end_turn")
    text = sequence_diagram(t.records, {t.log.last: "CANCEL-07: expected cancelled"})
    lines = text.splitlines()
    assert lines[0] == "sequenceDiagram"
    assert sum(1 for line in lines if "->>" in line or "-->>" in line or "-)" in line) == \
        len(t.records)
    assert any("Note over" in line and "CANCEL-07" in line for line in lines)


# --- drift: diagrams/ must be what `acp-model diagram --format all --out diagrams` writes ---


@pytest.mark.parametrize("name", sorted(text_outputs()))
def test_checked_in_diagrams_match_the_model(name: str) -> None:
    path = DIAGRAMS / name
    assert path.exists(), f"{path} is missing: run acp-model diagram --format all --out diagrams"
    assert path.read_text(encoding="utf-8") == text_outputs()[name], (
        f"{path} drifted from the model: run acp-model diagram --format all --out diagrams")


def test_checked_in_graph_structure_and_pictures() -> None:
    from acp_model.render import diagram_sources

    stored = json.loads((DIAGRAMS / "structure.json").read_text(encoding="utf-8"))
    for name, (g, _, _) in diagram_sources().items():
        assert stored[name] == graph_structure(g), f"{name}: graph structure drifted"
        for ext in ("png", "svg"):
            assert (DIAGRAMS / f"{name}.{ext}").stat().st_size > 1000


@pytest.mark.parametrize("revision", ["sdk-2.4.0", "v1"])
def test_each_revision_s_checked_in_diagrams_match_the_model(revision: str) -> None:
    readings = DEFAULT.parse([f"SPEC={revision}"])
    for name, text in text_outputs(readings).items():
        path = DIAGRAMS / revision / name
        assert path.read_text(encoding="utf-8") == text, (
            f"{path} drifted from the model: run acp-model diagram --format all --spec "
            f"{revision}")


def test_v1_diagrams_leave_out_the_states_its_wire_cannot_show() -> None:
    """v1 has no state_update: no requires_action, no custom state in its pictures; the same
    machine under a v2 revision keeps them."""
    from acp_model.render.graphs import machine_graph, session_table

    v1 = machine_graph(session_table(), DEFAULT.parse(["SPEC=v1"]))
    assert set(v1.nodes) == {"unreported", "idle", "running"}
    assert "requires_action_reported" not in {k for _, _, k in v1.edges(keys=True)}
    v2 = machine_graph(session_table(), DEFAULT.parse(["SPEC=sdk-2.4.0"]))
    assert {"requires_action", "custom"} <= set(v2.nodes)


def test_drawing_changes_no_process_wide_matplotlib_setting(tmp_path: Path) -> None:
    """A library draws on a canvas of its own: it chooses no backend for its caller and
    leaves rcParams as it found them (the diagrams, and the HTML report's coverage chart)."""
    import matplotlib

    from acp_model.report.html import coverage_svg

    before = dict(matplotlib.rcParams)
    draw(machine_graph(session_table()), tmp_path / "m.svg", title="t")
    assert "Idle" in (tmp_path / "m.svg").read_text()
    assert dict(matplotlib.rcParams) == before
    chart = coverage_svg([{"actions": n, "rules": n // 2, "transitions": n} for n in (0, 4, 9)])
    assert chart.startswith("<svg") and "rules exercised" in chart  # svg.fonttype: none
    assert dict(matplotlib.rcParams) == before
