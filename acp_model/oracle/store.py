"""What the monitor found: the violations of one connection, bounded, and how often each rule
was exercised (the reports' statistics).

The store decides no rule: it records a verdict under the rule its check's metadata names for
the readings (``CheckMeta.rule_for``), never under a bare rule ID. It owns what recording needs:
the cap per check (a flooding agent must not exhaust memory), the probes (deliberate breaches of
client rules by the fuzzer are kept apart from the client's bugs), and the batch element the
message being judged sits in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from acp_model.model import check as checks
from acp_model.model import reducers
from acp_model.model.check import MARK, CheckMeta, meta_of
from acp_model.model.engine import Failure
from acp_model.model.vocab import Level
from acp_model.oracle.violation import Violation, ViolationKind
from acp_model.report.stats import RuleStat
from acp_model.spec.readings import Readings
from acp_model.spec.rules import RULES

Group = Sequence[Any]  # a static table entry: check metadata, or (check, metadata) pairs


class StepTally:
    """How many messages went through one pipeline step whose static groups of checks every
    such message runs (a kind's entry, the envelope checks and the method's verdicts that
    held): one ``n += 1`` per message, the exercised counts ``n`` times each group's rules
    derived only when a report asks (:attr:`ViolationStore.exercised`)."""

    __slots__ = ("groups", "n")

    def __init__(self, groups: tuple[Group, ...]) -> None:
        self.groups = groups
        self.n = 0


MAX_REPORTS_PER_CHECK = 200  # per (rule, check): a flooding agent must not exhaust memory
EXAMPLES_PER_RULE = 5  # trace indices a report lists per rule
FOLD_AT = 1 << 14  # groups logged before they are counted (memory of the log, not speed)


class ViolationStore:
    """The violations found so far, deduplicated per check, and the exercised-rule counts.

    ``views`` is the client's view of each session (owned by the session machines): a violation
    about a session carries a summary of what the client showed at that moment.
    """

    def __init__(self, readings: Readings, views: Mapping[str, reducers.SessionView]) -> None:
        self.readings = readings
        self._views = views
        self.violations: list[Violation] = []
        self._counts: dict[str, int] = {}  # rule -> how often a check run alone judged it
        # the static groups of checks run together (a dispatch table's entry, a schema
        # definition's rules): judging a message logs each group it ran (one list append),
        # folded into [the group, how often it ran] by identity now and then and expanded
        # into rules only when a report asks (:attr:`exercised`), never counted per check
        self._groups: dict[int, list[Any]] = {}
        self._log: list[Sequence[Any]] = []
        self._tallies: list[StepTally] = []  # the pipelines' steps counted per message
        self.probes: set[int] = set()  # indices of deliberate client-rule breaches (fuzzing)
        self.probe_hits: list[Violation] = []
        self.suppressed = 0  # reports past the cap, and schema floods past the diagnoses
        self.sub: int | None = None  # the batch element being judged (None: not in a batch)
        self._reported: dict[tuple[str, str | None], int] = {}
        # session id -> where the agent first handed it out again (SESS-01 failed there):
        # what the session's later findings are charged to (:meth:`rooted`)
        self.reissued: dict[str, int] = {}

    @property
    def exercised(self) -> dict[str, int]:
        """Rule -> how often a check of it ran (derived when asked from the groups run)."""
        self._fold()
        out = dict(self._counts)
        runs = [*self._groups.values(),
                 *((group, t.n) for t in self._tallies if t.n for group in t.groups)]
        for group, n in runs:
            for item in group:
                rule = (item[1] if isinstance(item, tuple) else item).rule
                out[rule] = out.get(rule, 0) + n
        return out

    def tally(self, groups: tuple[Group, ...]) -> StepTally:
        """A pipeline step's count of messages, each running every one of ``groups``."""
        tally = StepTally(groups)
        self._tallies.append(tally)
        return tally

    def bump(self, rule_id: str, n: int = 1) -> None:
        self._counts[rule_id] = self._counts.get(rule_id, 0) + n

    def ran(self, *groups: Sequence[CheckMeta | tuple[Any, CheckMeta]]) -> None:
        """These groups of checks ran (each check exercised its rule once per group run).
        A group is a static table entry (a tuple of metadata, or of (check, metadata) pairs),
        kept by identity: the same object each time it runs."""
        log = self._log
        log.extend(groups)
        if len(log) >= FOLD_AT:
            self._fold()

    def _fold(self) -> None:
        """Count the logged groups by identity (the log stays short on a long run)."""
        kept = self._groups
        for group in self._log:
            seen = kept.get(id(group))
            if seen is None:
                kept[id(group)] = [group, 1]
            else:
                seen[1] += 1
        self._log.clear()

    def run(self, fn: Callable[..., str | None], idx: int, *args: Any,
            session: str | None = None, related: list[int] | None = None) -> bool:
        """Run one finding check; report what it found. True when it found something."""
        meta = getattr(fn, MARK, None) or meta_of(fn)  # (meta_of: the error when untagged)
        text = fn(*args)
        if text is None:  # bump inlined: this runs about five times per message
            counts = self._counts
            counts[meta.rule] = counts.get(meta.rule, 0) + 1
            return False
        self.report(meta, idx, text, session=session, related=related)
        return True

    def run_entry(self, entry: Sequence[tuple[Callable[..., str | None], CheckMeta]],
                  idx: int, *args: Any, session: str | None = None,
                  related: list[int] | None = None, tallied: bool = False
                  ) -> tuple[CheckMeta, ...]:
        """Run the checks of a static table entry on the same ``args``, each reported on its
        own (``related``: the messages each finding names besides ``idx``); an entry that
        holds is counted once (its rules expanded when a report asks; ``tallied``: by the
        caller's :class:`StepTally`). Returns the metadata of the checks that found something
        (empty: all held)."""
        failed: list[tuple[CheckMeta, str]] | None = None
        for fn, meta in entry:
            text = fn(*args)
            if text is not None:
                failed = [*(failed or ()), (meta, text)]
        if failed is None:
            if not tallied:
                self.ran(entry)
            return ()
        broke = {id(meta) for meta, _ in failed}
        for _, meta in entry:
            if id(meta) not in broke:
                self.bump(meta.rule)
        for meta, text in failed:
            self.report(meta, idx, text, session=session, related=related)
        return tuple(meta for meta, _ in failed)

    def report(self, meta: CheckMeta, idx: int, message: str, *, session: str | None = None,
               level: Level | None = None, kind: ViolationKind = "safety",
               related: list[int] | None = None, deadline: float | None = None,
               evidence: list[tuple[int, str]] | None = None) -> None:
        rule_id = meta.rule_for(self.readings)
        self.bump(rule_id)
        own = meta.level(self.readings)
        # a level given (a warning for what is in doubt) never brings back a rule the
        # revision does not have: a v2 rule reported on a v1 run was a finding of nothing
        lv = own if own == Level.OFF else level or own
        if lv == Level.OFF or checks.is_disabled(meta, rule_id):
            return
        strength = RULES[rule_id].strength_under(self.readings)
        key = (rule_id, meta.name)
        seen = self._reported.get(key, 0)
        self._reported[key] = seen + 1
        if seen >= MAX_REPORTS_PER_CHECK:
            self.suppressed += 1  # a flood of the same finding: counted, not stored
            return
        view = self._views.get(session) if session is not None else None
        found = Violation(rule_id, Level(lv), strength, idx, message, kind, session, meta.name,
                          self.sub, related or [], deadline, evidence or [],
                          reducers.view_summary(view) if view is not None else None)
        if idx in self.probes and RULES[rule_id].party != "agent" and kind != "liveness":
            self.probe_hits.append(found)  # about a deliberate negative input, not a client bug
            return
        self.violations.append(found)

    def liveness(self, meta: CheckMeta, idx: int, session: str | None, deadline: float | None,
                 what: str, *, doubt: str | None = None) -> None:
        """``doubt``: why the deadline proves nothing here (the verdict is then a warning that
        says so)."""
        suffix = f" within the {deadline:g} s deadline" if deadline is not None else \
            " before the end of the trace"
        root = self.rooted(session, idx)
        self.report(meta, idx, what + suffix + (f" ({doubt}: a warning)" if doubt else "")
                    + (root[0] if root else ""), session=session, kind="liveness",
                    deadline=deadline, level=Level.WARN if doubt or root else None,
                    evidence=root[1] if root else None)

    def rooted(self, session: str | None, idx: int) -> tuple[str, list[tuple[int, str]]] | None:
        """Why a finding at ``idx`` about ``session``'s state is SESS-01's consequence, and the
        message that shows it (None: it is not): the agent handed the session's id out again
        before, so two of the client's sessions are one of the agent's, and what the client
        sent to either may have reached the work judged. One root cause, one failure: SESS-01
        is reported where the id came back; this finding is a warning that names it."""
        at = self.reissued.get(session) if session is not None else None
        if at is None or at >= idx:
            return None
        return (f" (the agent handed out this session's id again at #{at}, before this: "
                "SESS-01, reported there, is the root cause, since two of the client's "
                "sessions are one of the agent's from then on: a warning)",
                [(at, "the session id handed out again (SESS-01)")])

    def failures_of(self, failures: list[Failure], idx: int, session: str | None, what: str,
                    evidence: Mapping[str, Any]) -> None:
        """Report the checks a machine's transition failed, each with its proof (a failure
        without the proof its check names is only a warning)."""
        for chk, lv in failures:
            meta = chk.meta
            detail, items = "", []
            if meta.evidence is not None:
                proof = evidence.get(meta.name)
                if proof is not None:
                    detail, items = proof
                elif lv == Level.FAIL:
                    # A failure states its proof; without one it is not a failure.
                    lv, detail = Level.WARN, ("no response proves what the agent had read: "
                                              "reported as a warning")
            text = f"{what} breaks {meta.rule_for(self.readings)}. Expected: {meta.doc}" + (
                f" ({detail})" if detail else "")
            root = self.rooted(session, idx)
            if root is not None:
                text, lv, items = text + root[0], Level.WARN, [*root[1], *items]
            self.report(meta, idx, text, session=session, level=lv, evidence=items)

    def with_level(self, level: Level) -> list[Violation]:
        return [v for v in self.violations if v.level == level]

    def rule_stats(self, exercised: Mapping[str, int]) -> dict[str, RuleStat]:
        """Per rule: how often it was exercised, its failures and warnings, a few examples."""
        stats = {rid: RuleStat() for rid in RULES}
        for rid, n in exercised.items():
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
