"""What a protocol version spells and grants differently in the initialize exchange: where
the capabilities sit, what advertises a reload, a close or a transport, what every agent has;
and what a client therefore sends differently (its login method, how it asks for a replay,
whether a permission outcome may be its own, whether it may batch).

The model's checks and the fuzzer ask the revision's :class:`Shape` instead of comparing
protocol numbers: this module and the oracle's translators (``oracle/dialects.py``,
``oracle/turns_v1.py``) are the places that tell v1 from v2 (``tests/unit/test_layout.py``
refuses a protocol comparison anywhere else in ``model/``, ``oracle/`` and ``fuzzing/``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acp_model.model import wire_table
from acp_model.spec import revisions
from acp_model.trace.methods import Method

_ABSENT = object()  # no value at a capability's path


def _at(caps: Any, path: tuple[str, ...]) -> Any:
    """The value a capability's ``path`` leads to in ``caps`` (:data:`_ABSENT`: none)."""
    node = caps
    for key in path:
        if not isinstance(node, Mapping):
            return _ABSENT
        node = node.get(key, _ABSENT)
    return node


def on(caps: Any, *path: str) -> bool:
    """Is the capability at ``path`` advertised (``true`` or an object)?"""
    node = _at(caps, path)
    return node is True or isinstance(node, Mapping)


def said_off(caps: Any, *path: str) -> bool:
    """Is the capability at ``path`` declared ``false`` (not merely omitted)?"""
    return _at(caps, path) is False


@dataclass(frozen=True, slots=True)
class Shape:
    """v2's initialize exchange (the seed's and sdk-2.4.0's)."""

    client_caps_key: str = "capabilities"  # where the client's capabilities sit
    agent_caps_key: str = "capabilities"  # where the agent's sit in the result
    session_caps_key: str = "session"  # where the agent's session capabilities sit
    info_required: bool = False  # each peer names itself (v1 INIT-09; v2: the schema's)
    # the session methods beyond session/new and session/prompt every agent of the session
    # surface has (seed session-setup.mdx: "MUST support session/resume", "MUST support
    # session/close"; sdk-2.4.0 AgentCapabilities.session)
    baseline_adds: frozenset[str] = frozenset({Method.RESUME, Method.CLOSE, "session/list"})
    # the session methods a client calls only when the agent advertised them (SESS-16)
    advertised_methods: frozenset[str] = frozenset()
    # a boolean config option only for a client that advertised them (v1's INIT-16)
    gates_boolean_options: bool = False
    # a set_config_option result lists every option (v1's V1-CONFIG-02)
    config_result_lists_all: bool = False
    # what a client sends differently
    login_method: str = "auth/login"  # the request that logs in with an advertised method
    # a session/resume asks for the history by a cursor (seed session-setup.mdx
    # ``replayFrom``); v1 has none: its session/load is the request that replays
    replays_by_cursor: bool = True
    # a permission outcome may be the client's own (an ``_``-prefixed extension); v1's
    # RequestPermissionOutcome is a closed union
    custom_outcomes: bool = True
    # the revision states JSON-RPC batch rules, so an agent may be probed with batches
    batches: bool = True

    def reopen_order(self, replay: bool) -> tuple[str, str]:
        """The reopening requests a client prefers, best first, when it wants the history
        replayed (``replay``) or not; it sends the first the agent advertised."""
        if replay or self.replays_by_cursor:
            return (Method.LOAD, Method.RESUME)
        return (Method.RESUME, Method.LOAD)

    def session_caps(self, agent_caps: Any) -> Any:
        return agent_caps.get(self.session_caps_key) if isinstance(agent_caps, Mapping) \
            else None

    def has_session_surface(self, agent_caps: Any) -> bool:
        """Does the agent have the session methods at all (v2: it advertises ``session``)?"""
        return isinstance(self.session_caps(agent_caps), dict)

    def prompt_capabilities(self, agent_caps: Any) -> dict[str, Any]:
        """The prompt capabilities, as v2 markers (``{}`` for a supported one)."""
        session = self.session_caps(agent_caps)
        prompt = session.get("prompt") if isinstance(session, dict) else None
        return prompt if isinstance(prompt, dict) else {}

    def reload_methods(self, agent_caps: Any) -> frozenset[str]:
        """The requests that reopen a session a client may send (v2: session/resume, which
        every agent of the session surface supports, session-setup.mdx §Resuming Sessions)."""
        return frozenset({Method.RESUME}) if self.has_session_surface(agent_caps) \
            else frozenset()

    def closes_sessions(self, agent_caps: Any) -> bool:
        """May a client send session/close (v2: every agent of the session surface)?"""
        return self.has_session_surface(agent_caps)

    def mcp_needs(self, kind: Any, agent_caps: Any) -> str | None:
        """The capability an MCP server of transport ``kind`` needs that the agent lacks."""
        if kind in ("stdio", "http") and not on(self.session_caps(agent_caps), "mcp", kind):
            return f"session.mcp.{kind}"
        return None


@dataclass(frozen=True, slots=True)
class V1Shape(Shape):
    """v1's: ``clientCapabilities`` / ``agentCapabilities``, boolean flags, session methods
    beyond the baseline only when advertised (session-setup.mdx §Checking Support)."""

    client_caps_key: str = "clientCapabilities"
    agent_caps_key: str = "agentCapabilities"
    session_caps_key: str = "sessionCapabilities"
    info_required: bool = True
    baseline_adds: frozenset[str] = frozenset()
    # (the client's requests whose rows name the capability: session/load, resume, close)
    advertised_methods: frozenset[str] = field(
        default_factory=lambda: wire_table.advertised_methods("c2a"))
    gates_boolean_options: bool = True
    config_result_lists_all: bool = True
    login_method: str = "authenticate"
    replays_by_cursor: bool = False
    custom_outcomes: bool = False
    batches: bool = False

    def has_session_surface(self, agent_caps: Any) -> bool:
        return True  # the baseline methods are every v1 agent's (INIT-10)

    def prompt_capabilities(self, agent_caps: Any) -> dict[str, Any]:
        flags = agent_caps.get("promptCapabilities") if isinstance(agent_caps, dict) else None
        return {k: {} for k, v in flags.items() if v is True} if isinstance(flags, dict) else {}

    def reload_methods(self, agent_caps: Any) -> frozenset[str]:
        """session/load with ``loadSession: true``, session/resume with
        ``sessionCapabilities.resume`` (without them the client MUST NOT call them)."""
        if not isinstance(agent_caps, dict):
            return frozenset()
        out: set[str] = {Method.LOAD} if agent_caps.get("loadSession") is True else set()
        session = self.session_caps(agent_caps)
        if isinstance(session, dict) and isinstance(session.get("resume"), dict):
            out.add(Method.RESUME)
        return frozenset(out)

    def closes_sessions(self, agent_caps: Any) -> bool:
        """Only with ``sessionCapabilities.close`` (§Closing Active Sessions, SESS-16)."""
        session = self.session_caps(agent_caps)
        return isinstance(session, dict) and isinstance(session.get("close"), dict)

    def mcp_needs(self, kind: Any, agent_caps: Any) -> str | None:
        if kind in ("http", "sse") and not on(agent_caps, "mcpCapabilities", kind):
            return f"mcpCapabilities.{kind}"
        return None  # stdio is every v1 agent's


SHAPES: dict[int, Shape] = {1: V1Shape(), 2: Shape()}  # protocolVersion -> its shape


def shape(rev: str) -> Shape:
    """The shape of the initialize exchange of revision ``rev``."""
    return SHAPES[revisions.get(rev).protocol]
