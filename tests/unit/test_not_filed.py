"""A program whose minimizing was cut gets no issue body (issue 49, the s10 reader's C7): the
s10 matrix wrote one for codex-acp v2's CANCEL-07, a 35-action program cut at its search stage
and held 1/6. The page and `report-bug` say why it is not filed instead (the kept run's cut
program: gemini-cli v1's V1-LOAD-01 of s13, cut at its chunks stage by its 900 s bound, kept in
tests/data/s13-run since s14's row reached its fixpoint)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from acp_model.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "docs" / "matrix-run"
S13 = ROOT / "tests" / "data" / "s13-run"  # the s13 row whose minimizing was cut
CUT = Path("gemini-cli-v1") / "V1-LOAD-01"  # minimizing cut at its chunks stage (s13)
MINIMAL = Path("codex-acp-v2") / "RPC-09"  # minimized to its fixpoint


@pytest.fixture(scope="module")
def rejudged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("run") / "matrix-run"
    shutil.copytree(RUN, run)
    shutil.rmtree(run / CUT.parent)
    shutil.copytree(S13 / CUT.parent, run / CUT.parent, dirs_exist_ok=True)
    (run / CUT / "issue.md").write_text("# the body the s10 run wrote\n")  # stale: it goes
    assert main(["matrix", "--rejudge", str(run)]) in (0, 1)
    return run


def test_a_cut_program_gets_no_issue_body_and_the_page_says_why(rejudged: Path) -> None:
    assert not (rejudged / CUT / "issue.md").exists()
    assert (rejudged / MINIMAL / "issue.md").is_file()
    doc = json.loads((rejudged / "matrix.json").read_text())
    (f,) = [f for row in doc["rows"] for cell in (row.get("cells") or {}).values()
            for f in cell.get("failures") or []
            if str(f.get("transcript", "")).startswith(CUT.as_posix() + "/")]
    assert "issue" not in f
    assert f["not_filed"].startswith("minimizing was cut at its chunks stage after 94 trial(s)")
    assert "leaving 20 client action(s)" in f["not_filed"] and "1/1" in f["not_filed"]
    assert "Not filed as an issue: minimizing was cut" in (rejudged / "matrix.html").read_text()


def test_report_bug_says_why_a_cut_program_is_not_filed(
        rejudged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report-bug", str(rejudged / CUT), "--print"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "not filed: minimizing was cut at its chunks stage" in out
    assert "**The rule:**" not in out  # no body


def test_a_program_none_of_whose_final_replays_reproduced_is_not_filed() -> None:
    """Reaching the fixpoint is not enough: codex-acp v1's CANCEL-07 in the s11 codex run was
    minimized to 18 actions in trials that showed it, then reproduced 0/6 held and 1/6
    free-running. One held hit is enough to file; none is not."""
    from acp_model.report.matrix import not_filed

    f = {"minimize": {"fixpoint": True, "stage": "fixpoint"}, "steps": 18,
         "reproduction": "0/6", "free_reproduction": "1/6"}
    why = not_filed(f)
    assert why is not None and why.startswith("none of the program's final replays reproduced")
    assert "0/6" in why and "1/6 free-running" in why
    assert not_filed({**f, "reproduction": "1/6"}) is None
    assert not_filed({**f, "reproduction": None}) is None  # not replayed: nothing measured
