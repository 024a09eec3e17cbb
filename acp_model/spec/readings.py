"""Named readings of the places where the v2 text allows more than one interpretation.

Each reading is keyed by its ambiguity ID from RULES.md section 6 (``A-01`` ...) and has a short
slug, so ``--reading A-01=forbid`` and ``--reading prompt-while-busy=forbid`` mean the same.
The model consults these values in its checks; nothing else in the project branches on them.
Defaults are chosen so that a conforming agent always passes and every literal MUST of the
text is enforced; docs/revisions.md explains each choice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from acp_model.spec import revisions


@dataclass(frozen=True, slots=True)
class ReadingDef:
    """One ambiguity and the readings the model supports for it."""

    id: str
    slug: str
    question: str
    values: Mapping[str, str]
    default: str
    citation: str


_DEFS: list[ReadingDef] = [
    ReadingDef(
        "A-01", "prompt-while-busy",
        "May the client send session/prompt while foreground work is running or blocked?",
        {"join": "allowed; the prompt joins (or queues behind) the current work (RULES a+b)",
         "forbid": "client violation: prompt only after idle (RULES c)"},
        "join", "prompt-lifecycle.mdx intro vs §closing"),
    ReadingDef(
        "A-03", "accept-order",
        "In which order may the prompt response, the user message and running arrive?",
        {"free": "any order; all three only follow the internal acceptance",
         "diagram": "strictly response, then user message, then running"},
        "free", "prompt-lifecycle.mdx §2, §3 and the sequence diagram"),
    ReadingDef(
        "A-04", "cancel-while-idle",
        "What does session/cancel require when no foreground work is in progress?",
        {"noop": "nothing; an idle(cancelled) in reply is tolerated",
         "idle-cancelled": "the agent must still answer with idle(cancelled)"},
        "noop", "prompt-lifecycle.mdx §Cancellation ('at any time')"),
    ReadingDef(
        "A-05", "idle-reassert-reason",
        "May an idle that ends no foreground work (idle after idle) carry a stop reason?",
        {"warn": "a warning (ACPM-ONE-STOP): no sentence forbids it, and the newer revision "
                 "lets a repeated snapshot carry the last stop reason",
         "forbid": "no: one stop reason per end of work (A-05.forbid fails)",
         "allow": "yes: extra stop reasons are not judged"},
        "warn", "prompt-lifecycle.mdx §4, §Stop Reasons"),
    ReadingDef(
        "A-10", "held-prompts",
        "What does a cancel do to a prompt the agent holds unanswered behind other work?",
        {"any": "any of the designs real agents ship: reject it, accept it and end it "
                "cancelled, fold it into the cancelled work, or keep it and run it afterwards "
                "(the last one warns, A-10.cancel)",
         "cancel": "the cancel cancels it too: it is rejected or its work ends cancelled "
                   "(A-10.cancel fails; the newer revision's reading)",
         "keep": "the cancel ends only the work in progress: the held prompt's work is new "
                 "work, and a cancelled stop reason for it has no cause"},
        "any", "prompt-lifecycle.mdx intro ('only lasts until the Agent accepts the prompt'), "
               "§Cancellation; RULES.md A-10"),
    ReadingDef(
        "A-07", "agent-initiated-work",
        "May the agent start foreground work (running) without a prompt?",
        {"allow": "yes, with the same state updates", "forbid": "no: running needs a prompt"},
        "allow", "prompt-lifecycle.mdx §3 ('when foreground work starts')"),
    ReadingDef(
        "A-09", "minimal-turn",
        "Is accept + user message + idle(reason) without running a STATE-01 violation?",
        {"strict": "yes, running is a MUST whenever work begins",
         "lenient": "warning only (RULES monitor default)"},
        "strict", "prompt-lifecycle.mdx §3"),
    ReadingDef(
        "A-11", "cancel-race",
        "When must the work end with cancelled after the client sent session/cancel?",
        {"provable": "only when the agent provably read the cancel during the work "
                     "(a later response proves it, stdio is FIFO)",
         "sent": "whenever the cancel was sent while the client saw work in progress "
                 "(unsound under races: for spec discussion)",
         "never": "never judged"},
        "provable", "prompt-lifecycle.mdx §Cancellation"),
    ReadingDef(
        "A-13", "updates-after-cancel",
        "Are updates to tool calls of the cancelled work after the cancelled idle violations?",
        {"fail": "yes (CANCEL-09)", "warn": "warning", "allow": "no, treat them as background"},
        "fail", "prompt-lifecycle.mdx §Cancellation vs §Session States"),
    ReadingDef(
        "A-14", "cancelled-permissions",
        "How must the client answer permission requests pending at cancel?",
        {"both": "cancelled outcome, or error -32800 once the agent sent $/cancel_request",
         "outcome-only": "only the cancelled outcome"},
        "both", "prompt-lifecycle.mdx §Cancellation vs cancellation.mdx diagram (C-07)"),
    ReadingDef(
        "A-16", "requires-action-from-idle",
        "Is idle -> requires_action (no running first) a STATE-01 violation?",
        {"strict": "yes", "lenient": "warning", "allow": "no (background work may block)"},
        "strict", "prompt-lifecycle.mdx §3, §5"),
    ReadingDef(
        "A-28", "rejected-prompt-work",
        "May foreground work a prompt started before the agent rejected it (pre-insertion "
        "work such as a hook) outlive the rejection, and be reported late?",
        {"may": "yes, until the next idle: a cancel sent meanwhile may apply to it, and its "
                "running may come after the agent read that cancel",
         "none": "no: a rejected prompt has no work; work reported afterwards is new work"},
        "may", "prompt-lifecycle.mdx §3 ('when foreground work starts'); sdk-2.4.0 "
               "$defs.StateUpdate"),
    ReadingDef(
        "A-29", "refusal-stops",
        "May the agent end foreground work `cancelled` because the client refused a permission "
        "request (an interaction that tells it to stop), with no session/cancel?",
        {"may": "yes: a permission answered with anything but allow may stop the work, and "
                "`cancelled` is then the client's choice (CANCEL-11 holds)",
         "no": "no: only session/cancel (or closing the session) justifies `cancelled`"},
        "may", "prompt-lifecycle.mdx §Stop Reasons ('the Client cancels active work'); "
               "sdk-2.4.0 $defs.IdleStateUpdate"),
    ReadingDef(
        "A-30", "cancel-after-reopen",
        "Does a session/cancel sent after the client reopened (session/load, session/resume) "
        "a session whose work still runs reach that work?",
        {"open": "the text does not say whether a reopen replaces the session the work runs "
                 "in (an agent may load a fresh session object and leave the old turn "
                 "running): the cancel may not reach it, so ignoring it is CANCEL-07's warning "
                 "and no deadline of ours fails the work",
         "same": "the reopened session is the one the work runs in: the cancel binds it "
                 "(CANCEL-07 fails; agentclientprotocol/claude-agent-acp#415 and "
                 "zed-industries/codex-acp#186 were fixed or accepted as bugs)"},
        "open", "session-setup.mdx §Loading Sessions, §Resuming Sessions; prompt-turn.mdx "
                "§Cancellation"),
    ReadingDef(
        "A-31", "tool-before-answer",
        "Does a guarded tool that proceeds before the agent read an answer to its permission "
        "request break PERM-11?",
        {"yes": "yes: a guarded tool proceeds only after an allow",
         "read-answer": "no: only going against an answer the agent provably read breaks it; "
                        "before one the text says the agent SHOULD wait for the grant (not "
                        "judged)"},
        "yes", "prompt-lifecycle.mdx §Permissions; v1 prompt-turn.mdx §5 ('Once permission is "
               "granted (if required), the Agent SHOULD invoke the tool')"),
    ReadingDef(
        "A-32", "elicitation-after-cancel",
        "Is a session-scoped elicitation/create the agent sends during cancelled work, after it "
        "provably read the cancel, new work (CANCEL-05)?",
        {"accept": "no: the text names model requests and tool calls, and its one sentence on "
                   "elicitations after a cancel is about pending ones, whose scope 'alone does "
                   "not establish' a tie to the cancelled work (it may serve background work)",
         "new-work": "yes: asking the user for input is work the cancelled turn started "
                     "anew, judged like a permission request under CANCEL-05"},
        "accept", "prompt-lifecycle.mdx §Cancellation; sdk-2.4.0 "
                  "$defs.CreateElicitationRequest ('Agents SHOULD cancel pending elicitations "
                  "no longer needed by cancelled work. The request's scope alone does not "
                  "establish that dependency')"),
    ReadingDef(
        "A-33", "cancel-after-turn-done",
        "Must work end with cancelled for a session/cancel the agent read that was written "
        "once its model had released the turn's whole final response (no tool call in it, no "
        "model request open: the fuzzer's record of the cancel says so)?",
        {"done": "no: a cancel after the turn's work was done may be answered with the turn's "
                 "end (the text binds `cancelled` to aborting ongoing operations, and none was "
                 "left): CANCEL-07 warns, citing the record",
         "strict": "yes: every cancel the agent provably read during the work binds it "
                   "(CANCEL-07 fails, as before the fact was recorded)"},
        "done", "v1 prompt-turn.mdx §Cancellation ('after all ongoing operations have been "
                "successfully aborted and pending updates sent ... MUST respond ... with the "
                "cancelled stop reason')"),
    ReadingDef(
        "SPEC", "spec-revision",
        "Which revision of the v2 text judges? (set with --spec; a revision fixes the "
        "readings its text decides)",
        {name: rev.title for name, rev in revisions.REVISIONS.items()},
        revisions.SEED, "spec/revisions.py"),
    ReadingDef(
        "STRENGTH", "strength-source",
        "Where docs and schema disagree on a rule's strength, which one counts?",
        {"docs": "the stricter docs wording (MUST)", "schema": "the schema wording"},
        "docs", "RULES.md §6.3 (C-01, C-02, C-03, C-09)"),
]

READING_DEFS: dict[str, ReadingDef] = {d.id: d for d in _DEFS}


@dataclass(frozen=True, slots=True)
class FixedReading:
    """An ambiguity the model resolves one way, with no option (every answer it could give is
    either equally sound or not observable): the question and what the model does."""

    id: str
    question: str
    decision: str
    citation: str


FIXED: dict[str, FixedReading] = {f.id: f for f in (
    FixedReading("A-02", "Is a prompt sent during requires_action an answer or queued work?",
                 "treated like any prompt while busy (reading A-01)", "RULES.md A-02"),
    FixedReading("A-06", "Which accepted prompt does a user message belong to?",
                 "the latest accepted one: the earliest stay unfinished, the cautious choice "
                 "for CANCEL-11", "RULES.md A-06"),
    FixedReading("A-08", "Is a new session idle before its first state_update?",
                 "an 'unreported' state that behaves like idle", "RULES.md A-08"),
    FixedReading("A-12", "What if selected.optionId names no offered option?",
                 "the answer is classified as a rejection (never approval)", "RULES.md A-12"),
    FixedReading("A-15", "Are final tool statuses immutable? Must tool calls be final at idle?",
                 "neither is judged", "RULES.md A-15"),
    FixedReading("A-17", "May a messageId be reused across message families?",
                 "a warning (ACPM-MSG-FAMILY); the client view keeps the first family",
                 "RULES.md A-17"),
    FixedReading("A-18", "A content chunk for a toolCallId never announced?",
                 "a warning (TOOL-01); the client view creates the tool call",
                 "RULES.md A-18"),
    FixedReading("A-19", "Must idle(cancelled) precede the session/close response?",
                 "not required; session/close counts as a cancel (SESS-10)", "RULES.md A-19"),
    FixedReading("A-20", "Unknown non-_ enum values from a v2 sender?",
                 "a sender violation (ENUM-02, STOP-03, STATE-09, TOOL-14 ...)",
                 "RULES.md A-20"),
    FixedReading("A-24", "Is a permission's tool_call subject applied to the tool call?",
                 "yes, like a tool_call_update (PERM-04); title and description never are",
                 "RULES.md A-24"),
    FixedReading("A-26", "Which error answers a prompt for an unknown session?",
                 "any error (the fuzzer's probes accept every code)", "RULES.md A-26"),
    FixedReading("A-27", "A bare content block in tool_call_content_chunk?",
                 "a sender violation (TOOL-07)", "RULES.md A-27"),
)}
_BY_SLUG: dict[str, ReadingDef] = {d.slug: d for d in _DEFS}


class ReadingError(ValueError):
    """A --reading option that names no known ambiguity or value."""


def lookup(name: str) -> ReadingDef:
    key = name.strip()
    found = READING_DEFS.get(key.upper()) or _BY_SLUG.get(key.lower())
    if found is None:
        known = ", ".join(f"{d.id} ({d.slug})" for d in _DEFS)
        raise ReadingError(f"unknown reading {name!r}; known readings: {known}")
    return found


@dataclass(frozen=True, slots=True)
class Readings:
    """The reading chosen for every ambiguity (immutable, hashable)."""

    values: tuple[tuple[str, str], ...] = field(
        default_factory=lambda: tuple((d.id, d.default) for d in _DEFS))
    # The readings a user chose (not a default, not a revision's decision): a revision
    # applied later must not silently overrule them.
    explicit: frozenset[str] = field(default=frozenset(), compare=False)
    # Lookups by id, and the answers ``chose`` gave: checks ask these on every event (the
    # explorer a few hundred thousand times a run), a scan of ``values`` each time cost ~5%.
    _by_id: dict[str, str] = field(init=False, repr=False, compare=False)
    _chosen: dict[tuple[str, str], bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", dict(self.values))
        object.__setattr__(self, "_chosen", {})

    def __getitem__(self, reading_id: str) -> str:
        return self._by_id[reading_id]

    def chose(self, reading_id: str, value: str) -> bool:
        """Is ``value`` the choice for ``reading_id``? A reading or value the definitions do
        not have raises :class:`ReadingError`, so a check that compares against a misspelt
        value fails at once instead of never firing."""
        try:
            return self._chosen[reading_id, value]
        except KeyError:
            known = READING_DEFS.get(reading_id)
            if known is None or value not in known.values:
                raise ReadingError(f"reading {reading_id} has no value {value!r}") from None
            answer = self._chosen[reading_id, value] = self._by_id[reading_id] == value
            return answer

    def parse(self, assignments: Iterable[str]) -> Readings:
        """Apply ``NAME=VALUE`` assignments (NAME is an ID like A-01 or a slug).

        ``SPEC=<revision>`` also sets the readings that revision decides; choosing another
        value for one of them under that revision is an error that quotes the deciding text.
        """
        current = dict(self.values)
        explicit: set[str] = set(self.explicit)
        for text in assignments:
            name, sep, value = text.partition("=")
            if not sep:
                raise ReadingError(f"--reading expects NAME=VALUE, got {text!r}")
            d = lookup(name)
            value = value.strip()
            if value not in d.values:
                raise ReadingError(
                    f"reading {d.id} ({d.slug}) has no value {value!r}; "
                    f"choose one of: {', '.join(d.values)}")
            current[d.id] = value
            explicit.add(d.id)
        old = revisions.REVISIONS[self["SPEC"]]
        new = revisions.REVISIONS[current["SPEC"]]
        for rid in old.decides:  # leaving a revision: what it decided is open again
            if rid not in explicit and rid not in new.decides:
                current[rid] = READING_DEFS[rid].default
        for rid, value in new.decides.items():
            if rid in explicit and current[rid] != value:
                raise ReadingError(
                    f"reading {rid}={current[rid]} contradicts spec revision {new.name}, which "
                    f"decides {rid}={value} ({new.why[rid]})")
            current[rid] = value
        return Readings(tuple((d.id, current[d.id]) for d in _DEFS),
                        frozenset(explicit - {"SPEC"}))

    @property
    def revision(self) -> str:
        """The spec revision these readings judge by (``SPEC``)."""
        return self["SPEC"]

    def decided(self) -> dict[str, str]:
        """The readings the revision fixes (not open to --reading)."""
        return dict(revisions.REVISIONS[self["SPEC"]].decides)

    def deciding_sentence(self, rid: str) -> str | None:
        """Where the revision decides reading ``rid``: its name and sentence (None: open)."""
        rev = revisions.REVISIONS[self["SPEC"]]
        return f"{rev.name}: {rev.why[rid]}" if rid in rev.why else None

    def changed(self) -> dict[str, str]:
        """The readings that differ from the defaults (for reports; the revision's own
        decisions are not repeated, the revision is)."""
        decided = self.decided()
        return {k: v for k, v in self.values
                if READING_DEFS[k].default != v and k not in decided}

    def as_dict(self) -> dict[str, str]:
        return dict(self.values)


DEFAULT = Readings()
