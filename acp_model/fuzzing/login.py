"""Logging in once ``initialize`` listed the configured method (v2 ``auth/login``, v1
``authenticate``): judged like every other request; an error answer leaves the agent as it is.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from acp_model.fuzzing.calls import RpcError

if TYPE_CHECKING:
    from acp_model.fuzzing.transport import AgentProcess
    from acp_model.model.wire_shapes import Shape


def listed_methods(methods: Any) -> set[Any]:
    """The ids of the ``authMethods`` an initialize result lists."""
    if not isinstance(methods, list):
        return set()
    return {m.get("methodId", m.get("id")) for m in methods if isinstance(m, dict)}


def log_in(proc: AgentProcess, methods: Any, method_id: str, wire: Shape,
           timeout: float) -> None:
    """Log in with ``method_id`` when the agent lists it among ``methods``, by the request
    of the wire spoken (``wire.login_method``)."""
    if method_id not in listed_methods(methods):
        return
    with contextlib.suppress(RpcError, TimeoutError):
        proc.calls.call(wire.login_method, {"methodId": method_id}, timeout=timeout)
