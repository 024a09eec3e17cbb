"""Verdicts a hand read of the real-agent matrix (issue 38) found false or filed under the wrong
rule, each replayed as a trace: what the agent did right is not a failure any more, and where
it really breaks the rule the failure stands, once, under that rule."""

from __future__ import annotations

from typing import Any

from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, base, check

V1 = DEFAULT.parse(["SPEC=v1"])


def _fails(report: dict[str, Any]) -> list[str]:
    return [v["rule"] for v in report["violations"] if v["level"] == "fail"]


def _v1_withdrawn_prompt() -> TraceBuilder:
    """zed-codex-acp's run: an interrupt (cancel, then a prompt), $/cancel_request for that
    prompt, another cancel and a sync."""
    t = TraceBuilder()
    t.v1.handshake().v1.new_session(S)
    t.cancel(S).prompt(S, 5).cancel_request("c2a", 5).cancel(S)
    return t


def _null_error(t: TraceBuilder, data: Any = None) -> TraceBuilder:
    error: dict[str, Any] = {"code": -32601, "message": "Method not found"}
    if data is not None:
        error["data"] = data
    return t.rpc.a2c({"jsonrpc": "2.0", "id": None, "error": error})


def test_an_id_null_error_naming_cancel_request_is_one_rpc09_not_a_cancel02() -> None:
    """codex-acp answers the $/cancel_request notification it does not know with -32601 and
    id null, its error data naming the method: an answered notification (RPC-09), once; the
    session/cancel sent after it was not answered (CANCEL-02 blamed the last notification)."""
    t = _null_error(_v1_withdrawn_prompt(), "$/cancel_request").v1.ended(5, "cancelled").sync()
    report = check(t, V1)
    assert _fails(report) == ["RPC-09"], report["violations"]
    (v,) = report["violations"]
    assert "$/cancel_request" in v["message"]


def test_an_id_null_error_that_may_answer_either_notification_is_rpc09() -> None:
    """Without data it may answer the cancel or the $/cancel_request: not provably a cancel's
    answer, but provably an answered notification."""
    t = _null_error(_v1_withdrawn_prompt()).v1.ended(5, "cancelled").sync()
    assert _fails(check(t, V1)) == ["RPC-09"]


def test_an_agent_that_answers_session_cancel_still_fails_cancel02_once() -> None:
    """Only cancels were sent (or the error names session/cancel): CANCEL-02, not RPC-09 too."""
    t = TraceBuilder().v1.handshake().v1.new_session(S)
    t.prompt(S, 5).cancel(S)
    _null_error(t).v1.ended(5, "cancelled").sync()
    assert _fails(check(t, V1)) == ["CANCEL-02"]
    named = _null_error(_v1_withdrawn_prompt(), {"method": "session/cancel"})
    assert _fails(check(named.v1.ended(5, "cancelled").sync(), V1)) == ["CANCEL-02"]


SDK = DEFAULT.parse(["SPEC=sdk-2.4.0", "A-13=fail"])


def _closed_with_late_tool(*, close: bool) -> TraceBuilder:
    """A tool of the turn the client closes (or only cancels): the cancelled idle, the close
    response, then an update of that tool."""
    t = base().prompt(S, 10).accepted(10, {"messageId": "u1"}).user_message(S, "u1").running(S)
    t.tool(S, "t1", "in_progress", title="Run", kind="execute")
    if close:
        t.rpc.request("c2a", "session/close", {"sessionId": S}, 50)
    else:
        t.cancel(S)
    t.idle(S, "cancelled")
    if close:
        t.rpc.result("a2c", 50, {})
    return t.tool(S, "t1", "completed")


def test_a_tool_update_after_the_close_response_is_sdk_close_03_only() -> None:
    """The update names a session the agent was told is gone: SDK-CLOSE-03, the close's own
    rule, is the one it breaks; that it also comes after the cancelled idle (CANCEL-09 under
    A-13) is the same message, not a second failure."""
    assert _fails(check(_closed_with_late_tool(close=True), SDK)) == ["SDK-CLOSE-03"]


def test_the_same_update_after_a_plain_cancel_still_fails_cancel09() -> None:
    assert _fails(check(_closed_with_late_tool(close=False), SDK)) == ["CANCEL-09"]


NO_SUCH = "acp-model-no-such-session"


def _probe_on_an_invented_session(answer: str) -> TraceBuilder:
    """gptme's run: the fuzzer's probe prompts a session id it invented; the agent takes it
    for a session (an update naming it, a result) or rejects it (an error)."""
    from acp_model.trace.format import Record

    t = TraceBuilder().v1.handshake().v1.new_session(S)
    t.records.append(Record("c2a", msg={"jsonrpc": "2.0", "id": 900, "method": "session/prompt",
                                        "params": {"sessionId": NO_SUCH, "prompt": [
                                            {"type": "text", "text": "hi"}]}}, probe=True))
    if answer == "error":
        return t.rpc.error("a2c", 900, -32602, "no such session")
    t.update(NO_SUCH, {"sessionUpdate": "available_commands_update", "availableCommands": []})
    t.v1.ended(900, "end_turn")
    return t.update(NO_SUCH, {"sessionUpdate": "available_commands_update",
                              "availableCommands": []})


def test_updates_for_a_session_the_agent_took_from_the_client_are_not_sess12() -> None:
    """No text makes an agent answer an unknown session with an error (session-setup.mdx:
    "MAY return an error"); one that takes the client's id for a session may report on it,
    during the request and after its result."""
    assert _fails(check(_probe_on_an_invented_session("result"), V1)) == []
    assert _fails(check(_probe_on_an_invented_session("error"), V1)) == []


def test_an_update_for_a_session_nobody_named_still_fails_sess12() -> None:
    """An id the agent rejected (an error), once that request is answered, and an id nobody
    named: each update names a session that does not exist."""
    t = _probe_on_an_invented_session("error")
    t.update(NO_SUCH, {"sessionUpdate": "available_commands_update", "availableCommands": []})
    t.update("s-nobody-named", {"sessionUpdate": "available_commands_update",
                                "availableCommands": []})
    assert [(v["rule"], v["index"]) for v in check(t, V1)["violations"]
            if v["level"] == "fail"] == [("SESS-12", t.log.last - 1), ("SESS-12", t.log.last)]


def test_an_initialize_result_without_agent_capabilities_is_a_warning() -> None:
    """gptme omits agentCapabilities: the v1 schema does not require the field and defaults
    it, so the result states the default capabilities; INIT-03 warns, it does not fail."""
    t = TraceBuilder().rpc.request("c2a", "initialize", {
        "protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "c",
                                                                       "version": "1"}}, 0)
    t.rpc.result("a2c", 0, {"protocolVersion": 1, "authMethods": [],
                            "agentInfo": {"name": "a", "version": "1"}})
    report = check(t.v1.new_session(S).prompt(S, 10).v1.ended(10), V1)
    assert _fails(report) == []
    assert [v["rule"] for v in report["violations"] if v["level"] == "warn"] == ["INIT-03"]
    # under the schema's strengths INIT-03 is a MAY: the check's fixed warning only lowers a
    # rule's consequence, it never raises a MAY to a warning
    schema = DEFAULT.parse(["SPEC=v1", "STRENGTH=schema"])
    assert check(t, schema)["violations"] == []


def _load_v1(t: TraceBuilder, req_id: int) -> TraceBuilder:
    """The client reopens the session (v1 session/load), answered at once."""
    t.rpc.request("c2a", "session/load", {"sessionId": S, "cwd": "/tmp/project", "mcpServers": []},
                  req_id)
    return t.rpc.result("a2c", req_id, {})


def _with_load_v1(t: TraceBuilder) -> TraceBuilder:
    """An agent that advertises session/load (v1's loadSession)."""
    t.records[1].msg["result"]["agentCapabilities"]["loadSession"] = True
    return t


def test_history_a_load_streams_after_its_response_is_not_the_cancelled_turns_content(
        ) -> None:
    """gemini-cli's run: a turn ended `cancelled`, then the client loaded the session and the
    agent streamed its history after the load's response. That is V1-LOAD-01 (the history
    comes after the answer), not content of the cancelled turn (CANCEL-09): a failure, as
    the replayed user message carries the first prompt's text (review 2 found the warning
    too low), and its one failure (the agent chunk after it is part of the same replay)."""
    t = _with_load_v1(TraceBuilder().v1.handshake().v1.new_session(S))
    t.prompt(S, 5, "first").v1.chunk(S, "first answer").v1.ended(5)
    t.prompt(S, 6, "second").cancel(S).sync().v1.ended(6, "cancelled")
    _load_v1(t, 7).v1.chunk(S, "first", "user_message_chunk").v1.chunk(S, "first answer")
    report = check(t, V1)
    assert _fails(report) == ["V1-LOAD-01"], report["violations"]
    late = TraceBuilder().v1.handshake().v1.new_session(S)  # no load: the turn's late content
    late.prompt(S, 6, "second").cancel(S).sync().v1.ended(6, "cancelled").v1.chunk(S, "late")
    assert _fails(check(late, V1)) == ["CANCEL-09"]


def _gemini_replay(*chunks: str, tag: str = "why search [acpm:5]") -> dict[str, Any]:
    """gemini-cli's s7 run: two prompts carrying a text and a resource link, a load answered
    at once, then the history as user chunks (``chunks``) in gemini's rendering."""
    link = {"type": "resource_link", "uri": "file:///w/README.md", "name": "README.md"}
    t = _with_load_v1(TraceBuilder().v1.handshake().v1.new_session(S))
    t.prompt(S, 5, blocks=[{"type": "text", "text": "[acpm:3]"}, link]).v1.ended(5)
    t.prompt(S, 6, blocks=[{"type": "text", "text": tag}, link]).v1.ended(6)
    _load_v1(t, 7)
    for chunk in chunks:
        t.v1.chunk(S, chunk, "user_message_chunk")
    return check(t, V1)


def _load_01(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(v["level"], v["message"]) for v in report["violations"] if v["rule"] == "V1-LOAD-01"]


def test_a_replayed_prompt_rendered_with_its_mentions_is_proven_history() -> None:
    """gemini-cli v1 (s7, issue 49 item 4): the user message replayed after the load's answer
    is the prompt's text followed by its resource link as an ``@path`` mention, or split over
    chunks; it begins with an earlier prompt's whole text, so it is history: V1-LOAD-01's
    failure naming that prompt (it was a warning: only an exact text proved it)."""
    report = _gemini_replay("why search [acpm:5] @/w/README.md")
    assert _load_01(report) == [("fail", report["violations"][0]["message"])], report
    assert "begins with the text of the session's earlier prompt #" in _load_01(report)[0][1]
    assert "'why search [acpm:5]'" in _load_01(report)[0][1]
    expanded = _gemini_replay("[acpm:3] @/w/README.md\n--- Content from referenced context ---")
    assert [level for level, _ in _load_01(expanded)] == ["fail"], expanded
    split = _gemini_replay("why search [ac", "pm:5] @/w/README.md")
    assert "fail" in [level for level, _ in _load_01(split)], split


def test_a_replay_after_a_load_sent_while_the_turn_ran_is_charged_once() -> None:
    """gemini-cli v1 (s7): the load was sent while a turn ran, the turn ended before the
    load's answer, then the history came. The replay's agent chunk is the same replay as its
    proven user message: V1-LOAD-01's one failure, neither its probable warning nor the
    ended turn's late content (V1-TURN-01) as well."""
    t = _with_load_v1(TraceBuilder().v1.handshake().v1.new_session(S))
    t.prompt(S, 5, "[acpm:1]").v1.ended(5).prompt(S, 6, "[acpm:2]")
    t.rpc.request("c2a", "session/load", {"sessionId": S, "cwd": "/tmp/project",
                                          "mcpServers": []}, 7)
    t.v1.ended(6).rpc.result("a2c", 7, {})
    t.v1.chunk(S, "[acpm:1] @/w/a.py", "user_message_chunk").v1.chunk(S, "an answer")
    report = check(t, V1)
    assert [(v["rule"], v["level"]) for v in report["violations"]] == [
        ("V1-LOAD-01", "fail")], report["violations"]


def test_a_user_message_that_only_shares_a_prompt_s_words_stays_probable() -> None:
    """No proof, a warning: the message begins with a prompt's text cut inside a word, or
    with a text no prompt of the session had (history of an earlier connection)."""
    for text in ("why search [acpm:50] @/w/README.md", "why searching", "another question"):
        report = _gemini_replay(text)
        assert [level for level, _ in _load_01(report)] == ["warn"], (text, report)
        assert "probably history replayed" in _load_01(report)[0][1]


def test_a_cancel_after_a_load_of_the_working_session_binds_no_turn() -> None:
    """gemini-cli's run: the client loaded the session while a prompt's turn ran, then
    cancelled; the agent had swapped in a fresh session for the load, and the old turn ended
    `end_turn`. The text does not say which session a cancel after such a reopen addresses:
    no CANCEL-07 failure. Without the load, the same read cancel binds the turn."""
    t = _with_load_v1(TraceBuilder().v1.handshake().v1.new_session(S))
    t.prompt(S, 5).v1.chunk(S, "working")
    _load_v1(t, 7).cancel(S).sync().v1.chunk(S, "done").v1.ended(5)
    report = check(t, V1)
    assert "CANCEL-07" not in _fails(report), report["violations"]
    plain = TraceBuilder().v1.handshake().v1.new_session(S)
    plain.prompt(S, 5).v1.chunk(S, "working").cancel(S).sync().v1.chunk(S, "done").v1.ended(5)
    assert "CANCEL-07" in _fails(check(plain, V1))


def test_a_load_queued_behind_a_turn_answered_after_the_last_look_is_not_judged() -> None:
    """qwen-code's run: the client loaded a session whose prompt was still running; the agent
    took the load up only after that turn, which ended after the client's last look. The load
    had no deadline of its own (ACPM-ANSWER is not proven). Queued behind a turn that ended
    before the look, its silence is judged once a deadline has passed since that turn ended."""
    from acp_model.oracle.monitor import Monitor

    def judged(turn_ends_after_look: bool, deadline: float = 1.0) -> list[str]:
        t = _with_load_v1(TraceBuilder().v1.handshake().v1.new_session(S))
        t.prompt(S, 5).v1.chunk(S, "working")
        t.rpc.request("c2a", "session/load", {"sessionId": S, "cwd": "/tmp/project",
                                              "mcpServers": []}, 7)
        if not turn_ends_after_look:
            t.v1.ended(5)
        t.sync()
        look = len(t.records)
        if turn_ends_after_look:
            t.cancel(S).v1.ended(5, "cancelled")
        monitor = Monitor(V1)
        for record in t.records:
            monitor.feed(record)
        return sorted(v.rule for v in monitor.judge_open([S], 0, deadline, looked=look))

    assert judged(turn_ends_after_look=True) == []
    # the turn ended before the look, but less than a deadline before the judgement: the load
    # had no deadline of its own yet (qwen-code's rerun); a whole deadline later it had
    assert judged(turn_ends_after_look=False) == []
    assert judged(turn_ends_after_look=False, deadline=0.0) == ["ACPM-ANSWER"]


def test_v1_judges_a_tool_against_the_answer_it_read_not_before_one() -> None:
    """kilo's run: its shell tool went in_progress while the permission request guarding it
    was still open. v1 says only that once permission is granted the agent SHOULD run the
    tool: no PERM-11 failure. Going on after a reject it read still fails PERM-11."""
    def run(answer: bool) -> list[str]:
        t = TraceBuilder().v1.handshake().v1.new_session(S)
        t.prompt(S, 5).v1.tool_call(S, "t1", "bash").v1.permission(S, 50, "t1")
        if answer:
            t.answer(50, "reject").sync()
        t.update(S, {"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                     "status": "in_progress"})
        t.update(S, {"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                     "status": "completed"})
        if not answer:
            t.answer(50, "allow")
        return _fails(check(t.v1.ended(5), V1))

    assert run(answer=False) == []
    assert set(run(answer=True)) == {"PERM-11"}


def test_the_cancel_09_proof_names_the_cancels_in_flight_and_which_was_read() -> None:
    """codex-acp v1 (s7, cause E): a withdrawal ($/cancel_request) and a session/cancel in
    flight when the turn ended cancelled, then the turn's content. The proof names both and
    whether each was provably read before the end: v1 binds the order to session/cancel."""
    t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 6)
    t.rpc.notify("c2a", "$/cancel_request", {"requestId": 6})
    t.cancel(S).v1.ended(6, "cancelled").sync().v1.chunk(S, "late")
    (failure,) = [v for v in check(t, V1)["violations"] if v["rule"] == "CANCEL-09"]
    assert "the cancels that may have ended it: $/cancel_request #" in failure["message"], \
        failure
    assert "not provably read before it" in failure["message"]
    roles = [e["role"] for e in failure["evidence"]]
    assert roles[:2] == ["$/cancel_request, not provably read before it",
                         "session/cancel, not provably read before it"], roles
    read = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 6)
    read.cancel(S).sync()
    (failure,) = [v for v in check(read.v1.ended(6, "cancelled").v1.chunk(S, "late"),
                                   V1)["violations"] if v["rule"] == "CANCEL-09"]
    assert "session/cancel #" in failure["message"] and "(read before it: the agent " \
        "answered #" in failure["message"], failure
    assert "$/cancel_request" not in failure["message"]


def test_the_cancel_09_proof_names_every_cancel_that_binds_the_work() -> None:
    """Two session/cancels in flight when the turn ended cancelled, the first provably read
    before that end and the second not (s8, cause E'): the proof named only the first, so a
    maintainer could not see that a cancel still unread at the end also bound the work."""
    t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 6)
    t.cancel(S).sync().cancel(S).v1.ended(6, "cancelled").v1.chunk(S, "late")
    (failure,) = [v for v in check(t, V1)["violations"] if v["rule"] == "CANCEL-09"]
    cancels = [e for e in failure["evidence"] if e["role"].startswith("session/cancel")]
    assert len(cancels) == 2, failure
    first, second = sorted(cancels, key=lambda e: e["index"])
    assert first["role"] == "session/cancel, read before it", first
    assert second["role"] == "session/cancel, not provably read", second
    for e in cancels:
        assert f"session/cancel #{e['index']} (" in failure["message"], failure
