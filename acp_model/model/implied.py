"""What an agent's answer implies of the request it answers, per method: one-sided inference.

A recording of the agent's side alone (``oracle.one_sided``) holds answers without their
requests. A request method's row in the wire table names two functions of this module: how a
result of it is told by its shape (``told``: an ``initialize`` result by its protocolVersion,
a prompt's by its stopReason) and the params of the request the answer implies (``implies``:
an ``initialize`` in the version the agent answered, a prompt with the content the agent's
user message echoes, a resume asking for the replay the agent sent). The inference supplies
what it knows at the answer (:class:`Where`); the functions keep no state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from acp_model.trace import dialect

CLIENT_INFO = {"name": "acp-model (inferred client)", "version": "0"}
# the marks a recording normalizes paths to, and the made-up absolute paths they stand for
PLACEHOLDERS = {"<cwd>": "/acp-model-inferred/cwd", "<home>": "/acp-model-inferred/home"}


class Where(Protocol):
    """What the inference knows where an answer stands in the agent's lines."""

    def session(self) -> str | None:
        """The session the request was for (the first the agent names since the client's
        last chance to send it, else the last one opened)."""
        ...

    def prompt(self) -> list[Any]:
        """The prompt's content blocks: what the agent's user message echoes, else a
        stand-in."""
        ...

    def replayed(self) -> bool:
        """Did the agent send conversation before this answer (a replay was asked for)?"""
        ...

    def reopened(self, sid: str) -> None:
        """The request reopened session ``sid``: later answers may be for it."""
        ...


Implies = Callable[[Any, Where], dict[str, Any]]  # (the answer's result, where) -> params
Told = Callable[[Mapping[str, Any]], bool]  # is a result of this method, by its shape


def initialize(result: Any, at: Where) -> dict[str, Any]:
    """An initialize asking for the version the agent answered (2 when it named none)."""
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    return dialect.initialize_params(version if isinstance(version, int) else 2, CLIENT_INFO)


def new_session(result: Any, at: Where) -> dict[str, Any]:
    """A session/new in the made-up working directory."""
    return {"cwd": PLACEHOLDERS["<cwd>"], "mcpServers": []}


def _for_session(at: Where) -> dict[str, Any]:
    sid = at.session()
    return {"sessionId": sid} if sid else {}


def session_scoped(result: Any, at: Where) -> dict[str, Any]:
    """Any other request: for its session (when one can be told)."""
    return _for_session(at)


def prompt(result: Any, at: Where) -> dict[str, Any]:
    """A prompt for its session, with the content the agent echoed."""
    return {**_for_session(at), "prompt": at.prompt()}


def load(result: Any, at: Where) -> dict[str, Any]:
    """A reopen of its session in the made-up working directory."""
    params = {**_for_session(at), "cwd": PLACEHOLDERS["<cwd>"], "mcpServers": []}
    if params.get("sessionId"):
        at.reopened(params["sessionId"])
    return params


def resume(result: Any, at: Where) -> dict[str, Any]:
    """A resume, asking for the whole conversation when the agent replayed some."""
    params = load(result, at)
    if at.replayed():
        params["replayFrom"] = {"type": "start"}
    return params


def fork(result: Any, at: Where) -> dict[str, Any]:
    """A fork of its session (sdk-2.4.0's unstable schema only, no row of the table): its
    result names the new session, so the session forked from is not reopened."""
    return {**_for_session(at), "cwd": PLACEHOLDERS["<cwd>"], "mcpServers": []}


def initialize_result(result: Mapping[str, Any]) -> bool:
    return "protocolVersion" in result


def prompt_result(result: Mapping[str, Any]) -> bool:
    """A stop reason (v1, and the seed's end of a turn) or a receipt's messageId alone."""
    return "protocolVersion" not in result and (
        "stopReason" in result or set(result) - {"_meta"} == {"messageId"})


def session_result(result: Mapping[str, Any]) -> bool:
    """A session's id (a prompt's result that names it too is a prompt's)."""
    return "sessionId" in result and not initialize_result(result) \
        and not prompt_result(result)
