"""``--coverage`` on Node: the TypeScript SDK's example agent measured by V8 (the ``--require``
hook's inspector session), its own file and, as a bundle-free multi-file layer, the SDK's
modules; a small script whose executed lines are known checks the reading itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acp_model.agentcov import Collector, Scope
from tests.external.test_sdk_agents_smoke import SPECS

pytestmark = [pytest.mark.slow, pytest.mark.external]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sdk-typescript"

KNOWN = """function used(a) {
  if (a > 1) {
    return 'big';
  }
  return 'small';
}
function never() {
  return 'no';
}
const o = { m() { return 1; }, n() { return 2; } };
process.stdin.on('data', (d) => {
  process.stdout.write(used(Number(d)) + o.m() + '\\n');
});
"""


def test_v8_lines_and_functions_are_exactly_those_that_ran(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = tmp_path / "known.js"
    script.write_text(KNOWN)
    with Collector(Scope.parse(["*.js"], tmp_path, "test")) as col:
        env = {**os.environ, **col.env(os.environ)}
        proc = subprocess.Popen([node, str(script)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("0\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "small1\n"  # proof the call ran before the snapshot
        assert col.snapshot() > 0 and col.snapshot() == 0
        proc.stdin.close()
        proc.wait(timeout=30)
        result = col.result()
    (figures,) = result.files
    assert figures.runtime == "node" and result.to_json()["tool"] == "v8"
    assert figures.lines == set(range(1, 14))
    # the branch not taken (3, and its closing brace 4) and never() whole (7-9); line 10
    # holds m() and n(), reached by m()
    assert figures.lines - figures.reached == {3, 4, 7, 8, 9}
    assert (figures.functions_reached, figures.functions) == (3, 5)  # used, m and the data
    # callback ran; never and n did not


def test_a_fuzz_run_of_the_sdk_agent_reports_its_coverage(tmp_path: Path) -> None:
    spec = SPECS["typescript"]
    if spec.missing:
        pytest.skip(spec.missing)
    html = tmp_path / "cov"
    done = subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--coverage", "--coverage-scope",
         str(EXAMPLE / "agent.mjs"), "--coverage-scope",
         str(EXAMPLE / "node_modules/@agentclientprotocol/sdk/dist/**/*.js"),
         "--coverage-html", str(html), "--max-examples", "10", "--seed", "2",
         "--no-batches", "--report", str(tmp_path / "report.json"), "--", *spec.argv],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    cov = json.loads((tmp_path / "report.json").read_text())["coverage_agent"]
    assert cov["tool"] == "v8" and cov["processes"] >= 1
    files = {f["path"]: f for f in cov["files"] if f["loaded"]}
    agent = files[str(EXAMPLE / "agent.mjs")]
    assert 0 < agent["lines"][0] < agent["lines"][1]
    assert any("/sdk/dist/" in p for p in files)
    page = next(p for p in html.glob("file-*.html") if "agent.mjs" in p.read_text())
    text = page.read_text()
    assert 'class="hit"' in text and 'class="miss"' in text


def test_a_node_program_of_another_package_runs_unmeasured(tmp_path: Path) -> None:
    """With a layer inside an installed package, a Node process whose main script belongs to
    another package (a CLI the agent drives) never starts V8's coverage: it does not even
    register."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    for pkg in ("agentpkg", "otherpkg"):
        (tmp_path / "node_modules" / pkg).mkdir(parents=True)
        (tmp_path / "node_modules" / pkg / "main.js").write_text("console.log('hi');\n")
    with Collector(Scope.parse(["node_modules/agentpkg/*.js"], tmp_path, "test")) as col:
        env = {**os.environ, **col.env(os.environ)}
        runs = {pkg: subprocess.run([node, str(tmp_path / "node_modules" / pkg / "main.js")],
                                    env=env, capture_output=True, text=True, timeout=30,
                                    check=True)
                for pkg in ("agentpkg", "otherpkg")}
        assert all(r.stdout == "hi\n" for r in runs.values())
        col.snapshot(timeout=1)
        (proc,) = col.processes.values()  # the agent's package only
        result = col.result()
    assert proc.runtime == "node" and [f.path for f in result.files if f.loaded] == [
        str(tmp_path / "node_modules" / "agentpkg" / "main.js")]
