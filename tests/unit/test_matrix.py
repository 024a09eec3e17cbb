"""``acp-model matrix`` without a live run: rule families, cells, comparison, bad input.

The live matrix is tests/live/test_matrix.py.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_model import __version__
from acp_model.cli.main import main
from acp_model.report.matrix import (
    Change,
    Target,
    compare,
    document,
    row_from_report,
)
from acp_model.spec.families import families, family_of, members
from acp_model.spec.rules import RULES

AGENT = f"{sys.executable} -m acp_model.agents.reference"
FAIL_RED = (251, 213, 213)
PASS_GREEN = (211, 242, 220)


# --- families --------------------------------------------------------------------------------
def test_every_catalogued_rule_has_exactly_one_family() -> None:
    for rule_id in RULES:
        fam = family_of(rule_id)
        exact = [f.id for f in families() if rule_id in f.rules]
        assert len(exact) <= 1, (rule_id, exact)
        assert fam.claims(rule_id)
    assert sum(len(v) for v in members().values()) == len(RULES)
    assert all(members()[f.id] for f in families()), "a family with no rule is a dead column"
    listed = [r for f in families() for r in f.rules]
    assert set(listed) <= set(RULES), "families.toml names a rule the catalogue lacks"


def test_the_families_are_the_issue_s_columns() -> None:
    assert [f.title for f in families()] == [
        "start-up", "sessions", "prompt turn", "cancellation", "permissions", "tool calls",
        "stop reasons", "usage", "batches, JSON-RPC"]
    assert family_of("CANCEL-07").id == "cancellation"
    assert family_of("ACPM-ONE-STOP").id == "stop"
    assert family_of("A-10.cancel").id == "cancellation"
    assert family_of("ACPM-BATCH").id == "rpc"


# --- how far a run got ----------------------------------------------------------------------
def test_the_scripted_model_says_when_a_turn_s_model_request_is_in_flight() -> None:
    """A cancel counts as "during a model request" while a response of the session's newest
    turn is open (here a stalled one): then, and not once the agent hung up."""
    import socket
    import time

    from acp_model.llm.script import Stall
    from acp_model.llm.server import ScriptedModel, tag_text

    with ScriptedModel("anthropic", stall_limit=5) as model:
        tag = model.register((Stall(),), owner="s1")
        assert not model.serving("s1")
        body = json.dumps({"model": "m", "stream": True, "messages": [
            {"role": "user", "content": [{"type": "text", "text": f"go {tag_text(tag)}"}]}],
            "tools": [{"name": "Bash"}]}).encode()  # without tools: a side request
        sock = socket.create_connection(("127.0.0.1", model.port))
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     b"application/json\r\nContent-Length: " + str(len(body)).encode()
                     + b"\r\n\r\n" + body)
        assert b"200 OK" in sock.recv(65536)  # the response has begun
        assert model.serving("s1") and not model.serving("s2")
        sock.close()  # the agent hangs up (a cancel): the server sees it at its next ping
        started = time.monotonic()
        while model.serving("s1") and time.monotonic() - started < 10:
            time.sleep(0.05)
        assert not model.serving("s1")


# --- cells from a report (no agent) ----------------------------------------------------------
def _report(rules: dict[str, int], violations: list[dict[str, Any]] = ()) -> dict[str, Any]:
    return {"verdict": "fail" if any(v["level"] == "fail" for v in violations) else "pass",
            "spec": {"revision": "seed"}, "readings": {},
            "rules": [{"id": rid, "kind": RULES[rid].kind,
                       "status": "held" if n else "not exercised", "exercised": n}
                      for rid, n in rules.items()],
            "violations": list(violations), "counterexamples": [], "summary": {}}


def test_a_family_whose_rules_never_ran_is_not_a_pass(tmp_path: Path) -> None:
    row = row_from_report(Target("a", 2), _report({"CANCEL-07": 4, "USAGE-02": 0}), tmp_path)
    assert row["cells"]["cancellation"]["status"] == "pass"
    assert row["cells"]["cancellation"]["exercised"] == 4
    assert row["cells"]["usage"]["status"] == "not exercised"
    assert row["cells"]["usage"]["rules_total"] == 1
    assert row["cells"]["tools"]["status"] == "not applicable"  # no rule of it in the report


def test_a_failure_cell_carries_the_rule_s_sentence_and_its_files(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "CANCEL-07"
    folder.mkdir(parents=True)
    files = {n: str(folder / n) for n in ("counterexample.txt", "replay.json")}
    report = _report({"CANCEL-07": 3}, [{"rule": "CANCEL-07", "level": "fail",
                                         "message": "ended end_turn", "strength": "MUST"}])
    report["counterexamples"] = [{"rule": "CANCEL-07", "files": files, "reproduction": "2/3",
                                  "steps": 4}]
    cell = row_from_report(Target("a", 2), report, tmp_path)["cells"]["cancellation"]
    assert cell["status"] == "fail"
    (f,) = cell["failures"]
    assert f["counterexample"] == "run/CANCEL-07/counterexample.txt"
    assert f["replay_command"] == "acp-model replay run/CANCEL-07/replay.json --runs 5"
    assert f["statement"] == RULES["CANCEL-07"].statement
    assert f["url"].endswith("#cancel-07")


def test_compare_names_new_failures_fixes_and_coverage(tmp_path: Path) -> None:
    old = document([row_from_report(Target("a", 2, version="1.0"),
                                     _report({"CANCEL-07": 2, "USAGE-02": 0},
                                             [{"rule": "CANCEL-07", "level": "fail"}]),
                                     tmp_path)], {})
    new = document([row_from_report(Target("a", 2, version="1.1"),
                                     _report({"CANCEL-07": 5, "USAGE-02": 3, "PERM-02": 1},
                                             [{"rule": "PERM-02", "level": "fail"}]),
                                     tmp_path)], {})
    changes = {(c["change"], c.get("rule") or c.get("family")) for c in compare(old, new)}
    assert (Change.VERSION_CHANGED, None) in changes
    assert (Change.FIXED, "CANCEL-07") in changes
    assert (Change.NEW_FAILURE, "PERM-02") in changes
    assert (Change.NEWLY_EXERCISED, "usage") in changes
    assert compare(new, new) == []


def test_bad_input_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "x.json"
    bogus.write_text("{}", encoding="utf-8")
    assert main(["matrix", "--from", str(bogus)]) == 2
    assert main(["matrix", "--target", "no-equals-sign"]) == 2
    assert main(["matrix", "--target", "a=/no/such/agent", "--out", str(tmp_path)]) == 2
    assert main(["matrix", "--target", f"a={AGENT}"]) == 2  # no --out
    assert main(["matrix", "no-such-profile", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not an acp-model-matrix/1 document" in err and "Traceback" not in err


def test_an_unavailable_profile_is_a_row_with_its_reason_never_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import acp_model.profiles as profiles

    base = next(iter(profiles.PROFILES.values()))
    offline = dataclasses.replace(base, name="cloud-only", protocols=(1, 2),
                                  unavailable="needs an account the scripted model cannot be")
    monkeypatch.setitem(profiles.PROFILES, "cloud-only", offline)
    assert main(["matrix", "cloud-only", "--out", str(tmp_path), "--budget", "1"]) == 0
    doc = json.loads((tmp_path / "matrix.json").read_text(encoding="utf-8"))
    assert [(r["key"], r["status"], r["reason"]) for r in doc["rows"]] == [
        ("cloud-only v1", "unavailable", "needs an account the scripted model cannot be"),
        ("cloud-only v2", "unavailable", "needs an account the scripted model cannot be")]
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == ["badges"], "nothing ran"
    assert "v2 unavailable" in (tmp_path / "badges" / "cloud-only.svg").read_text()
    page = (tmp_path / "matrix.html").read_text(encoding="utf-8")
    assert "needs an account the scripted model cannot be" in page


# --- not applicable by design, not exercised ------------------------------------------------
NEVER_ASKS = "its only mode runs every tool without asking the client"


def test_a_family_the_agent_never_does_by_design_is_not_applicable_with_its_reason(
        tmp_path: Path) -> None:
    """A profile declares (data) that its agent never asks permission: that cell reads "not
    applicable" with the reason, in the JSON, the page and the docs; a family that merely did
    not run is "not exercised", with how near the run came and that a longer budget may reach
    it. Neither is a pass."""
    from acp_model.report.matrix_docs import render_docs
    from acp_model.report.matrix_html import render_matrix

    report = _report({"CANCEL-07": 4, "PERM-11": 0, "PERM-12": 0, "USAGE-02": 0})
    report["summary"] = {"examples": 7, "actions": 90, "seconds": 45.2}
    report["reach"] = {"permission_requests": 0, "cancels": 12, "cancels_during_permission": 0}
    target = Target("quiet", 1, version="1.0", by_design=(("permissions", NEVER_ASKS),))
    row = row_from_report(target, report, tmp_path)
    perm, usage = row["cells"]["permissions"], row["cells"]["usage"]
    assert (perm["status"], perm["reason"], perm["by_design"]) == (
        "not applicable", NEVER_ASKS, True)
    assert perm["rules_total"] == 2 and perm["rules_exercised"] == 0
    assert usage["status"] == "not exercised" and "by_design" not in usage
    assert "in 45.2 s, 7 examples" in usage["hint"]
    assert usage["hint"].endswith("a longer --budget may reach it")
    assert row["cells"]["cancellation"]["status"] == "pass"
    assert row["cells"]["stop"]["reason"] == "no rule of this family in seed"
    doc = document([row], {"budget": 45})
    page = render_matrix(doc)
    assert f"not applicable: {NEVER_ASKS}" in page and f"by design:</i> {NEVER_ASKS}" in page
    assert "0 (by design)" in page  # its permission requests: zero, as declared
    assert "a longer --budget may reach it" in page
    docs = render_docs(doc, base=tmp_path, docs=tmp_path / "agents.md", notes=tmp_path)
    assert f"- permissions: not applicable: {NEVER_ASKS}" in docs
    assert "- usage: not exercised: none of its 1 rule(s) ran" in docs
    grid = docs.split("## quiet")[0]  # the grid's cell: its word, the reason on hover
    assert f'class="acpm-na" title="permissions: not applicable by design: {NEVER_ASKS}">n/a' \
        in grid


def test_a_declaration_the_run_contradicts_keeps_the_verdict(tmp_path: Path) -> None:
    """Where the rules ran although the profile says they never do, the verdict stands and the
    cell says the profile may be out of date."""
    target = Target("asks", 2, by_design=(("permissions", NEVER_ASKS),))
    cell = row_from_report(target, _report({"PERM-02": 3}), tmp_path)["cells"]["permissions"]
    assert cell["status"] == "pass" and "by_design" not in cell
    assert "yet its rules ran" in cell["contradicts"]


def test_a_profile_declares_what_its_agent_never_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled profiles declare only rule families; one naming no family is a usage error
    of the matrix (exit 2), not a silent cell."""
    import acp_model.profiles as profiles

    ids = {f.id for f in families()}
    declared = {name: p.never_by_design for name, p in profiles.PROFILES.items()
                if p.never_by_design}
    assert "permissions" in declared["deepagents"] and "permissions" in declared["gptme"]
    assert all(set(d) <= ids and all(d.values()) for d in declared.values()), declared
    base = profiles.PROFILES["deepagents"]
    typo = dataclasses.replace(base, name="typo", never_by_design={"permission": "x"})
    monkeypatch.setitem(profiles.PROFILES, "typo", typo)
    assert main(["matrix", "typo", "--out", str(tmp_path), "--budget", "1"]) == 2
    with pytest.raises(profiles.ProfileError, match="never_by_design"):
        profiles._profile({"name": "x", "title": "x", "package": "x", "version": "1",
                           "entry": "x", "command": ["x"], "model_api": "anthropic",
                           "never_by_design": {"permissions": ""}})


# --- a live matrix ---------------------------------------------------------------------------


# --- the agent's coverage --------------------------------------------------------------------
COVERAGE = {"tool": "coverage.py", "scope": "src/*.py", "processes": 2,
            "lines": {"reached": 1099, "total": 1428, "percent": 77.0},
            "functions": {"reached": 119, "total": 204, "percent": 58.3},
            "files": [{"path": "src/a.py", "runtime": "python", "loaded": True,
                       "lines": [10, 12], "functions": [1, 2]}],
            "samples": [], "notes": []}


def test_a_row_run_with_coverage_shows_its_acp_layer_in_a_column_of_the_grid(
        tmp_path: Path) -> None:
    """A row whose run measured the agent's coverage carries its lines and functions reached;
    the matrix page and the agents page then have a coverage column, where a row that did
    not measure it says so. Without any measured row the matrix page has no such column;
    the agents page keeps it and says the run was made without ``--coverage``."""
    from acp_model.report.matrix_docs import render_docs
    from acp_model.report.matrix_html import render_matrix

    measured = row_from_report(Target("a", 2), {**_report({"CANCEL-07": 1}),
                                                "coverage_agent": COVERAGE}, tmp_path)
    plain = row_from_report(Target("b", 2), _report({"CANCEL-07": 1}), tmp_path)
    assert measured["agent_coverage"] == {
        "tool": "coverage.py", "scope": "src/*.py", "files": 1,
        "lines": COVERAGE["lines"], "functions": COVERAGE["functions"]}
    assert "agent_coverage" not in plain
    doc = document([measured, plain], {"coverage": True})
    page = render_matrix(doc)
    assert "<th title='the agent&#x27;s own ACP layer" in page and ">agent coverage</th>" in page
    assert "title='77.0% of 1428 lines, 58.3% of 204 functions'>77% lines, 58.3% functions<" \
        in page
    assert "title='not measured'>-</td>" in page
    assert "agent coverage (coverage.py, ACP layer): 77.0% of 1428 lines" in page
    docs = tmp_path / "docs" / "agents.md"
    text = render_docs(doc, base=tmp_path, docs=docs, notes=tmp_path / "notes", reviews={},
                       reports={})
    assert ">agent coverage</th>" in text
    assert '<td title="77.0% of 1428 lines, 58.3% of 204 functions">77% lines, 58.3% ' \
           'functions</td>' in text
    assert "Agent coverage (coverage.py, ACP layer): 77.0% of 1428 lines" in text
    assert "made without `--coverage`" not in text
    unmeasured = document([plain], {})
    assert "agent coverage" not in render_matrix(unmeasured)
    text = render_docs(unmeasured, base=tmp_path, docs=docs, notes=tmp_path / "notes",
                       reviews={}, reports={})
    assert ">agent coverage</th>" in text and '<td title="not measured">-</td>' in text
    assert "this run was made without `--coverage`" in text


def test_a_matrix_with_coverage_asks_each_row_s_run_for_it() -> None:
    """``acp-model matrix --coverage`` runs each row with ``fuzz --coverage`` (a command
    line's layer from ``--coverage-scope``; a profile names its own), and its settings say
    so: a previous row run without coverage does not stand for one with it."""
    import argparse

    from acp_model.cli.matrix import _fuzz_argv, _settings
    from acp_model.matrix.rows import reusable

    args = argparse.Namespace(budget=10.0, replay_runs=1, minimize_budget=None, seed=1,
                              jobs=1, spec="auto", coverage=True,
                              coverage_scope=["src/*.py"])
    command = Target("ref", 2, command=("python", "-m", "ref"))
    argv = _fuzz_argv(args, command, "auto", Path("/tmp/x"), 1)
    assert "--coverage" in argv and "--coverage-scope=src/*.py" in argv
    profile = _fuzz_argv(args, Target("claude-agent-acp", 2), "auto", Path("/tmp/x"), 1)
    assert "--coverage" in profile and not any(a.startswith("--coverage-scope") for a in profile)
    plain = _fuzz_argv(argparse.Namespace(**{**vars(args), "coverage": False}), command,
                       "auto", Path("/tmp/x"), 1)
    assert not any(a.startswith("--coverage") for a in plain)
    settings = _settings(args)
    assert settings["coverage"] is True
    row = {"key": "a v2", "status": "ran", "version": "1.0", "acp_model": __version__}
    before = document([row], {"budget": 10.0, "spec": "auto"})
    target = Target("a", 2, version="1.0")
    assert reusable(before, target, {"budget": 10.0, "spec": "auto"}) is not None
    assert reusable(before, target, {"budget": 10.0, "spec": "auto", "coverage": True}) is None


def test_the_matrix_s_rows_minimize_alone_behind_one_gate_in_its_folder() -> None:
    """Rows fuzz ``--jobs`` at a time but minimize one at a time with nothing else running:
    each row's run is given the same gate file, in the matrix's folder (fuzzing/alone.py)."""
    import argparse

    from acp_model.cli.matrix import MINIMIZE_GATE, _fuzz_argv

    args = argparse.Namespace(budget=10.0, replay_runs=1, minimize_budget=None, seed=1,
                              jobs=2, spec="auto", coverage=False)
    gates = {argv[argv.index("--minimize-alone") + 1] for argv in (
        _fuzz_argv(args, Target(name, 1), "auto", Path("/tmp/m") / name, 1)
        for name in ("kilo", "opencode"))}
    assert gates == {str(Path("/tmp/m") / MINIMIZE_GATE)}


def test_the_matrix_gives_each_row_its_minimizing_budget_in_trials() -> None:
    """``matrix --minimize-trials N`` is each row's ``fuzz --minimize-trials N``; without it
    a row's run allows what each program's length needs. The seconds are the outer bound,
    grown up to MATRIX_GROWTH times on a slow agent."""
    import argparse

    from acp_model.cli.matrix import _fuzz_argv
    from acp_model.fuzzing.budget import MATRIX_GROWTH

    args = argparse.Namespace(budget=10.0, replay_runs=1, minimize_budget=None, seed=1,
                              jobs=2, spec="auto", coverage=False, minimize_trials=40)
    argv = _fuzz_argv(args, Target("kilo", 1), "auto", Path("/tmp/m/kilo"), 1)
    assert argv[argv.index("--minimize-trials") + 1] == "40"
    assert argv[argv.index("--minimize-growth") + 1] == str(MATRIX_GROWTH)
    auto = _fuzz_argv(argparse.Namespace(**{**vars(args), "minimize_trials": None}),
                      Target("kilo", 1), "auto", Path("/tmp/m/kilo"), 1)
    assert "--minimize-trials" not in auto


def test_two_warnings_of_one_rule_have_one_anchor_and_one_link(tmp_path: Path) -> None:
    """A rule may warn twice in a row (two checks, or a warning beside a shared process's
    unconfirmed failure): both sections are shown, the lists and the grid name the rule once,
    and the page has one element with its anchor (a duplicate id is an invalid page, and a
    second link to the same place reads as a second rule)."""
    from acp_model.report.matrix_docs import render_docs
    from acp_model.report.matrix_html import render_matrix

    warned = [{"rule": "PROMPT-04", "level": "warn", "check": check, "message": text,
               "strength": "MUST"} for check, text in (("prompt_answered", "first"),
                                                       ("reopened_liveness", "second"))]
    row = row_from_report(Target("twice", 1, version="1.0"),
                          _report({"PROMPT-04": 5}, warned), tmp_path)
    assert [w["message"] for w in row["cells"]["prompt"]["warnings"]] == ["first", "second"]
    doc = document([row], {"budget": 45})
    docs = render_docs(doc, base=tmp_path, docs=tmp_path / "agents.md", notes=tmp_path)
    assert docs.count('<a id="w-twice-v1-prompt-04"></a>') == 1
    assert "warn [PROMPT-04](#w-twice-v1-prompt-04)\n" in docs
    assert docs.count("#### Warning PROMPT-04") == 2
    page = render_matrix(doc)
    assert page.count("id='w-twice-v1-prompt-04'") == 1
    assert page.count("href='#w-twice-v1-prompt-04'") == 1
    assert "first" in page and "second" in page
