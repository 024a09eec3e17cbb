"""The oracle: feed it the wire messages of one connection, get the rules they break.

``Monitor.feed`` takes trace records in the order the client sent / received them;
``Monitor.finish`` judges the obligations still open at the end (liveness). The monitor is a
façade over collaborators that each own their state:

* :class:`~acp_model.oracle.router.Router` routes each message to its checks, its model and
  its handler (responses: :class:`~acp_model.oracle.answers.Answers`);
* :class:`~acp_model.oracle.shapes.ShapeJudge` validates shapes (schema, single-message
  checks) and keeps the revision fit;
* :class:`~acp_model.oracle.machines.Machines` holds the connection and session models, the
  client's views, and answers questions about them;
* :class:`~acp_model.oracle.store.ViolationStore` records what was found (bounded, per check)
  and what each rule was exercised;
* :class:`~acp_model.oracle.liveness.LivenessJudge` judges what is still owed.

The monitor decides no rule itself: every violation comes from a check's metadata. Its own
operations are feeding (``feed``), ending (``finish``, ``judge_open``: liveness up to the
last record), verdicts made off the wire (``note``) and the report's sums (``exercised``,
``rule_stats``, ``failures``, ``warnings``); a question about one part is asked of that part,
which the monitor keeps as a public attribute: ``machines`` (``state``, ``busy``,
``required_answers``, ``sessions`` ...), ``rpc`` (``open_permissions``, ``pending_prompts``,
``withdrawn``), ``liveness`` (``owed``, ``reopen``, ``judge_waited``), ``store``, ``shapes``
(the revision ``fit``) and ``views`` (what a client renders per session).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from acp_model.model import reducers
from acp_model.model.check import CheckMeta
from acp_model.model.events import Payload
from acp_model.model.vocab import Level
from acp_model.oracle import dialects
from acp_model.oracle.answers import Answers
from acp_model.oracle.conversation import Conversations
from acp_model.oracle.liveness import LivenessJudge
from acp_model.oracle.machines import Machines
from acp_model.oracle.reopens import Reopens
from acp_model.oracle.router import Router
from acp_model.oracle.rpc import OpenRequest, Rpc
from acp_model.oracle.shapes import ShapeJudge
from acp_model.oracle.store import MAX_REPORTS_PER_CHECK, ViolationStore
from acp_model.oracle.violation import Violation, ViolationKind
from acp_model.report.stats import RuleStat
from acp_model.spec import revisions
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.trace.format import Record, parse_record

__all__ = ["MAX_REPORTS_PER_CHECK", "Monitor", "OpenRequest", "Violation"]


class Monitor:
    """Per-connection oracle (several sessions): wires the router, the models, the violation
    store and the liveness judge, and answers for them."""

    def __init__(self, readings: Readings = DEFAULT, *, validate: bool = True,
                 engine: str = "table", decision: revisions.Decision | None = None) -> None:
        self.readings = readings
        self.rev = readings.revision
        self.decision = decision or revisions.Decision(  # which judges, and why (reports say)
            self.rev, self.rev, f"spec revision {self.rev} chosen")
        self.rpc = Rpc()
        self.views: dict[str, reducers.SessionView] = {}
        self.store = ViolationStore(readings, self.views)
        self.machines = Machines(readings, self.rpc, self.store, self.views, engine=engine)
        self.shapes = ShapeJudge(self.rev, self.store, validate=validate)
        self.reopens = reopens = Reopens()
        # the revision's translator into the model's events (v1: its turns)
        translator = dialects.Translator(dialects.for_protocol(revisions.get(self.rev).protocol))
        # each session's conversation, and the replays that owe it back (SESS-07)
        self.conversations = Conversations(self.store,
                                           translator.dialect.prompts_are_the_conversation)
        answers = Answers(self.rev, self.decision, self.rpc, self.store, self.machines,
                          self.shapes, translator, reopens, self.conversations)
        self.router = Router(self.rev, self.rpc, self.store, self.machines, self.shapes,
                             answers, translator, reopens, self.conversations)
        self.liveness = LivenessJudge(self.rpc, self.machines, self.store, reopens)
        self.violations: list[Violation] = self.store.violations  # the store's, shared
        self.count = 0
        # (first, last) message numbers an excerpt left out (its records carry their numbers)
        self.gaps: list[tuple[int, int]] = []
        self.finished = False

    def feed(self, record: Record | dict[str, Any]) -> list[Violation]:
        """Check one trace record; returns the violations it caused."""
        if isinstance(record, dict):
            record = parse_record(record)
        before = len(self.violations)
        idx = self.count
        if record.n is not None and record.n > idx:  # an excerpt: numbered as the whole was
            self.gaps.append((idx, record.n - 1))
            idx = record.n
        self.count = idx + 1
        self.store.sub = None
        if record.probe:
            self.store.probes.add(idx)
        self.router.record(record, idx)
        return self.violations[before:]

    def finish(self, deadline: float | None = None) -> list[Violation]:
        """Judge obligations still open at the end of the trace (liveness)."""
        if self.finished:
            return []
        self.finished = True
        return self.judge_open(None, 0, deadline)

    def note(self, meta: CheckMeta, message: str, *, session: str | None = None,
             kind: ViolationKind = "safety", deadline: float | None = None,
             level: Level | None = None) -> None:
        """Record a verdict made outside the wire (the fuzzer owns the process: crashes)."""
        self.store.sub = None
        self.store.report(meta, max(self.count - 1, 0), message, session=session, kind=kind,
                          deadline=deadline, level=level)

    # ------------------------------------------------------------------ liveness ----------
    def judge_open(self, sessions: Iterable[str] | None, since: int,
                   deadline: float | None = None, skip: Collection[Any] = (),
                   looked: int | None = None) -> list[Violation]:
        """Liveness verdicts for what is still open (:meth:`LivenessJudge.judge_open`), after
        the replays still open are judged (the client moves on from them here)."""
        before = len(self.violations)
        sessions = None if sessions is None else list(sessions)
        self.store.sub = None
        self.conversations.close_all(sessions)
        replays = self.violations[before:]
        return replays + self.liveness.judge_open(sessions, since, self.count - 1, deadline,
                                                  skip, looked)

    def client_may(self, sid: str, event: str, ev: Payload | None = None) -> bool:
        """Would the model let the client send this now (``ev``: by default at the next
        index)? The fuzzer asks before acting."""
        return self.machines.client_may(sid, event, ev or Payload(self.count))

    # ------------------------------------------------------------------ the report --------
    @property
    def failures(self) -> list[Violation]:
        """The violations that fail (the pytest plugin's ``acp_monitor.failures``)."""
        return self.store.with_level(Level.FAIL)

    @property
    def warnings(self) -> list[Violation]:
        return self.store.with_level(Level.WARN)

    def exercised(self) -> dict[str, int]:
        """How often each rule was exercised: the store's checks and the machines' together."""
        out = dict(self.store.exercised)
        for k, v in self.machines.exercised().items():
            out[k] = out.get(k, 0) + v
        return out

    def rule_stats(self) -> dict[str, RuleStat]:
        return self.store.rule_stats(self.exercised())
