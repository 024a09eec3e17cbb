"""The client's view of a session, and how each update changes it: pure functions,
``new_view = reduce(view, update)``.

These are the merge rules the lifecycle text defines (RULES.md section 3): message upserts and
chunks keyed by ``messageId`` (MSG-03..MSG-10), tool calls keyed by ``toolCallId`` (TOOL-03..
TOOL-09), plans replaced wholesale per ``planId`` (PLAN-07) and usage snapshots. Inputs are never
mutated: every call returns a new view. The mappings are persistent (``rpds.HashTrieMap``): a
new view shares all but the changed entry with the old one, so the monitor can keep the view
*before* an update for its checks at O(log n) per update, not a copy of a session's history.

Key distinction, easy to get wrong: a *missing* field leaves the value alone, ``null`` clears it,
``[]`` clears content too, and a concrete array replaces everything (including chunk-appended
content). The seed's example: [A] then chunk B gives [A, B]; then [C] gives [C].

Which reducer an update kind takes is a column of its wire-table row (``Update.reduce``: a
:class:`MessageReport`, a :class:`ToolReport` or one of the ``*_update`` functions below), so
this module knows no kind by name; ``model.reducers`` applies the row's and holds the checks
that read the view.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from rpds import HashTrieMap, Queue

from acp_model.model.check import allowance
from acp_model.model.frozen import quick_init
from acp_model.model.vocab import FINAL_TOOL_STATUSES, ToolStatus


class Background(StrEnum):
    """What a background work item is (sdk-2.4.0 ``BackgroundWork``'s ``type``)."""

    TOOL_CALL = "tool_call"
    TERMINAL = "terminal"


class MessageFamily(StrEnum):
    """Whose message a message update is: the family its messageId keeps (ACPM-MSG-FAMILY)."""

    USER = "user"
    AGENT = "agent"
    THOUGHT = "thought"

DEFAULT_TOOL_STATUS = ToolStatus.PENDING  # TOOL-03: a tool call the client never saw starts pending


@quick_init  # rebuilt on every update of a checked trace
@dataclass(frozen=True, slots=True)
class ViewMessage:
    family: str
    content: tuple[Any, ...] = ()
    meta: Any = None  # message-level _meta (chunk _meta never lands here, MSG-09)


@quick_init  # rebuilt on every update of a checked trace
@dataclass(frozen=True, slots=True)
class ToolCall:
    title: Any = None
    kind: Any = "other"
    status: Any = DEFAULT_TOOL_STATUS
    content: tuple[Any, ...] = ()
    locations: tuple[Any, ...] = ()
    raw_input: Any = None
    raw_output: Any = None
    meta: Any = None
    capabilities: Any = None  # sdk-2.4.0: the controls it advertises (cancel)


@dataclass(frozen=True, slots=True)
class Terminal:
    """An agent-owned terminal (sdk-2.4.0 ``terminal_update``): whether it exited, what it
    advertises."""

    exited: bool = False
    capabilities: Any = None


@dataclass(frozen=True, slots=True)
class Usage:
    used: int
    size: int
    cost: Any = None


def _tool_ended(tool: ToolCall) -> str | None:
    status: str | None = tool.status if tool.status in FINAL_TOOL_STATUSES else None
    return status


def _terminal_ended(terminal: Terminal) -> str | None:
    return "exited" if terminal.exited else None


@dataclass(frozen=True, slots=True)
class Control:
    """What a control request (sdk-2.4.0 ``tool_call/cancel``, ``terminal/cancel``) names in
    the client's view: the param that holds its target, the target's noun in a finding, where
    the view holds such targets and how one ended (None: it has not). The wire table's row
    carries it, so a new control is a row, not a branch on its method name."""

    target_param: str
    noun: str
    held: Callable[[SessionView], Mapping[Any, Any]]
    ended: Callable[[Any], str | None]


TOOL_CALL_CONTROL = Control("toolCallId", "tool call", lambda view: view.tools, _tool_ended)
TERMINAL_CONTROL = Control("terminalId", "terminal", lambda view: view.terminals,
                           _terminal_ended)


@quick_init  # rebuilt on every update of a checked trace
@dataclass(frozen=True, slots=True)
class SessionView:
    """What a client would render for one session."""

    messages: HashTrieMap = field(default_factory=HashTrieMap)  # messageId -> ViewMessage
    order: Queue = field(default_factory=Queue)  # message ids in first-seen order
    tools: HashTrieMap = field(default_factory=HashTrieMap)  # toolCallId -> ToolCall
    recent_tools: tuple[str, ...] = ()  # the last few tool calls reported (for summaries)
    plans: HashTrieMap = field(default_factory=HashTrieMap)  # planId -> plan
    usage: Usage | None = None
    state: str | None = None
    stop_reason: Any = None
    # The latest background snapshot, as (type, id) items (None: none reported or malformed),
    # and whether any snapshot ever listed an item (then every state update must carry one).
    background: tuple[tuple[str, str], ...] | None = None
    background_listed: bool = False
    terminals: HashTrieMap = field(default_factory=HashTrieMap)  # terminalId -> Terminal


def _content_patch(current: tuple[Any, ...], update: dict[str, Any], key: str = "content"
                   ) -> tuple[Any, ...]:
    """Omitted keeps, null or [] clears, an array replaces (MSG-04..06, TOOL-05)."""
    if key not in update:
        return current
    value = update[key]
    if value is None:
        return ()
    if isinstance(value, list):
        return tuple(value)
    return current  # not an array: the schema rejects it; keep the last good content


def _meta_patch(current: Any, update: dict[str, Any]) -> Any:
    return update.get("_meta", current)


def _persistent(mapping: Mapping[str, Any]) -> HashTrieMap:
    return mapping if isinstance(mapping, HashTrieMap) else HashTrieMap(mapping)


@allowance("MSG-03", "MSG-04", "MSG-05", "MSG-06", "MSG-07", "MSG-08", "MSG-09", "MSG-10")
def reduce_message(messages: Mapping[str, ViewMessage], update: dict[str, Any], family: str,
                   *, chunk: bool = False) -> HashTrieMap:
    """Apply one upsert (``chunk``: one appended block) of a ``family`` message; returns a new
    mapping."""
    messages = _persistent(messages)
    mid = update.get("messageId")
    if not isinstance(mid, str):
        return messages
    current = messages.get(mid) or ViewMessage(family)
    if chunk:
        block = update.get("content")
        new = ViewMessage(current.family, (*current.content, block), current.meta) \
            if block is not None \
            else current
    else:
        new = ViewMessage(current.family, _content_patch(current.content, update),
                      _meta_patch(current.meta, update))
    return messages.insert(mid, new)


@allowance("TOOL-03", "TOOL-04", "TOOL-05", "TOOL-06", "TOOL-07", "TOOL-08", "TOOL-09")
def reduce_tool_call(tools: Mapping[str, ToolCall], update: dict[str, Any], *,
                     chunk: bool = False) -> HashTrieMap:
    """Apply a tool call's field patches (a tool_call_update's, a permission request's tool
    call) or, ``chunk``, a content item it appends (a tool_call_content_chunk's)."""
    tools = _persistent(tools)
    tid = update.get("toolCallId")
    if not isinstance(tid, str):
        return tools
    c = tools.get(tid) or ToolCall()
    # built field by field, not with dataclasses.replace: this runs on every tool report
    if chunk:
        item = update.get("content")
        new = ToolCall(c.title, c.kind, c.status, (*c.content, item), c.locations, c.raw_input,
                       c.raw_output, c.meta, c.capabilities) if item is not None else c
    else:
        # a field present replaces, null included (null unsets; TOOL-04); absent keeps
        new = ToolCall(update.get("title", c.title), update.get("kind", c.kind),
                       update.get("status", c.status), _content_patch(c.content, update),
                       _content_patch(c.locations, update, "locations"),
                       update.get("rawInput", c.raw_input), update.get("rawOutput", c.raw_output),
                       _meta_patch(c.meta, update), update.get("capabilities", c.capabilities))
    return tools.insert(tid, new)


@allowance("PLAN-07")
def reduce_plan(plans: Mapping[str, Any], update: dict[str, Any]) -> HashTrieMap:
    """Each plan_update replaces that plan wholesale (never merged, PLAN-07)."""
    plans = _persistent(plans)
    plan = update.get("plan")
    if not isinstance(plan, dict) or not isinstance(plan.get("planId"), str):
        return plans
    return plans.insert(plan["planId"], plan)


def reduce_usage(usage: Usage | None, update: dict[str, Any]) -> Usage | None:
    """A snapshot: used and size replace; cost object replaces, null clears, omitted keeps."""
    used, size = update.get("used"), update.get("size")
    if not isinstance(used, int) or not isinstance(size, int):
        return usage
    cost = usage.cost if usage is not None else None
    if "cost" in update:
        cost = update["cost"]
    return Usage(used, size, cost)



def reduce_terminal(terminals: Mapping[str, Terminal], update: dict[str, Any]) -> HashTrieMap:
    """A terminal_update is an upsert (omitted keeps, null clears, a value replaces); an
    exitStatus object marks the terminal exited (tool-calls.mdx §Display-only Terminals)."""
    terminals = _persistent(terminals)
    tid = update.get("terminalId")
    if not isinstance(tid, str):
        return terminals
    t = terminals.get(tid) or Terminal()
    exited = isinstance(update["exitStatus"], dict) if "exitStatus" in update else t.exited
    return terminals.insert(tid, Terminal(exited, update.get("capabilities", t.capabilities)))


RECENT_TOOLS = 8  # tool calls a violation's view summary lists


def _recent(recent: tuple[str, ...], tid: Any) -> tuple[str, ...]:
    if not isinstance(tid, str) or (recent and recent[-1] == tid):
        return recent
    return (*(t for t in recent if t != tid), tid)[-RECENT_TOOLS:]


def background_items(value: Any) -> tuple[tuple[str, str], ...] | None:
    """A background list as (type, id) pairs; None when omitted, null or malformed (the
    newer revision: a malformed list is treated as not reported)."""
    if not isinstance(value, list):
        return None
    out = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            return None
        ident = item.get("toolCallId") if item["type"] == Background.TOOL_CALL else \
            item.get("terminalId") if item["type"] == Background.TERMINAL else ""
        out.append((item["type"], ident if isinstance(ident, str) else ""))
    return tuple(out)


@allowance("PERM-03", "PERM-04")
def apply_permission_subject(view: SessionView, params: dict[str, Any]) -> SessionView:
    """A tool_call subject of a permission request patches the tool call like an update
    (PERM-04 / A-24); the request's own title and description never do (PERM-03)."""
    subject = params.get("subject")
    tool = params.get("toolCall")  # v1: the request's tool call, a ToolCallUpdate
    if isinstance(subject, dict) and subject.get("type") == "tool_call":
        tool = subject.get("toolCall")
    if isinstance(tool, dict):
        return replace(view, tools=reduce_tool_call(view.tools, tool),
                       recent_tools=_recent(view.recent_tools, tool.get("toolCallId")))
    return view


def rendered_text(message: ViewMessage) -> str:
    """Concatenated text of a message's text blocks (handy in tests and notebooks)."""
    return "".join(b.get("text", "") for b in message.content
                   if isinstance(b, dict) and b.get("type") == "text")


def tool_status_after(view: SessionView, update: dict[str, Any]) -> str | None:
    """The status a tool_call_update sets, as the client then shows it (None: it sets none).

    ``status: null`` unsets the value (TOOL-04): the client falls back to its default.
    """
    if "status" not in update:
        return None
    status = update["status"]
    return DEFAULT_TOOL_STATUS if status is None else status


def view_summary(view: SessionView) -> dict[str, Any]:
    """What the client shows of a session, in a few numbers (attached to violations)."""
    families: dict[str, int] = {}
    for m in view.messages.values():
        families[m.family] = families.get(m.family, 0) + 1
    return {"state": view.state, "stop_reason": view.stop_reason, "messages": families,
            "tool_calls": {tid: view.tools[tid].status for tid in view.recent_tools},
            "plans": len(view.plans)}



# --- what each update kind does to the view (a wire-table row's ``reduce``) ---------------------
# The new views are built field by field rather than with ``dataclasses.replace`` where they run
# on every update of a checked trace (messages, tool calls, states): ``replace`` costs twice as
# much.

Reduce = Callable[[SessionView, dict[str, Any]], SessionView]  # (view, update) -> new view


@dataclass(frozen=True, slots=True)
class MessageReport:
    """A message update: an upsert (``chunk``: a block appended) of a ``family`` message, in
    the order its messageId was first seen."""

    family: MessageFamily
    chunk: bool = False

    def __call__(self, v: SessionView, update: dict[str, Any]) -> SessionView:
        mid = update.get("messageId")
        order = v.order if mid in v.messages or not isinstance(mid, str) \
            else v.order.enqueue(mid)
        return SessionView(reduce_message(v.messages, update, self.family, chunk=self.chunk),
                           order, v.tools, v.recent_tools, v.plans, v.usage, v.state,
                           v.stop_reason, v.background, v.background_listed, v.terminals)


@dataclass(frozen=True, slots=True)
class ToolReport:
    """A tool call report: its field patches (``chunk``: a content item appended)."""

    chunk: bool = False

    @property
    def part(self) -> str:
        """What of a tool call it reports (``Payload.update`` of its event): "update" or "chunk"."""
        return "chunk" if self.chunk else "update"

    def __call__(self, v: SessionView, update: dict[str, Any]) -> SessionView:
        return SessionView(v.messages, v.order,
                           reduce_tool_call(v.tools, update, chunk=self.chunk),
                           _recent(v.recent_tools, update.get("toolCallId")), v.plans,
                           v.usage, v.state, v.stop_reason, v.background, v.background_listed,
                           v.terminals)


def plan_update(v: SessionView, update: dict[str, Any]) -> SessionView:
    return SessionView(v.messages, v.order, v.tools, v.recent_tools,
                       reduce_plan(v.plans, update), v.usage, v.state, v.stop_reason,
                       v.background, v.background_listed, v.terminals)


def usage_update(v: SessionView, update: dict[str, Any]) -> SessionView:
    return SessionView(v.messages, v.order, v.tools, v.recent_tools, v.plans,
                       reduce_usage(v.usage, update), v.state, v.stop_reason, v.background,
                       v.background_listed, v.terminals)


def terminal_update(v: SessionView, update: dict[str, Any]) -> SessionView:
    return replace(v, terminals=reduce_terminal(v.terminals, update))


def state_update(v: SessionView, update: dict[str, Any]) -> SessionView:
    """The reported state, an idle's stop reason, and the background work it lists."""
    state = update.get("state")
    reason = update.get("stopReason") if state == "idle" else v.stop_reason
    items = background_items(update.get("background"))
    if items is None:
        return SessionView(v.messages, v.order, v.tools, v.recent_tools, v.plans, v.usage,
                           state, reason, v.background, v.background_listed, v.terminals)
    return SessionView(v.messages, v.order, v.tools, v.recent_tools, v.plans, v.usage,
                       state, reason, items, v.background_listed or bool(items), v.terminals)
