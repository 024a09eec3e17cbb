"""The agent's coverage, read: which files and bundle modules are the ACP layer, lines and
functions from V8's block ranges (nesting, resets between snapshots, UTF-16 offsets), and
coverage.py's snapshots of a Python process (the hook run in a real interpreter)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_model.agentcov import Collector, Scope
from acp_model.agentcov.scope import glob_regex, module_regions
from acp_model.agentcov.v8 import ScriptCoverage, ScriptLines, reached_lines
from acp_model.profiles import PROFILES


@pytest.mark.parametrize(("glob", "path", "match"), [
    ("/a/dist/*.js", "/a/dist/x.js", True),
    ("/a/dist/*.js", "/a/dist/v2/x.js", False),
    ("/a/dist/**/*.js", "/a/dist/x.js", True),
    ("/a/dist/**/*.js", "/a/dist/v2/deep/x.js", True),
    ("/a/lib/python*/site-packages/pkg/acp/**", "/a/lib/python3.13/site-packages/pkg/acp/s/x.py",
     True),
    ("packages/cli/src/acp/**", "packages/cli/src/acp/commands/help.ts", True),
    ("packages/cli/src/acp/**", "packages/cli/src/acpx/a.ts", False),
])
def test_a_glob_crosses_folders_only_with_two_stars(glob: str, path: str, match: bool) -> None:
    import re

    assert bool(re.match(glob_regex(glob), path)) is match


BUNDLE = """#!/usr/bin/env node
// node_modules/some-lib/index.js
var lib = 1;
// src/acp/session.ts
function prompt() {
  return 1;
}
// src/util.ts
function helper() {}
// src/acp/cancel.ts
function cancel() {}
"""


def test_a_bundle_pattern_keeps_its_modules_lines(tmp_path: Path) -> None:
    """esbuild's ``// path`` markers split a bundle into modules; ``FILE#MODULE`` keeps the
    lines of the matching ones, from each marker to the line before the next."""
    assert list(module_regions(BUNDLE)) == [("node_modules/some-lib/index.js", 2, 3),
                                            ("src/acp/session.ts", 4, 7), ("src/util.ts", 8, 9),
                                            ("src/acp/cancel.ts", 10, 12)]
    bundle = tmp_path / "dist" / "index.js"
    bundle.parent.mkdir()
    bundle.write_text(BUNDLE)
    scope = Scope.parse(["dist/*.js#src/acp/**"], tmp_path, "test")
    assert scope.wants(str(bundle)) and not scope.wants(str(tmp_path / "other.js"))
    assert scope.lines(str(bundle), BUNDLE) == {4, 5, 6, 7, 10, 11, 12}
    assert scope.files_on_disk() == [str(bundle)]
    whole = Scope.parse(["dist/index.js"], tmp_path)
    assert whole.lines(str(bundle), BUNDLE) is None  # the whole file
    none = Scope.parse(["dist/*.js#src/nothing/**"], tmp_path)
    assert none.files_on_disk() == []  # a bundle with none of the modules is not listed


def test_the_automatic_scope_takes_python_files_that_import_the_sdk() -> None:
    auto = Scope.parse([])
    assert auto.auto and auto.wants("/x/agent.js") and not auto.wants("/x/node_modules/a.js")
    assert auto.lines("/x/a.py", "from acp import Agent\n") is None
    assert auto.lines("/x/a.py", "import acp.schema as s\n") is None
    assert auto.lines("/x/b.py", "import acpx\nprint('acp')\n") == set()


SCRIPT = "function used(a) {\n  if (a > 1) {\n    return 'big';\n  }\n  return 'small';\n}\n" \
         "// a comment\nfunction later() {\n  return 3;\n}\nused(0);\n"


def ranges_at(text: str, *spans: tuple[str, str, int]) -> list[tuple[int, int, int]]:
    """V8-style ranges from (first text, last text, count) spans of ``text``."""
    out = []
    for first, last, count in spans:
        start = text.index(first)
        out.append((start, text.index(last, start) + len(last), count))
    return out


def test_a_line_counts_as_its_innermost_range_does() -> None:
    source = ScriptLines.of(SCRIPT)
    assert 7 not in source.first  # a comment line counts for nothing
    script = ranges_at(SCRIPT, ("function used", "used(0);", 1))[0]
    used = ranges_at(SCRIPT, ("function used", "'small';\n}", 1), ("{\n    return 'big'", "}", 0))
    later = ranges_at(SCRIPT, ("function later", "3;\n}", 0))
    assert reached_lines([script, *used, *later], source) == {1, 2, 5, 6, 11}


def test_snapshots_after_a_reset_add_up() -> None:
    """V8 resets its counts when it reports: a function that ran before a snapshot shows 0 in
    the next; what ran in either is reached, and a function counts as run once it did."""
    source = ScriptLines.of(SCRIPT)
    cov = ScriptCoverage("/x.js")
    (script,) = ranges_at(SCRIPT, ("function used", "used(0);", 1))
    (used,) = ranges_at(SCRIPT, ("function used", "'small';\n}", 1))
    (later,) = ranges_at(SCRIPT, ("function later", "3;\n}", 0))

    def fn(name: str, *spans: tuple[int, int, int]) -> dict[str, object]:
        return {"functionName": name, "ranges": [
            {"startOffset": a, "endOffset": b, "count": c} for a, b, c in spans]}

    cov.add([fn("", script), fn("used", used), fn("later", later)], source)
    assert cov.lines == {1, 2, 3, 4, 5, 6, 11}
    assert sorted(ran for _, ran in cov.functions.values()) == [False, True]
    cov.add([fn("used", (used[0], used[1], 0)), fn("later", (later[0], later[1], 1))], source)
    assert cov.lines == {1, 2, 3, 4, 5, 6, 8, 9, 10, 11}
    assert all(ran for _, ran in cov.functions.values())


def test_offsets_count_utf16_units() -> None:
    """A character beyond the BMP is two units in V8's offsets: the lines after it stay
    aligned."""
    text = "const s = '😀';\nfunction f() {\n  return 1;\n}\n"
    source = ScriptLines.of(text)
    start = text.index("function") + 1  # one more unit for the emoji
    assert source.first[2] == start
    body = len("function f() {\n  return 1;\n}")
    assert reached_lines([(start, start + body, 1)], source) == {2, 3, 4}
    assert reached_lines([(start - 1, start - 1 + body, 1)], source) == {2, 3}  # off by one


AGENT = """
import os, sys, time
from acp import schema  # the ACP SDK: this file is the layer

def answer(n):
    if n > 1:
        return "many"
    return "one"

def never():
    return "unreached"

print("ready", flush=True)
for line in sys.stdin:
    print(answer(int(line)), flush=True)
"""


def test_a_python_process_is_measured_by_its_hook_and_asked_for_snapshots(
        tmp_path: Path) -> None:
    """The sitecustomize hook measures the layer in a real interpreter: a snapshot after
    each request (SIGUSR2, acknowledged by a file: awaited, not slept on) holds what ran so
    far; the figures count statements and functions as coverage.py reads them."""
    pkg = tmp_path / "pkg"
    (pkg / "acp").mkdir(parents=True)
    (pkg / "acp" / "__init__.py").write_text("schema = None\n")
    (pkg / "agent.py").write_text(AGENT)
    (pkg / "other.py").write_text("x = 1\n")
    scope = Scope.parse(["pkg/agent.py"], tmp_path, "test")
    with Collector(scope) as col:
        env = {**os.environ, **col.env(os.environ), "PYTHONPATH": col.env(os.environ)
               ["PYTHONPATH"] + os.pathsep + str(pkg)}
        proc = subprocess.Popen([sys.executable, str(pkg / "agent.py")], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout is not None and proc.stdin is not None
            assert proc.stdout.readline() == "ready\n"
            first = col.snapshot()
            assert first > 0 and list(col.processes) == [proc.pid]
            proc.stdin.write("1\n")
            proc.stdin.flush()
            assert proc.stdout.readline() == "one\n"
            assert col.snapshot() > 0  # answer() ran: new lines
            assert col.snapshot() == 0  # nothing new since
            proc.stdin.write("5\n")
            proc.stdin.flush()
            assert proc.stdout.readline() == "many\n"
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)
        result = col.result()
    (figures,) = result.files
    assert figures.path == str(pkg / "agent.py") and figures.runtime == "python"
    assert figures.functions == 2 and figures.functions_reached == 1  # never() never ran
    assert len(figures.lines) - len(figures.reached) == 1  # its one statement
    doc = result.to_json()
    assert doc["tool"] == "coverage.py" and doc["processes"] == 1
    assert doc["lines"]["reached"] == len(figures.reached) and doc["functions"]["total"] == 2


def test_a_process_that_ignores_the_request_does_not_hold_the_snapshot(tmp_path: Path) -> None:
    """A registered process that never acknowledges (here: stopped) costs the snapshot its
    timeout, no more; one that is gone is not waited for."""
    with Collector(Scope.parse([])) as col:
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            Path(col.data, f"pid-{sleeper.pid}.json").write_text(json.dumps(
                {"pid": sleeper.pid, "runtime": "python", "start": ""}))
            os.kill(sleeper.pid, signal.SIGSTOP)  # SIGUSR2 stays pending: no acknowledgement
            began = time.monotonic()
            assert col.snapshot(timeout=0.3) == 0
            assert 0.3 <= time.monotonic() - began < 20  # its timeout, not forever
        finally:
            sleeper.kill()
            sleeper.wait()
        began = time.monotonic()
        col.snapshot(timeout=30)
        assert time.monotonic() - began < 20  # gone: not waited for (the timeout is 30 s)


def test_every_profile_with_a_layer_names_files_of_its_install_folder() -> None:
    """The layers are globs under the install folder (no absolute path of this machine)."""
    for profile in PROFILES.values():
        for pattern in profile.coverage_layer:
            assert not pattern.startswith("/") and pattern.split("#")[0], pattern
            if "#" in pattern:
                assert pattern.split("#")[1], pattern


def test_only_node_processes_of_the_layers_packages_are_measured(tmp_path: Path) -> None:
    """The main scripts worth measuring are those of the packages the layer lies in: a CLI
    the agent drives (another package) runs unmeasured; a layer outside any installed package
    (your own agent's files) measures every Node process."""
    import re

    scope = Scope.parse(["node_modules/@acme/agent/dist/*.js",
                         "node_modules/plain/chunks/*.js#src/acp/**"], tmp_path)
    mains = [re.compile(r) for r in scope.main_regexes()]
    assert any(r.match(f"{tmp_path}/node_modules/@acme/agent/dist/index.js") for r in mains)
    assert any(r.match(f"{tmp_path}/node_modules/plain/cli.js") for r in mains)
    assert not any(r.match(f"{tmp_path}/node_modules/@acme/cli/cli.js") for r in mains)
    assert Scope.parse(["dist/*.js"], tmp_path).main_regexes() == []
    assert Scope.parse([]).main_regexes() == []
