"""What a response's checks read: the response matched to its open request, and what the
connection was told before it; an update, as what was advertised or approved before it reads
it.

A response is judged by the request it answers, so its checks declare the *request's* kind
(``@check(reads=Reads.PROMPT_ANSWER)``, the kind its wire-table row names in
``Message.answer_reads``; ``Reads.ANSWER``: every answered request) and get one
:class:`Answering` record, built once per response by ``oracle.answers``. A request judged by
what the other side advertised is read the same way (``Message.use_reads``, one
:class:`Asking` record, ``oracle.advertised``), and so is an update whose meaning a
capability or an earlier answer fixed (``Update.use_reads``, one :class:`Showing` record).
:class:`Told` is the advertised facts record: the initialize exchange's capabilities and each
session's set-up, which answers and later requests are judged by.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_model.model.wire_shapes import Shape


@dataclass(slots=True)
class Told:
    """What the initialize exchange and the session set-ups told: the client's capabilities,
    the agent's, its authentication methods; per session, the cwd it was created with and
    whether config options were advertised for it (model.capabilities judges by these)."""

    client_caps: dict[str, Any] = field(default_factory=dict)
    agent_caps: Any = None  # None: no initialize result yet
    auth_methods: list[Any] | None = None
    roots: dict[str, tuple[str, ...]] = field(default_factory=dict)  # cwd, then the others
    configured: set[str] = field(default_factory=set)
    # (session, tool call) -> where an allow approved it and no status was reported since
    allowed: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass(slots=True)  # (one per response, not frozen: a frozen init costs 4x, quick_init 3x)
class Answering:
    """A response matched to its open request, as the checks of the request's kind read it:
    the answer, what the request asked and kept for it, and the advertised facts."""

    direction: str  # the response's ("a2c": the agent answers the client's request)
    method: str  # the request's
    request: int  # the request's trace index
    session: str | None  # the session the request named
    # what the request's route kept for its answer (``OpenRequest.shape``): a prompt's
    # shape, the configId set, a control's (noun, target, how it had ended), whether an
    # initialize validated (``offered.Validated``)
    asked: Any
    active: bool  # a session/close: the session was live on this connection
    state_reported: bool  # a state_update of its session came while it was open
    has_error: bool
    code: Any  # the error's code (None: a result, or an error that is no object)
    error: Any  # the error (None: a result)
    result: Any  # the result (None: an error)
    told: Told


@dataclass(slots=True)  # (one per request, as Answering)
class Asking:
    """A request, as the checks of what it uses of the other side's capabilities read it
    (``@check(reads=<row.use_reads>)``): its params, and the advertised facts."""

    method: str
    params: Any
    session: str | None  # the session it names (None: none, or no string)
    told: Told
    shape: Shape  # what the revision's initialize exchange spells and grants
    # a control request's target as the client's view showed it: (its noun, the target,
    # whether it advertises cancel; None: no update reported it). None: no control request
    target: tuple[str, str, bool | None] | None = None

    @property
    def roots(self) -> tuple[str, ...] | None:
        """The root set its session was created with, its cwd first (None: not known)."""
        return self.told.roots.get(self.session) if self.session is not None else None


@dataclass(slots=True)  # (one per update a check of its kind's ``use_reads`` reads)
class Showing:
    """An update (or a session result's parts), as the checks of what it shows against what
    was advertised or approved before it read it (``@check(reads=<row.use_reads>)``): the
    facts ``oracle.advertised`` keeps, popped for the message that ends them."""

    session: str | None
    payload: Any  # the update (a session result: its config options are read)
    told: Told
    shape: Shape
    allowed_at: int | None = None  # where an allow approved its tool call (TOOL-12)
    # work begun in a custom state that this idle ends: (where, the state) (SDK-STATE-01)
    custom: tuple[int, str] | None = None
