"""Stored transcripts of a shared agent process: an excerpt keeps the proof window and the
failing session's history, numbers every record as the whole transcript did, and marks every
gap; the readers (the checker, the sequence diagram, the HTML page) number as the proof does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_model.cli.main import main
from acp_model.fuzzing.excerpt import HANDSHAKE, WINDOW, excerpt
from acp_model.oracle.offline import check_records, check_trace
from acp_model.report.html import trace_page
from acp_model.trace.builder import TraceBuilder
from acp_model.trace.format import TraceError, numbered_lines, read_trace
from acp_model.trace.sequence import sequence_diagram
from tests.helpers import S, base, turn_start


def _shared_process() -> tuple[TraceBuilder, int]:
    """Two examples on one process: a quiet session first, then a turn on ``s1`` ended
    ``end_turn`` after a cancel the agent provably read (CANCEL-07). Returns the trace and
    where the second example begins."""
    t = base("s0")
    for n in range(3):
        turn_start(t, 10 + n, "s0").idle("s0", "end_turn")
    start = len(t.records)
    t.new_session(S)
    turn_start(t, 20)
    t.cancel(S).sync(99)
    t.rpc.error("a2c", 99, -32601, "method not found")
    t.idle(S, "end_turn")
    return t, start


def _excerpt(t: TraceBuilder, start: int, cited: list[int], session: str | None = S
             ) -> tuple[list[dict], list[int]]:
    records = [r.to_json() for r in t.records]
    keep = excerpt(records, start, cited, session)
    return [records[i] for i in keep], keep


def test_an_excerpt_is_checked_with_the_numbers_of_the_whole_transcript(tmp_path: Path) -> None:
    t, start = _shared_process()
    whole = check_records(t.records)
    (v,) = [x for x in whole["violations"] if x["rule"] == "CANCEL-07"]
    records, numbers = _excerpt(t, start, [])  # nothing cited before the example
    assert numbers[:HANDSHAKE] == [0, 1] and numbers[HANDSHAKE] == start
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in numbered_lines(records, numbers,
                                                                          "earlier examples")))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[2] == {"gap": [2, start - 1], "note": "earlier examples"}
    assert [o["n"] for o in lines if "n" in o] == numbers  # every record numbered
    assert f'"n": {v["index"]}' in path.read_text()  # the proof's #N is findable in the file
    part = check_trace(path)
    (w,) = [x for x in part["violations"] if x["rule"] == "CANCEL-07"]
    assert (w["index"], w["evidence"]) == (v["index"], v["evidence"])
    assert part["gaps"] == [{"first": 2, "last": start - 1}]
    assert part["summary"]["messages"] == len(numbers)


def test_the_proof_window_reaches_back_to_the_first_record_it_cites() -> None:
    """From the first cited record (#8, the end of s0's first turn) on, everything; before it
    only what the kept records refer to: s0's creation (#2, #3), not its first turn (#4-#7)."""
    t, start = _shared_process()
    _, numbers = _excerpt(t, start, [8, len(t.records) - 1], session=None)
    assert numbers == [0, 1, 2, 3, *range(8, len(t.records))]


def test_an_excerpt_keeps_what_its_records_refer_to() -> None:
    """A kept answer keeps its request, a named session its creation; another session's
    records stay out, and the excerpt checks clean as the whole transcript does."""
    t = base("s0")  # #2, #3: s0's creation
    t.new_session("s9")
    turn_start(t, 11, "s9").idle("s9", "end_turn")  # #4-#10: another session, left out
    prompt = len(t.records)
    t.prompt("s0", 10)  # #11: answered in the example's part
    start = len(t.records)
    t.accepted(10).user_message("s0").running("s0").idle("s0", "end_turn")
    records = [r.to_json() for r in t.records]
    keep = excerpt(records, start, [len(records) - 1], None)
    assert keep == [0, 1, 2, 3, prompt, *range(start, len(records))]
    assert check_records(t.records)["violations"] == []
    part = check_records([o for o in numbered_lines([records[i] for i in keep], keep)
                          if "gap" not in o])
    assert part["violations"] == [] and part["gaps"] == [{"first": 4, "last": prompt - 1}]


def test_a_long_window_keeps_the_cited_records_with_their_neighbours() -> None:
    records = [{"dir": "c2a", "msg": {"jsonrpc": "2.0", "method": "x"}}] * (WINDOW + 100)
    start = WINDOW + 50
    keep = excerpt(records, start, [20], None)
    assert keep[:9] == [0, 1, 17, 18, 19, 20, 21, 22, 23]
    assert keep[9] == start


@pytest.mark.parametrize(("lines", "error"), [
    ('{"dir":"c2a","msg":{},"n":5}\n{"dir":"c2a","msg":{},"n":3}\n', "must grow"),
    ('{"dir":"c2a","msg":{},"n":5}\n{"gap":[2,9]}\n', "must grow"),
    ('{"gap":[4,2]}\n', "'gap' must be"),
    ('{"dir":"c2a","msg":{},"n":-1}\n', "'n' must be"),
])
def test_numbers_that_do_not_grow_are_not_one_transcript(tmp_path: Path, lines: str,
                                                         error: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(lines)
    with pytest.raises(TraceError, match=error):
        read_trace(path)


def test_a_record_after_a_gap_without_a_number_takes_the_next_one(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"dir":"c2a","msg":{"jsonrpc":"2.0","id":0,"method":"initialize",'
                    '"params":{}}}\n{"gap":[1,40]}\n{"dir":"a2c","msg":{"jsonrpc":"2.0",'
                    '"id":0,"result":{}}}\n')
    assert [r.n for r in read_trace(path)] == [None, 41]  # the first by its position


def test_the_sequence_diagram_and_the_page_number_as_the_proof(tmp_path: Path) -> None:
    t, start = _shared_process()
    records, numbers = _excerpt(t, start, [])
    text = sequence_diagram(records, numbers=numbers)
    assert f"Note over Client,Agent: messages 2-{start - 1} left out" in text
    assert f": {numbers[-1]}: " in text
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in numbered_lines(records, numbers)))
    report = check_trace(path)
    page = trace_page(report, read_trace(path), "excerpt")
    assert f"#{numbers[-1]}</td>" in page and f"#{start}</td>" in page
    assert "#2</td>" not in page  # left out
    assert main(["check", str(path), "--html", str(tmp_path / "p.html")]) == 1


def test_sarif_points_at_the_offending_line_of_an_excerpt(tmp_path: Path) -> None:
    """The gap record takes a line: the location is the line whose record is numbered as the
    violation says."""
    t, start = _shared_process()
    records, numbers = _excerpt(t, start, [])
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in numbered_lines(records, numbers)))
    sarif = tmp_path / "t.sarif"
    assert main(["check", str(path), "--sarif", str(sarif)]) == 1
    report = check_trace(path)
    (n, v), = [(n, v) for n, v in enumerate(report["violations"]) if v["rule"] == "CANCEL-07"]
    result = json.loads(sarif.read_text())["runs"][0]["results"][n]
    line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
    assert json.loads(path.read_text().splitlines()[line - 1])["n"] == v["index"]
