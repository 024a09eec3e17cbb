"""The client's view as the oracle keeps it, and what it lets the oracle judge.

An update is applied to a session's view by its kind's wire-table row (``Update.reduce``,
which the oracle's plan of the kind holds: the merge rules live in
:mod:`acp_model.model.views`, which knows no kind by name). The checks below read the view
*before* an update (is this tool call known, which family did this messageId have, was
background work listed) and are dispatched by the kinds they declare, like the
single-message checks.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from functools import cache
from typing import Any

from acp_model.model import wire_table
from acp_model.model.check import check, dispatch
from acp_model.model.messages import Entry, Findings, Found
from acp_model.model.views import (
    Background,
    Control,
    SessionView,
    background_items,
    reduce_terminal,
    reduce_tool_call,
    view_summary,
)
from acp_model.model.vocab import FINAL_TOOL_STATUSES, Reads, Role

# the view, read through this module by the oracle's parts that keep one per session
__all__ = ["SessionView", "family_kept", "judge_permission", "view_checks", "view_summary"]

UPDATE_KINDS = wire_table.update_reads()  # sessionUpdate kind -> what its checks read
MESSAGE_FAMILY = wire_table.families()  # message update kind -> its family
_MESSAGE_KINDS = [UPDATE_KINDS[kind] for kind in MESSAGE_FAMILY]  # ACPM-MSG-FAMILY reads them
_ROWS = wire_table.updates()


# --- what the view lets the oracle judge --------------------------------------------------------

@check("ACPM-MSG-FAMILY", role=Role.FINDING, reads=_MESSAGE_KINDS)
def family_kept(view: SessionView, update: dict[str, Any]) -> Found:
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
def tool_announced(view: SessionView, update: dict[str, Any]) -> Found:
    """A content chunk names a tool call some tool_call_update already reported."""
    found: list[tuple[str, str]] = []
    tid = update.get("toolCallId")
    if isinstance(tid, str) and tid not in view.tools:
        found.append(("params/update/toolCallId",
                      f"tool_call_content_chunk for toolCallId {tid!r}, which no tool_call_update "
                      "reported"))
    return found or None


@check("V1-TOOL-01", role=Role.FINDING, reads=[Reads.TOOL_CALL_UPDATE])
def tool_update_announced(view: SessionView, update: dict[str, Any]
                          ) -> Found:
    """v1: a tool_call_update updates a tool call some earlier report announced."""
    found: list[tuple[str, str]] = []
    tid = update.get("toolCallId")
    if isinstance(tid, str) and tid not in view.tools:
        found.append(("params/update/toolCallId",
                      f"tool_call_update for toolCallId {tid!r}, which no tool_call reported (v1 "
                      "announces a tool call with tool_call; an update is to an existing one)"))
    return found or None


# --- background work snapshots (the sdk-2.4.0 revision) ----------------------------------------

@check("SDK-BG-01", role=Role.FINDING, reads=[Reads.STATE_UPDATE])
def background_on_every_update(view: SessionView, update: dict[str, Any]
                               ) -> Found:
    """Once background work was listed, every state update carries the background list."""
    found: list[tuple[str, str]] = []
    if view.background_listed and background_items(update.get("background")) is None:
        found.append(("params/update/background",
                      "an earlier state update of this session listed background work; this one "
                      "carries no (valid) background list"))
    return found or None


@check("SDK-BG-02", role=Role.FINDING, reads=[Reads.STATE_UPDATE])
def background_items_announced(view: SessionView, update: dict[str, Any]
                               ) -> Found:
    """A background tool call (terminal) was reported, by a tool_call_update (a
    terminal_update), before a snapshot lists it."""
    found: list[tuple[str, str]] = []
    for n, (kind, ident) in enumerate(background_items(update.get("background")) or ()):
        if kind == Background.TOOL_CALL and ident not in view.tools:
            found.append((f"params/update/background/{n}",
                          f"background lists tool call {ident!r}, which no tool_call_update "
                          "reported"))
        elif kind == Background.TERMINAL and ident not in view.terminals:
            found.append((f"params/update/background/{n}",
                          f"background lists terminal {ident!r}, which no terminal_update "
                          "reported"))
    return found or None


@check("SDK-BG-03", role=Role.FINDING, reads=[Reads.STATE_UPDATE])
def background_removed_when_final(view: SessionView, update: dict[str, Any]
                                  ) -> Found:
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
        if kind == Background.TOOL_CALL and tool is not None \
                and tool.status not in FINAL_TOOL_STATUSES:
            found.append(("params/update/background",
                          f"tool call {ident!r} left the background list while its status was "
                          f"{tool.status!r}: its final status must come first"))
        elif kind == Background.TERMINAL and terminal is not None and not terminal.exited:
            found.append(("params/update/background",
                          f"terminal {ident!r} left the background list before a terminal_update "
                          "reported its exitStatus"))
    return found or None


def cancel_advertised(capabilities: Any) -> bool:
    """Does a tool call's (terminal's) ``capabilities`` advertise cancel (an object)?"""
    return isinstance(capabilities, dict) and isinstance(capabilities.get("cancel"), dict)


def cancel_target(view: SessionView | None, control: Control, target: Any
                  ) -> tuple[bool | None, str | None]:
    """What the client's view shows of the target of a control request (its row's
    ``control``: a tool call, a terminal): does it advertise cancel (None: no update reported
    it; SDK-TOOL-02), and how it ended (None: it has not; SDK-TOOL-03)."""
    held = None if view is None else control.held(view)
    found = held.get(target) if held is not None and isinstance(target, Hashable) else None
    if found is None:
        return None, None
    return cancel_advertised(found.capabilities), control.ended(found)


def _cancel_kept_at_the_end(ended_before: bool, capabilities_before: Any, ended: bool,
                            capabilities: Any) -> bool:
    """SDK-TOOL-01's finding, for a tool call or a terminal: this update ends it while it
    still advertises cancel, and no earlier end did already (found once)."""
    return ended and cancel_advertised(capabilities) \
        and not (ended_before and cancel_advertised(capabilities_before))


@check("SDK-TOOL-01", role=Role.FINDING, reads=[Reads.TOOL_CALL_UPDATE])
def cancel_withdrawn_at_the_end(view: SessionView, update: dict[str, Any]
                                ) -> Found:
    """A tool call that reaches a final status stops advertising capabilities.cancel."""
    found: list[tuple[str, str]] = []
    ident = update.get("toolCallId")
    if not isinstance(ident, str):
        return found or None
    before = view.tools.get(ident)
    after = reduce_tool_call(view.tools, update)[ident]
    if _cancel_kept_at_the_end(
            before is not None and before.status in FINAL_TOOL_STATUSES,
            before.capabilities if before is not None else None,
            after.status in FINAL_TOOL_STATUSES, after.capabilities):
        found.append(("params/update/capabilities",
                      f"tool call {ident!r} reached status {after.status!r} and still advertises "
                      "capabilities.cancel"))
    return found or None


@check("SDK-TOOL-01", role=Role.FINDING, reads=[Reads.TERMINAL_UPDATE])
def terminal_cancel_withdrawn_at_exit(view: SessionView, update: dict[str, Any]
                                      ) -> Found:
    """A terminal that exits stops advertising capabilities.cancel."""
    found: list[tuple[str, str]] = []
    ident = update.get("terminalId")
    if not isinstance(ident, str):
        return found or None
    before = view.terminals.get(ident)
    after = reduce_terminal(view.terminals, update).get(ident)
    if after is not None and _cancel_kept_at_the_end(
            before is not None and before.exited,
            before.capabilities if before is not None else None,
            after.exited, after.capabilities):
        found.append(("params/update/capabilities",
                      f"terminal {ident!r} exited and still advertises capabilities.cancel"))
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
                           ) -> Found:
    """A permission request that is the first report of its tool call gives its title."""
    found: list[tuple[str, str]] = []
    found.extend(_unshown_tool(view, params))
    return found or None


@check("V1-TOOL-01", role=Role.FINDING, reads=[Reads.PERMISSION_REQUEST])
def permission_tool_shown(view: SessionView, params: dict[str, Any]
                          ) -> Found:
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


def view_checks(rev: str, kind: Any, *, family: bool = True) -> Entry:
    """The dispatch entry of the view-based checks reading an update of ``kind`` under
    ``rev`` (``family``: False when the reuse of a messageId was already judged as a
    replay's, SESS-08: one cause, one failure, so ACPM-MSG-FAMILY does not judge it again),
    one static tuple per kind (the oracle's plan of a kind holds it: ``oracle.updates``)."""
    reads = UPDATE_KINDS.get(kind) if isinstance(kind, str) else None
    checks = dispatch(__name__, rev).get(reads, ()) if reads is not None else ()
    return checks if family else _without_family(checks)


@cache
def _without_family(checks: Entry) -> Entry:
    """A dispatch entry without ACPM-MSG-FAMILY (one static tuple per entry: the report's
    counts are expanded from the entries run)."""
    return tuple(c for c in checks if c[0] is not family_kept)
