"""Each client message says which part of the client wrote it (issue 49, cause F): a spare
session the factory made ahead of need is named as such, never as one of the program's
actions nor, when it was written after the program's last action, as the teardown's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from acp_model.fuzzing.actions import Action, NewSession, Prompt
from acp_model.fuzzing.artifacts import counterexample_text
from acp_model.fuzzing.authorship import in_program
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.recorder import Found
from acp_model.fuzzing.replay import replay_once
from acp_model.oracle.monitor import Violation
from acp_model.report.proof import proof_lines, spare_messages
from acp_model.trace.authors import Author, Part, author_of
from acp_model.trace.format import parse_record
from tests.helpers import kept_issue_body

RULE = "CANCEL-07"
PROGRAM: list[Action] = [NewSession(), Prompt(0, [{"type": "text", "text": "go"}])]
SID = {"sessionId": "s1"}
SPARE = {"part": "spare"}
TEARDOWN = 6  # the teardown began here; the spare's session/new #7 came after it
RECORDS: list[dict[str, Any]] = [
    {"dir": "c2a", "by": {"part": "handshake"},
     "msg": {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}},
    {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}},
    {"dir": "c2a", "by": SPARE,
     "msg": {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}},
    {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 1, "result": SID}},
    {"dir": "c2a", "by": {"part": "action", "n": 2},
     "msg": {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
             "params": {**SID, "prompt": [{"type": "text", "text": "go"}]}}},
    {"dir": "a2c", "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {
        **SID, "update": {"sessionUpdate": "agent_message_chunk",
                          "content": {"type": "text", "text": "hi"}}}}},
    {"dir": "c2a", "by": {"part": "teardown"},
     "msg": {"jsonrpc": "2.0", "method": "session/cancel", "params": SID}},
    {"dir": "c2a", "by": SPARE,
     "msg": {"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {}}},
    {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 3, "result": {"sessionId": "s2"}}},
    {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}},
]
VIOLATION = Violation(RULE, "fail", "MUST", 9, "response #9 (stopReason 'end_turn'): "
                      "session/cancel #6 was read (#8) while the prompt #4 was open",
                      evidence=[(2, "the session"), (4, "the prompt"), (6, "session/cancel"),
                                (7, "a request after the cancel"), (8, "its response")])
EVIDENCE = [{"index": i, "role": r} for i, r in VIOLATION.evidence]
SPARE_WORDS = "a spare session the client made ahead, not one of the program's actions"


def _found() -> Found:
    found = Found(RULE, VIOLATION, list(PROGRAM), RECORDS, 9, [list(PROGRAM)], 1.0, 1.0)
    found.replay_records, found.replay_offending, found.replay_teardown = RECORDS, 9, TEARDOWN
    return found


def test_a_record_keeps_its_author_and_an_old_one_has_none() -> None:
    record = parse_record(RECORDS[4])
    assert record.by == Author(Part.ACTION, 2) and author_of(record) == Author(Part.ACTION, 2)
    assert record.to_json()["by"] == {"part": "action", "n": 2}
    old = parse_record({k: v for k, v in RECORDS[4].items() if k != "by"})
    assert old.by is None and "by" not in old.to_json()
    assert parse_record({**RECORDS[4], "by": {"part": "someone new"}}).by is None


def test_the_proof_names_a_spare_not_the_teardown() -> None:
    lines = proof_lines(RECORDS, 9, EVIDENCE, TEARDOWN)
    spare = next(line for line in lines if "#7 " in line)
    assert spare.endswith(f"({SPARE_WORDS})") and "teardown" not in spare, spare
    assert next(line for line in lines if "#2 " in line).endswith(f"({SPARE_WORDS})")
    assert next(line for line in lines if "#4 " in line).endswith("(action 2 of the program)")
    assert "teardown's" in next(line for line in lines if "#6 " in line)


def test_the_counterexample_says_which_part_of_the_client_wrote_each_message() -> None:
    text = counterexample_text(_found(), FuzzConfig(["agent"]))
    assert (f"The proof cites session/new #2 (the client's first session/new) and session/new "
            f"#7 (the client's second session/new): {SPARE_WORDS}.") in text, text
    assert "The proof cites the teardown's session/cancel #6" in text
    assert "none of these actions: session/new #2 (used from action 2 on) and session/new #7 " \
           "(no action used it) (the client's session factory makes sessions" in text
    wire = {line.lstrip(" >").split()[0]: line for line in text.splitlines()
            if line.lstrip(" >").startswith("#")}
    assert wire["#7"].endswith("(spare session, made ahead)"), wire["#7"]
    assert wire["#2"].endswith("(spare session, made ahead)")
    assert wire["#4"].endswith("(action 2)") and wire["#0"].endswith("(handshake)")
    assert wire["#6"].endswith("(teardown)")


def test_the_issue_body_explains_the_spares(tmp_path: Path) -> None:
    body = kept_issue_body(tmp_path, PROGRAM, RECORDS,
                           {"rule": RULE, "message": VIOLATION.message,
                            "teardown_at": TEARDOWN, "index": 9, "evidence": EVIDENCE})
    assert (f"session/new #2 (the client's first session/new) and session/new #7 (the "
            f"client's second session/new): {SPARE_WORDS}") in body, body
    assert "Spare sessions in the transcript (session/new #2 (used from action 2 on) and " \
           "session/new #7 (no action used it))" in body
    assert f"<- a request after the cancel ({SPARE_WORDS})" in body


def test_the_spare_an_action_took_is_named_with_that_action() -> None:
    """Taking a spare writes nothing: the next record says which action took which session
    (``"taken"``), and the counterexample names it so, not "(no action used it)" (the s10
    reader's C3: gptme's one-action SESS-01, whose "new session s1" had no message of its own)."""
    records = [dict(r) for r in RECORDS]
    records[4] = {**records[4], "taken": [["s1", 1]]}
    found = _found()
    found.replay_records = records
    text = counterexample_text(found, FuzzConfig(["agent"]))
    assert "none of these actions: session/new #2 (taken by action 1) and session/new #7 " \
           "(no action used it)" in text, text
    assert parse_record(records[4]).taken == (("s1", 1),)
    assert parse_record(records[4]).to_json()["taken"] == [["s1", 1]]


def test_a_replay_records_which_action_took_each_spare() -> None:
    """The reference agent with two sessions made ahead: action 1 takes the first spare, and
    the transcript says so on the next record."""
    cfg = FuzzConfig([sys.executable, "-m", "acp_model.agents.reference"], sessions_ahead=2)
    out = replay_once(cfg, PROGRAM, None)
    assert out.teardown is not None, out.error
    made = next(r["msg"]["result"]["sessionId"] for r in out.records
                if r["dir"] == "a2c" and isinstance(r["msg"].get("result"), dict)
                and "sessionId" in r["msg"]["result"])
    assert [t for r in out.records for t in r.get("taken", [])] == [[made, 1]]
    assert "(taken by action 1)" in spare_messages(out.records, range(len(out.records)))


def test_a_replay_stamps_each_write_where_it_happens() -> None:
    """The reference agent with two sessions made ahead: the handshake, the spares, the
    program's prompt and the teardown each stamp their own writes (the drain always runs: no
    rule is awaited, so the turn's timing does not matter)."""
    cfg = FuzzConfig([sys.executable, "-m", "acp_model.agents.reference"], sessions_ahead=2)
    out = replay_once(cfg, PROGRAM, None)
    assert out.teardown is not None, out.error
    by: dict[str, list[tuple[int, Author | None]]] = {}
    for n, r in enumerate(out.records):
        if r["dir"] == "c2a":
            by.setdefault(r["msg"].get("method") or "answer", []).append((n, author_of(r)))
    assert by["initialize"] == [(0, Author(Part.HANDSHAKE))]
    assert {a for _, a in by["session/new"]} == {Author(Part.SPARE)}
    assert len(by["session/new"]) >= 2  # the one the program took, and the next made ahead
    assert [a for _, a in by["session/prompt"]] == [Author(Part.ACTION, 2)]
    after = [a for entries in by.values() for n, a in entries if n >= out.teardown]
    assert Author(Part.TEARDOWN) in after
    # (the answer a cancel makes the client owe may be the delivery thread's, given at once)
    assert set(after) <= {Author(Part.TEARDOWN), Author(Part.SPARE), Author(Part.REPLY)}, after


def test_a_shared_process_excerpt_numbers_actions_as_its_program_does() -> None:
    """Each example numbers its own actions from 1; a program that begins at an earlier
    example (a session it opened) counts on across the examples, and an action of an example
    before the program is named as an earlier example's, not as one of the program's."""
    starts, begun = [0, 3, 5], [2, 10, 20]  # where each example began: actions, records
    action = Author(Part.ACTION, 2)
    assert in_program(action, 12, 10, starts, begun) == Author(Part.ACTION, 2)
    assert in_program(Author(Part.ACTION, 1), 25, 10, starts, begun) == Author(Part.ACTION, 3)
    assert in_program(action, 5, 10, starts, begun) == Author(Part.EARLIER)
    assert in_program(Author(Part.SPARE), 5, 10, starts, begun) == Author(Part.SPARE)
    assert Author(Part.EARLIER).words() == "an earlier example's, on the shared agent process"
