"""What the explorer tries an event with: one :class:`Argument` per kind of argument a wire
table ``Form`` ranges over (its ``over``, a :class:`~acp_model.model.wire_table.Over`): the
arguments a session offers in a configuration, the payload fields one fills, and how a label
shows it. The table names the kind (the model may not import the explorer); what the kind
means is here, once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from acp_model.explorer.bounds import TOOL_IDS, Bounds
from acp_model.model.events import Payload
from acp_model.model.session import SessionModel
from acp_model.model.vocab import Answer, ElicitationAction, PermState, PromptStatus
from acp_model.model.wire_table import Over

# Plain references to the members compared on every node (an enum member read through its
# class goes through the enum type's __getattr__ hook, several times slower).
_PENDING, _ACCEPTED = PromptStatus.PENDING, PromptStatus.ACCEPTED
_OPEN, _WITHDRAWN, _ANSWERED = PermState.OPEN, PermState.WITHDRAWN, PermState.ANSWERED
_ALLOW, _REJECT, _CANCELLED, _ERROR = Answer.ALLOW, Answer.REJECT, Answer.CANCELLED, Answer.ERROR
_ACTIONS = (ElicitationAction.ACCEPT, ElicitationAction.DECLINE, ElicitationAction.CANCEL)


def _pending(m: SessionModel, bounds: Bounds) -> list[int]:
    return [k for k, p in enumerate(m.queue.prompts) if p.status == _PENDING]


def _oldest_pending(m: SessionModel, bounds: Bounds) -> tuple[int, ...]:
    for k, p in enumerate(m.queue.prompts):
        if p.status == _PENDING:
            return (k,)
    return ()


def _echo(m: SessionModel, bounds: Bounds) -> tuple[None, ...]:
    pending = 0
    for p in m.queue.prompts:
        if p.status == _ACCEPTED:
            return (None,)
        pending += p.status == _PENDING
    return (None,) if not bounds.lean and m.queue.early_user_messages < pending else ()


def _answers(m: SessionModel, bounds: Bounds) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for k, perm in enumerate(m.perm_book.perms.values()):
        if perm.state == _ANSWERED or perm.elicitation:
            continue
        out += [(k, _ALLOW), (k, _REJECT), (k, _CANCELLED)]
        if perm.state == _WITHDRAWN:
            out.append((k, _ERROR))
    return out


def _elicitation_answers(m: SessionModel, bounds: Bounds) -> list[tuple[int, str]]:
    """Each elicitation not answered yet, by position, with each action of the schema."""
    return [(k, action) for k, perm in enumerate(m.perm_book.perms.values())
            if perm.elicitation and perm.state != _ANSWERED for action in _ACTIONS]


def _tools(m: SessionModel, bounds: Bounds) -> list[str]:
    """The tool calls a session knows, and the next fresh one while the bounds allow one."""
    tools = m.perm_book.tools
    known = [t for t in TOOL_IDS if t in tools]
    return [*known, TOOL_IDS[len(tools)]] if len(tools) < bounds.max_tools else known


def _prompt_id(ev: Payload, m: SessionModel, a: Any, idx: int) -> None:
    ev.id = m.queue.prompts[a].id


def _perm_id(ev: Payload, m: SessionModel, a: Any, idx: int) -> None:
    ev.id = list(m.perm_book.perms.values())[a].id


def _answer(ev: Payload, m: SessionModel, a: Any, idx: int) -> None:
    ev.id, ev.answer = list(m.perm_book.perms.values())[a[0]].id, a[1]
    if a[1] == Answer.ERROR:
        ev.error_code = -32800


def _user_message(ev: Payload, m: SessionModel, a: Any, idx: int) -> None:
    ev.message_id, ev.new_message = f"u{idx}", True


def _reason(ev: Payload, m: SessionModel, a: Any, idx: int) -> None:
    ev.reason = a


def _tool(ev: Payload, m: SessionModel, a: Any, idx: int) -> None:
    ev.tool_call_id = a


def _tool_status(ev: Payload, m: SessionModel, a: Any, idx: int) -> None:
    ev.tool_call_id, ev.status = a
    ev.has_title = ev.first_report = a[0] not in m.perm_book.tools



def _open_permissions(m: SessionModel, bounds: Bounds) -> list[int]:
    return [k for k, perm in enumerate(m.perm_book.perms.values()) if perm.state == _OPEN]


def plain(a: Any) -> str:
    """An argument as a label shows it by default ("" for none)."""
    return "" if a is None else str(a)


Offered = Callable[[SessionModel, Bounds], Sequence[Any]]  # (model, bounds) -> arguments
Fill = Callable[[Payload, SessionModel, Any, int], None]  # (payload, model, argument, trace index)


@dataclass(frozen=True, slots=True)
class Argument:
    """One kind of argument: what a session offers of it, the payload fields one fills (None:
    none), and how a label shows one (prompts by position p0, p1..., requests q0, q1...)."""

    offered: Offered
    fill: Fill | None = None
    show: Callable[[Any], str] = plain


def _position(prefix: str) -> Callable[[Any], str]:
    return lambda a: f"{prefix}{a}"


def _answer_shown(a: Any) -> str:
    return f"q{a[0]}={a[1]}"


ARGUMENTS: dict[Over, Argument] = {
    Over.NOTHING: Argument(lambda m, b: (None,)),
    Over.PENDING: Argument(_pending, _prompt_id, _position("p")),
    Over.OLDEST_PENDING: Argument(_oldest_pending, _prompt_id, _position("p")),
    Over.ECHO: Argument(_echo, _user_message),
    Over.ANSWER: Argument(_answers, _answer, _answer_shown),
    Over.ELICITATION_ANSWER: Argument(_elicitation_answers, _answer, _answer_shown),
    Over.OPEN_PERMISSION: Argument(_open_permissions, _perm_id, _position("q")),
    Over.REASON: Argument(lambda m, b: b.reasons, _reason,
                          lambda a: "none" if a is None else str(a)),
    Over.TOOL: Argument(lambda m, b: _tools(m, b) or (None,), _tool),
    Over.TOOL_STATUS: Argument(lambda m, b: [(t, st) for t in _tools(m, b)
                                             for st in b.tool_statuses],
                               _tool_status, lambda a: f"{a[0]}={a[1]}"),
}
