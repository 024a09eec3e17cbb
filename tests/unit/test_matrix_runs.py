"""A recorded matrix run, without running one: re-judging its findings with the current code
(and under another reading or revision), rows as job files and their merge, reuse, history,
badges, issue bodies and the agents page.

The runs here are made of recorded transcripts (tests/data/transcripts): a row's report says
what the run judged, each finding's folder holds its transcript, as a fuzz run leaves them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from acp_model import __version__
from acp_model.cli.main import main
from acp_model.matrix.bugs import issue_body, load_reviews
from acp_model.matrix.history import history
from acp_model.matrix.rejudge import KEPT_EXCERPT, rejudge
from acp_model.matrix.rows import load_row, merge, reusable, write_row
from acp_model.oracle.offline import check_trace
from acp_model.report.badge import badge
from acp_model.report.matrix import Target, document, load, row_from_report
from acp_model.trace.format import numbered_lines, read_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "transcripts"
CANCEL_09 = DATA / "updates_after_cancelled_idle.jsonl"  # CANCEL-09 under A-13=fail (default)
CLEAN = DATA / "unknown_stop_reason.jsonl"  # STOP-03, and nothing of CANCEL-09


def _finding(folder: Path, transcript: Path, rule: str, spec: str = "seed",
             *, gap: bool = False) -> dict[str, Any]:
    """A failure's folder as a fuzz run writes it, and the violation the run reported (the
    current verdict of ``rule`` on ``transcript``, or a made-up one where it has none)."""
    folder.mkdir(parents=True)
    report = check_trace(transcript, spec=spec)
    found = [v for v in report["violations"] if v["rule"] == rule]
    v = found[0] if found else {"rule": rule, "level": "fail", "strength": "MUST",
                                "index": 5, "message": f"#5 breaks {rule}", "evidence": []}
    records = read_trace(transcript)
    numbers = list(range(len(records)))
    if gap:  # an excerpt of a shared process: #2-#40 left out
        numbers = [0, 1, *range(41, 41 + len(records) - 2)]
        v = {**v, "index": numbers[int(v["index"])]}
    with (folder / "transcript.jsonl").open("w") as fh:
        for obj in numbered_lines(records, numbers, "earlier examples"):
            fh.write(json.dumps(obj) + "\n")
    (folder / "counterexample.txt").write_text(
        f"acp-model counterexample: {rule}\n\nClient actions (replay.json):\n"
        "  1. new session s1\n  2. prompt s1: plan\n\nWire transcript (...):\n")
    (folder / "replay.json").write_text(json.dumps({
        "format": "acp-model-replay/1", "rule": rule, "actions": [
            {"op": "new_session"}, {"op": "prompt", "s": 0,
                                    "blocks": [{"type": "text", "text": "plan"}]}]}))
    return {**v, "seen": 3}


def _run(base: Path, name: str, findings: list[tuple[Path, str, bool]], *,
         spec: str = "seed", version: str = "1.0", created: str = "2026-12-01T10:00:00Z"
         ) -> dict[str, Any]:
    """A row's run folder under ``base`` (``<name>-v2``) and its row."""
    out = base / f"{name}-v2"
    out.mkdir(parents=True, exist_ok=True)
    violations, counterexamples = [], []
    for transcript, rule, gap in findings:
        v = _finding(out / rule, transcript, rule, spec, gap=gap)
        violations.append(v)
        counterexamples.append({
            "rule": rule, "steps": 2, "reproduced": 2, "replays": 3, "reproduction": "2/3",
            "files": {n: str(out / rule / n) for n in ("transcript.jsonl", "replay.json",
                                                        "counterexample.txt")}})
    clean = check_trace(CLEAN, spec=spec)  # the rule table of a run (counts made up)
    report = {**clean, "violations": violations, "counterexamples": counterexamples,
              "verdict": "fail" if violations else "pass",
              "summary": {"examples": 9, "actions": 40, "seconds": 12.0},
              "config": {"deadline": 3.0, "validate": True},
              "rules": [{**r, "exercised": r.get("exercised") or 4} for r in clean["rules"]],
              "agent_info": {"name": name, "version": version}}
    (out / "report.json").write_text(json.dumps(report))
    row = row_from_report(Target(name, 2, version=version, package=f"{name}-pkg"), report,
                          base, out / "report.json", out)
    return {**row, "created": created}


def _matrix(base: Path, rows: list[dict[str, Any]]) -> Path:
    doc = document(rows, {"budget": 60.0, "spec": "auto", "created": "2026-12-01T10:00:00Z"})
    (base / "matrix.json").write_text(json.dumps(doc))
    return base


def _fails(doc: dict[str, Any], key: str) -> dict[str, list[str]]:
    row = next(r for r in doc["rows"] if r["key"] == key)
    return {level: sorted({f["rule"] for c in row["cells"].values() for f in c[level]})
            for level in ("failures", "warnings")}


# --- re-judging ---------------------------------------------------------------------------
def test_a_failure_the_current_code_still_reports_stands_with_its_proof(tmp_path: Path) -> None:
    base = _matrix(tmp_path, [_run(tmp_path, "a", [(CANCEL_09, "CANCEL-09", False)])])
    again = rejudge(load(base / "matrix.json"), base)
    assert _fails(again, "a v2") == {"failures": ["CANCEL-09"], "warnings": []}
    (f,) = again["rows"][0]["cells"]["cancellation"]["failures"]
    assert isinstance(f["index"], int)  # the proof, by message number
    assert f["reproduction"] == "2/3" and f["free_reproduction"] is None
    assert again == rejudge(load(base / "matrix.json"), base)  # idempotent


def test_two_recorded_findings_of_one_rule_count_both_their_sightings(tmp_path: Path) -> None:
    """The page counts what the run saw: two recorded findings the current code files under
    one rule and level are one entry whose sightings are both's (the s10 reader: kilo's two
    PROMPT-04 warnings were counted as one)."""
    from acp_model.matrix.rejudge import rejudged_report
    from acp_model.spec.readings import DEFAULT

    _run(tmp_path, "a", [(CANCEL_09, "CANCEL-09", False)])
    out = tmp_path / "a-v2"
    report = json.loads((out / "report.json").read_text())
    twin = out / "CANCEL-09-again"
    twin.mkdir()
    for name in ("transcript.jsonl", "counterexample.txt", "replay.json"):
        (twin / name).write_text((out / "CANCEL-09" / name).read_text())
    report["violations"].append({**report["violations"][0], "seen": 2})
    report["counterexamples"].append({**report["counterexamples"][0], "files": {
        n: str(twin / n) for n in ("transcript.jsonl", "replay.json", "counterexample.txt")}})
    again = rejudged_report(report, out, DEFAULT)
    (v,) = [x for x in again["violations"] if x["rule"] == "CANCEL-09"]
    assert v["seen"] == 3 + 2
    (stat,) = [r for r in again["rules"] if r["id"] == "CANCEL-09"]
    assert stat["violations"] == 5


def test_a_failure_its_own_complete_transcript_does_not_show_is_withdrawn(
        tmp_path: Path) -> None:
    base = _matrix(tmp_path, [_run(tmp_path, "a", [(CLEAN, "CANCEL-09", False)])])
    doc = load(base / "matrix.json")
    assert _fails(doc, "a v2")["failures"] == ["CANCEL-09"]  # as the run reported it
    again = rejudge(doc, base)
    assert _fails(again, "a v2")["failures"] == []
    assert again["rows"][0]["cells"]["cancellation"]["status"] == "pass"  # its rules ran


def test_a_failure_on_an_excerpt_the_code_cannot_judge_is_kept_and_says_why(
        tmp_path: Path) -> None:
    base = _matrix(tmp_path, [_run(tmp_path, "a", [(CLEAN, "CANCEL-09", True)])])
    again = rejudge(load(base / "matrix.json"), base)
    assert _fails(again, "a v2")["failures"] == ["CANCEL-09"]
    report = json.loads((base / "a-v2" / "report.json").read_text())
    assert report["violations"][0]["rule"] == "CANCEL-09"  # the run's own words stay
    from acp_model.matrix.rejudge import rejudged_report
    from acp_model.spec.readings import DEFAULT

    (v,) = rejudged_report(report, base / "a-v2", DEFAULT)["violations"]
    assert v["rejudged"] == KEPT_EXCERPT


def test_a_rejudged_folder_s_report_json_says_the_current_verdicts_and_keeps_the_runs(
        tmp_path: Path) -> None:
    """Every file of a re-judged folder that states a verdict gives the current one: the
    row's report.json too (the s10 reader: gptme's said `fail` for a CANCEL-07 that its
    counterexample and matrix.json called a warning). The run's own verdicts stay in its
    ``recorded`` section, re-judging the folder again reads them back (idempotent), and an
    issue body beside a failure the current code withdrew is removed."""
    base = _matrix(tmp_path / "run", [_run(tmp_path / "run", "a",
                                           [(CLEAN, "CANCEL-09", False)]),
                                      _run(tmp_path / "run", "b",
                                           [(CANCEL_09, "CANCEL-09", False)])])
    (base / "a-v2" / "CANCEL-09" / "issue.md").write_text("# a breaks CANCEL-09\n")
    out = tmp_path / "out"
    assert main(["matrix", "--rejudge", str(base), "--out", str(out)]) == 1  # b fails
    report = json.loads((out / "a-v2" / "report.json").read_text())
    assert report["verdict"] == "pass" and report["violations"] == []
    assert report["summary"]["failures"] == 0
    assert [v["rule"] for v in report["recorded"]["violations"]] == ["CANCEL-09"]
    assert report["recorded"]["verdict"] == "fail"
    assert report["judged_by"]["version"] == __version__
    # a finding that stands names its files in the folder, wherever the folder is copied
    (v,) = json.loads((out / "b-v2" / "report.json").read_text())["violations"]
    assert v["rule"] == "CANCEL-09" and v["files"]["transcript.jsonl"] == \
        "CANCEL-09/transcript.jsonl"
    assert not (out / "a-v2" / "CANCEL-09" / "issue.md").exists()
    assert main(["matrix", "--rejudge", str(out)]) == 1  # again, in place
    assert json.loads((out / "a-v2" / "report.json").read_text()) == report
    from acp_model.matrix.rejudge import as_recorded

    assert as_recorded(report) == json.loads((base / "a-v2" / "report.json").read_text())


def test_warnings_of_one_rule_from_two_checks_stay_two_findings(tmp_path: Path) -> None:
    """A CANCEL-07 warning after a reopen and a probable CANCEL-07 say different things: the
    run lists both, and so does its re-judging (the s10 reader: opencode's were merged into
    one); a failure seen on a shared process only, reported as a warning of a check, stays
    apart from that check's warnings (kilo's two PROMPT-04)."""
    from acp_model.matrix.rejudge import rejudged_report
    from acp_model.spec.readings import DEFAULT

    def warning(check: str, index: int, **more: Any) -> dict[str, Any]:
        return {"rule": "CANCEL-07", "level": "warn", "check": check, "index": index,
                "message": f"#{index} {check}", "seen": 1, **more}

    report = {"violations": [warning("cancel_after_reopen_honoured", 44),
                             warning("cancel_probably_honoured", 165),
                             warning("cancel_probably_honoured", 170),
                             warning("cancel_probably_honoured", 261,
                                     standing="shared-only")]}
    again = rejudged_report(report, tmp_path, DEFAULT)
    assert sorted((v["check"], v["seen"], v.get("standing")) for v in again["violations"]) \
        == [("cancel_after_reopen_honoured", 1, None), ("cancel_probably_honoured", 1,
                                                         "shared-only"),
            ("cancel_probably_honoured", 2, None)]
    assert again["summary"]["warnings"] == 3


def test_a_warning_an_excerpt_now_fails_stays_the_runs_warning(tmp_path: Path) -> None:
    """The run judged the whole shared process and warned; its kept excerpt leaves messages
    out (opencode's reopened session: the answer that named it was in a gap), so a failure
    the excerpt shows may come from what is missing: the run's warning stands, and says
    why (it used to become a failure and merge into the rule's own)."""
    from acp_model.matrix.rejudge import rejudged_report
    from acp_model.spec.readings import DEFAULT

    _run(tmp_path, "a", [(CANCEL_09, "CANCEL-09", True)])
    out = tmp_path / "a-v2"
    report = json.loads((out / "report.json").read_text())
    (v,) = report["violations"]
    files = report.pop("counterexamples")[0]["files"]
    report["violations"] = [{**v, "level": "warn", "files": files}]
    (w,) = rejudged_report(report, out, DEFAULT)["violations"]
    assert w["level"] == "warn" and w["rejudged"] == KEPT_EXCERPT


def test_a_reading_regrades_a_recorded_failure_beside_today_s_verdict(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A-13=warn: updates after the cancelled end of a turn are a warning, not CANCEL-09's
    failure; the page of the re-judging shows the row today and under it."""
    base = _matrix(tmp_path / "run", [_run(tmp_path / "run", "a",
                                           [(CANCEL_09, "CANCEL-09", False)])])
    out, page = tmp_path / "strict", tmp_path / "docs" / "a13.md"
    assert main(["matrix", "--rejudge", str(base), "--reading", "A-13=warn"]) == 2
    assert "give --out DIR" in capsys.readouterr().err
    assert main(["matrix", "--rejudge", str(base), "--reading", "A-13=warn", "--out",
                 str(out), "--docs", str(page)]) == 0
    doc = load(out / "matrix.json")
    assert _fails(doc, "a v2") == {"failures": [], "warnings": ["CANCEL-09"]}
    assert doc["judged_by"]["readings"] == ["A-13=warn"]
    assert [(c["change"], c["rule"]) for c in doc["compare"]["changes"]] == [
        ("fixed", "CANCEL-09"), ("new warning", "CANCEL-09")]
    text = page.read_text()
    assert "# What the reading `A-13=warn` would change" in text
    assert "no longer fails CANCEL-09; would warn CANCEL-09" in text
    assert "| a | 1.0 | v2 | fail: CANCEL-09 | pass with warnings |" in text
    assert (out / "a-v2" / "CANCEL-09" / "transcript.jsonl").is_file()  # files copied
    assert load(base / "matrix.json")["rows"][0]["cells"]["cancellation"]["failures"]


def test_another_revision_drops_the_rules_it_does_not_have(tmp_path: Path) -> None:
    base = _matrix(tmp_path, [_run(tmp_path, "a", [(CANCEL_09, "CANCEL-09", False)])])
    again = rejudge(load(base / "matrix.json"), base, spec="v1")
    assert again["rows"][0]["rejudged"].startswith("not judged under v1")


# --- rows as jobs, their merge, reuse, history --------------------------------------------
def test_rows_written_apart_merge_into_one_matrix_with_their_files(tmp_path: Path) -> None:
    for name, transcript in (("a", CANCEL_09), ("b", CLEAN)):
        job = tmp_path / "jobs" / name
        row = _run(job, name, [(transcript, "STOP-03" if name == "b" else "CANCEL-09",
                                False)])
        write_row(job, row, {"budget": 60.0, "spec": "auto", "created": row["created"]})
    out = tmp_path / "site"
    doc = merge([tmp_path / "jobs" / "b", tmp_path / "jobs" / "a"], out)
    assert [r["key"] for r in doc["rows"]] == ["a v2", "b v2"]
    assert doc["settings"]["budget"] == 60.0 and doc["settings"]["merged"] == 2
    for row in doc["rows"]:
        for cell in row["cells"].values():
            for f in cell["failures"]:
                assert (out / f["transcript"]).is_file() and (out / f["replay"]).is_file()
    with pytest.raises(ValueError, match="given twice"):
        merge([tmp_path / "jobs" / "a", tmp_path / "jobs" / "a"], tmp_path / "x")
    with pytest.raises(ValueError, match=r"no row\.json"):
        load_row(tmp_path)


def test_a_row_of_the_same_versions_and_settings_is_reused(tmp_path: Path) -> None:
    row = {**_run(tmp_path, "a", []), "acp_model": __version__}
    previous = document([row], {"budget": 60.0, "spec": "auto", "created": "2026-12-01"})
    same = Target("a", 2, version="1.0")
    settings = {"budget": 60.0, "spec": "auto"}
    assert reusable(previous, same, settings)["key"] == "a v2"
    assert reusable(previous, Target("a", 2, version="1.1"), settings) is None
    assert reusable(previous, same, {**settings, "budget": 120.0}) is None
    assert reusable(previous, Target("a", 2), settings) is None  # a command line: unknown
    older = {**row, "acp_model": "0.0.1"}
    assert reusable({**previous, "rows": [older]}, same, settings) is None


def test_a_row_reused_from_another_matrix_than_previous_is_a_clear_error(
        tmp_path: Path) -> None:
    """s15: rows reused from a fresh run's matrix, merged with the kept one as --previous,
    stopped in an internal error (a failure's folder the kept run did not hold)."""
    kept = _run(tmp_path / "kept", "a", [], created="2026-12-01T10:00:00Z")
    fresh = _run(tmp_path / "fresh", "a", [(CANCEL_09, "CANCEL-09", False)],
                 created="2026-12-08T00:17:00Z")
    previous = document([kept], {"created": kept["created"]})
    job = tmp_path / "job"
    job.mkdir()
    write_row(job, {**fresh, "reused": {"from": fresh["created"]}},
              {"budget": 60.0, "spec": "auto"})
    with pytest.raises(ValueError, match="reused from another matrix than --previous"):
        merge([job], tmp_path / "site", previous, tmp_path / "kept")
    again = document([fresh], {"created": fresh["created"]})  # the matrix it came from
    doc = merge([job], tmp_path / "site", again, tmp_path / "fresh")
    assert doc["rows"][0]["key"] == "a v2"


def test_the_history_keeps_each_release_newest_first_with_what_changed(tmp_path: Path) -> None:
    old = _run(tmp_path / "old", "a", [(CLEAN, "STOP-03", False)], version="1.0",
               created="2026-11-01T00:00:00Z")
    new = _run(tmp_path / "new", "a", [(CANCEL_09, "CANCEL-09", False)], version="1.1",
               created="2026-12-01T00:00:00Z")
    first = document([old], {"created": "2026-11-01T00:00:00Z"})
    second = document([new], {"created": "2026-12-01T00:00:00Z"})
    second["history"] = history(first, second)
    entries = second["history"]["a"]
    assert [(e["version"], e["verdict"]) for e in entries] == [("1.1", "fail"), ("1.0", "fail")]
    assert {(c["change"], c["rule"]) for c in entries[0]["changes"]} >= {
        ("new failure", "CANCEL-09"), ("fixed", "STOP-03"), ("version changed", None)}
    again = _run(tmp_path / "again", "a", [], version="1.1", created="2026-12-02T00:00:00Z")
    third = document([again], {"created": "2026-12-02T00:00:00Z"})
    assert [(e["version"], e["verdict"]) for e in history(second, third)["a"]] == [
        ("1.1", "pass"), ("1.0", "fail")]  # the same release: its entry replaced


# --- the badge, the issue body, the page ---------------------------------------------------
def test_the_badge_says_each_protocol_s_verdict_and_counts_with_version_and_date(
        tmp_path: Path) -> None:
    row = _run(tmp_path, "a", [(CANCEL_09, "CANCEL-09", False)])
    svg = badge("a", [row, {**row, "protocol": 1, "cells": {}, "status": "unavailable"}],
                "0.1.0", "2026-12-01")
    assert ">v2 fail 1 · v1 unavailable<" in svg and "acp-model 0.1.0 · 2026-12-01" in svg
    assert 'fill="#c62828"' in svg  # red: a row fails
    clean = {**row, "cells": {k: {**c, "failures": [], "warnings": []}
                              for k, c in row["cells"].items()}}
    assert 'fill="#2e7d32"' in badge("a", [clean], "0.1.0", "")


def test_the_issue_body_states_the_rule_the_program_the_proof_and_the_replay(
        tmp_path: Path) -> None:
    base = _matrix(tmp_path, [_run(tmp_path, "a", [(CANCEL_09, "CANCEL-09", False)])])
    doc = rejudge(load(base / "matrix.json"), base)
    row = doc["rows"][0]
    (f,) = row["cells"]["cancellation"]["failures"]
    body = issue_body(row, f, base)
    assert body.startswith("# a 1.0 breaks CANCEL-09 (ACP v2): ")
    assert "**The rule:** CANCEL-09 (MUST, binds the agent)" in body
    assert "1. new session s1" in body and "2. prompt s1: plan" in body
    assert f">> #{f['index']} " in body  # the offending line, numbered as in the file
    assert "reproduced 2/3 in fresh agent processes" in body
    assert "acp-model replay replay.json --runs 6" in body
    assert main(["report-bug", str(base / "a-v2" / "CANCEL-09")]) == 0
    assert (base / "a-v2" / "CANCEL-09" / "issue.md").read_text() == body


def test_the_agents_page_is_a_grid_a_reviewed_bug_says_why_and_its_report_is_kept(
        tmp_path: Path) -> None:
    base = _matrix(tmp_path / "run", [_run(tmp_path / "run", "a",
                                           [(CANCEL_09, "CANCEL-09", False)])])
    notes = tmp_path / "docs" / "agent-notes"
    notes.mkdir(parents=True)
    (notes / "reviewed.toml").write_text(
        '[[failure]]\nagent = "a"\nversion = "1.0"\nprotocol = 2\nrule = "CANCEL-09"\n'
        'verdict = "true"\nwhy = "The update came after the cancelled end."\n'
        'source = "a test"\n')
    assert load_reviews(notes / "reviewed.toml")
    page = tmp_path / "docs" / "agents.md"
    assert main(["matrix", "--rejudge", str(base), "--docs", str(page)]) == 1
    text = page.read_text()
    assert '<td class="acpm-fail" title="cancellation: fail: CANCEL-09">' \
           '<a href="#f-a-v2-cancel-09">fail</a></td>' in text
    assert '<a id="f-a-v2-cancel-09"></a>' in text
    assert "**Why it is a bug** (read by hand, judged TRUE; a test): The update came" in text
    report = notes / "bugs" / "a-v2-CANCEL-09.md"
    assert "[report ready to file](agent-notes/bugs/a-v2-CANCEL-09.md)" in text
    assert "## Why it is a bug" in report.read_text()
    assert (base / "badges" / "a.svg").is_file() and "![a: ACP conformance]" in text
    # the review withdrawn: its report goes too
    (notes / "reviewed.toml").write_text("")
    assert main(["matrix", "--rejudge", str(base), "--docs", str(page)]) == 1
    assert not report.exists()


def test_failures_a_reader_found_to_share_a_root_name_and_link_each_other(
        tmp_path: Path) -> None:
    """One root, several failures (codex-acp's withdrawn turn: v1 CANCEL-11, v1 CANCEL-09, v2
    SDK-PROMPT-03, the s10 reader's C5): each stays under its own rule, and its bug report
    and its section of the page name the others, linked, with the root in words."""
    from acp_model.matrix.bugs import ReviewError

    base = _matrix(tmp_path / "run", [_run(tmp_path / "run", "a",
                                           [(CANCEL_09, "CANCEL-09", False)]),
                                      _run(tmp_path / "run", "b",
                                           [(CANCEL_09, "CANCEL-09", False)])])
    notes = tmp_path / "docs" / "agent-notes"
    notes.mkdir(parents=True)
    entry = ('[[failure]]\nagent = "{}"\nversion = "1.0"\nprotocol = 2\nrule = "CANCEL-09"\n'
             'verdict = "true"\nwhy = "An update after the end."\nroot = "{}"\n')
    (notes / "reviewed.toml").write_text(
        entry.format("a", "late") + entry.format("b", "late")
        + '[roots]\nlate = """The turn runs on after\nits answer."""\n')
    page = tmp_path / "docs" / "agents.md"
    assert main(["matrix", "--rejudge", str(base), "--docs", str(page)]) == 1
    text = page.read_text()
    assert ("**Same root.** One root with [b 1.0 v2 CANCEL-09](#f-b-v2-cancel-09): The turn "
            "runs on after its answer. Each is filed under the rule it breaks") in text
    assert "One root with [a 1.0 v2 CANCEL-09](#f-a-v2-cancel-09)" in text
    report = (notes / "bugs" / "a-v2-CANCEL-09.md").read_text()
    assert ("## Same root\n\nOne root with [b 1.0 v2 CANCEL-09](b-v2-CANCEL-09.md): The turn "
            "runs on after its answer.") in report
    (notes / "reviewed.toml").write_text(entry.format("a", "lat") + '[roots]\nlate = "x"\n')
    with pytest.raises(ReviewError, match="root 'lat' is not in \\[roots\\] \\(late\\)"):
        load_reviews(notes / "reviewed.toml")


def test_the_modes_go_alone_and_bad_rows_are_usage_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "--merge", str(tmp_path)]) == 2
    assert "--merge needs --out DIR" in capsys.readouterr().err
    assert main(["matrix", "--rejudge", str(tmp_path), "--from", "x.json"]) == 2
    assert "do different things" in capsys.readouterr().err
    assert main(["matrix", "--row", "no-such-agent@v1", "--out", str(tmp_path)]) == 2
    assert "no agent profile" in capsys.readouterr().err
    assert main(["matrix", "--row", "codex-acp", "--out", str(tmp_path)]) == 2
    assert "expected NAME@v1" in capsys.readouterr().err
    assert main(["matrix", "--reading", "A-13=warn", "--out", str(tmp_path)]) == 2
    assert "--reading goes with --rejudge" in capsys.readouterr().err
    assert main(["report-bug", str(tmp_path)]) == 2
    assert "neither a matrix folder" in capsys.readouterr().err


def test_an_unavailable_profile_s_row_job_writes_its_row_without_running(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "--row", "auggie@v1", "--out", str(tmp_path)]) == 0
    row, _, _ = load_row(tmp_path)
    assert row["status"] == "unavailable" and row["reason_short"]
    shutil.rmtree(tmp_path / "badges", ignore_errors=True)
    assert [p.name for p in tmp_path.iterdir()] == ["row.json"]


def test_two_runs_of_one_agent_at_two_releases_show_its_history_on_the_pages(
        tmp_path: Path) -> None:
    """Merged twice, the second time with the first as --previous: the page and the agents
    page show both releases, newest first, and what changed."""
    first = tmp_path / "jobs1" / "a"
    row = _run(first, "a", [(CLEAN, "STOP-03", False)], version="1.0",
               created="2026-11-01T00:00:00Z")
    write_row(first, row, {"budget": 60.0, "spec": "auto", "created": row["created"]})
    assert main(["matrix", "--merge", str(first), "--out", str(tmp_path / "m1")]) == 1
    second = tmp_path / "jobs2" / "a"
    row = _run(second, "a", [(CANCEL_09, "CANCEL-09", False)], version="1.1",
               created="2026-12-01T00:00:00Z")
    write_row(second, row, {"budget": 60.0, "spec": "auto", "created": row["created"]})
    docs = tmp_path / "docs" / "agents.md"
    assert main(["matrix", "--merge", str(second), "--out", str(tmp_path / "m2"), "--previous",
                 str(tmp_path / "m1" / "matrix.json"), "--docs", str(docs)]) == 1
    html = (tmp_path / "m2" / "matrix.html").read_text()
    assert html.index("<td class='k'>1.1</td>") < html.index("<td class='k'>1.0</td>")
    assert "new failure CANCEL-09" in html and "fixed STOP-03" in html
    text = docs.read_text()
    assert "### Across releases" in text
    assert "| 1.1 | v2 | 2026-12-01 | fail: CANCEL-09 |" in text
    assert "| 1.0 | v2 | 2026-11-01 | fail: STOP-03 |" in text


def test_a_failure_the_runs_end_decided_stands_where_its_transcript_ends() -> None:
    """A v1 session/load answered without replaying the history (kimi-cli 1.51.0 in the s7
    matrix run): the run's end decided SESS-07, its kept transcript stops there, and the
    current code still holds the same finding open at the same message. Re-judging kept
    it as recorded; it used to withdraw it (only liveness findings were kept when open)."""
    from acp_model.matrix.rejudge import Case, verdicts_on
    from acp_model.spec.readings import DEFAULT

    transcript = Path(__file__).parents[1] / "data" / "rejudge" / "load_never_replayed.jsonl"
    recorded = {"rule": "SESS-07", "level": "fail", "kind": "safety", "index": 15,
                "check": "conversation_replayed", "message": "as the run said"}
    (v,) = verdicts_on(Case(recorded, {"transcript.jsonl": str(transcript)}),
                       DEFAULT.parse(["SPEC=v1"]), {})
    assert v["rule"] == "SESS-07" and v["level"] == "fail" and v["index"] == 15
    # a finding at another message is not carried by it
    assert verdicts_on(Case({**recorded, "index": 9}, {"transcript.jsonl": str(transcript)}),
                       DEFAULT.parse(["SPEC=v1"]), {}) == []


def test_the_matrix_states_its_per_failure_bounds_before_it_starts() -> None:
    """A user reading "15 runs of 120 s" must also read what each failure may add: the
    bounds follow the matrix's growth of the minimizing budget (MATRIX_GROWTH)."""
    import argparse

    from acp_model.cli.matrix import _time_words
    from acp_model.fuzzing.budget import MATRIX_GROWTH

    args = argparse.Namespace(budget=120.0, jobs=2, minimize_budget=None)
    words = _time_words(args, 15)
    assert words.startswith("about 16 min of fuzzing")  # 8 rounds of 120 s
    assert f"up to {MATRIX_GROWTH * 60:g} s and {MATRIX_GROWTH * 60:g} s each" in words
    args.minimize_budget = 10.0
    assert f"up to {MATRIX_GROWTH * 10:g} s" in _time_words(args, 1)
