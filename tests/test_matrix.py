"""``acp-model matrix``: rule families, cells, comparison, the page and the agents docs.

The live test fuzzes the reference agent (v2 and v1), two mutants with deterministic failures
and an agent that dies at start-up, a few seconds each, and reads the matrix they make: rows,
cells, links to counterexamples and replay files that exist, a family whose rules never ran
that is not a pass, a comparison that shows a change, and a page with nothing external
(opened in headless Chromium; the screenshot is checked for the verdict colours).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_model.cli.main import main
from acp_model.report.matrix import (
    Change,
    RowStatus,
    Target,
    compare,
    document,
    row_from_report,
)
from acp_model.report.matrix_docs import render_docs
from acp_model.report.matrix_html import render_matrix
from acp_model.spec.families import families, family_of, members
from acp_model.spec.rules import RULES
from tests.services.browser import colour_share, load, screenshot

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
    assert not any(p.is_dir() for p in tmp_path.iterdir()), "nothing was run"
    page = (tmp_path / "matrix.html").read_text(encoding="utf-8")
    assert "needs an account the scripted model cannot be" in page


# --- a live matrix ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("matrix")
    code = main(["matrix", "--out", str(out), "--budget", "4", "--jobs", "2", "--seed", "1",
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
    assert "Client actions" in section and ">>" in section  # the counterexample's lines
    assert "##### Why" in section and "A planted bug" in section  # the notes, included
    assert "[why](x.md#y)" in section  # a link of the notes, from where the page is
    assert re.search(r"\| \[ref\]\(#ref\) \| 0\.1\.0 \| v1 \|.*_not exercised_", text)


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
    png = screenshot(page, tmp_path / "matrix.png", width=1300, height=900)
    assert colour_share(png, FAIL_RED, rows=slice(0, 450)) > 0.002
    assert colour_share(png, PASS_GREEN, rows=slice(0, 450)) > 0.02
