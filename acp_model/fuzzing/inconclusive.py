"""Whether a replay that did not reproduce is evidence at all (issue 49, cause H).

A fresh-process replay that misses says "the program does not need what it left out" only
when the agent did what it did in the recording up to where the rule showed. An agent that
failed on its own on the way (answered one of our requests with an error where the recording
had a result, or exited) never reached the state the failure needs: counting that replay as
a miss steered delta debugging (an action looked needed) and lowered the reported rate
(gemini-cli v1 V1-LOAD-01: ``session/load`` answered -32603 in some replays). Such a replay
is *inconclusive*: no evidence either way. An error the recording had too is the same
behaviour, not an own failure; so is a "request cancelled" (-32800) answered after the client
cancelled or closed something: the client's input chose that branch (codex-acp v2's CANCEL-07
answered its prompt -32800 in every free-running replay, the client's cancel having come
before the prompt began, and the rate read "0/0 free-running, 12 more inconclusive"). What
happens after the point where the recording showed the rule (its teardown) is not compared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from acp_model.fuzzing.clock import ClockEvidence
from acp_model.fuzzing.replay import ReplayOutcome
from acp_model.fuzzing.schedule import Boundary, Crossed, Schedule
from acp_model.model import wire_table
from acp_model.model.vocab import ErrorCode
from acp_model.report.text import ErrorReason

__all__ = ["CLOCK_SPREAD", "UNTOLD", "Unsure", "UnsureKind", "answered", "cancelled_before",
           "clock_evidence", "clock_spread",
           "own_failure", "reasons_json", "recounted", "unsure_in_words", "unsure_of"]

Request = tuple[str, int]  # a request of ours: its method, and which of that method (1, 2, ...)


class UnsureKind(StrEnum):
    """How the agent failed on its own in a replay."""

    EXITED = "exited"
    ERROR = "error"  # an error answer where the recording had a result


@dataclass(frozen=True)
class Unsure:
    """Why one replay was inconclusive, as a report records it (``inconclusive_reasons``):
    enough for a later code to judge it again (:attr:`miss`), not only its words."""

    kind: UnsureKind
    code: Any = None
    action: int | None = None  # the action during which the agent exited
    method: str | None = None  # the request answered with an error, by method ...
    n: int | None = None  # ... and place among the client's requests of that method
    after_cancel: bool = False  # the client had cancelled or closed something before it
    # a held replay whose agent ran on its real wall clock (``fuzzing/clock.py``): the
    # recording's clock, an input of the agent, was not held
    unclocked: bool = False

    @property
    def miss(self) -> bool:
        """A replay that is evidence after all: a "request cancelled" answered after one of
        the client's cancels or closes, whose input chose that branch. The one place that
        decides it, for a run and for re-judging one (``matrix/rejudge.py``)."""
        return self.kind is UnsureKind.ERROR and self.after_cancel \
            and self.code == ErrorCode.REQUEST_CANCELLED

    def words(self) -> str:
        clock = " (its wall clock not held: it read another time than the recording's)" \
            if self.unclocked else ""
        if self.kind is UnsureKind.EXITED:
            return f"the agent exited (code {self.code}) during action {self.action}{clock}"
        said = ErrorReason(str(self.method), self.n or 0, self.code).said()
        return f"the agent {said} where the recording had a result{clock}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value, "code": self.code}
        for name in ("action", "method", "n"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.after_cancel:
            out["after_cancel"] = True
        if self.unclocked:
            out["unclocked"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Unsure:
        return cls(UnsureKind(data["kind"]), data.get("code"), data.get("action"),
                   data.get("method"), data.get("n"), bool(data.get("after_cancel", False)),
                   bool(data.get("unclocked", False)))


def unsure_in_words(why: str) -> tuple[Unsure, bool] | None:
    """A reason recorded as words alone (a run before ``inconclusive_reasons``): the error it
    names (:class:`ErrorReason` reads either wording), and whether its run counted a -32800
    after the client's cancel inconclusive (the "#1" wording's code did); None for another
    reason (an exit)."""
    reason = ErrorReason.read(why)
    if reason is None:
        return None
    return Unsure(UnsureKind.ERROR, reason.code, method=reason.method, n=reason.n), \
        reason.numbered


def reasons_json(held: Sequence[Unsure], free: Sequence[Unsure]) -> list[dict[str, Any]]:
    """Each inconclusive replay's reason, the same ones counted: ``[{"held": true, "count":
    2, "kind": "error", ...}]``."""
    out: list[dict[str, Any]] = []
    for is_held, reasons in ((True, held), (False, free)):
        for reason, count in Counter(reasons).items():
            out.append({"held": is_held, "count": count, **reason.to_json()})
    return out


def own_failure(outcome: ReplayOutcome, recording: Schedule | None) -> str | None:
    """:func:`unsure_of` in words."""
    unsure = unsure_of(outcome, recording)
    return None if unsure is None else unsure.words()


def unsure_of(outcome: ReplayOutcome, recording: Schedule | None) -> Unsure | None:
    """Why a replay that did not reproduce is inconclusive (None: it is evidence).

    ``recording``: the schedule the failing program's reproducing run recorded (cut where it
    showed the rule); a request of ours is named by its method and ordinal, which a replay of
    the same program (or of a sub-program, against the recording restricted to it) shares.
    An exit counts during an action before the one that showed the rule (the recording's
    process lived past it; at that action the exit may be what the rule judges). Without a
    recording nothing is compared: the replay is evidence.
    """
    if outcome.reproduced or recording is None:
        return None
    unclocked = outcome.held and not outcome.clock_held
    if outcome.exited is not None and outcome.exited[0] < recording.actions:
        action, code = outcome.exited
        return Unsure(UnsureKind.EXITED, code, action=action, unclocked=unclocked)
    results = {r for r, ok in answered(recording).items() if ok}
    for (method, n), (code, after_cancel) in _errors(outcome.records).items():
        unsure = Unsure(UnsureKind.ERROR, code, method=method, n=n, after_cancel=after_cancel,
                        unclocked=unclocked)
        if (method, n) in results and not unsure.miss:
            return unsure
    return None


# seconds the recording's clock ran past a replay's: beyond it the replay's wall clock did not
# read what the recording's had (a session a shared process made minutes before its program)
CLOCK_SPREAD = 1.0


def clock_evidence(outcome: ReplayOutcome, recording: Schedule | None) -> ClockEvidence:
    """What a held replay says of the agent's wall clock (``ClockChoice.weigh``). The clock
    is ``wanted`` (the next replays hold it: ``WarmPool.weigh_clock``, ``acp-model replay``)
    when a held replay on the agent's real clock failed on its own where its recording (which
    kept its clock) did not, or did not reproduce and its recording's clock spanned more than
    its own run (gemini-cli's load in the clock minute its session was made answers without
    the history, s15: no failure of its own to see)."""
    failed = unsure_of(outcome, recording) is not None
    clocked = outcome.clock_held
    wanted = outcome.held and not clocked and recording is not None \
        and recording.epoch is not None \
        and (failed or (not outcome.reproduced
                        and clock_spread(recording, outcome) > CLOCK_SPREAD))
    return ClockEvidence(wanted, clocked, failed)


def clock_spread(recording: Schedule, outcome: ReplayOutcome) -> float:
    """How many seconds more the recording's clock spanned, from its first reading to its
    last, than the replay ``outcome`` ran."""
    own = outcome.schedule
    ran = own.events[-1].t - own.events[0].t if own is not None and own.events else outcome.seconds
    return recording.clock_span() - ran


def answered(schedule: Schedule) -> dict[Request, bool]:
    """Each of our requests in ``schedule`` before its end (the rule's action, for a
    reproducing run), with whether the agent answered it with a result."""
    seen: Counter[str] = Counter()
    named: dict[int, Request] = {}
    out: dict[Request, bool] = {}
    for k, e in enumerate(schedule.events):
        if e.boundary is Boundary.WRITE and e.kind is Crossed.REQUEST and len(e.what) > 1:
            seen[e.what[1]] += 1
            named[k] = (e.what[1], seen[e.what[1]])
        elif e.boundary is Boundary.MESSAGE and e.kind is Crossed.RESPONSE \
                and e.cause in named and (e.action is None or e.action < schedule.actions):
            out[named[e.cause]] = e.what[1:2] == ("result",)
    return out


def _errors(records: Sequence[Mapping[str, Any]]) -> dict[Request, tuple[Any, bool]]:
    """Our requests of a replay's transcript the agent answered with an error: its code, and
    whether one of the client's cancels or closes came before it."""
    seen: Counter[str] = Counter()
    ids: dict[Any, Request] = {}
    out: dict[Request, tuple[Any, bool]] = {}
    cancelled = False  # the client has cancelled or closed something by now
    for record in records:
        msg = record.get("msg")
        if not isinstance(msg, dict):
            continue
        method, rid = msg.get("method"), msg.get("id")
        if record.get("dir") == "c2a":
            cancelled = cancelled or (isinstance(method, str)
                                      and method in wire_table.cancelling())
            if isinstance(method, str) and rid is not None and method != "initialize":
                seen[method] += 1
                ids[_hashable(rid)] = (method, seen[method])
        elif method is None and "error" in msg and _hashable(rid) in ids:
            error = msg["error"]
            code = error.get("code") if isinstance(error, dict) else error
            out[ids[_hashable(rid)]] = (code, cancelled)
    return out


def cancelled_before(records: Sequence[Mapping[str, Any]], method: str, n: int) -> bool | None:
    """Whether the client cancelled or closed something before it wrote its ``n``-th request
    of ``method`` in ``records`` (a transcript of the same program): an error answered to it
    then follows that cancel in every replay (None: the transcript has no such request)."""
    seen = 0
    cancelled = False
    for record in records:
        msg = record.get("msg")
        if record.get("dir") != "c2a" or not isinstance(msg, dict):
            continue
        name = msg.get("method")
        cancelled = cancelled or (isinstance(name, str) and name in wire_table.cancelling())
        if name == method and msg.get("id") is not None:
            seen += 1
            if seen == n:
                return cancelled
    return None


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | None) else repr(value)


# what a re-judged rate says when its run's record cannot tell a miss from an own failure
UNTOLD = ("; the run recorded only the first replay's reason, and not whether a -32800 came "
          "after the client's own cancel or close, which the current code counts as a miss")


def recounted(ce: Mapping[str, Any], records: Sequence[Mapping[str, Any]],
              index: Any = None) -> dict[str, Any]:
    """A recorded counterexample ``ce`` with its inconclusive replays counted as the current
    code counts them (:attr:`Unsure.miss` moves one into the rate, as a miss). A run that
    recorded each reason is counted again exactly. An older one recorded the first reason
    in words only, under a code that counted a -32800 after the client's cancel
    inconclusive too: its first is a miss where ``records`` (the transcript shown, of the
    same program) prove the client had cancelled or closed before writing that request;
    nothing changes where the client cancelled nothing before the offending message
    ``index``; otherwise the reason says the run cannot tell."""
    out = dict(ce)
    reasons = ce.get("inconclusive_reasons")
    if isinstance(reasons, list):
        left = []
        for r in reasons:
            unsure = Unsure.from_json(r)
            if unsure.miss:
                _move(out, bool(r.get("held")), int(r.get("count") or 1))
            else:
                left.append(unsure)
        out["inconclusive_why"] = left[0].words() if left else None
        return out
    why = ce.get("inconclusive_why")
    parsed = unsure_in_words(str(why)) if why else None
    if parsed is None or not parsed[1]:
        return out  # an exit, or a run whose code already counted such a -32800 a miss
    first, _ = parsed
    if not _cancels(records, index):
        return out  # nothing of the client's could have chosen a -32800
    held = bool(ce.get("inconclusive"))
    total = int(ce.get("inconclusive") or 0) + int(ce.get("free_inconclusive") or 0)
    if first.code == ErrorCode.REQUEST_CANCELLED \
            and cancelled_before(records, str(first.method), int(first.n or 0)):
        _move(out, held, 1)
        total -= 1
        if not total:
            out["inconclusive_why"] = None
            return out
    out["inconclusive_why"] = f"{first.words()}{UNTOLD}"
    return out


def _move(ce: dict[str, Any], held: bool, count: int) -> None:
    """``count`` inconclusive replays (held, or free) counted as misses."""
    unsure, runs = ("inconclusive", "replays") if held else ("free_inconclusive", "free_replays")
    count = min(count, int(ce.get(unsure) or 0))
    ce[unsure] = int(ce.get(unsure) or 0) - count
    ce[runs] = int(ce.get(runs) or 0) + count
    if held:
        ce["reproduction"] = f"{int(ce.get('reproduced') or 0)}/{ce['replays']}"


def _cancels(records: Sequence[Mapping[str, Any]], index: Any) -> bool:
    """Whether the client cancelled or closed anything before message ``index`` (the whole
    transcript when None)."""
    for n, record in enumerate(records):
        if isinstance(index, int) and int(record.get("n", n)) >= index:
            break
        msg = record.get("msg")
        if record.get("dir") == "c2a" and isinstance(msg, dict) \
                and isinstance(msg.get("method"), str) \
                and msg["method"] in wire_table.cancelling():
            return True
    return False
