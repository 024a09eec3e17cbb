"""The composite GitHub Action (``action.yml``), run offline: its ``run:`` steps in order.

No Actions runner is to be had offline, so this test plays one: it substitutes the
``${{ ... }}`` expressions the action uses (inputs, ``github.action_path``, step outputs),
evaluates each step's ``if:``, runs ``run:`` steps with bash as a runner does (``-eo
pipefail``, ``GITHUB_OUTPUT``), and for each ``uses:`` step checks that the files it would
upload exist. acp-model is already installed here (``install: false``); the agent is the
reference agent (the job passes) or a mutant (it fails, SARIF and JUnit written; a baseline
makes it pass and reports its stale entry). The mutant's bug shows in every turn (no race), so
its runs stop once it is seen (``--stop-on``) and the reference's run is a round of a few
examples: the test proves the job's plumbing, not the fuzzer's reach.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@dataclass
class Runner:
    workspace: Path
    inputs: dict[str, str]
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    uploaded: list[tuple[str, list[Path]]] = field(default_factory=list)
    log: str = ""

    def value(self, expr: str) -> str:
        head, _, rest = expr.partition(".")
        if head == "inputs":
            return self.inputs[rest]
        if expr == "github.action_path":
            return str(ROOT)
        if head == "steps":
            step, _, name = rest.partition(".outputs.")
            return self.outputs.get(step, {}).get(name, "")
        raise AssertionError(f"expression the test runner does not know: {expr}")

    def subst(self, text: str) -> str:
        return EXPR.sub(lambda m: self.value(m.group(1)), text)

    def condition(self, expr: str | None) -> bool:
        """``if:``: always(), ==, !=, && over inputs and literals (what action.yml uses)."""
        if expr is None:
            return True
        python = re.sub(r"\binputs\.([\w-]+)", lambda m: repr(self.inputs[m.group(1)]),
                        EXPR.sub(lambda m: m.group(1), expr))
        python = python.replace("always()", "True").replace("&&", " and ").replace("||", " or ")
        assert re.fullmatch(r"[\w\s'=!.()-]*", python), python
        return bool(eval(python, {"__builtins__": {}}, {"True": True}))

    def run(self) -> int:
        """Every step in order, as a runner does after a failed step: only ``always()``
        steps go on. Returns the exit code of the first failed step (0: the job passed)."""
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
               f"{os.environ['PATH']}"}
        failed = 0
        for step in ACTION["runs"]["steps"]:
            cond = step.get("if")
            if failed and "always()" not in (cond or ""):
                continue
            if not self.condition(cond):
                continue
            if "uses" in step:
                self._upload(step)
                continue
            assert step.get("shell") == "bash", step["name"]  # composite run steps need one
            out_file = self.workspace / f"output-{len(self.outputs)}"
            out_file.write_text("")
            step_env = {**env, "GITHUB_OUTPUT": str(out_file),
                        **{k: self.subst(str(v)) for k, v in step.get("env", {}).items()}}
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                                   self.subst(step["run"])], cwd=self.workspace, env=step_env,
                                  capture_output=True, text=True, timeout=300)
            self.log += f"--- {step['name']} (exit {proc.returncode})\n{proc.stdout}{proc.stderr}"
            if "id" in step:
                self.outputs[step["id"]] = dict(
                    line.split("=", 1) for line in out_file.read_text().splitlines() if line)
            if proc.returncode and not failed:
                failed = proc.returncode
        return failed

    def _upload(self, step: dict[str, Any]) -> None:
        options = {k: self.subst(str(v)) for k, v in step.get("with", {}).items()}
        paths = options.get("path") or options.get("sarif_file") or ""
        self.uploaded.append((step["uses"], [self.workspace / p.strip()
                                             for p in paths.splitlines() if p.strip()]))


ARGS = "--seed 1 --replay-runs 1 --max-examples 8 --steps 10"


def _runner(tmp_path: Path, agent: list[str], **inputs: str) -> Runner:
    defaults = {k: str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    chosen = {**defaults, "agent": shlex.join(agent), "budget": "10", "install": "false",
              "args": ARGS, **inputs}
    assert set(chosen) == set(defaults), "an input the action does not declare"
    return Runner(tmp_path, chosen)


def test_the_action_declares_what_the_issue_asks() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert {"agent", "agent-name", "model", "budget", "baseline", "spec"} <= set(ACTION["inputs"])
    uses = [s["uses"].split("@")[0] for s in ACTION["runs"]["steps"] if "uses" in s]
    assert uses == ["actions/upload-artifact", "github/codeql-action/upload-sarif"]


def test_an_if_expression_is_read_as_a_runner_reads_it(tmp_path: Path) -> None:
    r = _runner(tmp_path, ["true"], baseline="b.toml")
    assert r.condition("always() && inputs.upload-sarif == 'true'")
    assert not r.condition("inputs.agent-name != ''")
    assert r.condition("inputs.baseline != ''")


REFERENCE = [sys.executable, "-m", "acp_model.agents.reference", "--timing", "fast"]
MUTANT = [*REFERENCE, "--mutant", "unknown_stop_reason"]  # STOP-03 in every turn
MUTANT_ARGS = f"{ARGS} --stop-on STOP-03 --minimize-budget 3"


def _uploads_exist(r: Runner) -> None:
    assert [u for u, _ in r.uploaded] == [s["uses"] for s in ACTION["runs"]["steps"]
                                          if "uses" in s]
    for uses, paths in r.uploaded:
        missing = [str(p) for p in paths if not p.exists()]
        assert not missing, f"{uses} would upload missing files: {missing}\n{r.log}"


def test_the_reference_agent_passes_the_job(tmp_path: Path) -> None:
    r = _runner(tmp_path, REFERENCE)
    assert r.run() == 0, r.log
    assert r.outputs["fuzz"]["exit-code"] == "0"
    _uploads_exist(r)


def test_a_mutant_fails_the_job_and_a_baseline_accepts_it(tmp_path: Path) -> None:
    r = _runner(tmp_path / "plain", MUTANT, args=MUTANT_ARGS)
    r.workspace.mkdir()
    assert r.run() == 1, r.log
    results = r.workspace / "acp-model-results"
    sarif = json.loads((results / "acp-model.sarif").read_text())
    assert "STOP-03" in {x["ruleId"] for x in sarif["runs"][0]["results"]}
    assert "STOP-03" in (results / "junit.xml").read_text()
    _uploads_exist(r)

    # the known failure accepted; an entry for a rule that passes is reported stale
    baseline = tmp_path / "acp-baseline.toml"
    baseline.write_text('[[accept]]\nrule = "STOP-03"\nnote = "upstream #7"\n\n'
                        '[[accept]]\nrule = "CANCEL-06"\nnote = "fixed long ago"\n')
    r = _runner(tmp_path / "accepted", MUTANT, baseline=str(baseline), args=MUTANT_ARGS)
    r.workspace.mkdir()
    assert r.run() == 0, r.log
    assert "stale baseline entry: CANCEL-06" in r.log
    report = json.loads((r.workspace / "acp-model-results" / "report.json").read_text())
    assert [s["rule"] for s in report["baseline"]["stale"]] == ["CANCEL-06"]
    sarif = json.loads((r.workspace / "acp-model-results" / "acp-model.sarif").read_text())
    accepted = [x for x in sarif["runs"][0]["results"]
                if x["ruleId"] == "STOP-03" and x["level"] == "error"]
    assert accepted and accepted[0]["suppressions"][0]["justification"] == "upstream #7"
    _uploads_exist(r)
