"""The reference agent's JSON-RPC plumbing: error codes, request contexts, batch replies."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PROTOCOL_VERSION = 2
AGENT_INFO = {"name": "acp-model-reference-agent", "title": "acp-model reference agent",
              "version": "0.1.0"}  # fmt: skip
# its one extension method, advertised as extensibility.mdx says (``_acp_model/quiesce``: the
# tests' causal wait, reference/quiesce.py), so a client may call it and gets a result
EXTENSIONS = {"acp_model": {"methods": ["_acp_model/quiesce"]}}
CAPABILITIES = {"session": {"prompt": {"image": {}, "audio": {}, "embeddedContext": {}}},
                "_meta": EXTENSIONS}

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800


class RpcFailure(Exception):
    """Raised by a handler to answer the current request with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def is_absolute(path: object) -> bool:
    """Absolute POSIX path or Windows drive/UNC path."""
    if not isinstance(path, str) or not path:
        return False
    if path.startswith("/"):
        return True
    return (len(path) > 2 and path[1] == ":" and path[2] in "\\/") or path.startswith("\\\\")


def object_params(params: Any) -> dict[str, Any]:
    """A request's params, which must be an object (-32602 otherwise)."""
    if not isinstance(params, dict):
        raise RpcFailure(INVALID_PARAMS, "params must be an object")
    return params


class Batch:
    """Collects the responses to one client batch and sends them as a single array
    (``empty_reply``: whether a batch of notifications only is answered ``[]``)."""

    def __init__(self, send: Callable[[Any], None], empty_reply: Callable[[], bool]) -> None:
        self.send = send
        self.empty_reply = empty_reply
        self.expected = 0
        self.responses: list[dict[str, Any]] = []
        self.closed = False

    def expect(self) -> None:
        self.expected += 1

    def add(self, response: dict[str, Any]) -> None:
        self.responses.append(response)
        self._maybe_send()

    def close(self) -> None:
        self.closed = True
        if self.expected == 0 and self.empty_reply():
            self.send([])
        self._maybe_send()

    def _maybe_send(self) -> None:
        if self.closed and self.expected and len(self.responses) == self.expected:
            self.send(list(self.responses))
            self.expected = 0  # sent once


@dataclass
class Ctx:
    """Where the answer to one request goes."""

    request_id: Any
    batch: Batch | None = None
