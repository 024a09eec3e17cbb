"""The model's typed vocabulary: states, events, record statuses, answers, levels, error codes.

Every value is a ``StrEnum`` (or ``IntEnum`` for JSON-RPC codes), so it compares equal to the
plain string the wire or python-statemachine uses (``State.IDLE == "idle"``) while a typo in the
code is an ``AttributeError`` instead of a silently different string.
``tests/unit/test_definitions.py`` keeps the enums and the machines in step (every event of a
machine has a member, and back).
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

# re-exported: the model's checks and the reports share one verdict vocabulary
from acp_model.spec.levels import Level as Level


class State(StrEnum):
    """Foreground states of a session (``custom``: ``_x`` and future states)."""

    UNREPORTED = "unreported"
    IDLE = "idle"
    RUNNING = "running"
    REQUIRES_ACTION = "requires_action"
    CUSTOM = "custom"


WORK: frozenset[str] = frozenset({State.RUNNING, State.REQUIRES_ACTION, State.CUSTOM})
QUIET: frozenset[str] = frozenset({State.UNREPORTED, State.IDLE})


class Event(StrEnum):
    """Classified wire messages that move a session machine."""

    # client -> agent
    PROMPT = "prompt"
    CANCEL = "cancel"
    PROMPT_CANCEL_REQUEST = "prompt_cancel_request"
    PERMISSION_ANSWER = "permission_answer"
    ELICITATION_ANSWER = "elicitation_answer"
    # agent -> client
    PROMPT_ACCEPTED = "prompt_accepted"
    PROMPT_REJECTED = "prompt_rejected"
    USER_MESSAGE = "user_message"
    RUNNING_REPORTED = "running_reported"
    REQUIRES_ACTION_REPORTED = "requires_action_reported"
    CUSTOM_REPORTED = "custom_reported"
    IDLE_REPORTED = "idle_reported"
    PERMISSION_REQUEST = "permission_request"
    # withdraws any user-action request of the session (a permission request or a
    # session-scoped elicitation): the agent's own $/cancel_request
    PERMISSION_WITHDRAWN = "permission_withdrawn"
    ELICITATION_REQUEST = "elicitation_request"
    TOOL_UPDATE = "tool_update"
    OUTPUT = "output"


CLIENT_EVENTS: tuple[Event, ...] = (Event.PROMPT, Event.CANCEL, Event.PROMPT_CANCEL_REQUEST,
                                    Event.PERMISSION_ANSWER, Event.ELICITATION_ANSWER)
AGENT_EVENTS: tuple[Event, ...] = tuple(e for e in Event if e not in CLIENT_EVENTS)
EVENTS: tuple[Event, ...] = CLIENT_EVENTS + AGENT_EVENTS

# The state_update a wire ``state`` value stands for (anything else: CUSTOM_REPORTED).
STATE_EVENTS: dict[str, Event] = {State.RUNNING: Event.RUNNING_REPORTED,
                                  State.IDLE: Event.IDLE_REPORTED,
                                  State.REQUIRES_ACTION: Event.REQUIRES_ACTION_REPORTED}


class StopReason(StrEnum):
    """Why foreground work ended (``$defs.StopReason``; ``_x`` custom reasons stay strings)."""

    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    MAX_TURN_REQUESTS = "max_turn_requests"
    REFUSAL = "refusal"
    CANCELLED = "cancelled"


class ToolStatus(StrEnum):
    """A tool call's status (``$defs.ToolCallStatus``; ``paused`` is sdk-2.4.0's)."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


# A tool that reached one of these is done; one that went to these ran (PERM-11 asks whether
# an answer approved it).
FINAL_TOOL_STATUSES: frozenset[str] = frozenset({ToolStatus.COMPLETED, ToolStatus.FAILED,
                                                 ToolStatus.CANCELLED})
PROCEEDING_TOOL_STATUSES: frozenset[str] = frozenset({ToolStatus.IN_PROGRESS,
                                                      ToolStatus.COMPLETED})


class ConnState(StrEnum):
    """Phases of one connection."""

    AWAITING_INITIALIZE = "awaiting_initialize"
    INITIALIZING = "initializing"
    READY = "ready"
    INCOMPATIBLE = "incompatible"


class ConnEvent(StrEnum):
    """Classified wire messages that move the connection machine."""

    INITIALIZE = "initialize"
    INITIALIZED = "initialized"
    INITIALIZED_OTHER_VERSION = "initialized_other_version"
    INITIALIZE_FAILED = "initialize_failed"
    SESSION_REQUESTED = "session_requested"
    SESSION_CREATED = "session_created"
    SESSION_METHOD_MISSING = "session_method_missing"
    UNKNOWN_SESSION_NAMED = "unknown_session_named"
    AGENT_NAMES_UNKNOWN_SESSION = "agent_names_unknown_session"


class PromptStatus(StrEnum):
    """A prompt the model holds: sent, answered with a success, its user message seen."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    INSERTED = "inserted"


class CancelStatus(StrEnum):
    """The cancel automaton (see :mod:`acp_model.model.session`)."""

    WORK = "W"  # sent while the client saw foreground work
    QUIET = "I"  # sent (or left over) while the session was quiet
    AMBIGUOUS = "A"  # may or may not have been read before the work began


class PermState(StrEnum):
    OPEN = "open"
    WITHDRAWN = "withdrawn"
    ANSWERED = "answered"


class Answer(StrEnum):
    """A permission response, reduced to what the rules care about (``model.permissions``)."""

    ALLOW = "allow"  # an allow_* option was selected
    REJECT = "reject"  # any other offered or unknown option
    CANCELLED = "cancelled"  # the cancelled outcome
    CUSTOM = "custom"  # a custom or future outcome: never approval (PERM-11)
    CUSTOM_OPTION = "custom-option"  # a selected option of a custom (_x) kind
    ERROR = "error"  # a JSON-RPC error response


class ElicitationAction(StrEnum):
    """An ``elicitation/create`` response (``$defs.CreateElicitationResponse``): the user's
    action; a custom or future one is handled as ``cancel`` by the agent (the schema's MUST)."""

    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"
    CUSTOM = "custom"  # a custom (_x) or future action
    ERROR = "error"  # a JSON-RPC error response

    @classmethod
    def of(cls, result: object) -> ElicitationAction:
        """The action a response's result names."""
        action = result.get("action") if isinstance(result, dict) else None
        try:
            return cls(action) if action not in (cls.CUSTOM, cls.ERROR) else cls.CUSTOM
        except ValueError:
            return cls.CUSTOM


class Role(StrEnum):
    """A check's role (a rule's kind, safety or liveness, is ``spec.rules.Kind``): a guard of
    a machine transition, a single-message finding, a liveness obligation judged at the end,
    a fact the fuzzer judges from the process, or a routing decision that hands a message to
    other checks."""

    GUARD = "guard"
    FINDING = "finding"
    OBLIGATION = "obligation"
    PROCESS = "process"
    ROUTE = "route"  # a message routed as another one (session/close as a cancel)


class ErrorCode(IntEnum):
    """JSON-RPC and ACP error codes the rules name (RULES.md RPC-12)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800
    AUTH_REQUIRED = -32000
    RESOURCE_NOT_FOUND = -32002
    UNSUPPORTED_VERSION = -32022  # sdk-2.4.0: no version at or below the requested one


# Requests JSON-RPC 2.0 answers with -32700 / -32600 and id null (unreadable input).
UNREADABLE_CODES = frozenset({ErrorCode.PARSE_ERROR, ErrorCode.INVALID_REQUEST})


class Reads(StrEnum):
    """What a single-message check judges (``@check(reads=...)``): a message kind (a request's
    params, a response's result, a ``session/update`` by its ``sessionUpdate`` kind) or a part
    that several kinds carry (a tool call, content blocks, a plan, a permission subject).

    The monitor hands each message only to the checks that read its kind or a part it carries
    (``model.messages``' dispatch table). Not :class:`Event`: events are the machines'
    classification, made once the session is known and from its state; these kinds are read
    off the message alone, before that.
    """

    # session/update payloads: every one, then one member per sessionUpdate kind checks read
    UPDATE = "session/update"
    # an update's sessionUpdate kind alone: what reads nothing else is decided once per kind
    # a connection meets (``oracle.updates``), per update only for kinds the table lacks
    UPDATE_KIND = "sessionUpdate kind"
    STATE_UPDATE = "state_update"
    USER_MESSAGE = "user_message"
    USER_MESSAGE_CHUNK = "user_message_chunk"
    AGENT_MESSAGE = "agent_message"
    AGENT_MESSAGE_CHUNK = "agent_message_chunk"
    AGENT_THOUGHT = "agent_thought"
    AGENT_THOUGHT_CHUNK = "agent_thought_chunk"
    TOOL_CALL = "tool_call"  # v1's first report of a tool call
    TOOL_CALL_UPDATE = "tool_call_update"
    TOOL_CALL_CONTENT_CHUNK = "tool_call_content_chunk"
    PLAN_UPDATE = "plan_update"
    USAGE_UPDATE = "usage_update"
    AVAILABLE_COMMANDS_UPDATE = "available_commands_update"
    CONFIG_OPTION_UPDATE = "config_option_update"
    TERMINAL_UPDATE = "terminal_update"
    NOTICE = "notice"
    # requests' params and responses' results
    PROMPT_REQUEST = "session/prompt request"
    NEW_SESSION_REQUEST = "session/new request"
    PERMISSION_REQUEST = "session/request_permission request"
    PERMISSION_RESULT = "session/request_permission result"
    INITIALIZE_REQUEST = "initialize request"
    INITIALIZE_RESULT = "initialize result"
    SESSION_RESULT = "session result"  # session/new, /load, /resume's
    CONFIG_RESULT = "session/set_config_option result"
    # JSON-RPC: what the envelope checks (oracle.rpc) and the checks of an exchange read,
    # before or besides a method's own kind
    RECORD = "trace record"  # a line as read (unreadable bytes: no message)
    BATCH = "batch"  # a JSON-RPC batch as a whole (its elements are messages)
    BATCH_ELEMENT = "batch element"  # a message inside a batch
    MESSAGE = "message"  # any message, before its kind is known
    REQUEST = "request"  # any request (a method and an id)
    REQUEST_ID = "request id"  # a request's id, read before its method (valid? in use?)
    NOTIFICATION = "notification"  # any notification (a method, no id)
    RESPONSE = "response"  # any response (a result or an error), with the request it answers
    ANSWERED_AGAIN = "answered again"  # a response to a request its sender answered before
    # a response matched to its open request, judged by that request (``model.answering``):
    # any one, then one member per request kind whose row names it (``Message.answer_reads``)
    ANSWER = "answer"
    INITIALIZE_ANSWER = "initialize answer"
    AUTH_ANSWER = "auth/login or auth/logout answer"
    CONFIG_ANSWER = "session/set_config_option answer"
    PROMPT_ANSWER = "session/prompt answer"
    RESUME_ANSWER = "session/resume answer"
    CLOSE_ANSWER = "session/close answer"
    CANCEL_CONTROL_ANSWER = "tool_call/cancel or terminal/cancel answer"
    # a request judged by what the other side advertised (``model.answering.Asking``): one
    # member per request kind whose row names it (``Message.use_reads``)
    AUTH_USE = "authentication request, as advertised"
    NEW_SESSION_USE = "session/new, as advertised"
    LOAD_USE = "session/load, as advertised"
    RESUME_USE = "session/resume, as advertised"
    CLOSE_USE = "session/close, as advertised"
    CLIENT_METHOD_USE = "a client method, as advertised"  # fs, terminal, elicitation
    CANCEL_CONTROL_USE = "tool_call/cancel or terminal/cancel, as advertised"
    # an update judged by what was advertised or approved before it
    # (``model.answering.Showing``): one member per update kind whose row names it
    # (``Update.use_reads``)
    STATE_USE = "state_update, as advertised"
    TOOL_USE = "a tool call's status, as an allow approved it"
    CONFIG_OPTIONS_USE = "config options, as advertised"  # an update's, a session result's
    NOTICE_USE = "notice, as advertised"
    # parts several kinds carry
    TOOL_REPORT = "tool call"  # a tool call's fields: its updates, a permission request's
    CONTENT = "content blocks"  # a prompt's, a message update's, a tool content item's
    PLAN = "plan"  # a plan_update's plan
    SUBJECT = "permission subject"  # what a permission request asks about (v2)
    CONFIG_OPTIONS = "config options"  # a session result's, a config_option_update's
    COMMANDS = "available commands"  # a session result's, an available_commands_update's
    TERMINAL_OUTPUT = "terminal output"  # bytes: a terminal_output_chunk, an output snapshot
