"""What an agent owes for what it offers: a valid client is let in, and the sessions it hands
out stay usable until the client ends them.

* ``initialize`` is answered with the chosen version and capabilities, so an ``initialize``
  that validates against the revision's schema is never refused as invalid (INIT-18): a
  client may leave out what the schema gives a default (``clientCapabilities``' fields in v1).
  Other errors (no API key, an internal failure) say nothing of the request: the
  environment's problem, not a verdict.
* A session the agent created on this connection stays usable until the client closes it
  (SESS-14): a method offered for it (load, resume, close, list, modes, configuration) failing
  with an internal error is a warning, since the text says nothing of such errors; a later
  ``session/prompt`` answered "Resource not found" (-32002, "a given resource, such as a
  session, was not found") although the client ended nothing proves the session was lost.

The agent writes every message these rules read, so no race with the client explains them.
:class:`OwnSessions` keeps what they need; the checks are pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from acp_model.model.answering import Answering
from acp_model.model.check import check, watches
from acp_model.model.vocab import ErrorCode, Level, Reads, Role
from acp_model.trace.methods import Method

# The methods a session's agent offers beyond the baseline, each answered for a session the
# agent created: their internal error is SESS-14's warning.
OFFERED = frozenset({Method.LOAD, Method.RESUME, Method.CLOSE, "session/list",
                     "session/set_mode", "session/set_config_option",
                     "session/set_model"})


INVALID = frozenset({ErrorCode.INVALID_PARAMS, ErrorCode.INVALID_REQUEST})


class Validated(NamedTuple):
    """What an initialize request kept for its answer (INIT-18): does it validate against
    revision ``rev``'s schema, and what it leaves to the schema's defaults."""

    valid: bool
    defaulted: tuple[str, ...]
    rev: str


@check("INIT-18", role=Role.FINDING, reads=[Reads.INITIALIZE_ANSWER])
def valid_client_let_in(a: Answering) -> str | None:
    """An initialize that validates against the schema is not refused as invalid (-32602,
    -32600): what the schema defaults may be left out."""
    if not a.has_error or not isinstance(a.asked, Validated):
        return None
    (valid, defaulted, rev), code, request = a.asked, a.code, a.request
    if not valid or code not in INVALID:
        return None  # an invalid request may be refused; other errors are no such claim
    left = (f"; what it leaves out the schema gives defaults: {', '.join(defaulted)}"
            if defaulted else "")
    return (f"initialize #{request} validates against the {rev} schema "
            f"($defs.InitializeRequest){left}, yet the agent refused it as invalid (error "
            f"{code!r}): a valid client cannot start (the lifecycle behind it was not judged)")


@check("SESS-14", level=Level.WARN, role=Role.FINDING, reads=[Reads.RESPONSE])
def offered_method_works(method: str, code: Any, sid: str, made: tuple[int, int],
                         request: int) -> str | None:
    """A method the agent offers for a session it created on this connection does not fail
    it with an internal error (the text says nothing of the errors such a method may give:
    a warning)."""
    if code != ErrorCode.INTERNAL_ERROR:
        return None
    return (f"{method} #{request} for session {sid!r}, which the agent created at #{made[1]} "
            f"(session/new #{made[0]}), failed with an internal error (-32603): a method it "
            "offers broke on its own session")


def _says_session(error: Mapping[str, Any], sid: str) -> bool:
    """Does the error name the session as what was not found (-32002 covers files too)?"""
    text = f"{error.get('message', '')} {error.get('data', '')}"
    return "session" in text.lower() or sid in text


@check("SESS-14", role=Role.FINDING, reads=[Reads.RESPONSE])
def session_not_lost(error: Mapping[str, Any], sid: str, made: tuple[int, int], request: int,
                     failed: tuple[str, int] | None) -> str | None:
    """A session the agent created on this connection, which the client never closed, is
    still there: a session/prompt for it is not answered "Resource not found" (-32002)
    naming the session."""
    if error.get("code") != ErrorCode.RESOURCE_NOT_FOUND or not _says_session(error, sid):
        return None
    after = (f", after {failed[0]} #{failed[1]} failed on it" if failed is not None else "")
    return (f"session/prompt #{request} for session {sid!r} was answered -32002 (Resource not "
            f"found) naming the session ({error.get('message')!r}), although the agent "
            f"created it at #{made[1]} (session/new #{made[0]}) and the client never closed "
            f"it{after}: the session was lost")


@check("SESS-12", role=Role.FINDING, reading="SPEC",
       levels={"seed": "warn", "v1": "warn", "sdk-2.4.0": "off"},
       reads=[Reads.REQUEST, Reads.NOTIFICATION])
def session_named_once_created(what: str, sid: Any) -> str | None:
    """A session is named only once a response has named it: an update or request for a
    session a session/new still unanswered may be creating leaves the client unable to tell
    whose it is (a warning: the text is silent on the order; sdk-2.4.0 allows it, 'Updates
    may arrive before or after this response')."""
    return (f"{what} names session {sid!r} before any response named it, while a session/new "
            "was still unanswered: a client cannot know yet that this is its new session, "
            "so it has nowhere to put it")


@dataclass
class OwnSessions:
    """The sessions the agent created on this connection (session -> where session/new was
    sent and answered), the ones the client ended (a session/close sent), and the offered
    method that last failed on each."""

    made: dict[str, tuple[int, int]] = field(default_factory=dict)
    ended: dict[str, int] = field(default_factory=dict)  # session -> its first close (request)
    failed: dict[str, tuple[str, int]] = field(default_factory=dict)

    def created(self, sid: Any, request: int, response: int) -> None:
        if isinstance(sid, str):
            self.made.setdefault(sid, (request, response))

    def request(self, method: str, sid: Any, idx: int) -> None:
        """The client sent ``method`` naming ``sid`` at ``idx``: a close ends the session for
        it."""
        if method == Method.CLOSE and isinstance(sid, str):
            self.ended.setdefault(sid, idx)

    @watches(Reads.RESPONSE)
    def response(self, run: Any, method: str, sid: Any, error: Any, request: int,
                 idx: int) -> None:
        """The agent answered the client's ``method`` #``request`` naming ``sid`` at ``idx``
        (``error``: its error object, or None)."""
        if not isinstance(sid, str) or sid not in self.made or not isinstance(error, Mapping):
            return
        code = error.get("code")
        if method in OFFERED:
            if self.ended.get(sid, request) < request:
                return  # the client had ended it: what a later call meets is no loss
            if run(offered_method_works, idx, method, code, sid, self.made[sid], request,
                   session=sid):
                self.failed[sid] = (method, request)
        elif method == Method.PROMPT and sid not in self.ended:
            run(session_not_lost, idx, error, sid, self.made[sid], request,
                self.failed.get(sid), session=sid)
