"""``--sarif``: a SARIF 2.1.0 log valid against the official schema, one result per violation,
each at its transcript line with its counterexample and its rule's documentation."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acp_model.cli.main import main
from acp_model.report.links import rule_url
from tests.helpers import S, base, turn_start

SCHEMA = json.loads((Path(__file__).parents[1] / "data" / "sarif-schema-2.1.0.json").read_text())
REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]


def valid(log: dict[str, Any]) -> None:
    errors = sorted(jsonschema.Draft4Validator(SCHEMA).iter_errors(log), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]


def test_the_schema_rejects_what_it_should() -> None:
    """The vendored schema is the real one: a log without ``version`` fails it."""
    with pytest.raises(AssertionError):
        valid({"runs": []})


def test_check_writes_a_result_at_the_trace_line(tmp_path: Path) -> None:
    t = turn_start(base(), 10).cancel(S).sync().idle(S, "end_turn")
    trace = t.log.write(tmp_path / "t.jsonl")
    # a blank line before the last record: lines and record numbers differ from here on
    lines = trace.read_text().splitlines()
    trace.write_text("\n".join([*lines[:-1], "", lines[-1]]) + "\n")
    sarif = tmp_path / "out.sarif"
    report = tmp_path / "r.json"
    assert main(["check", str(trace), "--sarif", str(sarif), "--report", str(report)]) == 1
    log = json.loads(sarif.read_text())
    valid(log)
    violations = json.loads(report.read_text())["violations"]
    results = log["runs"][0]["results"]
    assert len(results) == len(violations)
    first = results[0]
    assert first["ruleId"] == "CANCEL-07" and first["level"] == "error"
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules[first["ruleIndex"]]["id"] == "CANCEL-07"
    assert rules[first["ruleIndex"]]["helpUri"] == rule_url("CANCEL-07")
    where = first["locations"][0]["physicalLocation"]
    assert Path(where["artifactLocation"]["uri"]).name == "t.jsonl"
    line = trace.read_text().splitlines()[where["region"]["startLine"] - 1]
    assert json.loads(line) == json.loads(lines[violations[0]["index"]])  # the offending one
    assert where["region"]["startLine"] == len(lines) + 1  # past the blank line


@pytest.mark.slow
def test_fuzz_writes_each_failure_with_its_counterexample(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.chdir(tmp_path)  # locations relative to the working directory
    # until the mutant's failure is found (the budget: a loaded machine's cap)
    assert main(["fuzz", "--time-budget", "60", "--stop-on", "CANCEL-07", "--seed", "1",
                 "--replay-runs", "1", "--out", "out", "--sarif", "acp.sarif",
                 "--report", "r.json", "--",
                 *REFERENCE, "--mutant", "cancel_as_end_turn"]) == 1
    log = json.loads(Path("acp.sarif").read_text())
    valid(log)
    report = json.loads(Path("r.json").read_text())
    results = log["runs"][0]["results"]
    assert len(results) == len(report["violations"])
    failure = next(r for r in results if r["ruleId"] == "CANCEL-07" and r["level"] == "error")
    text = Path("out/CANCEL-07/counterexample.txt").read_text()
    assert failure["properties"]["counterexample"] == text
    assert text.strip() in failure["message"]["markdown"]
    where = failure["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == "out/CANCEL-07/transcript.jsonl"
    record = json.loads(Path(where["artifactLocation"]["uri"]).read_text()
                        .splitlines()[where["region"]["startLine"] - 1])
    assert "end_turn" in json.dumps(record)  # the cancelled turn's wrong stop reason
