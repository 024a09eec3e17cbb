"""The monitor's read-only answers: what the fuzzer's client asks before it acts (``state``,
``busy``, ``open_permissions``, ``required_answers``, ``client_may`` ...) and what the reports
count (failures, warnings, exercised rules, transition counts).

A mixin of :class:`~acp_model.oracle.monitor.Monitor`; nothing here changes its state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from acp_model.model import reducers
from acp_model.model.events import Ev
from acp_model.model.vocab import QUIET, Level
from acp_model.report.stats import RuleStat
from acp_model.spec.rules import RULES

if TYPE_CHECKING:
    from acp_model.model.engine import LibraryEngine, TableEngine
    from acp_model.model.session import SessionModel
    from acp_model.oracle.rpc import Rpc
    from acp_model.oracle.violation import Violation

EXAMPLES_PER_RULE = 5  # trace indices a report lists per rule


class QueriesMixin:
    """Questions about the sessions and the verdicts so far."""

    sessions: dict[str, SessionModel]
    views: dict[str, reducers.SessionView]
    rpc: Rpc
    session_engine: TableEngine | LibraryEngine
    connection_engine: TableEngine | LibraryEngine
    violations: list[Violation]
    extra_exercised: dict[str, int]
    count: int

    def state(self, sid: str) -> str | None:
        sess = self.sessions.get(sid)
        return sess.state if sess is not None else None

    def pending_prompts(self, sid: str) -> list[Any]:
        """Ids of the session's prompts the agent has not answered yet."""
        return [rid for rid, req in self.rpc.open["c2a"].items()
                if req.method == "session/prompt" and req.session == sid]

    def open_permissions(self, sid: str) -> list[Any]:
        """Ids of the session's permission requests no answer or verdict has settled."""
        return [rid for rid, req in self.rpc.open["a2c"].items()
                if req.method == "session/request_permission" and req.session == sid
                and not req.judged]

    def busy(self, sid: str) -> bool:
        """Foreground work, or prompts whose work has not ended with an idle yet."""
        sess = self.sessions.get(sid)
        if sess is None:
            return False
        return sess.busy() or bool(self.pending_prompts(sid))

    def quiet(self, sid: str) -> bool:
        return self.state(sid) in QUIET

    def permission_options(self, sid: str, req_id: Any) -> Mapping[str, Any]:
        sess = self.sessions.get(sid)
        perm = sess.perm(req_id) if sess is not None else None
        return perm.options if perm is not None else {}

    def required_answers(self, sid: str, req_id: Any) -> frozenset[tuple[str, int | None]] | None:
        """The answers the client may still give to a permission request (None: any)."""
        sess = self.sessions.get(sid)
        return sess.required_answers(req_id) if sess is not None else None

    def withdrawn(self, req_id: Any) -> bool:
        """Did the agent withdraw its request ``req_id`` with ``$/cancel_request``?"""
        req = self.rpc.open["a2c"].get(req_id)
        return req is not None and req.withdrawn

    def client_may(self, sid: str, event: str, ev: Ev | None = None) -> bool:
        """Would the model let the client send this now? (the fuzzer asks before acting)"""
        sess = self.sessions.get(sid)
        if sess is None:
            return False
        ok, _ = self.session_engine.allowed(sess, event, ev or Ev(self.count))
        return ok

    def work_began(self, sid: str) -> int:
        """Trace index where the session's current (or last) foreground work began (-1:
        none yet); the fuzzer's drain cancels work that began after its cancel."""
        sess = self.sessions.get(sid)
        return sess.work_began if sess is not None else -1

    def view(self, sid: str) -> reducers.SessionView | None:
        """What a client renders for the session so far."""
        return self.views.get(sid)

    @property
    def failures(self) -> list[Violation]:
        return [v for v in self.violations if v.level == Level.FAIL]

    @property
    def warnings(self) -> list[Violation]:
        return [v for v in self.violations if v.level == Level.WARN]

    def exercised(self) -> dict[str, int]:
        out: dict[str, int] = dict(self.extra_exercised)
        for eng in (self.session_engine, self.connection_engine):
            for k, v in eng.exercised.items():
                out[k] = out.get(k, 0) + v
        return out

    def transition_counts(self) -> dict[str, int]:
        """How often each session-machine transition fired, keyed ``state:event``."""
        return {f"{state}:{event}": n
                for (state, event), n in sorted(self.session_engine.transitions.items())}

    def rule_stats(self) -> dict[str, RuleStat]:
        stats = {rid: RuleStat() for rid in RULES}
        for rid, n in self.exercised().items():
            stats[rid].exercised += n
        for v in self.violations:
            st = stats[v.rule]
            st.exercised = max(st.exercised, 1)
            if v.level == Level.FAIL:
                st.violations += 1
            else:
                st.warnings += 1
            if len(st.examples) < EXAMPLES_PER_RULE:
                st.examples.append(v.index)
        return stats
