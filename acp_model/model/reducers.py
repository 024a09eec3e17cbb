"""Client-side views of a session, as pure functions: ``new_view = reduce(view, update)``.

These are the merge rules the lifecycle text defines (RULES.md section 3): message upserts and
chunks keyed by ``messageId`` (MSG-03..MSG-10), tool calls keyed by ``toolCallId`` (TOOL-03..
TOOL-09), plans replaced wholesale per ``planId`` (PLAN-07) and usage snapshots. Inputs are never
mutated: every call returns a new view. The mappings are persistent (``rpds.HashTrieMap``): a
new view shares all but the changed entry with the old one, so the monitor can keep the view
*before* an update for its checks at O(log n) per update, not a copy of a session's history.

Key distinction, easy to get wrong: a *missing* field leaves the value alone, ``null`` clears it,
``[]`` clears content too, and a concrete array replaces everything (including chunk-appended
content). The seed's example: [A] then chunk B gives [A, B]; then [C] gives [C].
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from rpds import HashTrieMap, Queue

from acp_model.model import wire_table
from acp_model.model.check import allowance, check, dispatch
from acp_model.model.messages import Entry, Findings
from acp_model.model.vocab import FINAL_TOOL_STATUSES, Reads, Role, ToolStatus

UPDATE_KINDS = wire_table.update_reads()  # sessionUpdate kind -> what its checks read
MESSAGE_FAMILY = wire_table.families()  # message update kind -> its family
_MESSAGE_KINDS = [UPDATE_KINDS[kind] for kind in MESSAGE_FAMILY]  # ACPM-MSG-FAMILY reads them
_TOOL_KINDS = wire_table.tool_kinds()
_UNSET: Any = object()
DEFAULT_TOOL_STATUS = ToolStatus.PENDING  # TOOL-03: a tool call the client never saw starts pending


@dataclass(frozen=True, slots=True)
class ViewMessage:
    family: str
    content: tuple[Any, ...] = ()
    meta: Any = None  # message-level _meta (chunk _meta never lands here, MSG-09)


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
def reduce_message(messages: Mapping[str, ViewMessage], update: dict[str, Any]) -> HashTrieMap:
    """Apply one message upsert or chunk; returns a new mapping."""
    messages = _persistent(messages)
    kind = update.get("sessionUpdate", "")
    family = MESSAGE_FAMILY.get(kind)
    mid = update.get("messageId")
    if family is None or not isinstance(mid, str):
        return messages
    current = messages.get(mid) or ViewMessage(family)
    if kind.endswith("_chunk"):
        block = update.get("content")
        new = ViewMessage(current.family, (*current.content, block), current.meta) \
            if block is not None \
            else current
    else:
        new = ViewMessage(current.family, _content_patch(current.content, update),
                      _meta_patch(current.meta, update))
    return messages.insert(mid, new)


@allowance("TOOL-03", "TOOL-04", "TOOL-05", "TOOL-06", "TOOL-07", "TOOL-08", "TOOL-09")
def reduce_tool_call(tools: Mapping[str, ToolCall], update: dict[str, Any]) -> HashTrieMap:
    """Apply a tool_call_update (field patches) or a tool_call_content_chunk (append)."""
    tools = _persistent(tools)
    tid = update.get("toolCallId")
    if not isinstance(tid, str):
        return tools
    c = tools.get(tid) or ToolCall()
    # built field by field, not with dataclasses.replace: this runs on every tool report
    if update.get("sessionUpdate") == "tool_call_content_chunk":
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


def reduce_session(view: SessionView, update: dict[str, Any]) -> SessionView:
    """Route one ``session/update`` payload to the reducer that owns it.

    The new views are built field by field rather than with ``dataclasses.replace``: this runs
    on every update of a checked trace, and ``replace`` costs twice as much.
    """
    v = view
    kind = update.get("sessionUpdate")
    if kind in MESSAGE_FAMILY:
        mid = update.get("messageId")
        order = v.order if mid in v.messages or not isinstance(mid, str) \
            else v.order.enqueue(mid)
        return SessionView(reduce_message(v.messages, update), order, v.tools, v.recent_tools,
                           v.plans, v.usage, v.state, v.stop_reason, v.background,
                           v.background_listed, v.terminals)
    if kind in _TOOL_KINDS:
        return SessionView(v.messages, v.order, reduce_tool_call(v.tools, update),
                           _recent(v.recent_tools, update.get("toolCallId")), v.plans,
                           v.usage, v.state, v.stop_reason, v.background, v.background_listed,
                           v.terminals)
    if kind == "plan_update":
        return replace(v, plans=reduce_plan(v.plans, update))
    if kind == "usage_update":
        return replace(v, usage=reduce_usage(v.usage, update))
    if kind == "state_update":
        state = update.get("state")
        reason = update.get("stopReason") if state == "idle" else v.stop_reason
        items = background_items(update.get("background"))
        if items is None:
            return SessionView(v.messages, v.order, v.tools, v.recent_tools, v.plans, v.usage,
                               state, reason, v.background, v.background_listed, v.terminals)
        return SessionView(v.messages, v.order, v.tools, v.recent_tools, v.plans, v.usage,
                           state, reason, items, v.background_listed or bool(items),
                           v.terminals)
    if kind == "terminal_update":
        return replace(v, terminals=reduce_terminal(v.terminals, update))
    return v


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
        ident = item.get("toolCallId") if item["type"] == "tool_call" else \
            item.get("terminalId") if item["type"] == "terminal" else ""
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


# --- what the view lets the oracle judge --------------------------------------------------------

@check("ACPM-MSG-FAMILY", role=Role.FINDING, reads=_MESSAGE_KINDS)
def family_kept(view: SessionView, update: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A messageId keeps the family it was first reported with."""
    found: list[tuple[str, str]] = []
    family = MESSAGE_FAMILY.get(update.get("sessionUpdate", ""))
    known = view.messages.get(update.get("messageId"))  # type: ignore[arg-type]
    if family is not None and known is not None and known.family != family:
        found.append(("params/update/messageId",
                      f"messageId {update.get('messageId')!r} was first a {known.family} message; "
                      f"this {update.get('sessionUpdate')} reuses it for a {family} message"))
    return found or None


@check("TOOL-01", role=Role.FINDING, reads=[Reads.TOOL_CALL_CONTENT_CHUNK])
def tool_announced(view: SessionView, update: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A content chunk names a tool call some tool_call_update already reported."""
    found: list[tuple[str, str]] = []
    tid = update.get("toolCallId")
    if update.get("sessionUpdate") == "tool_call_content_chunk" and isinstance(tid, str) \
            and tid not in view.tools:
        found.append(("params/update/toolCallId",
                      f"tool_call_content_chunk for toolCallId {tid!r}, which no tool_call_update "
                      "reported"))
    return found or None


@check("V1-TOOL-01", role=Role.FINDING, reads=[Reads.TOOL_CALL_UPDATE])
def tool_update_announced(view: SessionView, update: dict[str, Any]
                          ) -> Iterator[tuple[str, str]]:
    """v1: a tool_call_update updates a tool call some earlier report announced."""
    found: list[tuple[str, str]] = []
    tid = update.get("toolCallId")
    if update.get("sessionUpdate") == "tool_call_update" and isinstance(tid, str) \
            and tid not in view.tools:
        found.append(("params/update/toolCallId",
                      f"tool_call_update for toolCallId {tid!r}, which no tool_call reported (v1 "
                      "announces a tool call with tool_call; an update is to an existing one)"))
    return found or None


# --- background work snapshots (the sdk-2.4.0 revision) ----------------------------------------

@check("SDK-BG-01", role=Role.FINDING, reads=[Reads.STATE_UPDATE])
def background_on_every_update(view: SessionView, update: dict[str, Any]
                               ) -> Iterator[tuple[str, str]]:
    """Once background work was listed, every state update carries the background list."""
    found: list[tuple[str, str]] = []
    if view.background_listed and background_items(update.get("background")) is None:
        found.append(("params/update/background",
                      "an earlier state update of this session listed background work; this one "
                      "carries no (valid) background list"))
    return found or None


@check("SDK-BG-02", role=Role.FINDING, reads=[Reads.STATE_UPDATE])
def background_items_announced(view: SessionView, update: dict[str, Any]
                               ) -> Iterator[tuple[str, str]]:
    """A background tool call (terminal) was reported, by a tool_call_update (a
    terminal_update), before a snapshot lists it."""
    found: list[tuple[str, str]] = []
    for n, (kind, ident) in enumerate(background_items(update.get("background")) or ()):
        if kind == "tool_call" and ident not in view.tools:
            found.append((f"params/update/background/{n}",
                          f"background lists tool call {ident!r}, which no tool_call_update "
                          "reported"))
        elif kind == "terminal" and ident not in view.terminals:
            found.append((f"params/update/background/{n}",
                          f"background lists terminal {ident!r}, which no terminal_update "
                          "reported"))
    return found or None


@check("SDK-BG-03", role=Role.FINDING, reads=[Reads.STATE_UPDATE])
def background_removed_when_final(view: SessionView, update: dict[str, Any]
                                  ) -> Iterator[tuple[str, str]]:
    """A tool call leaves the background list only after its final status was reported."""
    found: list[tuple[str, str]] = []
    items = background_items(update.get("background"))
    if items is None or view.background is None:
        return found or None
    for kind, ident in view.background:
        if (kind, ident) in items:
            continue
        tool = view.tools.get(ident)
        terminal = view.terminals.get(ident)
        if kind == "tool_call" and tool is not None and tool.status not in FINAL_TOOL_STATUSES:
            found.append(("params/update/background",
                          f"tool call {ident!r} left the background list while its status was "
                          f"{tool.status!r}: its final status must come first"))
        elif kind == "terminal" and terminal is not None and not terminal.exited:
            found.append(("params/update/background",
                          f"terminal {ident!r} left the background list before a terminal_update "
                          "reported its exitStatus"))
    return found or None


def cancel_advertised(capabilities: Any) -> bool:
    """Does a tool call's (terminal's) ``capabilities`` advertise cancel (an object)?"""
    return isinstance(capabilities, dict) and isinstance(capabilities.get("cancel"), dict)


@check("SDK-TOOL-01", role=Role.FINDING, reads=[Reads.TOOL_CALL_UPDATE, Reads.TERMINAL_UPDATE])
def cancel_withdrawn_at_the_end(view: SessionView, update: dict[str, Any]
                                ) -> Iterator[tuple[str, str]]:
    """A tool call that reaches a final status (a terminal that exits) stops advertising
    capabilities.cancel."""
    found: list[tuple[str, str]] = []
    if update.get("sessionUpdate") == "terminal_update":
        ident = update.get("terminalId")
        before_t = view.terminals.get(ident) if isinstance(ident, str) else None
        after_t = reduce_terminal(view.terminals, update).get(ident) \
            if isinstance(ident, str) else None
        ended_before = before_t is not None and before_t.exited \
            and cancel_advertised(before_t.capabilities)
        if after_t is not None and after_t.exited and cancel_advertised(after_t.capabilities) \
                and not ended_before:
            found.append(("params/update/capabilities",
                          f"terminal {ident!r} exited and still advertises capabilities.cancel"))
        return found or None
    ident = update.get("toolCallId")
    if not isinstance(ident, str):
        return found or None
    before = view.tools.get(ident)
    after = reduce_tool_call(view.tools, update)[ident]
    was = before is not None and before.status in FINAL_TOOL_STATUSES \
        and cancel_advertised(before.capabilities)
    if after.status in FINAL_TOOL_STATUSES and cancel_advertised(after.capabilities) \
            and not was:
        found.append(("params/update/capabilities",
                      f"tool call {ident!r} reached status {after.status!r} and still advertises "
                      "capabilities.cancel"))
    return found or None



def _unshown_tool(view: SessionView, params: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A permission request's tool call that no update announced and that has no title: the
    client has nothing to show of what it is asked to allow."""
    path, tool = "params/toolCall", params.get("toolCall")  # v1: a ToolCallUpdate
    subject = params.get("subject")
    if isinstance(subject, dict) and subject.get("type") == "tool_call":
        path, tool = "params/subject/toolCall", subject.get("toolCall")
    tid = tool.get("toolCallId") if isinstance(tool, dict) else None
    if isinstance(tid, str) and tid not in view.tools and not tool.get("title"):
        yield (f"{path}/toolCallId",
               f"a permission request for tool call {tid!r}, which no update announced and "
               "which it gives no title: the client has nothing to show of what it is asked "
               "to allow")


@check("TOOL-02", role=Role.FINDING, reads=[Reads.PERMISSION_REQUEST])
def permission_tool_titled(view: SessionView, params: dict[str, Any]
                           ) -> Iterator[tuple[str, str]]:
    """A permission request that is the first report of its tool call gives its title."""
    found: list[tuple[str, str]] = []
    found.extend(_unshown_tool(view, params))
    return found or None


@check("V1-TOOL-01", role=Role.FINDING, reads=[Reads.PERMISSION_REQUEST])
def permission_tool_shown(view: SessionView, params: dict[str, Any]
                          ) -> Iterator[tuple[str, str]]:
    """v1: a permission request names a tool call some update announced, or gives its title:
    otherwise the client has nothing to show of what it is asked to allow."""
    found: list[tuple[str, str]] = []
    found.extend(_unshown_tool(view, params))
    return found or None


def judge_permission(view: SessionView, params: Any, rev: str = "seed") -> Findings:
    """The view-based checks of a permission request (``view``: before it), those of the
    revision's rules."""
    out = Findings(rev=rev)
    if isinstance(params, dict):
        out.apply(dispatch(__name__, rev).get(Reads.PERMISSION_REQUEST, ()), view, params)
    return out


def judge(view: SessionView, update: dict[str, Any], rev: str = "seed", *,
          family: bool = True) -> Findings:
    """The view-based checks reading this session/update payload's kind (``view``: before
    it); the background checks belong to the sdk-2.4.0 revision (``Rule.revisions``).
    ``family``: False when the reuse of a messageId was already judged as a replay's
    (SESS-08): one cause, one failure, so ACPM-MSG-FAMILY does not judge it again."""
    out = Findings(rev=rev)
    kind = update.get("sessionUpdate")
    reads = UPDATE_KINDS.get(kind) if isinstance(kind, str) else None
    checks = dispatch(__name__, rev).get(reads, ()) if reads is not None else ()
    out.apply(checks if family else _without_family(checks), view, update)
    return out


@cache
def _without_family(checks: Entry) -> Entry:
    """A dispatch entry without ACPM-MSG-FAMILY (one static tuple per entry: the report's
    counts are expanded from the entries run)."""
    return tuple(c for c in checks if c[0] is not family_kept)
