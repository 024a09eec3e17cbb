"""The page is the current oracle's word: the agents page, the reports of the true bugs and the
page of what a reading or revision changes are what the current code says about the matrix run
the repository keeps (docs/matrix-run/).

Each test judges that run again in a copy laid out as docs/ is (so every relative link is the
same) and compares what it writes with the committed files. When the oracle changes a verdict,
these fail until the pages are regenerated: ``make matrix-docs``.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from acp_model.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RUN = DOCS / "matrix-run"
MAX_RUN_BYTES = 4_000_000  # the kept run stays small enough for a repository
REGENERATE = "regenerate with `make matrix-docs` (the oracle changed a verdict, or the pages)"


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """docs/matrix-run and docs/agent-notes copied, the run judged again and the agents page
    written as `make matrix-docs` does; returns the copy's docs folder."""
    docs = tmp_path_factory.mktemp("judged") / "docs"
    shutil.copytree(RUN, docs / "matrix-run")
    shutil.copytree(DOCS / "agent-notes", docs / "agent-notes")
    shutil.rmtree(docs / "agent-notes" / "bugs", ignore_errors=True)  # written again
    code = main(["matrix", "--rejudge", str(docs / "matrix-run"), "--docs",
                 str(docs / "agents.md")])
    assert code in (0, 1)
    return docs


def test_the_kept_run_is_small_and_whole() -> None:
    size = sum(p.stat().st_size for p in RUN.rglob("*") if p.is_file())
    assert size < MAX_RUN_BYTES, f"docs/matrix-run holds {size:,} bytes"
    for row in RUN.glob("*-v[12]"):
        assert (row / "report.json").is_file(), row


def test_the_agents_page_is_what_the_current_code_says(judged: Path) -> None:
    assert (judged / "agents.md").read_text() == (DOCS / "agents.md").read_text(), REGENERATE


def test_the_run_s_pages_and_issue_bodies_are_current(judged: Path) -> None:
    for name in ("matrix.json", "matrix.html"):
        assert (judged / "matrix-run" / name).read_text() == (RUN / name).read_text(), \
            f"{name}: {REGENERATE}"
    for path in sorted((judged / "matrix-run").rglob("*")):
        if path.suffix in (".md", ".svg"):
            kept = RUN / path.relative_to(judged / "matrix-run")
            assert kept.is_file() and kept.read_text() == path.read_text(), \
                f"{kept.relative_to(ROOT)}: {REGENERATE}"


def test_each_true_bug_has_its_report_and_only_those(judged: Path) -> None:
    written = {p.name: p.read_text() for p in (judged / "agent-notes" / "bugs").glob("*.md")}
    kept = {p.name: p.read_text() for p in (DOCS / "agent-notes" / "bugs").glob("*.md")}
    assert written == kept, REGENERATE
    assert written, "no reviewed true bug in the kept run"
    page = (DOCS / "agents.md").read_text()
    for name in written:
        assert f"(agent-notes/bugs/{name})" in page  # the agent's section links it


def test_every_failure_section_has_its_report_and_says_why() -> None:
    page = (DOCS / "agents.md").read_text()
    sections = re.split(r'\n<a id="f-', page)[1:]
    assert sections
    for section in sections:
        section = section.split('\n<a id="w-')[0].split("\n## ")[0]
        assert re.search(r"\*\*Why it is (probably |not )?a bug", section), section[:200]
        # (a program whose minimizing was cut is not filed, and says why)
        assert "[issue body](matrix-run/" in section or "Not filed as an issue: " in section, \
            section[:200]


def test_the_reading_page_is_what_the_current_code_says(tmp_path: Path) -> None:
    """docs/matrix-readings.md: the kept run under MATRIX_READING (the Makefile's)."""
    reading = re.search(r"^MATRIX_READING \?= (.+)$", (ROOT / "Makefile").read_text(),
                        re.M)
    assert reading is not None
    page = tmp_path / "docs" / "matrix-readings.md"
    code = main(["matrix", "--rejudge", str(RUN), *shlex.split(reading[1]), "--out",
                 str(tmp_path / "out"), "--docs", str(page)])
    assert code in (0, 1)
    text = page.read_text()
    assert text == (DOCS / "matrix-readings.md").read_text(), REGENERATE
    rows = [line.split(" | ") for line in text.splitlines()
            if line.startswith("| ") and " | v" in line]
    changed = [r for r in rows if not r[4].startswith("not judged") and r[3] != r[4]]
    assert changed, "the page shows no row whose verdict the reading changes"


def test_each_warning_read_by_hand_says_so_under_its_section() -> None:
    """A [[warning]] reading of reviewed.toml shows under that warning's section of the page
    (and one naming no warning of the kept run is a stale entry)."""
    import json

    from acp_model.matrix.bugs import load_reviews

    read = load_reviews(DOCS / "agent-notes" / "reviewed.toml", "warning")
    assert read
    page = (DOCS / "agents.md").read_text()
    doc = json.loads((RUN / "matrix.json").read_text())
    shown = {(str(r["agent"]), str(r.get("version") or ""), int(r["protocol"]), str(w["rule"]))
             for r in doc["rows"] for c in (r.get("cells") or {}).values()
             for w in c.get("warnings") or []}
    for key, review in read.items():
        assert key in shown, f"reviewed.toml reads a warning the kept run does not show: {key}"
        agent, _, protocol, rule = key
        section = page.split(f'<a id="w-{agent}-v{protocol}-{rule.lower()}"></a>')[1]
        section = section.split('\n<a id="')[0]
        assert f"judged {review.verdict.upper()}; {review.source}" in section, key


def test_every_kept_replay_file_has_the_schedule_it_names() -> None:
    """A maintainer replays a kept failure with ``acp-model replay FILE``, which holds to the
    recorded schedule the file names: that schedule is kept beside it."""
    import json

    named = []
    for replay in sorted(RUN.rglob("replay.json")):
        schedule = json.loads(replay.read_text(encoding="utf-8")).get("schedule")
        if schedule:
            named.append(replay)
            assert (replay.parent / schedule).is_file(), replay.relative_to(RUN)
    assert named, "no kept replay file names a schedule"
