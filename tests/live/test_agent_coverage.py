"""``acp-model fuzz --coverage`` on the reference agent (a Python agent: coverage.py through the
start-up hook): the report's ``coverage_agent``, the text line, the annotated source, and the
lines reached first by each example steering generation (the corpus a guided run continues)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.run import run_fuzz

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]
LAYER = "acp_model/agents/reference/*.py"


def test_a_fuzz_run_reports_the_agents_own_coverage(tmp_path: Path) -> None:
    html = tmp_path / "cov"
    done = subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--coverage", "--coverage-scope", LAYER,
         "--coverage-html", str(html), "--max-examples", "15", "--seed", "3",
         "--report", str(tmp_path / "report.json"), "--html", str(tmp_path / "run.html"),
         "--", *REFERENCE],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "agent coverage (python, ACP layer:" in done.stdout
    cov = json.loads((tmp_path / "report.json").read_text())["coverage_agent"]
    assert cov["tool"] == "coverage.py" and cov["processes"] >= 1
    files = {Path(f["path"]).name: f for f in cov["files"]}
    layer = sorted(p.name for p in (ROOT / "acp_model/agents/reference").glob("*.py"))
    assert sorted(files) == layer  # every file of the layer, imported or not
    reached, total = files["cancels.py"]["lines"]
    assert 0 < reached < total  # the cancel paths ran, not all of them
    assert cov["lines"]["reached"] == sum(f["lines"][0] for f in cov["files"])
    assert 0 < cov["functions"]["reached"] < cov["functions"]["total"]
    lines = [s["lines"] for s in cov["samples"]]
    assert lines == sorted(lines) and len(lines) >= 15  # one sample per example, growing
    page = (tmp_path / "run.html").read_text()
    assert "agent coverage" in page and f"lines {cov['lines']['reached']}/" in page
    index = (html / "index.html").read_text()
    assert "cancels.py" in index and 'href="python/index.html"' in index
    assert "cancels_py.html" in "".join(p.name for p in (html / "python").iterdir())


def test_each_example_counts_the_agent_lines_it_reached_first() -> None:
    """What the examples report as newly reached adds up to the run's total: each line is
    new to exactly one example (the compass ``target()`` reads)."""
    seen: list[int] = []
    cfg = FuzzConfig(REFERENCE, max_examples=8, seed=5, time_budget=120, coverage=True,
                     coverage_scope=(LAYER,), coverage_root=str(ROOT), replay_runs=1)

    from acp_model.fuzzing import pool

    finish = pool.Example._finish

    def counting(self: pool.Example) -> None:
        finish(self)
        seen.append(self.new_agent_lines)

    pool.Example._finish = counting  # type: ignore[method-assign]
    try:
        result = run_fuzz(cfg)
    finally:
        pool.Example._finish = finish  # type: ignore[method-assign]
    assert result.agent_coverage is not None
    assert len(seen) == result.recorder.examples and seen[0] > 0
    assert sum(seen) == result.recorder.agent_lines
    samples = result.agent_coverage.samples
    assert samples[-1]["lines"] >= result.recorder.agent_lines


def test_a_guided_run_continues_the_examples_that_reached_new_code() -> None:
    """Between rounds, a guided run's corpus rounds continue the examples that reached new
    code; the run says how many it kept and how many examples continued one."""
    cfg = FuzzConfig(REFERENCE, max_examples=40, seed=5, time_budget=120, coverage=True,
                     coverage_scope=(LAYER,), coverage_root=str(ROOT), replay_runs=1)
    result = run_fuzz(cfg)
    note = next(n for n in result.notes if n.startswith("coverage guidance:"))
    continued, kept = map(int, re.findall(r"\d+", note))
    assert kept > 0 and continued > 0, note
    assert result.recorder.examples >= 20 + continued  # a generated round, then the corpus'
