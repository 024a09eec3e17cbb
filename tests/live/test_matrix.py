"""``acp-model matrix``: rule families, cells, comparison, the page and the agents docs.

The live test fuzzes the reference agent (v2 and v1), two mutants with deterministic failures
and an agent that dies at start-up, a few seconds each, and reads the matrix they make: rows,
cells, links to counterexamples and replay files that exist, a family whose rules never ran
that is not a pass, a comparison that shows a change, and a page with nothing external
(opened in headless Chromium; the screenshot is checked for the verdict colours).
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_model.cli.main import main
from acp_model.report.matrix import (
    RowStatus,
)
from acp_model.report.matrix_docs import render_docs
from acp_model.report.matrix_html import render_matrix
from acp_model.spec.rules import RULES
from tests.services.browser import colour_share, load, screenshot

AGENT = f"{sys.executable} -m acp_model.agents.reference"
FAIL_RED = (251, 213, 213)
PASS_GREEN = (211, 242, 220)


# --- families --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("matrix")
    # 8 s a row: on a loaded machine (make test: four workers on two cores) a row of 4 s once
    # got a single example in
    code = main(["matrix", "--out", str(out), "--budget", "8", "--jobs", "2", "--seed", "1",
                 "--replay-runs", "2",
                 "--target", f"ref@v2,v1={AGENT}",
                 "--target", f"end-turn={AGENT} --mutant cancel_as_end_turn",
                 "--target", f"stop-done={AGENT} --mutant unknown_stop_reason",
                 "--target", f"dead={sys.executable} -c 'raise SystemExit(3)'"])
    assert code == 1  # failures in some rows
    return out, json.loads((out / "matrix.json").read_text(encoding="utf-8"))


def _row(doc: dict[str, Any], key: str) -> dict[str, Any]:
    return next(r for r in doc["rows"] if r["key"] == key)


@pytest.mark.slow
def test_the_matrix_has_a_row_per_agent_and_protocol(live: tuple[Path, dict[str, Any]]
                                                     ) -> None:
    _, doc = live
    assert [r["key"] for r in doc["rows"]] == ["ref v2", "ref v1", "end-turn v2",
                                                "stop-done v2", "dead v2"]
    ref = _row(doc, "ref v2")
    assert ref["status"] == "ran" and ref["version"] == "0.1.0"  # the agent's own info
    assert ref["revision"] == "seed" and _row(doc, "ref v1")["revision"] == "v1"
    assert [f["id"] for f in doc["families"]] == list(ref["cells"])
    assert all(c["status"] in ("pass", "not exercised", "not applicable", "warn")
               for c in ref["cells"].values()), ref["cells"]
    reach = ref["reach"]  # how far the run got, as its client counted
    assert reach["permission_requests"] > 0 and reach["cancels"] >= reach["cancels_during_work"]
    assert reach["cancels_during_work"] > 0 and reach["cancels_during_permission"] > 0
    assert reach["cancels_during_model_request"] == 0  # no scripted model behind it
    for row in doc["rows"]:
        for cell in row["cells"].values():  # never green on rules that did not run
            assert cell["status"] != "pass" or cell["rules_exercised"] > 0


@pytest.mark.slow
def test_a_family_the_run_never_exercised_is_not_a_pass(live: tuple[Path, dict[str, Any]]
                                                        ) -> None:
    _, doc = live
    idle = [(r["key"], fam, c["status"]) for r in doc["rows"] if r["status"] == "ran"
            for fam, c in r["cells"].items() if c["rules_total"] and not c["rules_exercised"]]
    assert idle, "no family without exercise: the test shows nothing"  # v1's usage, so far
    assert all(status == "not exercised" for _, _, status in idle), idle


@pytest.mark.slow
def test_each_failure_links_its_counterexample_and_replay_file(
        live: tuple[Path, dict[str, Any]]) -> None:
    out, doc = live
    for key, family, rule in (("end-turn v2", "cancellation", "CANCEL-07"),
                              ("stop-done v2", "stop", "STOP-03")):
        cell = _row(doc, key)["cells"][family]
        assert cell["status"] == "fail"
        (f,) = [x for x in cell["failures"] if x["rule"] == rule]
        assert (out / f["counterexample"]).is_file()
        replay = json.loads((out / f["replay"]).read_text(encoding="utf-8"))
        assert replay["rule"] == rule
        assert f["replay_command"] == f"acp-model replay {f['replay']} --runs 5"
        assert rule in (out / f["counterexample"]).read_text(encoding="utf-8")
    page = (out / "matrix.html").read_text(encoding="utf-8")
    hrefs = set(re.findall(r'href="([^"#:]+)"', page))
    assert hrefs and all((out / h).exists() for h in hrefs), hrefs


@pytest.mark.slow
def test_an_agent_that_does_not_start_is_a_row_with_its_error(
        live: tuple[Path, dict[str, Any]]) -> None:
    _, doc = live
    dead = _row(doc, "dead v2")
    assert dead["status"] == RowStatus.ERROR
    assert "exited during initialize" in dead["reason"]


@pytest.mark.slow
def test_compare_shows_what_changed_between_two_matrices(
        live: tuple[Path, dict[str, Any]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The earlier matrix's end-turn row is the reference agent's run (as if the agent had
    been correct before): the new one fails CANCEL-07 in the cancellation family."""
    out, doc = live
    old = copy.deepcopy(doc)
    before = copy.deepcopy(_row(doc, "ref v2"))
    before.update(key="end-turn v2", agent="end-turn", version="0.0.9")
    old["rows"] = [before if r["key"] == "end-turn v2" else r for r in old["rows"]]
    old_path = tmp_path / "old.json"
    old_path.write_text(json.dumps(old), encoding="utf-8")
    page = tmp_path / "compared.html"
    capsys.readouterr()
    code = main(["matrix", "--from", str(out / "matrix.json"), "--compare", str(old_path),
                 "--html", str(page)])
    assert code == 1
    printed = capsys.readouterr().out
    assert re.search(r"end-turn v2.*cancellation.*new failure.*CANCEL-07", printed), printed
    assert "version changed" in printed
    html = page.read_text(encoding="utf-8")
    assert "Changes since" in html and "new failure" in html


@pytest.mark.slow
def test_the_docs_page_writes_each_failure_for_the_agent_s_maintainers(
        live: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    out, doc = live
    notes = tmp_path / "agent-notes"
    notes.mkdir()
    (notes / "end-turn.md").write_text("## Why\n\nA planted bug ([why](../x.md#y)).\n",
                                       encoding="utf-8")
    text = render_docs(doc, base=out, docs=tmp_path / "agents.md", notes=notes)
    section = text[text.index("## end-turn"):text.index("## stop-done")]
    assert "#### CANCEL-07: cancellation" in section
    assert RULES["CANCEL-07"].statement in section
    assert "acp-model replay end-turn-v2/CANCEL-07/replay.json --runs 5" in section
    assert "The program (" in section and ">> #" in section  # the actions, the proof lines
    assert "##### Why" in section and "A planted bug" in section  # the notes, included
    assert "[why](x.md#y)" in section  # a link of the notes, from where the page is
    assert re.search(r'<td><a href="#ref">ref</a></td><td>0\.1\.0</td><td>v1</td>.*'
                     r'class="acpm-none"', text)  # the grid's row: a family that did not run


@pytest.mark.slow
@pytest.mark.external  # Chromium
def test_the_page_is_self_contained_and_shows_the_verdicts(
        live: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    out, doc = live
    page = out / "matrix.html"
    html = page.read_text(encoding="utf-8")
    assert html == render_matrix(doc)
    # nothing is loaded from anywhere: the only outside addresses are links to rule docs
    assert not re.search(r"src\s*=|<link|<script|@import|url\(", html)
    assert all(re.search(r"href=['\"]https://[^'\"]+/rules/#", html[m.start() - 6:m.end() + 80])
               for m in re.finditer(r"https?://", html))
    dom, console = load(page)
    assert console == [], console
    assert "CANCEL-07" in dom and "not exercised" in dom
    # the whole grid in the shot: on a loaded machine a short row's fuzzing reaches fewer
    # rules, its "not exercised" cells say so in more lines, and the grid grows (ci-77: the
    # failing cells began below a 450-pixel band, which held only the legend's red)
    png = screenshot(page, tmp_path / "matrix.png", width=1300, height=1400)
    assert colour_share(png, FAIL_RED) > 0.002
    assert colour_share(png, PASS_GREEN) > 0.02


@pytest.mark.slow
def test_a_matrix_run_with_coverage_fills_the_coverage_column(tmp_path: Path) -> None:
    """``--coverage`` on the reference agent (its ACP layer given by ``--coverage-scope``):
    the row reports the lines and functions of its layer reached, and the page's grid shows
    them in the coverage column."""
    layer = Path(__file__).resolve().parents[2] / "acp_model" / "agents" / "reference"
    out = tmp_path / "matrix"
    code = main(["matrix", "--out", str(out), "--budget", "6", "--seed", "1",
                 "--replay-runs", "1", "--coverage", "--coverage-scope", f"{layer}/*.py",
                 "--target", f"ref={AGENT}"])
    assert code == 0
    doc = json.loads((out / "matrix.json").read_text(encoding="utf-8"))
    (row,) = doc["rows"]
    cov = row["agent_coverage"]
    assert cov["tool"] == "coverage.py" and cov["files"] >= 10, cov
    assert 0 < cov["lines"]["reached"] < cov["lines"]["total"], cov
    assert 0 < cov["functions"]["reached"] <= cov["functions"]["total"], cov
    page = (out / "matrix.html").read_text(encoding="utf-8")
    assert ">agent coverage</th>" in page
    assert f"{cov['lines']['percent']:g}% lines" in page
