"""The wire table: one declaration per wire message, per session update kind and per lifecycle
event.

Each :class:`Message` row says, for one JSON-RPC method of any judged revision: who sends it,
whether it is a request, which revisions' schemas define it (:meth:`Message.schema` reads the
definitions from that revision's schema, nothing is copied), the events it and its response
become in the model, the monitor's handler of each (by reference: a method of
:class:`MessageHandlers` or :class:`AnswerHandlers`, which the oracle implements), and how
:class:`~acp_model.trace.builder.TraceBuilder` writes it; for a request, what an answer of it
implies in a recording of the agent's side alone (``implies``, ``told``: functions of
:mod:`acp_model.model.implied`). A method that moves no machine says why. Each
:class:`Update` row does the same for one ``sessionUpdate`` kind and owns its facts:
how its payload is read (``classify``), how the client's view takes it in (``reduce``), the
parts its checks read (``parts``), its family, what a v1 turn, a replay and a cancelled turn
make of it, and what v1 reads it as; each :class:`Form` row says for one model event which
wire message carries it and how the explorer tries it: the bound that gates it, what it ranges
over (:class:`Over`: the kind of argument, which ``explorer.arguments`` gives its meaning) and
the fields it always carries.

A message's transcript line is declared a layer below, with the function that writes it
(:mod:`acp_model.trace.describe`, which the reports use and which may not import the model);
a row's ``line`` and ``result_line`` read it from there. So do the method names: a method the
code names is keyed by its :class:`~acp_model.trace.methods.Method` member (``--spec auto``'s
detector names them too). A row's ``owed`` is the obligation its answer discharges: the
liveness judge and the answered-twice checks read which rule an unanswered or twice-answered
request breaks from it.

The monitor's routing (``oracle.router``, ``oracle.answers``, ``oracle.wire``), the client's
view (``model.reducers``), the single-message dispatch (``model.messages``), the explorer's
alphabet (``explorer.alphabet``) and the trace builder's role per message are read from here;
``tests/unit/test_wire_table.py`` keeps the table complete against the three revisions'
schemas and the event vocabulary. Adding a message is one row here plus its checks
(docs/design.md, "Adding a message").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import Any, Protocol

from acp_model.model import classify, implied, views
from acp_model.model.check import CHECKS, CheckMeta
from acp_model.model.events import Payload
from acp_model.model.obligations import PERMISSION_ANSWERED, PROMPT_ANSWERED
from acp_model.model.parts import Parts, at, itself, wrapped_content
from acp_model.model.views import MessageFamily
from acp_model.model.vocab import Answer, ConnEvent, Event, Reads
from acp_model.spec import schema
from acp_model.spec.revisions import REVISIONS, SDK_2_4_0, SEED, V1
from acp_model.trace import describe
from acp_model.trace.builder import TraceBuilder, V1Writer, through_v1
from acp_model.trace.methods import Method

ALL = frozenset(REVISIONS)
V2 = frozenset({SEED, SDK_2_4_0})
ONLY_V1 = frozenset({V1})
ONLY_SDK = frozenset({SDK_2_4_0})
C2A, A2C, BOTH = frozenset({"c2a"}), frozenset({"a2c"}), frozenset({"c2a", "a2c"})

Writer = Callable[..., TraceBuilder]  # called ``write(builder, ...)``: a builder method, or
# a v1 one adapted by ``through_v1``


class MessageHandlers(Protocol):
    """The monitor's handlers of the requests and notifications the table routes (beyond the
    schema check every defined method gets). A row names its handler by reference
    (``route=MessageHandlers.prompt``); ``oracle.router.Router`` implements every one, and
    :func:`bound` gives a row's handler on it (a handler it lacks is an error when its plan is
    built; ``tests/unit/test_wire_table.py`` binds each). Declared here, a layer below the
    router, so that the row can hold it.

    A request's handler is called ``(req_id, params, sid, idx, what)``, a notification's
    ``(direction, params, sid, idx, what)``."""

    def initialize(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str
                   ) -> None:
        """The connection machine's handshake."""

    def new_session(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str
                    ) -> None:
        """A session requested (created by its response)."""

    def prompt(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str) -> None:
        """A prompt for a session (v1: its turn, which the translator derives)."""

    def close(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str) -> None:
        """session/close: a cancel, and what sdk-2.4.0 orders around it."""

    def reopen(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str) -> None:
        """session/load, session/resume: a session reopened, its replay."""

    def permission(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str
                   ) -> None:
        """An agent's permission request."""

    def elicitation(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str
                    ) -> None:
        """An agent's elicitation/create."""

    def cancel(self, direction: str, params: Any, sid: Any, idx: int, what: str) -> None:
        """session/cancel."""

    def cancel_request(self, direction: str, params: Any, sid: Any, idx: int, what: str
                       ) -> None:
        """$/cancel_request withdraws the sender's own request."""

    def update(self, direction: str, params: Any, sid: Any, idx: int, what: str) -> None:
        """session/update: the event of its update kind (:class:`Update`)."""


class AnswerHandlers(Protocol):
    """The monitor's handlers of the responses to the table's requests, named by a row's
    ``answer`` and implemented by ``oracle.answers.Answers``; each is called with the
    response read against its request (``oracle.answers.Matched``)."""

    def initialized(self, reply: Any) -> None:
        """The initialize result: the connection machine, what it advertised."""

    def created(self, reply: Any) -> None:
        """session/new's response: the session created (or the method missing)."""

    def loaded(self, reply: Any) -> None:
        """session/load's response: the end of v1's replay."""

    def prompt_answered(self, reply: Any) -> None:
        """A prompt's response (v2: its acknowledgement; v1: its turn's end)."""

    def permission_answered(self, reply: Any) -> None:
        """The client's answer to a permission request."""

    def elicitation_answered(self, reply: Any) -> None:
        """The client's answer to an elicitation."""


Handler = Callable[..., None]


def bound(handler: Handler | None, on: object) -> Handler | None:
    """``on``'s implementation of a row's handler (None: the row has none)."""
    if handler is None:
        return None
    declared = handler.__qualname__.partition(".")[0] in ("MessageHandlers", "AnswerHandlers")
    implemented: Handler | None = getattr(on, handler.__name__, None)
    if not declared or implemented is None:
        raise TypeError(f"{type(on).__name__} does not implement {handler.__qualname__}")
    return implemented


class Gate(StrEnum):
    """The explorer bound an event of the alphabet needs (``explorer.bounds.Bounds``)."""

    PROMPTS = "max_prompts"
    CANCELS = "max_cancels"
    PERMISSIONS = "max_permissions"
    ELICITATIONS = "max_elicitations"
    TOOLS = "max_tools"
    CUSTOM = "custom"


class Over(StrEnum):
    """What the explorer tries an event with in a configuration: the kind of its canonical
    argument (``explorer.arguments`` says what each kind offers, fills and shows).
    """

    NOTHING = "nothing"  # once, with no argument
    PENDING = "pending"  # each prompt not answered yet, by position ("p0")
    OLDEST_PENDING = "oldest_pending"  # the oldest prompt not answered yet ("p0")
    ECHO = "echo"  # a new user message, once some prompt may still be echoed: an accepted one,
    #                or (full alphabet) a pending one not echoed yet
    ANSWER = "answer"  # each unanswered permission request by position, with each answer (the
    #                    error too once it was withdrawn) ("q0=allow")
    OPEN_PERMISSION = "open_permission"  # each open user-action request (a permission
    #                                      request or an elicitation), by position ("q0")
    ELICITATION_ANSWER = "elicitation_answer"  # each open elicitation by position, with each
    #                                            action ("q0=accept")
    REASON = "reason"  # each stop reason of the bounds ("end_turn"; "none": without one)
    TOOL = "tool"  # each known tool call and a fresh one ("t1"; "": the bounds allow none)
    TOOL_STATUS = "tool_status"  # each known or fresh tool call, with each status of the
    #                              bounds ("t1=completed")


@dataclass(frozen=True, slots=True)
class Message:
    """One JSON-RPC method: its direction, schema, events, handlers and builder."""

    method: str
    sender: frozenset[str]  # the directions it travels ("c2a": the client sends it)
    request: bool  # False: a notification
    revisions: frozenset[str]  # the revisions whose schema defines it
    becomes: tuple[Event | ConnEvent, ...] = ()  # the events the message itself becomes
    answered: tuple[Event | ConnEvent, ...] = ()  # the events its response becomes
    route: Handler | None = None  # the monitor's handler of the message (MessageHandlers')
    answer: Handler | None = None  # the monitor's handler of its response (AnswerHandlers')
    write: Writer | None = None  # the builder method that writes it (None: rpc.request())
    lifecycle: bool = False  # RPC-10: never sent inside a batch
    why: str = ""  # why it moves no machine (when ``becomes`` and ``answered`` are empty)
    # the obligation its answer discharges, sent by its sender (None: ACPM-ANSWER's, every
    # request's); its rule also says an answer given twice (PROMPT-04, PERM-12)
    owed: CheckMeta | None = None
    # one-sided inference (``model.implied``): the params of the request an answer of this
    # method implies, and how a result of it is told by its shape (None: it cannot be)
    implies: implied.Implies = implied.session_scoped
    told: implied.Told | None = None
    # the capability its receiver advertises for it where its revision makes it optional (the
    # agent's fs, terminal and elicitation requests: INIT-16; v1's reopening and closing
    # requests, spelled as v1's capabilities spell them: SESS-16); (): never optional
    advertised_by: tuple[str, ...] = ()
    # the message kind whose checks read its result and the parts it carries (a session's
    # config options and commands: ``messages.session_result``; None: its schema only)
    result_reads: Reads | None = None
    # the kind the checks of its answer declare, judged by the request it answers
    # (``model.answering``; None: only the checks of every answer, ``Reads.ANSWER``)
    answer_reads: Reads | None = None
    # the kind the checks of what it uses of the other side's capabilities declare
    # (``model.answering.Asking``; None: it uses nothing advertised)
    use_reads: Reads | None = None
    # a control request's target in the client's view (tool_call/cancel: a tool call)
    control: views.Control | None = None

    @property
    def line(self) -> describe.Line | None:
        """Its transcript line (None: its name and ids), named where it is written, a layer
        below (:mod:`acp_model.trace.describe`, which the reports use without the model)."""
        return describe.LINES.get(self.method)

    @property
    def result_line(self) -> describe.ResultLine | None:
        """Its result's transcript line (None: the JSON)."""
        return describe.RESULT_LINES.get(self.method)

    def schema(self, rev: str) -> schema.MethodSpec | None:
        """Its definition in ``rev``'s schema (None: that revision does not define it)."""
        return schema.method_table(rev).get(self.method)


@dataclass(frozen=True, slots=True)
class Update:
    """One ``sessionUpdate`` kind: everything keyed by it. The event it becomes and how its
    payload is read (``classify``), how the client's view takes it in (``reduce``), what its
    checks read (``reads``, ``parts``), what a v1 turn, a replay and a cancelled turn make of
    it, and v1's reading of it."""

    kind: str
    revisions: frozenset[str]
    event: Event  # what it becomes (state_update: by its state, ``classify.state``)
    # its event and payload, read off it and the view before it (None: plain output)
    classify: classify.Classify | None = None
    # how the client's view takes it in (None: the view keeps nothing of it); a message's
    # reducer says its family, a tool call's what of it it reports
    reduce: views.Reduce | None = None
    write: Writer | None = None  # its writer, ``write(builder, ...)`` (None: update())
    v1_event: Event | None = None  # what v1 reads it as instead (a user message: history)
    v1_as: str | None = None  # the kind v1 reads it as (a first report is an upsert in v2)
    turn: bool = False  # v1: content of a turn, so it shows the oldest open prompt's turn
    history: bool = False  # conversation history (a replay carries it)
    late: bool = False  # content a cancelled turn may still stream (v1's CANCEL-09)
    replayed: bool = False  # what a replayed conversation is made of (one-sided inference)
    compacts: bool = False  # a summary that stands for earlier conversation (compaction)
    # it lists the session's settings (its commands, its options, the model among them): a
    # name there is a listing, no message about it (``matrix/bugs.py``)
    settings: bool = False
    # the message kind checks of this kind declare (``@check(reads=...)``; None: only the
    # checks of every update and of its parts read it)
    reads: Reads | None = None
    parts: Parts = ()  # the parts it carries that checks read, and where (``model.parts``)
    # the kind the checks of what it shows against what was advertised or approved before it
    # declare (``model.answering.Showing``; None: it shows nothing advertised)
    use_reads: Reads | None = None

    @property
    def family(self) -> MessageFamily | None:
        """A message's family (its messageId keeps it), from its reducer."""
        return self.reduce.family if isinstance(self.reduce, views.MessageReport) else None

    @property
    def tool(self) -> str | None:
        """What of a tool call it reports ("update": its fields, "chunk": content), from its
        reducer."""
        return self.reduce.part if isinstance(self.reduce, views.ToolReport) else None


@dataclass(frozen=True, slots=True)
class Form:
    """One lifecycle event: the wire message that carries it, and how the explorer tries it
    (its gate, its argument, its payload)."""

    event: Event
    carrier: str  # the method (and response or update kind) that carries it
    write: Writer  # the TraceBuilder method the explorer's witnesses write it with
    gate: Gate | None = None  # the explorer bound it needs (None: always tried)
    lean: bool = True  # kept in the explorer's lean alphabet
    over: Over = Over.NOTHING  # what it is tried with (its argument, and the payload it gives)
    spends: bool = False  # it adds one to what its gate bounds: tried while a session holds less
    opens: bool = False  # it sends a new request: the request id is its trace index
    fixed: Payload | None = field(default=None, hash=False)  # the payload fields it always carries

    @property
    def label(self) -> str:
        """How the explorer's alphabet and its witnesses name it."""
        return str(self.event)


SCHEMA_ONLY = ("schema-checked only: the prompt lifecycle the model judges does not depend "
                "on it")

_TERMINAL = ("terminal",)
_CLIENT = Reads.CLIENT_METHOD_USE  # (a client method: used only as the client advertised)
MESSAGES: tuple[Message, ...] = (
    Message(Method.INITIALIZE, C2A, True, ALL, (ConnEvent.INITIALIZE,),
            (ConnEvent.INITIALIZED, ConnEvent.INITIALIZED_OTHER_VERSION,
             ConnEvent.INITIALIZE_FAILED), MessageHandlers.initialize,
            AnswerHandlers.initialized, TraceBuilder.initialize, lifecycle=True,
            implies=implied.initialize, told=implied.initialize_result,
            answer_reads=Reads.INITIALIZE_ANSWER),
    Message(Method.NEW_SESSION, C2A, True, ALL, (ConnEvent.SESSION_REQUESTED,),
            (ConnEvent.SESSION_CREATED, ConnEvent.SESSION_METHOD_MISSING),
            MessageHandlers.new_session, AnswerHandlers.created, TraceBuilder.new_session,
            lifecycle=True, implies=implied.new_session, told=implied.session_result,
            result_reads=Reads.SESSION_RESULT, use_reads=Reads.NEW_SESSION_USE),
    Message(Method.PROMPT, C2A, True, ALL, (Event.PROMPT, ConnEvent.UNKNOWN_SESSION_NAMED),
            (Event.PROMPT_ACCEPTED, Event.PROMPT_REJECTED, ConnEvent.SESSION_METHOD_MISSING),
            MessageHandlers.prompt, AnswerHandlers.prompt_answered, TraceBuilder.prompt,
            lifecycle=True, owed=PROMPT_ANSWERED, implies=implied.prompt,
            told=implied.prompt_result, answer_reads=Reads.PROMPT_ANSWER),
    Message(Method.CANCEL, C2A, False, ALL, (Event.CANCEL, ConnEvent.UNKNOWN_SESSION_NAMED),
            route=MessageHandlers.cancel, write=TraceBuilder.cancel),
    Message(Method.CLOSE, C2A, True, ALL, (Event.CANCEL,), route=MessageHandlers.close,
            advertised_by=("sessionCapabilities", "close"), answer_reads=Reads.CLOSE_ANSWER,
            use_reads=Reads.CLOSE_USE,
            why="its response moves no machine: oracle.machines' Closes judges it (SESS-10)"),
    Message(Method.LOAD, C2A, True, ONLY_V1, route=MessageHandlers.reopen,
            answer=AnswerHandlers.loaded, implies=implied.load, advertised_by=("loadSession",),
            result_reads=Reads.SESSION_RESULT, use_reads=Reads.LOAD_USE,
            why="reopens a session (oracle.reopens): its replay is history, no event"),
    Message(Method.RESUME, C2A, True, ALL, route=MessageHandlers.reopen, lifecycle=True,
            implies=implied.resume, advertised_by=("sessionCapabilities", "resume"),
            result_reads=Reads.SESSION_RESULT, answer_reads=Reads.RESUME_ANSWER,
            use_reads=Reads.RESUME_USE,
            why="reopens a session (oracle.reopens): no event of its own"),
    Message(Method.PERMISSION, A2C, True, ALL,
            (Event.PERMISSION_REQUEST, ConnEvent.AGENT_NAMES_UNKNOWN_SESSION),
            (Event.PERMISSION_ANSWER,), MessageHandlers.permission,
            AnswerHandlers.permission_answered,
            TraceBuilder.permission, owed=PERMISSION_ANSWERED),
    Message(Method.UPDATE, A2C, False, ALL, (ConnEvent.AGENT_NAMES_UNKNOWN_SESSION,),
            route=MessageHandlers.update, write=TraceBuilder.update,
            why="its event is its update kind's (UPDATES)"),
    Message(Method.CANCEL_REQUEST, BOTH, False, ALL,
            (Event.PROMPT_CANCEL_REQUEST, Event.PERMISSION_WITHDRAWN),
            route=MessageHandlers.cancel_request, write=TraceBuilder.cancel_request),
    # methods the schemas define that move no machine of the model
    Message("session/list", C2A, True, ALL, why=SCHEMA_ONLY),
    Message("session/delete", C2A, True, ALL, why=SCHEMA_ONLY),
    Message("session/set_config_option", C2A, True, ALL, why=SCHEMA_ONLY,
            result_reads=Reads.CONFIG_RESULT, answer_reads=Reads.CONFIG_ANSWER),
    Message("session/set_mode", C2A, True, ONLY_V1, why=SCHEMA_ONLY),
    Message("auth/login", C2A, True, V2, lifecycle=True, why=SCHEMA_ONLY,
            answer_reads=Reads.AUTH_ANSWER, use_reads=Reads.AUTH_USE),
    Message("auth/logout", C2A, True, V2, why=SCHEMA_ONLY, answer_reads=Reads.AUTH_ANSWER,
            use_reads=Reads.AUTH_USE),
    Message("authenticate", C2A, True, ONLY_V1, why=SCHEMA_ONLY, use_reads=Reads.AUTH_USE),
    Message("logout", C2A, True, ONLY_V1, why=SCHEMA_ONLY),
    # session-scoped: a user-action wait (STATE-05/06); request-scoped: schema-checked only
    Message("elicitation/create", A2C, True, ALL,
            (Event.ELICITATION_REQUEST, ConnEvent.AGENT_NAMES_UNKNOWN_SESSION),
            (Event.ELICITATION_ANSWER,), MessageHandlers.elicitation,
            AnswerHandlers.elicitation_answered,
            TraceBuilder.elicitation, advertised_by=("elicitation",),
            use_reads=Reads.CLIENT_METHOD_USE),
    Message("elicitation/complete", A2C, False, ALL, why=SCHEMA_ONLY),
    # a control a tool call or a terminal advertises: no machine moves (the agent confirms
    # with an update, and the foreground state does not change by itself)
    *(Message(method, C2A, True, ONLY_SDK, control=control,
              answer_reads=Reads.CANCEL_CONTROL_ANSWER, use_reads=Reads.CANCEL_CONTROL_USE,
              why="its target's view judges it and its answer (SDK-TOOL-02, SDK-TOOL-03)")
      for method, control in (("tool_call/cancel", views.TOOL_CALL_CONTROL),
                              ("terminal/cancel", views.TERMINAL_CONTROL))),
    Message("fs/read_text_file", A2C, True, ONLY_V1, why=SCHEMA_ONLY,
            advertised_by=("fs", "readTextFile"), use_reads=_CLIENT),
    Message("fs/write_text_file", A2C, True, ONLY_V1, why=SCHEMA_ONLY,
            advertised_by=("fs", "writeTextFile"), use_reads=_CLIENT),
    *(Message(method, A2C, True, ONLY_V1, why=SCHEMA_ONLY, advertised_by=_TERMINAL,
              use_reads=_CLIENT)
      for method in ("terminal/create", "terminal/kill", "terminal/output", "terminal/release",
                     "terminal/wait_for_exit")),
)

_V1_AND_SDK = frozenset({V1, SDK_2_4_0})
R = Reads  # (the rows' message kinds)
_USER, _USER_CHUNK = (views.MessageReport(MessageFamily.USER),
                      views.MessageReport(MessageFamily.USER, True))
_AGENT, _AGENT_CHUNK = (views.MessageReport(MessageFamily.AGENT),
                        views.MessageReport(MessageFamily.AGENT, True))
_THOUGHT, _THOUGHT_CHUNK = (views.MessageReport(MessageFamily.THOUGHT),
                            views.MessageReport(MessageFamily.THOUGHT, True))
_FIELDS, _CHUNK = views.ToolReport(), views.ToolReport(chunk=True)
_CONTENT = ((R.CONTENT, at("content")),)  # a message update's content blocks
_TOOL = ((R.TOOL_REPORT, itself),)  # a tool call's fields
UPDATES: tuple[Update, ...] = (
    Update("state_update", V2, Event.CUSTOM_REPORTED, classify.state, views.state_update,
           TraceBuilder.state, reads=R.STATE_UPDATE, use_reads=R.STATE_USE),
    # (any user message is history to v1)
    Update("user_message", V2, Event.USER_MESSAGE, classify.user_message, _USER,
           TraceBuilder.user_message, v1_event=Event.OUTPUT, history=True, replayed=True,
           reads=R.USER_MESSAGE, parts=_CONTENT),
    Update("user_message_chunk", ALL, Event.USER_MESSAGE, classify.user_message_chunk,
           _USER_CHUNK, TraceBuilder.user_message_chunk, v1_event=Event.OUTPUT, history=True,
           replayed=True, reads=R.USER_MESSAGE_CHUNK, parts=_CONTENT),
    Update("tool_call_update", ALL, Event.TOOL_UPDATE, classify.tool_fields, _FIELDS,
           TraceBuilder.tool, turn=True, history=True, replayed=True,
           reads=R.TOOL_CALL_UPDATE, parts=_TOOL, use_reads=R.TOOL_USE),
    Update("tool_call_content_chunk", V2, Event.TOOL_UPDATE, classify.tool_chunk, _CHUNK,
           TraceBuilder.tool_chunk, replayed=True, reads=R.TOOL_CALL_CONTENT_CHUNK,
           parts=((R.CONTENT, wrapped_content),), use_reads=R.TOOL_USE),
    # (read by v1 as the tool_call_update it upserts: that row's event, reducer and payload)
    Update("tool_call", ONLY_V1, Event.OUTPUT, write=through_v1(V1Writer.tool_call),
           v1_event=Event.TOOL_UPDATE, v1_as="tool_call_update", turn=True, history=True,
           replayed=True, reads=R.TOOL_CALL, parts=_TOOL, use_reads=R.TOOL_USE),
    Update("agent_message", V2, Event.OUTPUT, reduce=_AGENT, write=TraceBuilder.agent_message,
           history=True, replayed=True, reads=R.AGENT_MESSAGE, parts=_CONTENT),
    Update("agent_message_chunk", ALL, Event.OUTPUT, reduce=_AGENT_CHUNK,
           write=TraceBuilder.agent_message, turn=True, history=True, late=True,
           replayed=True, reads=R.AGENT_MESSAGE_CHUNK, parts=_CONTENT),
    Update("agent_thought", V2, Event.OUTPUT, reduce=_THOUGHT, history=True, replayed=True,
           reads=R.AGENT_THOUGHT, parts=_CONTENT),
    Update("agent_thought_chunk", ALL, Event.OUTPUT, reduce=_THOUGHT_CHUNK,
           write=through_v1(V1Writer.chunk), turn=True, history=True, late=True,
           replayed=True, reads=R.AGENT_THOUGHT_CHUNK, parts=_CONTENT),
    Update("plan", ONLY_V1, Event.OUTPUT, turn=True, history=True),
    Update("plan_update", V2, Event.OUTPUT, reduce=views.plan_update, reads=R.PLAN_UPDATE,
           parts=((R.PLAN, at("plan", objects_only=True)),)),
    Update("usage_update", ALL, Event.OUTPUT, reduce=views.usage_update,
           write=TraceBuilder.usage, reads=R.USAGE_UPDATE),
    Update("available_commands_update", ALL, Event.OUTPUT, reads=R.AVAILABLE_COMMANDS_UPDATE,
           parts=((R.COMMANDS, at("availableCommands")),), settings=True),
    Update("config_option_update", ALL, Event.OUTPUT, reads=R.CONFIG_OPTION_UPDATE,
           parts=((R.CONFIG_OPTIONS, at("configOptions")),), settings=True,
           use_reads=R.CONFIG_OPTIONS_USE),
    Update("current_mode_update", ONLY_V1, Event.OUTPUT),
    Update("session_info_update", ALL, Event.OUTPUT),
    Update("terminal_output_chunk", V2, Event.OUTPUT, parts=((R.TERMINAL_OUTPUT, itself),)),
    Update("terminal_update", V2, Event.OUTPUT, reduce=views.terminal_update,
           reads=R.TERMINAL_UPDATE, parts=((R.TERMINAL_OUTPUT, at("output", objects_only=True)),)),
    Update("compaction_summary_chunk", _V1_AND_SDK, Event.OUTPUT, compacts=True),
    Update("compaction_update", _V1_AND_SDK, Event.OUTPUT, compacts=True),
    Update("notice", _V1_AND_SDK, Event.OUTPUT, reads=R.NOTICE, use_reads=R.NOTICE_USE),
)

# The options TraceBuilder.permission offers, so abstract and concrete answers classify alike.
PERM_OPTIONS = {Answer.ALLOW: "allow_once", Answer.REJECT: "reject_once"}

# In the table's order the explorer tries them (forms next to each other with the same ``over``
# argument by argument: a prompt's acceptance and its rejection side by side).
FORMS: tuple[Form, ...] = (
    Form(Event.PROMPT, "session/prompt", TraceBuilder.prompt, Gate.PROMPTS, spends=True,
         opens=True),
    Form(Event.CANCEL, "session/cancel", TraceBuilder.cancel, Gate.CANCELS, spends=True),
    Form(Event.PROMPT_CANCEL_REQUEST, "$/cancel_request (client)", TraceBuilder.cancel_request,
         Gate.PROMPTS, lean=False, over=Over.OLDEST_PENDING),
    Form(Event.PERMISSION_ANSWER, "session/request_permission response", TraceBuilder.answer,
         Gate.PERMISSIONS, over=Over.ANSWER),
    Form(Event.ELICITATION_ANSWER, "elicitation/create response",
         TraceBuilder.elicitation_answer, Gate.ELICITATIONS, over=Over.ELICITATION_ANSWER),
    Form(Event.PROMPT_ACCEPTED, "session/prompt result", TraceBuilder.accepted, Gate.PROMPTS,
         over=Over.PENDING, fixed=Payload(result_keys=())),
    Form(Event.PROMPT_REJECTED, "session/prompt error", TraceBuilder.rejected, Gate.PROMPTS,
         lean=False, over=Over.PENDING, fixed=Payload(error_code=-32603)),
    Form(Event.USER_MESSAGE, "session/update user_message", TraceBuilder.user_message,
         over=Over.ECHO),
    Form(Event.RUNNING_REPORTED, "session/update state_update running", TraceBuilder.running),
    Form(Event.REQUIRES_ACTION_REPORTED, "session/update state_update requires_action",
         TraceBuilder.requires_action),
    Form(Event.CUSTOM_REPORTED, "session/update state_update _x", TraceBuilder.state,
         Gate.CUSTOM),
    Form(Event.IDLE_REPORTED, "session/update state_update idle", TraceBuilder.idle,
         over=Over.REASON),
    Form(Event.PERMISSION_REQUEST, "session/request_permission", TraceBuilder.permission,
         Gate.PERMISSIONS, over=Over.TOOL, spends=True, opens=True,
         fixed=Payload(options=PERM_OPTIONS)),
    Form(Event.PERMISSION_WITHDRAWN, "$/cancel_request (agent)", TraceBuilder.cancel_request,
         Gate.PERMISSIONS, over=Over.OPEN_PERMISSION),
    Form(Event.ELICITATION_REQUEST, "elicitation/create (session-scoped)",
         TraceBuilder.elicitation, Gate.ELICITATIONS, spends=True, opens=True),
    Form(Event.TOOL_UPDATE, "session/update tool_call_update", TraceBuilder.tool, Gate.TOOLS,
         over=Over.TOOL_STATUS, fixed=Payload(update="update")),
    Form(Event.OUTPUT, "session/update (any other kind)", TraceBuilder.agent_message,
         lean=False, fixed=Payload(update="agent_message")),
)


@cache
def messages() -> dict[str, Message]:
    """Method name -> its row."""
    return {m.method: m for m in MESSAGES}


@cache
def updates() -> dict[str, Update]:
    """sessionUpdate kind -> its row."""
    return {u.kind: u for u in UPDATES}


@cache
def forms() -> dict[Event, Form]:
    """Event -> its wire form."""
    return {f.event: f for f in FORMS}


def owed(method: Any, sender: str | None = None) -> CheckMeta | None:
    """The obligation an answer to ``method`` discharges beyond ACPM-ANSWER's (None: that one
    only, or an unknown method); with ``sender``, only when that side is one that sends it (a
    misdirected request is owed what every request is)."""
    row = messages().get(method) if isinstance(method, str) else None
    if row is None or (sender is not None and sender not in row.sender):
        return None
    return row.owed


def roots(rule_id: str, method: str | None) -> frozenset[str]:
    """The broader rules a failure of ``rule_id`` about a request of ``method`` is a special
    case of: the obligation the request's row owes (``owed``: PROMPT-04 for a prompt, PERM-12
    for a permission request), when ``rule_id`` is declared narrowing it (``narrows``:
    CANCEL-14's withdrawal, CANCEL-04's cancel). One agent fault can show as either, and the
    broad one is its root when the circumstance is not needed. The one place this relation is
    read: minimizing's hit test and a run's de-duplication."""
    broad = owed(method)
    narrow = any(m.narrows for m in CHECKS.values() if m.rule == rule_id)
    return frozenset({broad.rule}) if narrow and broad is not None \
        and broad.rule != rule_id else frozenset()


def advertised_by(method: Any, sender: str) -> tuple[str, ...]:
    """The capability the receiver must have advertised for ``sender`` to send ``method``
    (its row's ``advertised_by``; (): none, an unknown method, or a side that does not send
    it)."""
    row = messages().get(method) if isinstance(method, str) else None
    return row.advertised_by if row is not None and sender in row.sender else ()


@cache
def advertised_methods(sender: str) -> frozenset[str]:
    """The methods ``sender`` sends only once the other side advertised them."""
    return frozenset(m.method for m in MESSAGES if m.advertised_by and sender in m.sender)


@cache
def answer_kinds() -> frozenset[Reads]:
    """The kinds an answer's checks declare: every answer's, and those the rows name for
    the answers of their requests (``Message.answer_reads``)."""
    return frozenset({Reads.ANSWER, *(m.answer_reads for m in MESSAGES if m.answer_reads)})


@cache
def cancelling() -> frozenset[str]:
    """The client's messages that cancel something (their rows become a cancel or a prompt's
    withdrawal): what an agent may answer a request "request cancelled" (-32800) for."""
    return frozenset(m.method for m in MESSAGES if m.sender >= C2A and (
        Event.CANCEL in m.becomes or Event.PROMPT_CANCEL_REQUEST in m.becomes))


@cache
def use_kinds() -> frozenset[Reads]:
    """The kinds the checks of what a message uses of what was advertised declare: those
    the rows name (``Message.use_reads``: a request's; ``Update.use_reads``: an update's)."""
    return frozenset({*(m.use_reads for m in MESSAGES if m.use_reads),
                      *(u.use_reads for u in UPDATES if u.use_reads)})


@cache
def lifecycle_requests() -> frozenset[str]:
    """The requests RPC-10 keeps out of batches."""
    return frozenset(m.method for m in MESSAGES if m.lifecycle)


def _kinds(column: Callable[[Update], Any]) -> frozenset[str]:
    """The sessionUpdate kinds whose row has ``column`` set."""
    return frozenset(u.kind for u in UPDATES if column(u))


@cache
def v1_turn_kinds() -> frozenset[str]:
    """The sessionUpdate kinds that belong to a v1 turn (v1 prompt-turn.mdx §3, §5)."""
    return _kinds(lambda u: u.turn)


@cache
def history_kinds() -> frozenset[str]:
    """The sessionUpdate kinds that carry conversation history (what a replay sends)."""
    return _kinds(lambda u: u.history)


@cache
def reopening() -> frozenset[str]:
    """The requests that reopen an existing session (and make a closed one live again)."""
    return frozenset(m.method for m in MESSAGES if m.route is MessageHandlers.reopen)


@cache
def state_kinds() -> frozenset[str]:
    """The sessionUpdate kinds that report the session's state (read by their state)."""
    return _kinds(lambda u: u.classify is classify.state)


def reported_state(update: Any) -> Any:
    """The state a ``session/update`` payload reports (None: it reports none)."""
    if not isinstance(update, dict) or update.get("sessionUpdate") not in state_kinds():
        return None
    return update.get("state")


@cache
def user_kinds() -> frozenset[str]:
    """The sessionUpdate kinds that carry a user message."""
    return _kinds(lambda u: u.event == Event.USER_MESSAGE)


@cache
def update_reads() -> dict[str, Reads]:
    """sessionUpdate kind -> the message kind its checks declare (kinds no check reads by
    name are left out: only the checks of every update read them)."""
    return {u.kind: u.reads for u in UPDATES if u.reads is not None}


@cache
def families() -> dict[str, str]:
    """sessionUpdate kind -> the family of the message it reports (message updates only)."""
    return {u.kind: u.family.value for u in UPDATES if u.family is not None}


@cache
def late_kinds() -> frozenset[str]:
    """The kinds a cancelled turn may still stream after its end (v1's CANCEL-09)."""
    return _kinds(lambda u: u.late)


@cache
def replayed_kinds() -> frozenset[str]:
    """The kinds a replayed conversation is made of."""
    return _kinds(lambda u: u.replayed)


@cache
def compaction_kinds() -> frozenset[str]:
    """The kinds that summarise earlier conversation."""
    return _kinds(lambda u: u.compacts)
