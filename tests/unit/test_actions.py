"""The client's action vocabulary: one typed, registered action per op, its JSON form (the
replay format), its description, and session labels numbered by the program."""

from __future__ import annotations

import sys

import pytest

from acp_model.fuzzing.actions import (
    ACTIONS,
    ActionError,
    AnswerPermission,
    Cancel,
    Finish,
    Mistake,
    NegativeInput,
    NewSession,
    Probe,
    Prompt,
    SloppyAnswer,
    Sync,
    Wait,
    from_json,
)
from acp_model.fuzzing.program import Program, standalone
from acp_model.model.vocab import Answer

TEXT = [{"type": "text", "text": "fix tests"}]


def test_every_op_round_trips_through_json() -> None:
    for op, cls in ACTIONS.items():
        action = cls()
        assert action.op == op
        assert from_json(action.to_json()) == action


def test_bad_actions_are_refused_when_read() -> None:
    with pytest.raises(ActionError, match="unknown action 'dance'"):
        from_json({"op": "dance"})
    with pytest.raises(ActionError, match="has no field colour"):
        from_json({"op": "cancel", "s": 0, "colour": "red"})
    with pytest.raises(ActionError, match="permission answer 'maybe'"):
        AnswerPermission(0, "maybe")
    with pytest.raises(ActionError, match="permission answer 'always'"):
        from_json({"op": "finish", "s": 0, "outcome": "always"})
    with pytest.raises(ActionError, match="wait mode"):
        Wait(0, "forever")
    with pytest.raises(ActionError, match="probe 'x'"):
        Probe(0, "x")


def test_a_one_session_program_labels_its_session_s1() -> None:
    """The generator's index 2 on a program with one session is that session."""
    program = [NewSession(), Prompt(2, TEXT), Cancel(2, sync=True)]
    assert Program.of(program).describe() == ["new session s1", "prompt s1: fix tests",
                                         "cancel s1 (then sync)"]


def test_sessions_are_numbered_in_order_of_creation() -> None:
    program = [Prompt(1, TEXT), NewSession(), NewSession(), Prompt(1, TEXT), Prompt(4, TEXT),
               Sync()]
    assert Program.of(program).labels() == [" (no session yet)", " s1", " s2", " s2", " s1", ""]


def test_a_shared_process_history_is_renumbered_for_a_fresh_one() -> None:
    history = [NewSession(created=13), Prompt(13, TEXT), NewSession(created=14), Cancel(14)]
    fresh = standalone(history)
    assert fresh == [NewSession(), Prompt(0, TEXT), NewSession(), Cancel(1)]
    assert all(a.created is None for a in fresh if isinstance(a, NewSession))
    assert "created" not in NewSession(created=3).to_json()


def test_a_session_taken_over_from_an_earlier_example_replays_as_that_session() -> None:
    """With ``reuse_sessions`` an example may take over a quiet session an earlier one left: a
    program holding both examples goes on with that session in a fresh process, as the run did;
    one that starts after the session was made can only make a new one."""
    history = [NewSession(created=13), Prompt(13, TEXT), NewSession(created=14),
               NewSession(created=15, reuses=13), Prompt(15, TEXT), Cancel(14)]
    assert standalone(history) == [NewSession(), Prompt(0, TEXT), NewSession(),
                                   Prompt(0, TEXT), Cancel(1)]
    assert standalone(history[3:]) == [NewSession(), Prompt(0, TEXT), Cancel(14)]
    assert "reuses" not in NewSession(created=15, reuses=13).to_json()


def test_an_interrupt_writes_the_cancel_and_the_prompt_together() -> None:
    """``interrupt``: session/cancel and the next session/prompt in one write, read by the
    agent in one chunk; the conforming agent runs the new prompt to its own end, and its
    nested prompt survives the replay format."""
    from acp_model.fuzzing.actions import Interrupt
    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.fuzzing.pool import AgentPool, Example
    from acp_model.fuzzing.recorder import Recorder
    REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]

    action = Interrupt(0, Prompt(0, TEXT))
    assert from_json(action.to_json()) == action
    nested = Interrupt(2, Prompt(2, TEXT, meta=True))  # as the machine builds it
    assert from_json(nested.to_json()) == nested
    with pytest.raises(ActionError, match="not a prompt"):
        from_json({"op": "interrupt", "s": 0, "prompt": {"op": "cancel"}})
    assert Program.of([NewSession(), action]).describe() == [
        "new session s1", "interrupt s1: cancel and, in the same write, prompt: fix tests"]
    recorder = Recorder()
    pool = AgentPool(FuzzConfig(REFERENCE, spec="seed"), recorder)
    try:
        client = pool.client()
        ex = Example(client, recorder, deadline=3.0)
        ex.act(NewSession())
        ex.act(action)
        ex.act(Finish(0))  # the new prompt's turn runs to its end (permissions allowed)
        records = client.proc.records()
        methods = [r["msg"].get("method") for r in records if r["dir"] == "c2a"]
        at = methods.index("session/cancel")
        assert methods[at + 1] == "session/prompt"
        idles = [r["msg"]["params"]["update"].get("stopReason") for r in records
                 if r["dir"] == "a2c" and r["msg"].get("method") == "session/update"
                 and r["msg"]["params"]["update"].get("state") == "idle"]
        assert idles and idles[-1] not in (None, "cancelled"), idles
        pool.end_example(ex)
        assert not client.monitor.failures
    finally:
        pool.retire()


def test_permission_answers_are_typed_and_replay_files_spell_them_as_before() -> None:
    answer = from_json({"op": "answer", "s": 0, "outcome": "cancelled"})
    assert answer == AnswerPermission(0, Answer.CANCELLED)
    assert type(answer.outcome) is Answer and answer.to_json()["outcome"] == "cancelled"
    assert type(Finish(0, "reject").outcome) is Answer


def test_every_negative_input_writes_what_it_names() -> None:
    """A probe of each input against the reference agent: the table holds one writer per
    input, each writes its input marked as a probe (or a legal batch), and the agent lives."""
    from acp_model.fuzzing.actions import PROBES
    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.fuzzing.pool import AgentPool, Example
    from acp_model.fuzzing.recorder import Recorder

    assert set(PROBES) == set(NegativeInput)
    recorder = Recorder()
    pool = AgentPool(FuzzConfig([sys.executable, "-m", "acp_model.agents.reference"],
                                spec="seed"), recorder)
    try:
        client = pool.client()
        ex = Example(client, recorder, deadline=3.0)
        ex.act(NewSession())
        written = {}
        for kind in NegativeInput:
            start = len(client.proc.records())
            ex.act(Probe(0, kind))
            written[kind] = [r for r in client.proc.records()[start:] if r["dir"] == "c2a"]
        assert client.alive
        pool.end_example(ex)
        assert not client.monitor.failures
    finally:
        pool.retire()
    first = {kind: records[0] for kind, records in written.items()}
    assert first[NegativeInput.UNKNOWN_METHOD]["msg"]["method"] == "_acp_model/unknown"
    assert first[NegativeInput.UNKNOWN_SESSION]["msg"]["params"]["sessionId"] \
        == "acp-model-no-such-session"
    assert "prompt" not in first[NegativeInput.INVALID_PARAMS]["msg"]["params"]
    assert first[NegativeInput.GARBAGE].get("raw", "").startswith('{"jsonrpc"')
    assert isinstance(first[NegativeInput.NOTIFICATION_BATCH]["msg"], list)
    assert [m.get("method") for m in first[NegativeInput.REQUEST_BATCH]["msg"]] \
        == ["_acp_model/sync", "_acp_model/note"]


def test_replay_files_from_before_the_typed_inputs_still_load() -> None:
    """Replays written when probes and sloppy answers named their input ``kind``."""
    assert from_json({"op": "probe", "s": 1, "kind": "garbage"}) == Probe(1, NegativeInput.GARBAGE)
    assert from_json({"op": "sloppy_answer", "kind": "withdrawn"}) \
        == SloppyAnswer(0, Mistake.WITHDRAWN)
    with pytest.raises(ActionError, match="sloppy answer 'twice'"):
        from_json({"op": "sloppy_answer", "mistake": "twice"})


def test_a_load_reads_back_from_its_replay_form_and_says_what_it_asks() -> None:
    from acp_model.fuzzing.actions import LoadSession

    action = LoadSession(1, replay=False)
    assert action.to_json() == {"op": "load_session", "s": 1, "replay": False}
    assert from_json(action.to_json()) == action
    assert Program.of([NewSession(), NewSession(), LoadSession(1), action]).describe() == [
        "new session s1", "new session s2", "load session s2, replaying its history",
        "load session s2 without asking for its history (session/resume; session/load where "
        "there is none)"]


def test_the_requests_that_reopen_a_session_are_those_the_agent_advertised() -> None:
    from acp_model.model.messages import reload_methods

    v1 = {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}
    assert reload_methods(v1, "v1") == {"session/load"}
    v1["agentCapabilities"] = {"loadSession": False, "sessionCapabilities": {"resume": {}}}
    assert reload_methods(v1, "v1") == {"session/resume"}
    assert reload_methods({"agentCapabilities": {}}, "v1") == frozenset()
    assert reload_methods({"capabilities": {"session": {}}}, "seed") == {"session/resume"}
    assert reload_methods({"capabilities": {}}, "seed") == frozenset()


def test_a_relaunch_reads_back_from_its_replay_form_and_says_what_it_does() -> None:
    """The editor's restart is an action of the program like the others: stored in replay
    files and described in counterexamples."""
    from acp_model.fuzzing.actions import Relaunch

    action = Relaunch(1, replay=False)
    assert action.to_json() == {"op": "relaunch", "s": 1, "replay": False}
    assert from_json(action.to_json()) == action
    assert Program.of([NewSession(), NewSession(), action]).describe()[-1] == (
        "restart the agent (a fresh process, its store kept) and reopen session s2 without "
        "asking for its history (session/resume; session/load where there is none)")


def test_a_reopen_in_a_fresh_process_simplifies_to_one_on_the_same_connection() -> None:
    """The minimizer tries the simpler program where the editor did not restart: the session
    reopened on the connection that made it (kept when the failure needs the fresh process,
    as any content that is needed)."""
    from acp_model.fuzzing import shrink
    from acp_model.fuzzing.actions import LoadSession, Relaunch

    assert shrink.simplifications(Relaunch(1, replay=False)) == [
        (LoadSession(1, replay=False), False)]


def test_elicitation_holds_and_answers_read_back_and_refuse_what_no_user_answers() -> None:
    """A hold and an answer are program actions like the others: their replay form reads back
    (through JSON text, as a replay file stores it), they say what they do, and an action no
    user gives (a custom one, an error) is refused when read."""
    import json

    from acp_model.fuzzing.actions import AnswerElicitation, HoldElicitations

    hold = HoldElicitations(1, "decline")
    answer = AnswerElicitation(0, "accept", newest=True)
    for action in (hold, answer):
        assert from_json(json.loads(json.dumps(action.to_json()))) == action
    assert hold.to_json() == {"op": "hold_elicitations", "s": 1, "after_cancel": "decline"}
    assert hold.describe(" s2") == "hold elicitations s2 open (after a cancel, answer decline)"
    assert answer.describe() == "answer elicitation: accept (newest)"
    for bad in ({"op": "hold_elicitations", "after_cancel": "custom"},
                {"op": "answer_elicitation", "action": "error"},
                {"op": "answer_elicitation", "action": "maybe"}):
        with pytest.raises(ActionError, match="elicitation answer"):
            from_json(bad)


def test_every_kind_of_argument_is_one_argument_class() -> None:
    """What a kind of argument means (what a session offers, the payload it fills, its label)
    is one :class:`~acp_model.explorer.arguments.Argument`, for every kind a Form may name."""
    from acp_model.explorer.arguments import ARGUMENTS
    from acp_model.model.wire_table import Over

    assert set(ARGUMENTS) == set(Over)


def test_a_probe_is_named_in_words_and_only_a_breach_is_called_negative_input() -> None:
    """A maintainer reads the program: "negative input: notification_batch" read as a
    deliberate breach of a batch that is legal (the s9 and s10 readers, C8)."""
    from acp_model.fuzzing.actions import NegativeInput, Probe

    batch, broken = Probe(0, NegativeInput.NOTIFICATION_BATCH), \
        Probe(0, NegativeInput.INVALID_PARAMS)
    assert Program.of([NewSession(), batch, broken]).describe()[1:] == [
        "a JSON-RPC batch of one notification (legal: it gets no response), then a sync "
        "request", "negative input: a prompt without its content (invalid params)"]
    for each in NegativeInput:  # no enum value left bare
        assert str(each) not in Probe(0, each).describe()


def test_a_reopen_without_history_names_the_method_the_run_shows_it_sent() -> None:
    """gemini-cli v1 offers session/load only: the no-history reopen was sent as session/load,
    which replays; the line names what went out instead of both alternatives."""
    from acp_model.fuzzing.actions import LoadSession, Wrote

    action = LoadSession(0, replay=False)
    sent = action.sent_line(Wrote(methods=("session/load", "session/set_mode")), " s1")
    assert sent == ("load session s1 without asking for its history: sent session/load, "
                    "the reopen the agent offers")
    assert "session/resume; session/load where" in action.sent_line(Wrote(), " s1")
    assert LoadSession(0).sent_line(Wrote(methods=("session/load",)), " s1") == \
        "load session s1, replaying its history"
