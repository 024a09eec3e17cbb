"""The Hypothesis ``RuleBasedStateMachine`` that generates client behaviour.

Rules only depend on client-side facts (how many sessions this example opened), never on what
the agent did: the agent's timing varies between runs, and Hypothesis needs the same choices to
produce the same program when it replays and shrinks. Whether an action finds something to do
(an open permission to answer, a pending prompt to withdraw) is decided at run time and a miss is
a no-op.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

from hypothesis import strategies as st
from hypothesis import target
from hypothesis.control import current_build_context
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from acp_model.fuzzing.actions import (
    WORKSPACE,
    AnswerElicitation,
    AnswerPermission,
    Cancel,
    CancelPromptRequest,
    Finish,
    HoldElicitations,
    Interrupt,
    LateAllow,
    LoadSession,
    Mistake,
    NegativeInput,
    NewSession,
    Probe,
    Prompt,
    Relaunch,
    SloppyAnswer,
    Sync,
    Wait,
    WaitMode,
)
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.corpus import Corpus
from acp_model.fuzzing.pool import AgentPool, Example
from acp_model.fuzzing.revision import sends_batches
from acp_model.fuzzing.services import USER_ELICITATION_ACTIONS
from acp_model.llm.script import (
    FAILURES,
    RISKS,
    STOPS,
    TOOL_KINDS,
    Fail,
    ModelScript,
    Reply,
    Stall,
    StopReply,
    Text,
    Tools,
)
from acp_model.model.messages import PROMPT_CAPABILITY_GATES
from acp_model.model.vocab import Answer, ElicitationAction

WORDS = ("analyze", "fix", "tests", "refactor", "explain", "plan", "read", "edit", "run", "diff",
         "search", "summarize", "build", "deploy", "review", "why")
TINY_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVO"
            "RK5CYII=")
TINY_WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
NOW = None  # an action drawn with no wait before it (else the :class:`WaitMode` waited for)


def prompt_blocks(capabilities: dict[str, Any]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Prompts made only of content the agent advertised (PROMPT-02): text, resource links
    (every agent takes both, INIT-11: a prompt may be links alone) and what the capabilities
    open. A link names a file of the session's workspace (``{workspace}``, filled in when the
    prompt is sent)."""
    text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(
        lambda ws: {"type": "text", "text": " ".join(ws)})
    link = st.sampled_from(["main.py", "README.md", "src/lib.rs"]).map(lambda name: {
        "type": "resource_link", "uri": f"file://{WORKSPACE}/{name}", "name": name})
    gated: dict[str, st.SearchStrategy[dict[str, Any]]] = {
        "image": st.just({"type": "image", "mimeType": "image/png", "data": TINY_PNG}),
        "audio": st.just({"type": "audio", "mimeType": "audio/wav", "data": TINY_WAV}),
        "resource": text.map(lambda b: {"type": "resource", "resource": {
            "uri": "file:///workspace/notes.txt", "mimeType": "text/plain", "text": b["text"]}}),
    }
    # the oracle's own table says which capability each block type needs
    extras: list[st.SearchStrategy[dict[str, Any]]] = [link] + [
        strategy for kind, strategy in gated.items()
        if capabilities.get(PROMPT_CAPABILITY_GATES[kind]) is not None]
    first = st.one_of(text, text, text, link)  # one prompt in four opens with a link
    return st.tuples(first, st.lists(st.one_of(extras), max_size=2)).map(
        lambda parts: [parts[0], *parts[1]])


def tool_kinds() -> st.SearchStrategy[str]:
    """What a tool call asks for: mostly a command or an edit, sometimes (one in five) a
    command that runs until cancelled, so a cancel meets a running tool."""
    common = tuple(k for k in TOOL_KINDS if k != "long")
    return st.sampled_from((*common, *common, "long"))


def risks() -> st.SearchStrategy[str]:
    """The shape of a command: plain (a third of the time), or one an approval policy flags
    (a recursive delete, a mode change, a pipe into a shell, a forced reset), so an agent that
    asks only for the commands it flags is asked too."""
    return st.sampled_from(("plain", *RISKS))


# A reply's timing (``llm.script``): mostly none, the simplest and what shrinking goes to;
# sometimes the hundreds of milliseconds or the second a real model takes, long enough for a
# cancel, an answer or another session's work to land inside the model's turn
FIRST_BYTES_MS = (0, 0, 0, 50, 300, 1000)  # before the response starts
PACES_MS = (0, 0, 50, 300)  # between text chunks
PAUSES_MS = (0, 0, 100, 500)  # once the response started, before each tool call


def _delays(choices: tuple[int, ...], timing: bool) -> st.SearchStrategy[int]:
    return st.sampled_from(choices) if timing else st.just(0)


def _first_byte(replies: st.SearchStrategy[Reply], timing: bool) -> st.SearchStrategy[Reply]:
    """``replies``, each with a drawn time to first byte."""
    if not timing:
        return replies
    return st.tuples(replies, _delays(FIRST_BYTES_MS, timing)).map(
        lambda drawn: dataclasses.replace(drawn[0], first_byte_ms=drawn[1]))


def tool_replies(count: st.SearchStrategy[int], timing: bool = True
                 ) -> st.SearchStrategy[Reply]:
    return _first_byte(st.builds(Tools, tool_kinds(), count, st.just(()), risks(),
                                 _delays(PAUSES_MS, timing)), timing)


def model_replies(timing: bool = True) -> st.SearchStrategy[Reply]:
    """What a scripted model does for one request of a turn: mostly tool calls (the
    permission path) and text, each at a drawn pace (``timing``; else at once)."""
    return st.one_of(
        tool_replies(st.integers(1, 2), timing),
        tool_replies(st.just(1), timing),
        _first_byte(st.builds(Text, st.integers(1, 4), _delays(PACES_MS, timing)), timing),
        _first_byte(st.builds(Fail, st.sampled_from(FAILURES)), timing),
        _first_byte(st.builds(StopReply, st.sampled_from(STOPS)), timing),
        _first_byte(st.just(Stall()), timing),
    )


def model_scripts(timing: bool = True) -> st.SearchStrategy[ModelScript]:
    return st.lists(model_replies(timing), max_size=3).map(tuple)


def asking_scripts(timing: bool = True) -> st.SearchStrategy[ModelScript]:
    """Turns whose first reply calls one tool the agent must ask permission for."""
    first = tool_replies(st.just(1), timing)
    return st.tuples(first, st.lists(model_replies(timing), max_size=2)).map(
        lambda parts: (parts[0], *parts[1]))


def steer(ex: Example, corpus: Corpus | None = None) -> None:
    """Guidance. Measuring the agent's coverage (``corpus``): an example that reached agent
    lines, model transitions or rules no earlier example of the run reached is kept in the
    corpus, which the run's corpus rounds continue (``fuzzing/corpus.py`` says why not
    ``target()``). Otherwise Hypothesis keeps the example that scores highest on each label
    and mutates it further (its targeting phase climbs from there, and with an example
    database the best ones of a round are replayed first in the next): the distinct model
    transitions it fired, and the transitions and rules it judged first of the whole run."""
    if corpus is not None:
        if ex.new_agent_lines or ex.new_transitions or ex.new_rules:
            corpus.keep(current_build_context().data.choices)
        return
    target(float(ex.distinct_transitions), label="distinct model transitions")
    target(float(ex.new_transitions + ex.new_rules), label="new model transitions and rules")


class _Acting(Protocol):
    """What a rule reaches on the machine: the example it acts in."""

    ex: Example


RuleTable = dict[str, Callable[..., None]]


def _table(*rules: Callable[..., None]) -> RuleTable:
    """Rules (or the machine's own methods) by the name Hypothesis reports them under."""
    return {fn.__name__: fn for fn in rules}


def _compose(*tables: RuleTable) -> RuleTable:
    """One namespace from rule tables; a name in two tables is a programming error, not a
    silent override."""
    namespace: RuleTable = {}
    for table in tables:
        twice = namespace.keys() & table.keys()
        if twice:
            raise ValueError(f"rule defined twice: {sorted(twice)}")
        namespace.update(table)
    return namespace


def _prompting(session: st.SearchStrategy[int], blocks: st.SearchStrategy[Any],
               scripts: st.SearchStrategy[ModelScript]) -> RuleTable:
    """The rules that start work and cancel it."""

    @rule(s=session, prompt=blocks, meta=st.booleans(), model=scripts)
    def prompt(self: _Acting, s: int, prompt: list[Any], meta: bool, model: ModelScript) -> None:
        self.ex.act(Prompt(s, prompt, meta, model))

    @rule(s=session, when=st.sampled_from([NOW, *WaitMode]), sync=st.booleans())
    def cancel(self: _Acting, s: int, when: WaitMode | None, sync: bool) -> None:
        """Cancel before acceptance, mid-stream, during a permission, or while idle."""
        if when is not NOW:
            self.ex.act(Wait(s, when))
        self.ex.act(Cancel(s, sync))

    @rule(s=session, prompt=blocks, model=scripts,
          when=st.sampled_from([NOW, WaitMode.UPDATE, WaitMode.SETTLED]))
    def interrupt(self: _Acting, s: int, prompt: list[dict[str, Any]], model: ModelScript,
                  when: WaitMode | None) -> None:
        """Cancel and send the next prompt in one write (an editor's "stop and send
        this"), mid-work or once the session is idle: the cancel must not reach the new
        prompt (TypeScript SDK 2.4.0: docs/findings.md F5)."""
        if when is not NOW:
            self.ex.act(Wait(s, when))
        self.ex.act(Interrupt(s, Prompt(s, prompt, False, model)))

    @rule(s=session, prompt=blocks, sync=st.booleans(), model=scripts)
    def prompt_then_cancel(self: _Acting, s: int, prompt: list[Any], sync: bool, model: Any
                           ) -> None:
        """A cancel right behind a prompt: lands before or just after acceptance."""
        self.ex.act(Prompt(s, prompt, model=model))
        self.ex.act(Cancel(s, sync))

    @rule(s=session)
    def withdraw_prompt(self: _Acting, s: int) -> None:
        self.ex.act(CancelPromptRequest(s))

    return _table(prompt, cancel, interrupt, prompt_then_cancel, withdraw_prompt)


def _answering(session: st.SearchStrategy[int], blocks: st.SearchStrategy[Any],
               asking: st.SearchStrategy[ModelScript]) -> RuleTable:
    """The rules that answer permission requests: carefully, by finishing the turn, or as a
    sloppy client does."""

    @rule(s=session, outcome=st.sampled_from([Answer.ALLOW, Answer.REJECT, Answer.CANCELLED,
                                              Answer.ERROR, Answer.CUSTOM]),
          newest=st.booleans(), late=st.booleans(), sync=st.booleans())
    def answer_permission(self: _Acting, s: int, outcome: Answer, newest: bool, late: bool,
                          sync: bool) -> None:
        self.ex.act(AnswerPermission(s, outcome, newest, late, sync))

    @rule(s=session, outcome=st.sampled_from([Answer.ALLOW, Answer.REJECT, Answer.CUSTOM]))
    def finish_turn(self: _Acting, s: int, outcome: Answer) -> None:
        """Let the turn end by itself, as a user who answers every permission request
        with ``outcome`` (many bugs show only in a turn that completes, e.g. the one
        after a cancelled turn; short waits rarely outlast a slow agent's turn)."""
        self.ex.act(Finish(s, outcome))

    @rule(s=session, mistake=st.sampled_from(Mistake), prompt=blocks, model=asking)
    def sloppy_answer(self: _Acting, s: int, mistake: Mistake, prompt: list[Any], model: Any
                      ) -> None:
        """What only a sloppy client shows: answers late, twice, or to withdrawn requests
        (negative inputs; the agent's reaction is judged as usual). An allow for cancelled
        work sent once that work has ended is followed by new work that asks again."""
        self.ex.act(SloppyAnswer(s, mistake) if mistake != Mistake.LATE
                    else LateAllow(s, Prompt(s, prompt, False, model)))

    return _table(answer_permission, finish_turn, sloppy_answer)


def _eliciting(session: st.SearchStrategy[int], elicits: bool) -> RuleTable:
    """The rules that hold the agent's elicitations open and answer them, for a client that
    serves elicitations (``elicits``; without a hold it answers each at once). A client that
    does not has no such rules: its programs draw as they did before these existed."""
    if not elicits:
        return {}
    actions = st.sampled_from(USER_ELICITATION_ACTIONS)

    @rule(s=session, after_cancel=actions)
    def hold_elicitations(self: _Acting, s: int, after_cancel: ElicitationAction) -> None:
        """Leave the session's elicitations open, as a user who leaves the form up: a
        cancel then meets them (SDK-ELICIT-01), and they are answered after it."""
        self.ex.act(HoldElicitations(s, after_cancel))

    @rule(s=session, action=actions, newest=st.booleans())
    def answer_elicitation(self: _Acting, s: int, action: ElicitationAction, newest: bool
                           ) -> None:
        self.ex.act(AnswerElicitation(s, action, newest))

    return _table(hold_elicitations, answer_elicitation)


def _probing(session: st.SearchStrategy[int], probes: list[NegativeInput]) -> RuleTable:
    """The rules that wait, sync and send negative inputs."""

    @rule(s=session, mode=st.sampled_from(WaitMode))
    def wait(self: _Acting, s: int, mode: WaitMode) -> None:
        self.ex.act(Wait(s, mode))

    @rule()
    def sync(self: _Acting) -> None:
        self.ex.act(Sync())

    @rule(what=st.sampled_from(probes), s=session)
    def negative_input(self: _Acting, what: NegativeInput, s: int) -> None:
        self.ex.act(Probe(s, what))

    return _table(wait, sync, negative_input)


def _reopening(session: st.SearchStrategy[int], reloads: bool) -> RuleTable:
    """The rule that reopens sessions (``session/load``, ``session/resume``), for an agent
    that advertised one (``reloads``)."""

    @precondition(lambda self: reloads)
    @rule(s=session, replay=st.booleans(),
          when=st.sampled_from([NOW, WaitMode.UPDATE, WaitMode.SETTLED]),
          restart=st.sampled_from([False, False, False, True]))
    def load_session(self: _Acting, s: int, replay: bool, when: WaitMode | None, restart: bool
                     ) -> None:
        """Reopen a session made earlier, while it works or once it is quiet (the
        replay, and what the session does after it: a cancel must still end a turn); one
        time in four in a fresh agent process, as an editor does after a restart."""
        if when is not NOW:
            self.ex.act(Wait(s, when))
        self.ex.act(Relaunch(s, replay) if restart else LoadSession(s, replay))

    return _table(load_session)


def build_machine(begin: Callable[[], Example], end: Callable[[Example], None],
                  capabilities: dict[str, Any], max_sessions: int, guided: bool = True,
                  *, scripted: bool = False, batches: bool = True, reloads: bool = False,
                  timing: bool = True, corpus: Corpus | None = None, elicits: bool = False
                  ) -> type[RuleBasedStateMachine]:
    """A machine class bound to one fuzz run (its agent pool, recorder and settings).

    ``scripted``: a scripted model stands behind the agent, so every prompt carries what the
    model does in its turn (``timing``: at a drawn pace, else at once); ``batches``: the
    JSON-RPC batch probes are sent; ``reloads``: the agent advertised a request that reopens
    a session, which the fuzzer then sends; ``corpus``: where guidance keeps the examples
    that reached new code (a run measuring the agent's coverage); ``elicits``: the client
    serves elicitations, and holds them open when drawn."""
    session = st.integers(0, max_sessions - 1)
    blocks = prompt_blocks(capabilities)
    scripts, asking = (model_scripts(timing), asking_scripts(timing)) if scripted \
        else (st.just(()),) * 2
    probes = [p for p in NegativeInput if batches or not p.endswith("_batch")]

    def __init__(self: RuleBasedStateMachine) -> None:
        RuleBasedStateMachine.__init__(self)
        self.ex = begin()  # type: ignore[attr-defined]

    @initialize()
    def open_first_session(self: _Acting) -> None:
        self.ex.act(NewSession())

    @precondition(lambda self: self.ex.n_sessions < max_sessions)
    @rule()
    def open_session(self: _Acting) -> None:
        self.ex.act(NewSession())

    def teardown(self: _Acting) -> None:
        end(self.ex)
        if guided:
            steer(self.ex, corpus)

    # The rule groups are tables composed into one class: Hypothesis finds rules on the class,
    # and nothing here needs a base class of its own.
    namespace = _compose(
        _table(__init__, open_first_session, open_session, teardown),
        _prompting(session, blocks, scripts), _answering(session, blocks, asking),
        _probing(session, probes), _reopening(session, reloads), _eliciting(session, elicits))
    doc = "Client behaviour over several sessions of one ACP connection."
    return type("AcpLifecycleFuzz", (RuleBasedStateMachine,),
                {"__module__": __name__, "__doc__": doc, **namespace})


def machine_for(cfg: FuzzConfig, pool: AgentPool, begin: Callable[[], Example],
                corpus: Corpus | None = None) -> type[RuleBasedStateMachine]:
    """The machine of a run of ``cfg`` over ``pool`` (the fuzzer's rounds and the library's
    :func:`~acp_model.pytest_plugin.api.lifecycle_machine`): what the pool's first agent
    advertised decides the prompts' content and whether sessions are reopened. Raises
    ``AgentUnusable`` when that agent cannot be started."""
    first = pool.client()
    return build_machine(begin, pool.end_example, first.handshake.prompt_caps, cfg.max_sessions,
                         cfg.guided, scripted=cfg.model is not None, batches=sends_batches(cfg),
                         reloads=bool(first.handshake.reloads), timing=cfg.model_timing,
                         corpus=corpus, elicits=first.handshake.serves_elicitations)
