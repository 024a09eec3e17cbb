"""What a maintainer reads in a report (issue 49, the s12 reader's O5, O7, O8): actions that
wrote nothing say so, the proof window keeps the turn that started after an error, and the
scripted model's name is explained where an agent's notice names it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_model.fuzzing.actions import AnswerPermission, Cancel, Interrupt, NewSession, Prompt
from acp_model.fuzzing.program import Program
from acp_model.fuzzing.schedule import Boundary, Crossing, Schedule
from acp_model.fuzzing.unsent import program_in_files, program_lines
from acp_model.report.proof import TURN_STARTS_ROLE, proof_lines

SID = "s-1"


def _update(n: int, kind: str, **more: Any) -> dict[str, Any]:
    return {"dir": "a2c", "n": n, "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": SID, "update": {"sessionUpdate": kind, **more}}}}


# codex-acp v2's SDK-PROMPT-03 (s12): the prompt withdrawn by $/cancel_request is answered
# -32800, then its turn starts anyway and its user message comes
WITHDRAWN = [
    {"dir": "c2a", "n": 0, "msg": {"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
                                   "params": {"sessionId": SID, "prompt": []}}},
    {"dir": "c2a", "n": 1, "msg": {"jsonrpc": "2.0", "method": "$/cancel_request",
                                   "params": {"requestId": 7}}},
    {"dir": "a2c", "n": 2, "msg": {"jsonrpc": "2.0", "id": 7,
                                   "error": {"code": -32800, "message": "cancelled"}}},
    _update(3, "notice", severity="warning", title="a notice"),
    _update(4, "usage_update"),
    _update(5, "state_update", state="running"),
    _update(6, "usage_update"),
    _update(7, "session_info_update"),
    _update(8, "available_commands_update"),
    _update(9, "user_message_chunk", content={"type": "text", "text": "[acpm:c3]"}),
]
EVIDENCE = [{"index": 0, "role": "the prompt"}, {"index": 2, "role": "its error response"},
            {"index": 9, "role": "the user message"}]


def test_the_proof_keeps_the_turn_that_starts_after_the_error() -> None:
    """O7: the window folded the `running` between the -32800 and the user message (more than
    a bridge of records apart), the very line that shows the refused prompt's turn ran."""
    lines = proof_lines(WITHDRAWN, 9, EVIDENCE)
    (running,) = [line for line in lines if "state_update running" in line]
    assert running.endswith(f"<- {TURN_STARTS_ROLE}")
    assert "#5" in running


def test_no_turn_start_is_named_without_an_error_before_it() -> None:
    evidence = [e for e in EVIDENCE if e["index"] != 2]
    assert not any(TURN_STARTS_ROLE in line
                   for line in proof_lines(WITHDRAWN[:2] + WITHDRAWN[3:], 9, evidence))


# --- O5: actions that wrote nothing ------------------------------------------------------

KEPT = Path(__file__).resolve().parents[1] / "data" / "s12-run"  # the s12 run's files


def _client(n: int, method: str, action: int | None, rid: int | None = None,
            **params: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if rid is not None:
        msg["id"] = rid
    by = {"part": "action", "n": action} if action is not None else {"part": "teardown"}
    return {"dir": "c2a", "n": n, "msg": msg, "by": by}


def _answer(n: int, rid: int) -> dict[str, Any]:
    return {"dir": "a2c", "n": n, "msg": {"jsonrpc": "2.0", "id": rid, "result": {}}}


PROGRAM = [NewSession(), Prompt(0, blocks=[{"type": "text", "text": "hi"}]),
           Prompt(0, blocks=[{"type": "text", "text": "again"}]),
           Interrupt(0, prompt=Prompt(blocks=[{"type": "text", "text": "instead"}])),
           AnswerPermission(0), Cancel(0)]
WIRE = [_client(0, "session/new", 1, 1, cwd="/", mcpServers=[]),
        {"dir": "a2c", "n": 1, "msg": {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": SID}}},
        _client(2, "session/prompt", 2, 2, sessionId=SID, prompt=[]),
        _client(3, "session/cancel", 4, sessionId=SID),
        _client(4, "session/cancel", 6, sessionId=SID),
        _answer(5, 2),
        _client(6, "_acp_model/sync", None, 9)]


def _looks(waits: dict[int, float]) -> Schedule:
    return Schedule(tuple(Crossing(Boundary.LOOK, ("look",), action=a, by_action=True,
                                   waited=w) for a, w in waits.items()), len(PROGRAM))


def test_a_line_says_what_its_action_did_not_send() -> None:
    lines = program_lines(PROGRAM, WIRE, list(range(len(WIRE))), _looks({4: 1.24}),
                          {"A-01": "forbid"})
    assert lines[0] == "new session s1" and lines[1] == "prompt s1: hi"
    assert lines[2] == "prompt s1: again (not sent: prompt #2 on s1 was still open, A-01=forbid)"
    assert lines[3].endswith("(only the cancel was sent: prompt #2 on s1 was still open, "
                             "A-01=forbid)")
    assert lines[4] == "answer permission s1: allow (no permission request came: it only " \
                       "waited 1.2 s)"
    assert lines[5] == "cancel s1"


def test_nothing_is_said_where_the_run_did_not_record_it() -> None:
    numbers = list(range(len(WIRE)))
    unstamped = [{k: v for k, v in r.items() if k != "by"} for r in WIRE]
    plain = Program.of(PROGRAM).describe()
    assert program_lines(PROGRAM, unstamped, numbers) == plain
    assert program_lines(PROGRAM, WIRE, [n + 10 for n in numbers]) == plain  # an excerpt
    assert program_lines(PROGRAM[:3], WIRE, numbers) == Program.of(PROGRAM[:3]).describe()
    # no schedule: the answer that found nothing says so without a time
    assert program_lines(PROGRAM, WIRE, numbers)[4].endswith(
        "(no permission request was open: nothing sent)")


LINK = {"type": "resource_link", "uri": "file:///w/README.md", "name": "README.md"}


def test_a_line_says_the_text_block_the_client_added_for_the_turn_s_tag() -> None:
    """The s12 reader's nit: opencode's "prompt s1: resource_link" was a wire prompt of
    (text, resource_link), the text the scripted turn's tag the client puts first when the
    prompt has no text of its own; a prompt with text carries the tag in it, no block more."""
    program = [NewSession(), Prompt(0, blocks=[LINK]), Prompt(0, blocks=[{"type": "text",
                                                                           "text": "hi"}]),
               Interrupt(0, prompt=Prompt(blocks=[LINK]))]
    tag = {"type": "text", "text": "[acpm:50]"}
    wire = [_client(0, "session/new", 1, 1, cwd="/", mcpServers=[]),
            {"dir": "a2c", "n": 1, "msg": {"jsonrpc": "2.0", "id": 1,
                                           "result": {"sessionId": SID}}},
            _client(2, "session/prompt", 2, 2, sessionId=SID, prompt=[tag, LINK]),
            _client(3, "session/prompt", 3, 3, sessionId=SID,
                    prompt=[{"type": "text", "text": "hi [acpm:51]"}]),
            _client(4, "session/cancel", 4, sessionId=SID),
            _client(5, "session/prompt", 4, 4, sessionId=SID, prompt=[tag, LINK]),
            _client(6, "_acp_model/sync", None, 9)]
    lines = program_lines(program, wire, list(range(len(wire))))
    assert lines[1] == "prompt s1: [acpm:50] (the turn's tag), resource_link"
    assert lines[2] == "prompt s1: hi"
    assert lines[3] == ("interrupt s1: cancel and, in the same write, prompt: [acpm:50] (the "
                        "turn's tag), resource_link")
    assert Program.of(program).describe()[1] == "prompt s1: resource_link"  # no run: no tag


def test_the_kept_run_s_programs_say_what_was_not_sent() -> None:
    """What re-judging an old run shows (the s12 matrix, tests/data/s12-run): mistral-vibe's
    answer to a permission request that never came, kilo's prompts held back."""
    mistral = program_in_files(KEPT / "mistral-vibe-v1" / "CANCEL-07" / "replay.json",
                               KEPT / "mistral-vibe-v1" / "CANCEL-07" / "transcript.jsonl")
    assert mistral is not None
    assert mistral[3] == ("answer permission s1: allow (no permission request came: it only "
                          "waited 2.9 s)")
    kilo = program_in_files(KEPT / "kilo-v1" / "PROMPT-04" / "replay.json",
                            KEPT / "kilo-v1" / "PROMPT-04" / "transcript.jsonl")
    assert kilo is not None
    assert kilo[3].endswith("(only the cancel was sent: prompt #6 on s1 was still open, "
                            "A-01=forbid)")
    assert sum("not sent" in line for line in kilo) == 5


# --- O8: the scripted model's name -----------------------------------------------------------

def _notice_body(tmp_path: Path, agent: str, title: str) -> str:
    import json

    from acp_model.matrix.bugs import issue_body

    records = [*WITHDRAWN[:3], _update(3, "notice", severity="warning", title=title),
               _update(4, "config_option_update", configOptions=[{"currentValue": "gpt-5"}]),
               *WITHDRAWN[5:]]
    (tmp_path / "transcript.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return issue_body({"agent": agent, "protocol": 2, "status": "ran",
                       "model_api": "openai-responses"},
                      {"rule": "SDK-PROMPT-03", "transcript": "transcript.jsonl", "index": 9,
                       "evidence": EVIDENCE, "message": "m"}, tmp_path)


def test_an_agent_s_notice_of_the_scripted_model_s_name_is_explained(tmp_path: Path) -> None:
    """O8: codex-acp's "Model metadata for `gpt-5` not found" (s12) is about the name its
    profile has the agent ask our scripted model for; the issue says so, with the line."""
    from acp_model.profiles import PROFILES

    assert PROFILES["codex-acp"].model_name == "gpt-5"
    body = _notice_body(tmp_path, "codex-acp", "Model metadata for `gpt-5` not found.")
    para = next(line for line in body.splitlines() if line.startswith("**The model's name:**"))
    assert "message #3 names `gpt-5`" in para and "scripted model" in para  # not #4's listing
    for other, title in (("codex-acp", "Model metadata for `gpt-5.5` not found."),
                         ("opencode", "Model metadata for `gpt-5` not found.")):
        assert "**The model's name:**" not in _notice_body(tmp_path, other, title)


def test_a_profile_s_model_name_is_what_its_files_and_environment_say(tmp_path: Path) -> None:
    from acp_model.profiles import PROFILES

    codex = PROFILES["codex-acp"]
    codex.prepare(str(tmp_path), "http://127.0.0.1:1")
    assert 'model = "gpt-5"' in (tmp_path / "codex" / "config.toml").read_text()
    copilot = PROFILES["copilot"]
    assert copilot.environment(str(tmp_path), "u")["COPILOT_MODEL"] == copilot.model_name


# --- read-back: wording made where it is made, the teardown named in one place -------------

def test_the_rate_is_worded_after_the_program_where_it_is_made() -> None:
    """`_verb` patched reproduction_text's words after the fact ("the program had no
    conclusive replay"); the sentence is now made with its verb."""
    from acp_model.report.matrix import not_filed, reproduction_text

    unsure = {"reproduction": None, "free_reproduction": None, "inconclusive": 2}
    assert reproduction_text(unsure, predicate=True).startswith("had no conclusive replay")
    assert reproduction_text(unsure).startswith("no conclusive replay")
    assert reproduction_text({}, predicate=True) == "was not replayed in a fresh agent process"
    assert reproduction_text({"reproduction": "2/6", "free_reproduction": "0/6"},
                             predicate=True).startswith("reproduced 2/6")
    why = not_filed({"minimize": {"fixpoint": False, "stage": "chunks", "trials": 3},
                     "steps": 9, **unsure})
    assert why is not None and "and the program had no conclusive replay" in why


def test_a_crossing_s_place_is_named_in_one_place() -> None:
    """Crossing.describe (a divergence) and the held order (fuzzing/held.py) both name the
    teardown and the actions from Crossing.place."""
    from acp_model.fuzzing.held import _words

    teardown = Crossing(Boundary.WRITE, ("notify", "session/cancel"), action=2, by_action=True)
    assert teardown.place(2) == "the teardown" and teardown.place() == "action 3"
    assert Crossing(Boundary.LOOK, ("look",)).place(2) is None
    assert teardown.describe(2) == "write notify session/cancel (the teardown)"
    schedule = Schedule((
        Crossing(Boundary.WRITE, ("request", "session/prompt"), action=1, by_action=True),
        teardown), 2)
    assert _words(schedule, 0, {0: 5}) == "the client's session/prompt #5 (action 2)"
    assert _words(schedule, 1, {1: 9}) == "the client's session/cancel #9 (the teardown)"


# --- inconclusive replays re-judged ----------------------------------------------------------

def _prompt(n: int, rid: int, action: int) -> dict[str, Any]:
    return _client(n, "session/prompt", action, rid, sessionId=SID, prompt=[])


def test_each_inconclusive_reason_is_recorded_and_counted_again() -> None:
    """A run records every inconclusive replay's reason, with whether its error followed the
    client's cancel: re-judging counts again exactly what the current code calls a miss."""
    from acp_model.fuzzing.inconclusive import Unsure, UnsureKind, reasons_json, recounted

    cancelled = Unsure(UnsureKind.ERROR, -32800, method="session/prompt", n=1,
                       after_cancel=True)
    failed = Unsure(UnsureKind.ERROR, -32603, method="session/load", n=1, after_cancel=True)
    assert cancelled.miss and not failed.miss
    reasons = reasons_json([failed], [cancelled, cancelled])
    assert reasons[1] == {"held": False, "count": 2, "kind": "error", "code": -32800,
                          "method": "session/prompt", "n": 1, "after_cancel": True}
    ce = {"reproduced": 1, "replays": 5, "inconclusive": 1, "free_reproduced": 0,
          "free_replays": 4, "free_inconclusive": 2, "inconclusive_reasons": reasons,
          "inconclusive_why": cancelled.words()}
    again = recounted(ce, [])
    assert (again["free_replays"], again["free_inconclusive"]) == (6, 0)
    assert (again["replays"], again["inconclusive"]) == (5, 1)
    assert again["inconclusive_why"] == failed.words()


def test_an_old_run_s_first_reason_is_a_miss_only_where_its_transcript_tells() -> None:
    """s12: only the first reason was recorded, in words, by a code that counted a -32800
    after the client's cancel inconclusive (codex-acp v2 CANCEL-07: "0/0 free-running, 12
    more inconclusive"). Re-judging counts it a miss where the transcript shows the cancel
    before that request; says it cannot tell where the cancel came after; and changes
    nothing where the client cancelled nothing, or the run's code already decided."""
    from acp_model.fuzzing.inconclusive import UNTOLD, recounted

    old = {"reproduced": 4, "replays": 6, "inconclusive": 0, "free_reproduced": 0,
           "free_replays": 0, "free_inconclusive": 1,
           "inconclusive_why": "the agent answered session/prompt #2 with error -32800 where "
                               "the recording had a result"}
    cancel_first = [_prompt(0, 1, 1), _client(1, "session/cancel", 2, sessionId=SID),
                    _prompt(2, 2, 3), _answer(3, 2)]
    again = recounted(old, cancel_first, 3)
    assert (again["free_replays"], again["free_inconclusive"], again["inconclusive_why"]) \
        == (1, 0, None)
    cancel_after = [_prompt(0, 1, 1), _prompt(1, 2, 2),
                    _client(2, "session/cancel", 3, sessionId=SID), _answer(3, 2)]
    again = recounted({**old, "free_inconclusive": 12}, cancel_after, 3)
    assert again["free_inconclusive"] == 12 and again["inconclusive_why"].endswith(UNTOLD)
    assert recounted(old, [_prompt(0, 1, 1), _prompt(1, 2, 2), _answer(2, 2)], 2) == old
    placed = {**old, "inconclusive_why": "the agent answered the client's second "
                                         "session/prompt with error -32800 where the "
                                         "recording had a result"}
    assert recounted(placed, cancel_first, 3) == placed


def test_the_kept_run_says_what_it_cannot_tell() -> None:
    import json

    from acp_model.fuzzing.inconclusive import UNTOLD, recounted
    from acp_model.matrix.rejudge import _records, as_recorded

    row = KEPT / "codex-acp-v2"
    report = as_recorded(json.loads((row / "report.json").read_text()))
    (ce,) = [c for c in report["counterexamples"] if c["rule"] == "CANCEL-07"]
    again = recounted(ce, _records({"transcript.jsonl": str(row / "CANCEL-07" /
                                                            "transcript.jsonl")}), 65)
    assert again["free_inconclusive"] == 12 and again["inconclusive_why"].endswith(UNTOLD)


def test_no_free_running_rate_reads_0_of_0() -> None:
    """counterexample.txt said "0/0 free-running (12 more inconclusive ...)" where the page
    said "no conclusive replay": issue 49 asks for no "0/0" anywhere."""
    from acp_model.report.text import reproduction_phrase

    said = reproduction_phrase(4, 6, 0, 0, free_unsure=12, why="w")
    assert "0/0" not in said and said.endswith("no conclusive free-running replay "
                                               "(12 more inconclusive: w)")
