"""The matrix workflow (``.github/workflows/matrix.yml``), run offline: its jobs' commands in
order, as a runner would run them.

No Actions runner is to be had offline, so this test plays one, as the action's test does
(test_action.py): it evaluates the ``${{ ... }}`` expressions the workflow uses (inputs,
matrix, needs, steps, github), each job's and step's ``if:``, runs ``run:`` steps with bash
(``-eo pipefail``, ``GITHUB_OUTPUT``) in a workspace of the job's own, fans the row job out
over the plan's ``strategy.matrix``, and plays the artifact actions (upload copies a job's
files out, download copies them into the merge job). The rows are the bundled reference agent
and a zoo mutant whose bug shows at every start-up (``targets``), not real agents: its failure
is certain within any budget, where one that needs a prompt may draw none in a few seconds on
a loaded machine. The merged page of the two jobs must say what ``acp-model matrix`` says of
the same two rows in one process.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from acp_model.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = yaml.safe_load((ROOT / ".github" / "workflows" / "matrix.yml").read_text())
TRIGGERS = WORKFLOW[True]  # YAML 1.1 reads the key `on` as true
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
CONTEXT = re.compile(r"\b(inputs|matrix|needs|steps|github)((?:\.[\w-]+)+)")
NO_OPS = ("actions/checkout", "actions/setup-python", "actions/setup-node")
PYTHON = shlex.join([sys.executable, "-m", "acp_model.agents.reference", "--timing", "fast"])
TARGETS = f"ref@v2={PYTHON}\ninfo@v2={PYTHON} --mutant init_without_info"
OPTIONS = "--seed 1 --replay-runs 1 --minimize-budget 3"
BUDGET = "6"


@dataclass
class Runner:
    """One workflow run: its inputs, the outputs of the jobs done, their artifacts."""

    root: Path
    inputs: dict[str, str]
    needs: dict[str, dict[str, Any]] = field(default_factory=dict)
    artifacts: dict[str, Path] = field(default_factory=dict)
    log: str = ""

    def value(self, path: str, matrix: dict[str, str], steps: dict[str, dict[str, str]]
              ) -> Any:
        head, *rest = path.split(".")
        data: Any = {"inputs": self.inputs, "matrix": matrix, "needs": self.needs,
                     "steps": {k: {"outputs": v} for k, v in steps.items()},
                     "github": {"ref": "refs/heads/test", "event_name": "workflow_dispatch",
                                "token": "", "repository": "acp-model/acp-model"}}[head]
        for part in rest:
            data = data.get(part, "") if isinstance(data, dict) else ""
        return data

    def evaluate(self, expr: str, matrix: dict[str, str] | None = None,
                 steps: dict[str, dict[str, str]] | None = None) -> Any:
        """An expression as Actions reads it: contexts, ||, &&, ==, !=, always(),
        fromJSON() (what the workflow uses)."""
        shape = re.sub(r"'[^']*'", "s", CONTEXT.sub("x", expr)).replace("&&", " and ") \
            .replace("||", " or ")
        assert re.fullmatch(r"[\w\s'=!()]*", shape), expr  # nothing but what Actions has
        python = CONTEXT.sub(lambda m: repr(self.value(m[1] + m[2], matrix or {}, steps or {})),
                             expr)
        python = python.replace("&&", " and ").replace("||", " or ")
        return eval(python, {"__builtins__": {}},
                    {"always": lambda: True, "fromJSON": json.loads, "True": True})

    def subst(self, text: str, matrix: dict[str, str], steps: dict[str, dict[str, str]]) -> str:
        return EXPR.sub(lambda m: str(self.evaluate(m[1], matrix, steps)), text)

    def run_job(self, name: str, matrix: dict[str, str] | None = None) -> int:
        """Every step of job ``name`` in a fresh workspace, in order; after a failed step only
        ``always()`` steps go on. Returns the first failed step's exit code (0: passed)."""
        job = WORKFLOW["jobs"][name]
        matrix = matrix or {}
        work = self.root / (name + ("-" + matrix["slug"] if matrix else ""))
        work.mkdir(parents=True)
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
               f"{os.environ['PATH']}", "GIT_CEILING_DIRECTORIES": str(self.root)}
        steps: dict[str, dict[str, str]] = {}
        failed = 0
        for step in job["steps"]:
            cond = step.get("if")
            if failed and "always()" not in (cond or ""):
                continue
            if cond is not None and not self.evaluate(EXPR.sub(r"\1", cond), matrix, steps):
                continue
            if "uses" in step:
                self._uses(step, work, matrix, steps)
                continue
            if step.get("name") == "Install acp-model":  # installed here already
                assert step["run"].startswith("python -m pip install"), step["run"]
                continue
            if step.get("name") == "System packages":  # here: tests/services/setup.sh's
                assert "apt-get install" in step["run"] and "libfaketime" in step["run"], step
                continue
            out = work / f".output-{len(steps)}"
            out.write_text("")
            step_env = {**env, "GITHUB_OUTPUT": str(out),
                        **{k: self.subst(str(v), matrix, steps)
                           for k, v in (step.get("env") or {}).items()}}
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                                   self.subst(step["run"], matrix, steps)], cwd=work,
                                  env=step_env, capture_output=True, text=True, timeout=600)
            self.log += (f"--- {name} {matrix.get('row', '')}: {step.get('name')} "
                         f"(exit {proc.returncode})\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
            if "id" in step:
                steps[step["id"]] = dict(line.split("=", 1) for line in
                                         out.read_text().splitlines() if "=" in line)
            if proc.returncode and not failed:
                failed = proc.returncode
        outputs = {k: self.subst(str(v), matrix, steps)
                   for k, v in (job.get("outputs") or {}).items()}
        self.needs[name] = {"outputs": outputs, "result": "failure" if failed else "success"}
        return failed

    def _uses(self, step: dict[str, Any], work: Path, matrix: dict[str, str],
              steps: dict[str, dict[str, str]]) -> None:
        action = step["uses"].split("@")[0]
        options = {k: self.subst(str(v), matrix, steps) for k, v in (step.get("with") or {})
                   .items()}
        if action == "actions/checkout":  # the files of the repository the jobs read
            (work / "docs").symlink_to(ROOT / "docs")
        elif action == "actions/upload-artifact":
            source = work / options["path"]
            assert source.exists(), f"{options['name']}: nothing at {source}\n{self.log}"
            self.artifacts[options["name"]] = self.root / "artifacts" / options["name"]
            shutil.copytree(source, self.artifacts[options["name"]])
        elif action == "actions/download-artifact":
            for name, path in self.artifacts.items():
                if fnmatch.fnmatch(name, options["pattern"]):
                    shutil.copytree(path, work / options["path"] / name)
        elif action == "actions/upload-pages-artifact":
            assert (work / options["path"] / "index.html").is_file(), self.log
        else:
            assert action in NO_OPS, f"an action the test runner does not play: {action}"


def _verdicts(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per row: its status and, per family, whether the cell failed and the rules that did.
    (Whether a 6 s run exercised a family, or met a warning on the way, is the agents'
    timing; a failure of these rows is not: the mutant fails every turn.)"""
    return {r["key"]: {"status": r["status"], **{
        fam: (c["status"] == "fail", sorted(f["rule"] for f in c["failures"]))
        for fam, c in (r.get("cells") or {}).items()}} for r in doc["rows"]}


def test_the_workflow_is_scheduled_and_on_demand_and_fans_rows_out() -> None:
    assert "schedule" in TRIGGERS and "workflow_dispatch" in TRIGGERS
    assert list(WORKFLOW["jobs"]) == ["plan", "row", "merge"]
    row = WORKFLOW["jobs"]["row"]
    assert row["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.rows) }}"
    assert row["strategy"]["fail-fast"] is False
    plan = "\n".join(s.get("run", "") for s in WORKFLOW["jobs"]["plan"]["steps"])
    assert "acp-model agents --json" in plan
    uses = [s["uses"].split("@")[0] for s in WORKFLOW["jobs"]["merge"]["steps"] if "uses" in s]
    assert "actions/download-artifact" in uses and "actions/deploy-pages" in uses


def test_two_rows_run_as_jobs_and_merged_say_what_one_matrix_run_says(tmp_path: Path) -> None:
    runner = Runner(tmp_path / "runner", {"agents": "none", "targets": TARGETS,
                                          "budget": BUDGET, "options": OPTIONS,
                                          "force": "false"})
    assert runner.run_job("plan") == 0, runner.log
    plan = json.loads(runner.needs["plan"]["outputs"]["rows"])
    assert [m["row"].split("=")[0] for m in plan["include"]] == ["ref@v2", "info@v2"]
    assert runner.evaluate(WORKFLOW["jobs"]["row"]["if"].strip("${} "))
    for matrix in plan["include"]:
        assert runner.run_job("row", matrix) == 0, runner.log
    assert runner.evaluate(EXPR.sub(r"\1", WORKFLOW["jobs"]["merge"]["if"]))
    assert runner.run_job("merge") == 0, runner.log
    site = tmp_path / "runner" / "merge" / "site"
    merged = json.loads((site / "matrix.json").read_text())
    assert {p.name for p in (site / "badges").iterdir()} == {"ref.svg", "info.svg"}
    assert "info" in (site / "agents.md").read_text()
    assert "INIT-09" in (site / "index.html").read_text()

    one = tmp_path / "one"
    code = main(["matrix", "--out", str(one), "--budget", BUDGET, *shlex.split(OPTIONS),
                 *(w for line in TARGETS.splitlines() for w in ("--target", line))])
    assert code == 1  # the mutant fails
    alone = json.loads((one / "matrix.json").read_text())
    assert _verdicts(merged) == _verdicts(alone)
    assert _verdicts(merged)["info v2"]["startup"] == (True, ["INIT-09"])
