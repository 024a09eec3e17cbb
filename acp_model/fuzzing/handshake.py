"""The ``initialize`` exchange and what it settled for the rest of the connection.

What the client advertised decides what it must serve (``fuzzing.services``); what the agent
answered decides what prompts may hold and whether sessions can be reopened. Both live here,
owned by one object, rather than as loose fields of the client.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

from acp_model import __version__
from acp_model.fuzzing.authorship import as_part, writing_as
from acp_model.fuzzing.editors import ClientProfile, serves
from acp_model.fuzzing.login import log_in
from acp_model.fuzzing.services import ELICIT, ClientServices
from acp_model.fuzzing.transport import AgentProcess, RpcError
from acp_model.model import messages
from acp_model.model.check import declare, meta_of
from acp_model.model.offered import valid_client_let_in
from acp_model.model.vocab import Level, Role
from acp_model.spec import revisions
from acp_model.trace import dialect
from acp_model.trace.authors import Part

if TYPE_CHECKING:
    from acp_model.fuzzing.queries import OracleQueries

CLIENT_INFO = {"name": "acp-model", "title": "acp-model fuzzer", "version": __version__}


# What only the fuzzer's own initialize shows (a recorded trace's is the oracle's to judge).
INITIALIZE_ANSWERED = declare("ACPM-ANSWER", "initialize_answered", "The agent answers "
                              "initialize within the start-up deadline.", module=__name__,
                              role=Role.PROCESS)
VERSION_ECHOED = declare("INIT-04", "version_echoed", "An agent that implements protocol "
                         "version 2 answers a v2 client with version 2.", module=__name__,
                         role=Role.PROCESS)
REFUSED_VALID = meta_of(valid_client_let_in)  # INIT-18: the oracle judges the refusal


class AgentUnusable(Exception):
    """The agent cannot be fuzzed (it cannot be started, or it refused to initialize)."""


class Handshake:
    """The client's side of ``initialize`` and its outcome: the services the advertised
    capabilities oblige the client to serve, the agent's prompt capabilities (as v2 markers),
    the reload methods it advertised (``session/load``, ``session/resume``) and whether it
    advertised ``session/close``."""

    def __init__(self, profile: ClientProfile, cwd: str, served: Counter[str], rev: str
                 ) -> None:
        self.profile = profile
        self.rev = rev  # the revision the client speaks (and the oracle judges)
        self.cwd = cwd
        self.served = served
        self.services: ClientServices | None = None
        self.prompt_caps: dict[str, Any] = {}
        self.reloads: frozenset[str] = frozenset()
        self.closes = False  # session/close advertised (v1 asks for it: SESS-16)

    def run(self, proc: AgentProcess, oracle: OracleQueries, lock: threading.RLock,
            startup_deadline: float, auth_method: str | None) -> dict[str, Any]:
        """Initialize (and log in, if the profile names a method); an agent that cannot be
        fuzzed raises :class:`AgentUnusable` after the oracle has judged why. What it writes
        is the handshake's; what the services answer later is the client's reply."""
        with writing_as(Part.HANDSHAKE):
            return self._run(proc, oracle, lock, startup_deadline, auth_method)

    def _run(self, proc: AgentProcess, oracle: OracleQueries, lock: threading.RLock,
             startup_deadline: float, auth_method: str | None) -> dict[str, Any]:
        protocol = revisions.get(self.rev).protocol  # the version the client offers
        caps = self.profile.capabilities(protocol)
        self.services = ClientServices(serves(caps), self.cwd,
                                       as_part(Part.REPLY, proc.calls.respond), self.served)
        params = dialect.initialize_params(protocol, self.profile.info or CLIENT_INFO, caps)
        try:
            result = proc.calls.call("initialize", params, timeout=startup_deadline)
        except TimeoutError:
            with lock:
                oracle.note(INITIALIZE_ANSWERED, f"no answer to initialize within the "
                            f"{startup_deadline:g} s start-up deadline",
                            kind="liveness", deadline=startup_deadline)
            raise AgentUnusable("the agent did not answer initialize") from None
        except RpcError as exc:  # an error response; the oracle judges it (INIT-18)
            proc.wait_delivered(timeout=1.0)
            with lock:
                refused = any(v.rule == REFUSED_VALID.rule and v.level == Level.FAIL
                              for v in oracle.violations())
            raise AgentUnusable(
                f"initialize failed: {exc}" + ("; the agent refused a valid client as invalid "
                                               "(INIT-18), so the lifecycle behind it was not "
                                               "fuzzed: --client-capabilities sends what your "
                                               "editor sends" if refused else "")) from None
        if not isinstance(result, dict) or result.get("protocolVersion") != protocol:
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            with lock:
                oracle.note(VERSION_ECHOED, f"the agent answered protocolVersion {version!r} "
                            f"to a client requesting {protocol}: it lacks it or breaks INIT-04")
            raise AgentUnusable(f"the agent negotiated protocol version {version!r}, "
                                f"not {protocol}")
        self.prompt_caps = messages.prompt_capabilities(result, self.rev)
        self.reloads = messages.reload_methods(result, self.rev)
        self.closes = messages.closes_sessions(result, self.rev)
        if auth_method is not None:
            log_in(proc, result.get("authMethods"), auth_method, oracle.shape,
                   startup_deadline)
        return result

    @property
    def serves_elicitations(self) -> bool:
        """The client advertised elicitation and serves it (a drawn hold may keep one open)."""
        return self.services is not None and self.services.handles(ELICIT)

    def close(self) -> None:
        if self.services is not None:
            self.services.close()
