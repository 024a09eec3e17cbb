"""Lines and functions of a Python agent's ACP layer, from coverage.py's own analysis.

The agent's processes write the lines they ran (``data/sitecustomize.py``); what counts as a
statement, and which lines belong to which function, is coverage.py's analysis of each file
(its ``FileReporter``: executable lines and code regions). It runs in the agent's own
interpreter, which parses the agent's syntax (a newer Python than ours may not), with this
package's coverage on its path; the same process writes coverage.py's HTML report for
``--coverage-html``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# run by the agent's interpreter: stdin {"files": {path: [lines run]}, "html": dir|null}
ANALYSIS = r"""
import json, os, sys, tempfile
import coverage
from coverage.data import CoverageData
from coverage.python import PythonFileReporter
job = json.load(sys.stdin)
cov = coverage.Coverage(data_file=None, config_file=False)
out = {}
for path, ran in job["files"].items():
    try:
        fr = PythonFileReporter(path, cov)
        statements = sorted(fr.lines())
        functions = [[r.name, r.start, sorted(set(r.lines) & set(statements))]
                     for r in fr.code_regions() if r.kind == "function"]
    except Exception as exc:
        out[path] = {"error": f"{type(exc).__name__}: {exc}"}
        continue
    out[path] = {"statements": statements, "functions": functions}
if job.get("html"):
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, ".coverage")
        data = CoverageData(basename=base)
        data.add_lines({p: l for p, l in job["files"].items() if "error" not in out.get(p, {})})
        data.write()
        html = coverage.Coverage(data_file=base, config_file=False)
        html.load()
        html.html_report(morfs=[p for p in job["files"] if "error" not in out.get(p, {})],
                         directory=job["html"], title=job.get("title") or None)
json.dump(out, sys.stdout)
"""


@dataclass
class PythonFile:
    """What ran of one Python file, and what it holds."""

    path: str
    ran: set[int] = field(default_factory=set)
    statements: set[int] = field(default_factory=set)
    functions: list[tuple[str, int, set[int]]] = field(default_factory=list)
    error: str | None = None

    @property
    def reached(self) -> set[int]:
        return self.ran & self.statements

    def functions_reached(self) -> int:
        return sum(1 for _, _, lines in self.functions if lines & self.ran)


def read_snapshot(path: str) -> dict[str, list[int]]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, list)} \
        if isinstance(data, dict) else {}


def coverage_home() -> str:
    """The folder holding this interpreter's ``coverage`` package (linked into the agent's
    path: coverage.py is pure Python apart from an optional tracer it can do without)."""
    import coverage

    return os.path.dirname(os.path.dirname(os.path.abspath(coverage.__file__)))


def analyse(files: Mapping[str, set[int]], executable: str, pythonpath: str,
            html: str | None = None, title: str = "") -> tuple[dict[str, PythonFile], str]:
    """Each file's statements and functions as the agent's interpreter reads them (and its
    HTML report, when ``html`` names a folder); the second value says what went wrong when
    nothing could be analysed."""
    job = {"files": {p: sorted(lines) for p, lines in files.items()}, "html": html,
           "title": title}
    env = {**os.environ, "PYTHONPATH": pythonpath}
    env.pop("ACPM_COVERAGE_DIR", None)
    try:
        done = subprocess.run([executable or sys.executable, "-c", ANALYSIS],
                              input=json.dumps(job), capture_output=True, text=True,
                              env=env, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {}, f"the analysis could not run in {executable}: {exc}"
    if done.returncode != 0:
        return {}, f"the analysis failed in {executable}: {done.stderr.strip()[-400:]}"
    result: dict[str, Any] = json.loads(done.stdout or "{}")
    out = {}
    for path, lines in files.items():
        facts = result.get(path) or {}
        out[path] = PythonFile(path, set(lines), set(facts.get("statements") or ()),
                               [(n, s, set(ls)) for n, s, ls in facts.get("functions") or ()],
                               facts.get("error"))
    return out, ""


__all__ = ["ANALYSIS", "PythonFile", "analyse", "coverage_home", "read_snapshot"]
