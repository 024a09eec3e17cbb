"""`acp-model check` and `acp-model rules` on good and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from acp_model.cli.main import main
from tests.helpers import S, base, turn_start

SEED = Path(__file__).resolve().parents[2] / "examples" / "traces" / "seed-flow.jsonl"


def run(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "acp_model.cli", *args], capture_output=True,
                          text=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def test_seed_flow_passes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report_path = tmp_path / "r.json"
    assert main(["check", str(SEED), "--report", str(report_path)]) == 0
    report = json.loads(report_path.read_text())
    assert report["verdict"] == "pass"
    assert report["summary"]["messages"] == len(SEED.read_text().splitlines())
    statuses = {r["id"]: r["status"] for r in report["rules"]}
    assert statuses["STATE-03"] == "held"
    assert statuses["CANCEL-11"] == "held"
    assert statuses["STATE-04"] == "allowance"
    assert set(statuses.values()) <= {"held", "not exercised", "allowance", "not in revision"}
    assert report["spec"]["revision"] == "seed" and report["spec"]["requested"] == "auto"
    assert "verdict: PASS" in capsys.readouterr().out


def test_violation_exit_1_and_report_fields(tmp_path: Path) -> None:
    t = turn_start(base(), 10).cancel(S).sync().idle(S, "end_turn")
    trace = t.log.write(tmp_path / "t.jsonl")
    code, out, _ = run("check", str(trace), "--format", "json")
    assert code == 1
    report = json.loads(out)
    assert report["verdict"] == "fail"
    v = report["violations"][0]
    assert (v["rule"], v["strength"], v["level"]) == ("CANCEL-07", "MUST", "fail")
    assert isinstance(v["index"], int) and v["message"]
    assert {r["id"]: r["status"] for r in report["rules"]}["CANCEL-07"] == "violated"
    code, out, _ = run("check", str(trace))  # the terminal text, at a pipe's 80 columns
    lines = out.splitlines()
    head = lines.index(f"FAIL  CANCEL-07  at #{v['index']}, session s1")
    block = lines[head + 1:lines.index("", head)]  # the message, whole, indented
    assert " ".join(line.strip() for line in block) == v["message"]
    assert all(line.startswith("    ") for line in block)
    assert not any(line.endswith(" ") for line in lines), out
    # within 80 columns, but for a single word too long to break (the trace's path)
    assert all(len(line) <= 80 or " " not in line.strip() for line in lines), out


def test_reading_option_changes_the_verdict(tmp_path: Path) -> None:
    trace = turn_start(base(), 10).prompt(S, 11).accepted(11).user_message(S)
    path = trace.idle(S, "end_turn").log.write(tmp_path / "t.jsonl")
    assert run("check", str(path))[0] == 0
    code, _, _ = run("check", str(path), "--reading", "prompt-while-busy=forbid")
    assert code == 1


@pytest.mark.parametrize(("content", "needle"), [
    (None, "no such file"),
    ('{"dir": "c2a", "msg": {}}\nnot json\n', ":2: not valid JSON"),
    ('{"dir": "sideways", "msg": {}}\n', ":1: 'dir' must be"),
    ('[1, 2]\n', ":1: expected a JSON object"),
    ('{"dir": "a2c"}\n', "exactly one of 'msg' or 'raw'"),
    ('{"dir": "a2c", "t": "noon", "msg": {}}\n', "'t' must be a number"),
    ("", "holds no message"),
    ("\n\n", "holds no message"),
])
def test_bad_input_exit_2_without_traceback(tmp_path: Path, content: str | None,
                                            needle: str) -> None:
    path = tmp_path / "bad.jsonl"
    if content is not None:
        path.write_text(content)
    code, out, err = run("check", str(path))
    assert code == 2
    assert needle in err
    assert "Traceback" not in err + out


def test_bad_reading_and_directory_are_usage_errors(tmp_path: Path) -> None:
    code, _, err = run("check", str(SEED), "--reading", "A-01=maybe")
    assert code == 2 and "has no value 'maybe'" in err
    code, _, err = run("check", str(SEED), "--reading", "nonsense")
    assert code == 2 and "NAME=VALUE" in err
    code, _, err = run("check", str(tmp_path))
    assert code == 2 and "is a directory" in err


def test_rules_table_and_json() -> None:
    code, out, _ = run("rules", "--format", "json")
    assert code == 0
    data = json.loads(out)
    ids = {r["id"] for r in data["rules"]}
    assert {"CANCEL-07", "STATE-01", "PROMPT-04"} <= ids
    cancel = next(r for r in data["rules"] if r["id"] == "CANCEL-06")
    assert cancel["alt_strength"] == "SHOULD" and cancel["effective_strength"] == "MUST"
    assert "A-01" in data["readings"]
    code, out, _ = run("rules", "--reading", "strength-source=schema", "--format", "json")
    cancel = next(r for r in json.loads(out)["rules"] if r["id"] == "CANCEL-06")
    assert cancel["effective_strength"] == "SHOULD"
    code, out, _ = run("rules")  # one block per rule: whole at 80 columns (a pipe's width)
    assert code == 0 and all(len(line) <= 80 for line in out.splitlines())
    lines = out.splitlines()
    head = lines.index("CANCEL-07  MUST")
    block = lines[head + 1:lines.index("", head)]  # facts, statement, source: indented
    assert block and all(line.startswith("    ") for line in block)
    assert "binds the agent" in block[0] and "decided in cancel_rules" in " ".join(block)
    assert any(line.startswith("    Once the agent has provably read a cancel") for line in block)
    assert not any(line.endswith(" ") for line in lines)  # no padding to the width
    code, out, _ = run("rules", "--format", "table")
    assert code == 0 and "CANCEL-07" in out and "┃ id" in out


def test_engines_agree_on_the_seed_trace() -> None:
    from acp_model.oracle.offline import check_trace

    fast = check_trace(SEED)
    slow = check_trace(SEED, engine="statemachine")
    assert fast["violations"] == slow["violations"]
    assert fast["rules"] == slow["rules"]


def test_a_reader_that_goes_away_is_not_an_internal_error() -> None:
    """`acp-model rules --format json | head -c 10`: a broken pipe ends the command quietly
    with the status of a tool killed by SIGPIPE, not exit 3 and a message about an internal
    error. (The catalogue's JSON is larger than a pipe's buffer, so the write must fail.)"""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "acp_model", "rules", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.read(10)
    proc.stdout.close()  # the reader goes away before the document is written
    _, err = proc.communicate(timeout=60)
    assert b"internal error" not in err
    assert proc.returncode == 141
