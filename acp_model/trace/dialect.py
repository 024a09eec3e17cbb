"""The dialect a wire speaks: the ``initialize`` a client sends for a protocol version, and
``--spec auto`` decided from the records (which revision judges a trace, and the evidence).

The revisions themselves and the :class:`~acp_model.spec.revisions.Decision` are data
(:mod:`acp_model.spec.revisions`); reading them off JSON-RPC messages is wire logic, so it
lives here, shared by the offline checker, the proxy, the fuzzer's probe and the trace builder.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from acp_model.spec.revisions import AUTO, SDK_2_4_0, SEED, V1, Decision
from acp_model.trace.methods import Method


def initialize_params(protocol: int, info: Mapping[str, Any],
                      capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A client's ``initialize`` params for protocol version ``protocol``: v1 names its fields
    by role (``clientCapabilities``, ``clientInfo``), v2 does not (migration.mdx);
    ``capabilities`` as given (none: empty)."""
    caps = dict(capabilities or {})
    if protocol == 1:
        return {"protocolVersion": 1, "clientCapabilities": caps, "clientInfo": dict(info)}
    return {"protocolVersion": protocol, "capabilities": caps, "info": dict(info)}


def from_prompt_result(result: Any, index: int | None, request_id: Any) -> Decision:
    """``auto`` decided by one prompt response: a ``messageId`` receipt is the newer
    revision's acknowledgement; ``{}`` (or any result without one) the seed's."""
    where = f"#{index} " if index is not None else ""
    if isinstance(result, dict) and isinstance(result.get("messageId"), str):
        return Decision(SDK_2_4_0, AUTO, f"the response {where}to session/prompt id="
                        f"{request_id} is a receipt with messageId {result['messageId']!r}",
                        index)
    return Decision(SEED, AUTO, f"the response {where}to session/prompt id={request_id} "
                    "carries no messageId (an acknowledgement without receipt)", index)


class Detector:
    """``auto`` decided incrementally: feed trace records in order until :meth:`feed` returns
    the decision (an initialize answered with protocolVersion 1, else the first successful
    session/prompt response decides)."""

    def __init__(self) -> None:
        self.prompts: set[tuple[str, Any]] = set()
        self.inits: dict[tuple[str, Any], Any] = {}  # initialize request id -> version offered
        self.named: Any = None  # the protocol version the initialize response named
        self.count = 0

    def feed(self, rec: Mapping[str, Any]) -> Decision | None:
        n, self.count = self.count, self.count + 1
        msgs = rec.get("msg")
        for msg in msgs if isinstance(msgs, list) else [msgs]:
            if not isinstance(msg, dict):
                continue
            if rec.get("dir") == "c2a" and msg.get("method") == Method.PROMPT and "id" in msg:
                self.prompts.add(_key(msg["id"]))
            elif rec.get("dir") == "c2a" and msg.get("method") == Method.INITIALIZE \
                    and "id" in msg:
                params = msg.get("params")
                self.inits[_key(msg["id"])] = params.get("protocolVersion") \
                    if isinstance(params, dict) else None
            elif rec.get("dir") == "a2c" and "method" not in msg and "result" in msg \
                    and _key(msg.get("id")) in self.inits:
                decision = from_initialize(msg["result"], n, self.inits[_key(msg.get("id"))])
                if decision is not None:
                    return decision
                result = msg["result"]
                self.named = result.get("protocolVersion") if isinstance(result, dict) else None
            elif rec.get("dir") == "a2c" and "method" not in msg and "result" in msg \
                    and _key(msg.get("id")) in self.prompts:
                spoken = v1_turn_end(msg["result"], n, msg.get("id"), self.named)
                return spoken or from_prompt_result(msg["result"], n, msg.get("id"))
        return None

    def undecided(self, why: str = "no successful session/prompt response in the trace"
                  ) -> Decision:
        return Decision(SEED, AUTO, f"{why}: the seed's revision (nothing tells the revisions "
                        "apart)")


def detect_ahead(records: Iterable[Mapping[str, Any]]
                 ) -> tuple[Decision, Iterator[Mapping[str, Any]]]:
    """``auto`` for a recorded trace (:class:`Detector`: an initialize answered with version
    1, else the first successful session/prompt response; a trace without either is judged by
    the seed's revision), reading only as far as the decision needs. Returns the decision and
    every record again from the first (those read kept, the rest still unread), so a long
    trace is decided and then checked as a stream."""
    detector = Detector()
    ahead: list[Mapping[str, Any]] = []
    rest = iter(records)
    for rec in rest:
        ahead.append(rec)
        decision = detector.feed(rec)
        if decision is not None:
            return decision, itertools.chain(ahead, rest)
    return detector.undecided(), iter(ahead)


# The initialize result's fields only v1 names by role (migration.mdx), and v2's plain ones
_V1_INIT_KEYS = frozenset({"agentCapabilities", "agentInfo"})
_V2_INIT_KEYS = frozenset({"capabilities", "info"})


def v1_turn_end(result: Any, index: int | None, request_id: Any, named: Any
                ) -> Decision | None:
    """A prompt response that ends the turn with a ``stopReason`` (v1's turn end; neither v2
    revision has it) after an initialize that named another version: the agent speaks v1."""
    if named == 1 or not isinstance(result, dict) or "stopReason" not in result \
            or "messageId" in result:
        return None
    where = f"#{index} " if index is not None else ""
    return Decision(V1, AUTO, f"the initialize response negotiated protocolVersion {named}, "
                    f"but the response {where}to session/prompt id={request_id} ends the turn "
                    f"with stopReason {result['stopReason']!r}, as v1 does", index,
                    negotiated=named)


def from_initialize(result: Any, index: int | None, offered: Any = None) -> Decision | None:
    """``auto`` decided by the ``initialize`` response: protocol version 1 is v1 (the v2
    revisions are told apart later, by the first prompt response); another version in v1's
    shape (``agentCapabilities``/``agentInfo`` and none of v2's fields) is v1 spoken under a
    version it does not speak."""
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    if version != 1 and isinstance(result, dict) and _V1_INIT_KEYS & result.keys() \
            and not _V2_INIT_KEYS & result.keys():
        where = f"#{index} " if index is not None else ""
        keys = ", ".join(sorted(_V1_INIT_KEYS & result.keys()))
        return Decision(V1, AUTO, f"the initialize response {where}negotiates protocolVersion "
                        f"{version} but names its fields as v1 does ({keys})", index,
                        negotiated=version)
    if version != 1:
        return None
    where = f"#{index} " if index is not None else ""
    asked = f" (the client offered {offered})" if offered is not None else ""
    return Decision(V1, AUTO, f"the initialize response {where}negotiates protocolVersion "
                    f"1{asked}", index)


def _key(rid: Any) -> tuple[str, Any]:
    return (type(rid).__name__, rid)
