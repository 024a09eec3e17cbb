"""``--html``: one self-contained page per command, loaded in a real headless Chromium (no
console message, no network), with the verdict, the proof and the diagram visible in a
screenshot; and the sequence diagram folds a long counterexample around what matters."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from acp_model.cli.main import main
from acp_model.fuzzing.transport import AgentProcess
from acp_model.report.sequence_svg import OFFENDING, sequence_svg, visible
from acp_model.report.text import reproduction_phrase
from acp_model.trace.format import read_trace
from tests.helpers import S, base, cancel_during_permission, turn_start
from tests.live.shared import SharedRun
from tests.services.browser import colour_share, external_references, load, screenshot

FAIL_RED = (0xB9, 0x1C, 0x1C)  # the verdict badge and the header's rule
PASS_GREEN = (0x15, 0x80, 0x3D)
OFFENDING_BAND = (0xFE, 0xE2, 0xE2)  # behind the offending message in the diagram
EVIDENCE_BAND = (0xFE, 0xF3, 0xC7)
REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]


def _cancelled_as_end_turn(tmp_path: Path) -> Path:
    return turn_start(base(), 10).cancel(S).sync().idle(S, "end_turn").log.write(
        tmp_path / "t.jsonl")


def _page_checks(page: Path, tmp_path: Path) -> str:
    """What every page must satisfy: one file, nothing from the network, scripts ran without a
    console message. Returns the DOM after the scripts ran."""
    html = page.read_text(encoding="utf-8")
    assert external_references(html) == []
    dom, console = load(page)
    assert console == [], console
    assert "<svg" in dom
    return dom


@pytest.mark.external  # Chromium
def test_a_failing_check_page_shows_verdict_proof_and_diagram(tmp_path: Path) -> None:
    trace = _cancelled_as_end_turn(tmp_path)
    page = tmp_path / "check.html"
    assert main(["check", str(trace), "--html", str(page)]) == 1
    dom = _page_checks(page, tmp_path)
    assert "CANCEL-07 (MUST)" in dom
    assert re.search(r"proof</dt><dd>#\d+ \(session/cancel\)", dom), "the proof is listed"
    assert re.search(r'id="rule-count">\d+ of \d+ rule', dom), "the rule filter script ran"
    assert 'class="msg offending"' in dom and 'class="msg evidence"' in dom
    png = screenshot(page, tmp_path / "check.png")
    assert colour_share(png, FAIL_RED, rows=slice(0, 120)) > 0.002  # the verdict, at the top
    assert colour_share(png, OFFENDING_BAND) > 0.0005  # the marked message in the diagram
    assert colour_share(png, EVIDENCE_BAND) > 0.0005


@pytest.mark.external  # Chromium
def test_a_passing_check_page(tmp_path: Path) -> None:
    seed = Path(__file__).resolve().parents[2] / "examples" / "traces" / "seed-flow.jsonl"
    page = tmp_path / "pass.html"
    assert main(["check", str(seed), "--html", str(page)]) == 0
    dom = _page_checks(page, tmp_path)
    assert "No failure and no warning." in dom
    assert len(re.findall(r'<tr class="rec', dom)) == len(read_trace(seed))  # the transcript
    png = screenshot(page, tmp_path / "pass.png", height=900)
    assert colour_share(png, PASS_GREEN, rows=slice(0, 120)) > 0.002
    assert colour_share(png, FAIL_RED) == 0.0


@pytest.mark.external  # Chromium
def test_an_explore_page_lists_properties_and_draws_witnesses(tmp_path: Path) -> None:
    page = tmp_path / "explore.html"
    # a graph without permission requests draws the same page parts in a second
    assert main(["explore", "--limit", "1", "--max-permissions", "0", "--html", str(page)]) == 0
    dom = _page_checks(page, tmp_path)
    assert dom.count('<tr class="held">') == 5  # properties a-e
    assert "witness" in dom


@pytest.mark.slow
@pytest.mark.external  # Chromium
def test_fuzz_and_replay_pages_of_a_mutant(tmp_path: Path,
                                           cancel_as_end_turn_run: SharedRun) -> None:
    run = cancel_as_end_turn_run  # shared with test_fuzz (tests/live/conftest.py)
    page, out, report = run.html, run.out, run.report
    assert run.result["returncode"] == 1, run.result["stderr"]
    dom = _page_checks(page, tmp_path)
    doc = json.loads(report.read_text())
    ce = doc["counterexamples"][0]
    assert f"acp-model replay {out / ce['rule'] / 'replay.json'}" in dom
    # named as the report's minimizing says (minimal only at its fixpoint), with both rates
    minimal = ce["minimize"]["fixpoint"] and ce["minimize"]["steps"] == ce["steps"]
    title = "Minimal counterexample" if minimal else "Counterexample (not proven minimal)"
    rates = reproduction_phrase(ce["reproduced"], ce["replays"], ce["free_reproduced"],
                                ce["free_replays"], clock=bool(ce.get("clock")))
    assert title in dom and f"{rates} in fresh agent processes" in dom, ce
    assert "Coverage over the run" in dom and doc["coverage"]["samples"]
    png = screenshot(page, tmp_path / "fuzz.png")
    assert colour_share(png, FAIL_RED, rows=slice(0, 120)) > 0.002
    assert colour_share(png, OFFENDING_BAND) > 0.0005

    replay_page = tmp_path / "replay.html"
    main(["replay", str(out / ce["rule"] / "replay.json"), "--runs", "2", "--html",
          str(replay_page)])
    dom = _page_checks(replay_page, tmp_path)
    assert "acp-model replay" in dom and "runs 2" in dom


@pytest.mark.external  # Chromium
def test_a_proxy_page_of_a_live_session(tmp_path: Path) -> None:
    page = tmp_path / "proxy.html"
    argv = [sys.executable, "-m", "acp_model", "proxy", "--quiet", "--html", str(page), "--",
            *REFERENCE, "--mutant", "cancel_as_end_turn", "--design", "perm_cancel=wait"]
    # The agent waits for the permission answer, which follows the response that proves the
    # cancel was read: its end_turn idle is a proven CANCEL-07 whatever the timing.
    with AgentProcess(argv) as p:
        cancel_during_permission(p, str(tmp_path), prove_read=True)
        assert p.calls.wait_for(lambda m: isinstance(m, dict) and m.get("params", {}).get(
            "update", {}).get("stopReason") is not None, timeout=10) is not None
    dom = _page_checks(page, tmp_path)
    assert "acp-model proxy" in dom and "the proxied session" in dom
    assert "CANCEL-07 (MUST)" in dom and 'class="msg offending"' in dom
    assert 'verdict">FAIL' in dom and "sent during this work and the agent answered" in dom
    assert dom.count('<tr class="rec') >= 8


def test_a_long_counterexample_is_folded_around_the_proof() -> None:
    records = []
    for n in range(300):
        records.append({"dir": "c2a", "t": n, "msg": {"jsonrpc": "2.0", "id": n,
                                                      "method": "session/prompt",
                                                      "params": {"sessionId": "s1",
                                                                 "prompt": []}}})
    marks = {250: OFFENDING, 120: "cancel"}
    shown = visible(len(records), marks)
    assert shown[250] and shown[120] and not shown[0] and not shown[299]
    svg = sequence_svg(records, marks)
    height = int(re.search(r'height="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    assert height < 1200, height  # unfolded: 300 rows, over 7,000 pixels
    assert svg.count("folded") == 3  # before the evidence, between, after the offending
    assert "#250" in svg and "#120" in svg
