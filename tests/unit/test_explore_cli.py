"""``acp-model explore`` and ``acp-model diagram`` from the command line."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from acp_model.cli.main import main
from acp_model.oracle.offline import check_records
from acp_model.trace.format import iter_trace

SMALL = ["--max-permissions", "0", "--no-custom", "--lean"]


def _json(capsys: pytest.CaptureFixture[str]) -> dict:
    return json.loads(capsys.readouterr().out)


def test_explore_text_and_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", *SMALL]) == 0
    out = capsys.readouterr().out
    assert "verdict: PASS" in out and "explored" in out and "Properties" in out


def test_explore_json_and_failing_property_exit_one(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    code = main(["explore", *SMALL, "--reading", "A-11=never", "--format", "json",
                 "--witness-dir", str(tmp_path)])
    doc = _json(capsys)
    assert code == 1 and doc["verdict"] == "fail"
    b = next(p for p in doc["properties"] if p["id"] == "b")
    assert not b["holds"] and b["violations"][0]["witness"]["events"]
    files = sorted(tmp_path.glob("*.jsonl"))
    assert files and doc["witness_files"]
    # the witness files are traces `acp-model check` reads; the default reading rejects them
    report = check_records(list(iter_trace(files[0])))
    assert report["verdict"] == "fail"
    assert main(["check", str(files[0])]) == 1


@pytest.fixture(scope="module")
def diff_a01() -> dict:
    """``explore --diff A-01=join,forbid --format json``, run once for the tests that read it."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["explore", *SMALL, "--diff", "A-01=join,forbid", "--format", "json"])
    assert code == 0
    (d,) = json.loads(out.getvalue())["diffs"]
    return d


def test_explore_diff_json(diff_a01: dict) -> None:
    d = diff_a01
    assert d["a"] == "A-01=join" and d["differences"]
    assert all(i["rules"] == ["A-01.forbid"] for i in d["differences"])


def test_explore_diff_text_breaks_witnesses_between_steps(capsys: pytest.CaptureFixture[str],
                                                          diff_a01: dict) -> None:
    d = diff_a01
    assert main(["explore", *SMALL, "--diff", "A-01=join,forbid"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) <= 80 and not line.endswith(" ") for line in lines), out
    shown = []  # each "shortest:" block: the steps on each of its lines
    for n, line in enumerate(lines):
        if line.startswith("    shortest: "):
            block = [line.strip().removeprefix("shortest: ")]
            for more in lines[n + 1:]:
                if not more.startswith("        "):
                    break
                block.append(more.strip())
            shown.append([[s for s in part.split(" →") if s.strip()] for part in block])
    # each witness whole and in order, every line holding whole steps (`s1 prompt`, never
    # `s1` at the end of one line and `prompt` at the start of the next)
    events = [item["witness"]["events"] for item in d["differences"]]
    assert [[s.strip() for part in block for s in part] for block in shown] == events
    assert all(s.strip() in evs for block, evs in zip(shown, events, strict=True)
               for part in block for s in part)
    assert any(len(block) > 1 for block in shown)  # some did wrap


def test_explore_each_reading_and_coverage(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    assert main(["explore", *SMALL, "--max-cancels", "0", "--each-reading",
                 "--format", "json"]) == 0
    rows = _json(capsys)["readings"]
    assert {r["reading"] for r in rows} >= {"A-01=join", "A-01=forbid", "STRENGTH=schema"}
    report = tmp_path / "r.json"
    assert main(["check", "examples/traces/seed-flow.jsonl", "--report", str(report),
                 "--format", "json"]) in (0, 1)
    capsys.readouterr()
    assert main(["explore", *SMALL, "--coverage", str(report), "--format", "json"]) == 0
    cov = _json(capsys)["coverage"]
    assert cov["exercised"] and cov["transitions"] == 85  # (10 of them elicitations)


@pytest.mark.parametrize("argv, needle", [
    (["explore", "--sessions", "4"], "sessions must be 1..3"),
    (["explore", "--diff", "A-01=join"], "exactly two values"),
    (["explore", "--diff", "A-01=join,forbid", "--each-reading"], "choose one of"),
    (["explore", "--reading", "A-01=maybe"], "has no value"),
    (["explore", "--coverage", "/nonexistent/r.json"], "no such file"),
    (["explore", "--max-states", "10"], "tighten the bounds"),
    (["diagram", "--format", "gif"], "unknown diagram format"),
])
def test_usage_errors_exit_two(argv: list[str], needle: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_diagram_writes_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagram", "--format", "dot,mermaid", "--out", str(tmp_path)]) == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert {"session-lifecycle.dot", "connection.mmd", "reachable.dot",
            "structure.json"} <= names
    assert not any(n.endswith(".png") for n in names)


def test_help_documents_modes_and_properties(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["explore", "--help"])
    out = capsys.readouterr().out
    for word in ("--diff", "--each-reading", "--contradictions", "--coverage", "properties:",
                 "exit codes", "--witness-dir"):
        assert word in out


def test_explore_max_elicitations(capsys: pytest.CaptureFixture[str]) -> None:
    """``--max-elicitations N`` lets the explorer try session-scoped elicitations and the
    client's answers; every state can still settle (the answer is the client's own
    obligation, as a permission answer is), and the bound is in the result."""
    code = main(["explore", *SMALL, "--max-elicitations", "1", "--spec", "sdk-2.4.0",
                 "--reasons", "end_turn,cancelled", "--format", "json"])
    doc = _json(capsys)
    assert code == 0 and doc["bounds"]["max_elicitations"] == 1, doc["verdict"]
    props = {p["id"]: p for p in doc["properties"]}
    assert props["a"]["holds"]
    legal = set(props["c"]["legal_transitions"])
    assert {"requires_action:elicitation_request", "requires_action:elicitation_answer"} <= legal
    main(["explore", *SMALL, "--format", "json"])
    assert "max_elicitations" not in _json(capsys)["bounds"]  # off unless asked for


def test_explore_max_elicitations_refuses_a_negative_bound(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["explore", "--max-elicitations", "-1"])
    assert exc.value.code == 2 and "--max-elicitations" in capsys.readouterr().err
