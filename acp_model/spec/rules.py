"""The rule catalogue: every wire-observable lifecycle rule the model checks, with its ID.

IDs are the row IDs of the project's rule catalogue (``RULES.md``), so a report can be traced back
to the spec text. Three families extend it:

* ``ACPM-`` rules are our own names for obligations RULES.md only states implicitly (schema
  conformance per method, JSON-RPC's "every request is answered", the agent process staying
  alive); they fail only where they restate a MUST of the text, and cite it;
* ``A-xx.<value>`` rules are what a strict reading of an ambiguity adds (``A-01.forbid``: the
  client prompts only a quiet session); they are off under the default readings, so a MAY rule
  is never the ID of a failure;
* ``kind="definition"`` rows are the client-side reducer semantics (MSG-03..10, TOOL-03..09,
  PLAN-07, ...): listed so that reports and the client view can name them, applied by
  ``model.reducers`` rather than judged.

Statements are our own one-line paraphrases. ``strength`` is the level we enforce by default; where
the docs and the schema disagree (marked ``‡`` in RULES.md, section 6.3) ``alt_strength`` records
the other source and the stricter of the two is the default (see ``readings.STRENGTH_SOURCE``).
MAY rules are *allowances*: they name behaviour that must never be reported.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from acp_model.spec.revisions import SDK_2_4_0, SEED, V1
from acp_model.spec.rules_v1 import V1_CITATIONS, V1_ONLY

Party = Literal["agent", "client", "both"]
Strength = Literal["MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY"]
Kind = Literal["safety", "liveness", "safety+liveness", "allowance", "definition"]

BLOCKING: frozenset[str] = frozenset({"MUST", "MUST NOT"})


@dataclass(frozen=True, slots=True)
class Rule:
    """One catalogued obligation (or allowance)."""

    id: str
    party: Party
    strength: Strength
    kind: Kind
    statement: str
    citation: str
    tck: tuple[str, ...] = ()
    alt_strength: Strength | None = None
    alt_source: str = ""
    aliases: tuple[str, ...] = ()
    notes: str = ""
    fuzz_only: bool = False  # judged by the live fuzzer (process facts), not from a trace
    # Why no check judges it, for agent rules that cannot be seen on the wire (empty: judged)
    unobservable: str = ""
    # Rules its violations are reported under (a routing rule: session/close as a cancel)
    judged_via: tuple[str, ...] = ()
    # The spec revisions it applies to (revisions.py), and where a revision changes it: its
    # strength there and the text that says so (the newer revision's $defs descriptions).
    revisions: tuple[str, ...] = (SEED, SDK_2_4_0)
    strength_in: tuple[tuple[str, Strength], ...] = ()
    cited_in: tuple[tuple[str, str], ...] = ()
    # The text states it as a definition (what a stop reason or a response means), not with
    # a BCP 14 keyword: enforced at ``strength``, and every header says so
    from_definition: bool = False

    @property
    def is_allowance(self) -> bool:
        return self.strength == "MAY"

    @property
    def reading(self) -> tuple[str, str] | None:
        """``("A-01", "forbid")`` for a rule a strict reading adds (``A-01.forbid``)."""
        reading, dot, value = self.id.partition(".")
        return (reading, value) if dot else None

    def active(self, readings: Any) -> bool:
        """Can this rule be judged under ``readings``? (a reading rule only under its value,
        any rule only in the revisions it applies to)"""
        pair = self.reading
        return (pair is None or readings[pair[0]] == pair[1]) \
            and self.applies(readings["SPEC"])

    def applies(self, revision: str) -> bool:
        return revision in self.revisions

    @property
    def binds(self) -> str:
        """Whom it binds, in words: "binds the agent", "binds both parties"."""
        return "binds both parties" if self.party == "both" else f"binds the {self.party}"

    def effective_strength(self, source: str = "docs", revision: str = SEED) -> Strength:
        """Strength in a revision under a strength source: ``docs`` (stricter, default) or
        ``schema``; a revision that changed the rule has its own."""
        changed = dict(self.strength_in).get(revision)
        if changed is not None:
            return changed
        if source == "schema" and self.alt_strength is not None:
            return self.alt_strength
        return self.strength

    def strength_under(self, readings: Any) -> Strength:
        """The strength the chosen readings (strength source, revision) give it."""
        return self.effective_strength(readings["STRENGTH"], readings["SPEC"])

    def citation_in(self, revision: str) -> str:
        """Where a revision states it (its own citation, else the common one)."""
        return dict(self.cited_in).get(revision, self.citation)

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["tck"] = list(self.tck)
        data["aliases"] = list(self.aliases)
        return data


PL = "prompt-lifecycle.mdx"
_R: list[Rule] = [
    # --- connection set-up ---------------------------------------------------------------
    Rule("INIT-01", "client", "MUST", "safety",
         "The client finishes the initialize request/response exchange before any session method.",
         "initialization.mdx intro; session-setup.mdx intro"),
    Rule("INIT-03", "agent", "MUST", "safety",
         "The initialize result names the chosen protocol version, the agent's capabilities and "
         "its info.",
         "initialization.mdx intro; schema $defs.InitializeResponse",
         alt_strength="MAY", alt_source="schema: capabilities optional, default {} (C-09)"),
    Rule("INIT-04", "agent", "MUST", "safety",
         "An agent that implements the requested protocol version answers with that version.",
         "initialization.mdx §Version Negotiation", tck=("ACP-INIT-201",),
         notes="Judged by the fuzzer only: a v2 client that gets another version back either "
               "met an agent without v2 or one breaking this rule; it cannot fuzz either.",
         fuzz_only=True),
    Rule("INIT-05", "client", "SHOULD", "safety",
         "A client that cannot speak the version the agent chose drops the connection instead of "
         "creating sessions.",
         "initialization.mdx §Version Negotiation"),
    Rule("INIT-07", "both", "MUST", "safety",
         "Capability markers are objects such as {} (absent or null = unsupported), "
         "never booleans.",
         "initialization.mdx §Capabilities; migration.mdx §Support markers",
         tck=("ACP-INIT-204",)),
    Rule("INIT-09", "both", "MUST", "safety",
         "Both peers identify themselves in info with a name and a version.",
         "initialization.mdx §Implementation Information; schema $defs.Implementation",
         tck=("ACP-INIT-203",), revisions=(SEED, SDK_2_4_0, V1), strength_in=((V1, "SHOULD"),),
         cited_in=((V1, "v1 initialization.mdx ('It SHOULD also provide a name and version to "
                        "the Client'; 'They SHOULD also provide a name and version to the "
                        "Agent'): agentInfo and clientInfo, a warning"),)),
    Rule("INIT-18", "agent", "MUST", "safety",
         "An initialize request that validates against the schema is answered with a result, "
         "never refused as invalid (-32602, -32600): what the schema gives a default may be "
         "left out.",
         "initialization.mdx intro (the agent responds with the chosen version and its "
         "capabilities: INIT-03's MUST, which a refusal leaves unmet); schema "
         "$defs.InitializeRequest",
         notes="The proof is the request's own validity under the revision's schema (the "
               "fuzzer's, and any recorded client's) against the agent's claim that it is "
               "invalid. Not judged: an invalid request, and any other error (no API key, an "
               "internal failure: the environment's, and sdk-2.4.0's -32022 for a version "
               "none is at or below), which says nothing of the request. The fuzzer "
               "reports such an agent as failing this rule, with the counterexample, instead "
               "of as unusable; --client-capabilities sends what an editor sends, so the "
               "lifecycle behind such a start can still be fuzzed."),
    Rule("INIT-10", "agent", "MUST", "safety",
         "An agent that advertises capabilities.session never answers the baseline session "
         "methods with -32601 (method not found).",
         "initialization.mdx §Session Capabilities; session-setup.mdx §Resuming Sessions "
         "('MUST support session/resume'), §Closing Active Sessions ('MUST support "
         "session/close')",
         notes="The schema's AgentCapabilities.session comment lists only 4 of the 7 methods "
               "(C-04); session/new and session/prompt are in both lists. v2 judges "
               "session/list, session/resume and session/close too (the seed's session "
               "pages and sdk-2.4.0's AgentCapabilities.session list them); v1 only the two "
               "its baseline names (the others are capabilities there)."),
    # --- sessions -----------------------------------------------------------------------
    Rule("SESS-01", "agent", "MUST", "safety",
         "session/new returns a sessionId not used before on this connection.",
         "session-setup.mdx §Creating a Session", tck=("ACP-SESSION-001", "ACP-SESSION-002")),
    Rule("SESS-02", "client", "MUST", "safety",
         "The cwd given to session/new is an absolute path.",
         "session-setup.mdx §Working Directory; overview.mdx §Argument requirements"),
    Rule("SESS-08", "agent", "MUST", "safety",
         "During a replay every replayed message carries its own messageId: one id never "
         "names two replayed messages.",
         "session-setup.mdx §Resuming Sessions ('During replay, the Agent MUST include an "
         "opaque, unique messageId for each replayed message')", revisions=(SEED,),
         notes="Judged between a request that asks for replay (session/resume with replayFrom, "
               "session/load) and its response: chunks and upserts of one message share its "
               "id, so only one id used for two families (a user and an agent message) proves "
               "two messages. The same reuse outside a replay is ACPM-MSG-FAMILY's warning."),
    Rule("SESS-12", "agent", "MUST", "safety",
         "session/update and permission requests only name sessions that exist on this connection.",
         "schema $defs.UpdateSessionNotification; session-setup.mdx §Session ID",
         tck=("ACP-PROMPT-205",)),
    Rule("SESS-13", "client", "MUST", "safety",
         "session/prompt and session/cancel only name sessions the agent created on this "
         "connection.",
         "session-setup.mdx §Session ID"),
    Rule("SESS-14", "agent", "MUST", "safety",
         "A session the agent created on this connection stays usable until the client closes "
         "it: a session/prompt for it is not answered 'not found' (-32002), and the methods "
         "the agent offers for it do not fail it with an internal error (a warning).",
         "session-setup.mdx §Creating a Session ('The Agent MUST respond with a unique Session "
         "ID that identifies this conversation'); §Session ID; schema $defs.ErrorCode "
         "(-32002: 'A given resource, such as a session, was not found')",
         notes="The failure needs the agent's own word that the session is gone (-32002 to "
               "a prompt) while the client never sent session/close for it. An internal error "
               "(-32603) of a method offered for the session (load, resume, close, list, "
               "modes, configuration) is a warning: the text is silent on which errors those "
               "methods may give. A load or resume answered -32002 proves nothing: the text "
               "does not say a live session can be loaded (an agent may look only in its "
               "store)."),
    # --- prompts ------------------------------------------------------------------------
    Rule("PROMPT-01", "client", "MUST", "safety",
         "No session/prompt before initialization and session set-up are complete.",
         f"{PL} intro"),
    Rule("PROMPT-02", "client", "MUST", "safety",
         "Prompt content stays within the advertised prompt capabilities (image, audio and "
         "embedded resources only when advertised).",
         f"{PL} §1 User Message; initialization.mdx §Session Prompt Capabilities"),
    Rule("PROMPT-04", "agent", "MUST", "safety+liveness",
         "Each session/prompt gets exactly one response, sent once the agent has accepted it "
         "(an error means it was not accepted).",
         f"{PL} §2 Prompt Accepted", tck=("ACP-PROMPT-201",)),
    Rule("PROMPT-05", "agent", "SHOULD", "safety",
         "A successful prompt result is an acknowledgement only and carries no stopReason.",
         f"{PL} §2 Prompt Accepted; migration.mdx", tck=("ACP-PROMPT-201",),
         notes="DEF in RULES.md; enforced as a warning because the result object is open."),
    Rule("PROMPT-06", "agent", "MUST", "liveness",
         "Every accepted prompt is followed by a user message (user_message or "
         "user_message_chunk with a new messageId) reporting where it entered the history.",
         f"{PL} §2 Prompt Accepted", tck=("ACP-PROMPT-203",)),
    Rule("PROMPT-08", "agent", "MAY", "allowance",
         "A prompt may start foreground work or join foreground work already in progress.",
         f"{PL} intro"),
    Rule("PROMPT-10", "client", "MAY", "allowance",
         "After idle has been reported, the client may send the next prompt.",
         f"{PL} §closing"),
    Rule("PROMPT-13", "agent", "MAY", "allowance",
         "The model may answer with text, tool calls or both, relayed as session/update.",
         f"{PL} §3 Agent Reports Output"),
    # --- foreground state ---------------------------------------------------------------
    Rule("STATE-01", "agent", "MUST", "safety",
         "Foreground work is announced with state running before any requires_action or "
         "stop-reason idle that belongs to it.",
         f"{PL} §3 Agent Reports Output", tck=("ACP-STATE-201",)),
    Rule("STATE-02", "agent", "MUST", "liveness",
         "Foreground work eventually ends with an idle state_update.",
         f"{PL} §4 Report Completion", tck=("ACP-STATE-202",)),
    Rule("STATE-03", "agent", "MUST", "safety",
         "An idle that ends foreground work carries a stopReason.",
         f"{PL} §4 Report Completion, §Stop Reasons", tck=("ACP-STATE-203",),
         alt_strength="SHOULD", alt_source="schema $defs.IdleStateUpdate.stopReason (C-01)",
         aliases=("STOP-01",),
         strength_in=((SDK_2_4_0, "SHOULD"),),
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.IdleStateUpdate ('Agents SHOULD include "
                               "a stopReason when the idle transition ends foreground work')"),)),
    Rule("STATE-04", "agent", "MAY", "allowance",
         "The agent may end foreground work at any point with an idle and a stop reason.",
         f"{PL} §4 Report Completion"),
    Rule("STATE-05", "agent", "SHOULD", "safety",
         "While foreground work waits for a permission answer or a session-scoped elicitation "
         "the agent reports requires_action.",
         f"{PL} §5 Tool Invocation and Status Reporting ('a permission response or other user "
         "action')", tck=("ACP-PATCH-209",),
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.StateUpdate ('including permissions or "
                               "elicitations'); $defs.CreateElicitationRequest ('A "
                               "session-scoped request follows the aggregate foreground-state "
                               "contract')"),)),
    Rule("STATE-06", "agent", "MUST", "safety",
         "When blocked work resumes (e.g. an approved tool starts, or the tool an answered "
         "elicitation was tied to proceeds) the agent reports running again.",
         f"{PL} §3 (MUST on any resumption) vs §5 (SHOULD)", tck=("ACP-PATCH-209",),
         alt_strength="SHOULD", alt_source=f"{PL} §5 (C-03)",
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.StateUpdate; "
                               "$defs.CreateElicitationRequest ('Once reported, they MUST "
                               "report running when progress resumes')"),)),
    Rule("STATE-07", "agent", "MAY", "allowance",
         "Background activity may keep sending non-state session updates while idle.",
         f"{PL} §Session States; tool-calls.mdx intro"),
    Rule("STATE-09", "agent", "MUST NOT", "safety",
         "state_update.state is running, idle, requires_action or a custom value starting with _; "
         "other values are reserved.",
         "schema $defs.StateUpdate; extensibility.mdx §Enum and Tagged-Union Variants",
         tck=("ACP-ENUM-202",)),
    # --- stop reasons -------------------------------------------------------------------
    Rule("ACPM-ONE-STOP", "agent", "SHOULD", "safety",
         "One stop reason per end of foreground work: an idle that ends no work (idle after idle) "
         "carries no stop reason, except a cancelled one answering a cancel (reading A-05).",
         f"{PL} §4 Report Completion, §Stop Reasons; RULES.md A-05",
         notes="Our own warning for the 'second stop reason for one turn' bug "
               "(claude-agent-acp#551): no sentence of the text says MUST here, so it fails "
               "only under reading A-05=forbid (rule A-05.forbid); off under A-05=allow."),
    Rule("STOP-03", "agent", "MUST", "safety",
         "Custom stop reasons start with _; other values outside end_turn, max_tokens, "
         "max_turn_requests, refusal and cancelled are reserved.",
         f"{PL} §Stop Reasons", tck=("ACP-STATE-203", "ACP-CANCEL-207")),
    # --- messages, tools, plans, usage --------------------------------------------------
    Rule("MSG-01", "agent", "MUST", "safety",
         "Every message update and message chunk carries a messageId.",
         f"{PL} §3 (Message IDs); migration.mdx", tck=("ACP-PATCH-201",)),
    Rule("MSG-02", "agent", "MAY", "allowance",
         "Messages may be sent as whole upserts, as chunks, or a mix of both.",
         f"{PL} §3 Agent Reports Output"),
    Rule("TOOL-02", "agent", "SHOULD", "safety",
         "The first report of a toolCallId includes a title.",
         "tool-calls.mdx §Reporting", tck=("ACP-PATCH-208",)),
    Rule("TOOL-07", "agent", "MUST NOT", "safety",
         "tool_call_content_chunk content uses a tool-content wrapper (content, diff, "
         "terminal or a _ type), never a bare content block.",
         "tool-calls.mdx §Streaming Content; RULES.md A-27"),
    Rule("TOOL-10", "agent", "MAY", "allowance",
         "While a tool runs the agent may stream progress updates and content chunks.",
         f"{PL} §5; tool-calls.mdx §Streaming Content"),
    Rule("TOOL-14", "agent", "MUST", "safety",
         "Tool call statuses are pending, in_progress, completed, failed, cancelled or "
         "start with _.",
         "tool-calls.mdx §Status", tck=("ACP-ENUM-201",)),
    Rule("TOOL-15", "agent", "MUST", "safety",
         "Tool kinds are the defined ones or start with _.",
         "tool-calls.mdx §Reporting; schema $defs.ToolKind", tck=("ACP-ENUM-201",)),
    Rule("TOOL-19", "agent", "MUST", "safety",
         "File paths in tool call locations and diffs are absolute.",
         "overview.mdx §Argument requirements; tool-calls.mdx §Following the Agent"),
    Rule("PLAN-02", "agent", "MUST", "safety",
         "Every plan_update plan has a type and a planId (plans are kept apart by planId).",
         "agent-plan.mdx intro, §Item-Based Plans; schema $defs.PlanItems",
         tck=("ACP-PATCH-205",), notes="DEF in RULES.md, checked by the schema."),
    Rule("PLAN-04", "agent", "MUST", "safety",
         "Plan types other than items start with _.",
         "agent-plan.mdx §Extensibility", tck=("ACP-PATCH-205",)),
    Rule("PLAN-09", "agent", "MUST", "safety",
         "Plan entry priorities and statuses are the defined values or start with _.",
         "agent-plan.mdx §Plan Entries", tck=("ACP-ENUM-201",)),
    Rule("USAGE-01", "agent", "MAY", "allowance",
         "The agent may send usage_update in any state.",
         f"{PL} §3 (Session Usage Updates)"),
    Rule("USAGE-02", "agent", "MUST", "safety",
         "usage_update used and size are always present, non-null, non-negative integers.",
         f"{PL} §3 (Session Usage Updates); schema $defs.UsageUpdate",
         notes="DEF (required) in RULES.md, checked by the schema."),
    Rule("USAGE-04", "agent", "MUST", "safety",
         "usage_update cost.currency is an ISO 4217 currency code.",
         f"{PL} §3 (Session Usage Updates); schema $defs.Cost",
         notes="DEF in RULES.md; the schema only checks the three-letter shape. Not in "
               "sdk-2.4.0, whose $defs.Cost.currency is 'an ISO 4217 currency code ... for "
               "money, or another unit such as \"credits\"': nothing is left to judge.",
         revisions=(SEED,)),
    Rule("ENUM-02", "both", "MUST NOT", "safety",
         "No invented values without the _ prefix in open enums and tagged unions "
         "(sessionUpdate kinds, content types, outcomes, methods).",
         "extensibility.mdx §Enum and Tagged-Union Variants", tck=("ACP-ENUM-202",)),
    Rule("ACPM-ENUM-REVISION", "agent", "SHOULD", "safety",
         "An open enum's value the chosen revision does not list, but another revision of the "
         "same protocol version defines (a seed agent's compaction_update kinds), is a "
         "variant of that revision, not an invention.",
         "extensibility.mdx §Enum and Tagged-Union Variants ('Unknown values that do not "
         "begin with _ are reserved for future ACP variants')",
         notes="Not ENUM-02: the text's MUST NOT is about extensions inventing values; a value "
               "a revision of ACP defines is the future variant the text reserves room for. A "
               "client of the chosen revision falls back to its generic handling, so the "
               "agent follows another revision than the one judged: a warning."),
    Rule("ENUM-12", "agent", "SHOULD", "safety",
         "A custom (_-prefixed) request the agent does not recognise is answered with the "
         "standard -32601 Method not found error, not with a result.",
         "extensibility.mdx §Custom Requests ('If the receiving end doesn't recognize the "
         "custom method name, it should respond with the standard \"Method not found\" "
         "error')",
         notes="Judged on the client's custom requests the agent did not advertise (no key of "
               "its capabilities' _meta names the method's namespace): a result then claims "
               "a method it gave no sign of knowing. The text's 'should' is lower case, so a "
               "warning.",
         revisions=(SEED, SDK_2_4_0, V1),
         cited_in=((V1, "v1 extensibility.mdx §Custom Requests ('it should respond with the "
                        "standard \"Method not found\" error')"),)),
    # --- permissions --------------------------------------------------------------------
    Rule("PERM-01", "agent", "MAY", "allowance",
         "The agent may ask for permission before an operation.",
         f"{PL} §5; tool-calls.mdx §Requesting Permission"),
    Rule("PERM-02", "agent", "MUST", "safety",
         "A permission request has sessionId, title and at least one option with optionId, name "
         "and kind.", "tool-calls.mdx §Requesting Permission", tck=("ACP-PERM-201",)),
    Rule("PERM-07", "agent", "MUST", "safety",
         "Permission option kinds are allow_once, allow_always, reject_once, reject_always or "
         "start with _.", "tool-calls.mdx §Permission Options"),
    Rule("PERM-09", "client", "MAY", "allowance",
         "The client may answer a permission request at once by policy.",
         "tool-calls.mdx §Requesting Permission"),
    Rule("PERM-11", "agent", "MUST NOT", "safety",
         "Only the selection of an allow option approves: the guarded tool call does not proceed "
         "(in_progress/completed) before an allow, nor after any other answer.",
         "tool-calls.mdx §Requesting Permission, §Permission Options; RULES.md §4.4",
         tck=("ACP-ENUM-203",)),
    Rule("PERM-12", "client", "MUST", "safety+liveness",
         "Each permission request gets exactly one response with its id.",
         "overview.mdx §Error Handling"),
    Rule("PERM-13", "agent", "MAY", "allowance",
         "Several permission requests may be open at once.", "cancellation.mdx §Example"),
    # --- cancellation -------------------------------------------------------------------
    Rule("CANCEL-01", "client", "MAY", "allowance",
         "The client may send session/cancel (a notification, no id) at any time.",
         f"{PL} §Cancellation"),
    Rule("CANCEL-02", "agent", "MUST NOT", "safety",
         "The agent never answers the session/cancel notification.",
         "overview.mdx §Error Handling", tck=("ACP-CANCEL-205",)),
    Rule("CANCEL-04", "client", "MUST", "safety+liveness",
         "After session/cancel the client answers every pending permission request of that "
         "session with the cancelled outcome.",
         f"{PL} §Cancellation; tool-calls.mdx", aliases=("PERM-10",),
         notes="Reading A-14 also accepts error -32800 once the agent withdrew the request "
               "with $/cancel_request."),
    Rule("CANCEL-05", "agent", "SHOULD", "safety",
         "Once it has read the cancel, the agent stops model and tool work: no new permission "
         "requests for the cancelled work.", f"{PL} §Cancellation", tck=("ACP-CANCEL-204",)),
    Rule("CANCEL-06", "agent", "MUST", "liveness",
         "Cancelled foreground work ends with idle and stopReason cancelled.",
         f"{PL} §Cancellation", tck=("ACP-CANCEL-201",),
         alt_strength="SHOULD", alt_source="schema CancelSessionNotification description (C-02)"),
    Rule("CANCEL-07", "agent", "MUST", "safety",
         "Once the agent has provably read a cancel during foreground work, that work ends with "
         "stopReason cancelled, never another reason.",
         f"{PL} §Cancellation ('the Agent MUST send an idle state_update session update with "
         "the cancelled stop reason'; for the errors of aborted work, its warning box: "
         "'Agents MUST catch these errors')", tck=("ACP-CANCEL-203", "ACP-CANCEL-207"),
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.ClientNotification session/cancel "
                               "('Cancels a session's foreground work and its prompts not yet "
                               "inserted'; 'the Agent MUST send an idle state_update session "
                               "update with the cancelled stop reason if cancellation ended "
                               "active foreground work'; for the errors of aborted work: "
                               "'Agents MUST catch errors caused by aborting cancelled work and "
                               "report the cancelled stop reason, not error')"),),
         notes="A cancel the fuzzer wrote once its scripted model had released the turn's whole "
               "final response (no tool call in it, no model request open; the cancel's "
               "transcript record says so) left nothing to abort: answered with the turn's "
               "real end it is a warning under reading A-33=done (the default), a failure "
               "under A-33=strict."),
    Rule("CANCEL-08", "agent", "MAY", "allowance",
         "Content and tool call updates may still come between the cancel and the cancelled idle.",
         f"{PL} §Cancellation"),
    Rule("CANCEL-09", "agent", "MUST", "safety",
         "Updates for the cancelled work are sent before the idle that reports the cancellation, "
         "never after it (reading A-13: tool calls of the cancelled work).",
         f"{PL} §Cancellation", tck=("ACP-CANCEL-202",)),
    Rule("CANCEL-11", "agent", "MUST", "safety",
         "stopReason cancelled is only reported for a session/cancel that could still apply to "
         "the work being ended (a cancel read while idle does not kill the next turn).",
         f"{PL} §Stop Reasons; schema $defs.StopReason",
         notes="DEF in RULES.md, enforced as MUST: a cancelled stop reason is the agent's claim "
               "that the client cancelled this work. A failure proves that nothing the client "
               "sent can have cancelled it: no cancel or close it may still have reached "
               "(one read before the work's prompt was sent, not together with it), no reopen "
               "of the session while the work ran, no withdrawal of its prompt; a cancel read "
               "before the work began that the agent may have handled after taking the prompt "
               "up (the two written together) leaves only a warning.",
         from_definition=True),
    Rule("CANCEL-13", "both", "MAY", "allowance",
         "The receiver of $/cancel_request may stop the request's work first.",
         "cancellation.mdx"),
    Rule("CANCEL-14", "both", "MUST", "liveness",
         "A request withdrawn with $/cancel_request is still answered (result or -32800).",
         "cancellation.mdx"),
    # --- JSON-RPC framing ---------------------------------------------------------------
    Rule("RPC-01", "both", "MUST", "safety",
         "Messages are JSON-RPC 2.0: jsonrpc \"2.0\", responses answer an open request id with "
         "exactly one of result or error.",
         "overview.mdx §Communication Model; JSON-RPC 2.0", tck=("ACP-JSONRPC-001",
                                                                   "ACP-JSONRPC-002")),
    Rule("RPC-02", "both", "MUST", "safety", "Every message is UTF-8.", "transports.mdx",
         tck=("ACP-TRANSPORT-002",)),
    Rule("RPC-04", "both", "MUST NOT", "safety",
         "Nothing but ACP messages is written to the protocol stream (no banners or logs on "
         "stdout).",
         "transports.mdx §stdio", tck=("ACP-TRANSPORT-201",)),
    Rule("RPC-06", "both", "MAY", "allowance",
         "Requests and notifications may be sent as a batch array.",
         "transports.mdx §JSON-RPC Batch Messages"),
    Rule("RPC-07", "both", "MUST", "safety", "A batch has at least one element.",
         "transports.mdx §JSON-RPC Batch Messages", tck=("ACP-BATCH-201",)),
    Rule("RPC-09", "both", "MUST NOT", "safety",
         "Notifications are never answered.", "transports.mdx; overview.mdx §Error Handling",
         tck=("ACP-JSONRPC-003",),
         # sdk-2.4.0's text says nothing of batches: JSON-RPC 2.0 itself is the ground
         cited_in=((SDK_2_4_0, "JSON-RPC 2.0 §4.1 Notification ('The Server MUST NOT reply to "
                               "a Notification, including those that are within a batch "
                               "request')"),)),
    Rule("ACPM-BATCH", "both", "SHOULD", "safety",
         "A valid batch is answered with an array holding a response for each request in it "
         "(none for its notifications), not with one error for the whole batch.",
         "transports.mdx §JSON-RPC Batch Messages",
         notes="transports.mdx: 'ACP follows the JSON-RPC 2.0 batch rules'; the receiver SHOULD "
               "respond with an array of the Response objects and a Response SHOULD exist for "
               "each Request. Ours: RULES.md keeps it inside RPC-09, whose MUST NOT half "
               "(notifications are never answered) is not what a rejected batch breaks."),
    Rule("RPC-10", "both", "SHOULD NOT", "safety",
         "initialize, session/new and session/prompt are not sent inside batches.",
         "transports.mdx; migration.mdx §Transports"),
    Rule("ACPM-ALIVE", "agent", "MUST", "safety",
         "The agent process keeps running and keeps stdout open while it owes the client "
         "something (a response, the user message or the idle of accepted work).",
         "transports.mdx §stdio (the client ends the connection by closing stdin); JSON-RPC 2.0 "
         "§5 (a request MUST be answered); prompt-lifecycle.mdx §4 Report Completion",
         tck=("ACP-JSONRPC-005",),
         notes="Judged by the fuzzer, which owns the process; a recorded trace cannot show it. "
               "An agent that exits owing nothing only warns: the text does not forbid it. One "
               "that exits cleanly (code 0) fails only for what it provably knew it owed (work "
               "it accepted or reported, a request a later response proves read); a request it "
               "may not have read before exiting warns. A crash counts everything owed.",
         fuzz_only=True),
    Rule("ACPM-OUTPUT", "agent", "SHOULD", "safety",
         "The agent's output stays within the harness's bounds (the transcript cap, default "
         "32 MiB per connection); a flood beyond it ends the connection.",
         "transports.mdx §stdio; the fuzzer's own limit",
         notes="Judged by the fuzzer: an agent flooding stdout cannot be checked further. No "
               "sentence of the text bounds the output, so it is a warning; what the flood "
               "leaves unanswered fails under its own rules. "
               "Between examples the fuzzer moves to a fresh process once the transcript is a "
               "quarter full, so a long run never reaches the cap by itself.",
         fuzz_only=True),
    Rule("ACPM-ANSWER", "both", "MUST", "liveness",
         "Every request is eventually answered with a result or an error.",
         "overview.mdx §Communication Model; JSON-RPC 2.0 §5 (the server MUST reply to every "
         "request)",
         tck=("ACP-JSONRPC-004", "ACP-EXT-001")),
    Rule("ACPM-SCHEMA", "both", "MUST", "safety",
         "Every message validates against its revision's schema definition for its method and "
         "direction.",
         "transports.mdx §stdio (nothing that is not a valid ACP message); schema.json ($defs "
         "selected by x-method / x-side)", tck=("ACP-SCHEMA-001",)),
    Rule("ACPM-SCHEMA-TOLERATED", "both", "SHOULD", "safety",
         "Every part of a message validates, including the array items and fields the schema "
         "tells a deserializer to skip or default (x-deserialize-skip-invalid-items, "
         "-default-on-error, -default-on-null).",
         "schema.json x-deserialize-* annotations on $defs properties",
         revisions=(SEED, SDK_2_4_0, V1),
         notes="The schema itself says a peer that follows it accepts such a message and loses "
               "only the part (the item skipped, the field defaulted): the message is not "
               "rejected, so it is a warning naming the item and the field, not ACPM-SCHEMA's "
               "MUST failure. Every other schema failure keeps its rule's level."),
    # --- what strict readings add (off under the defaults) ------------------------------
    Rule("A-01.forbid", "client", "MUST", "safety",
         "Under reading A-01=forbid, the client sends session/prompt only while the session is "
         "quiet (no foreground work).",
         f"{PL} §closing; RULES.md A-01 (c)"),
    Rule("A-03.diagram", "agent", "MUST", "safety",
         "Under reading A-03=diagram, the prompt response comes first, then the user message, "
         "then running.",
         f"{PL} §2 Prompt Accepted (sequence diagram); RULES.md A-03 (a)"),
    Rule("A-04.idle-cancelled", "agent", "MUST", "safety+liveness",
         "Under reading A-04=idle-cancelled, a cancel that met no foreground work is still "
         "answered with idle(cancelled), before any new work begins.",
         f"{PL} §Cancellation; RULES.md A-04 (b)"),
    Rule("A-05.forbid", "agent", "MUST", "safety",
         "Under reading A-05=forbid, an idle that ends no foreground work carries no stop reason "
         "(a cancelled reply to a cancel excepted).",
         f"{PL} §4 Report Completion, §Stop Reasons; RULES.md A-05"),
    Rule("A-10.cancel", "agent", "MUST", "safety",
         "Under reading A-10=cancel, a cancel the agent read while it held a prompt behind "
         "other work cancels that prompt too: the prompt is rejected, or its work ends "
         "cancelled.",
         f"{PL} intro, §Cancellation; RULES.md A-10",
         notes="A warning under the default A-10=any: the held prompt outlived the cancel, "
               "which real agents do (RULES.md A-10 (d)) and the seed's text allows. The "
               "sdk-2.4.0 revision decides A-10=cancel, so there it fails.",
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.ClientNotification session/cancel "
                               "('Cancels a session's foreground work and its prompts not yet "
                               "inserted')"),)),
    Rule("A-07.forbid", "agent", "MUST", "safety",
         "Under reading A-07=forbid, foreground work (running) only starts from a prompt.",
         f"{PL} intro; RULES.md A-07 (b)"),
    # --- sessions (closing) -------------------------------------------------------------
    Rule("SESS-10", "agent", "MUST", "safety",
         "session/close cancels the session's ongoing work as if session/cancel had arrived.",
         "session-setup.mdx §Closing Active Sessions", judged_via=("CANCEL-06", "CANCEL-07"),
         notes="The monitor treats a session/close request like a session/cancel for the "
               "CANCEL rules; whether idle(cancelled) precedes the close response is open "
               "in the seed and v1 (A-19); sdk-2.4.0 requires it (SDK-CLOSE-01)."),
    # --- the sdk-2.4.0 revision (normative text in its schema's $defs descriptions) -------
    Rule("SDK-RECEIPT-01", "agent", "MUST", "safety",
         "The prompt response is a receipt: {messageId} naming the inserted user message, "
         "required and non-null.", "sdk-2.4.0 schema $defs.PromptResponse.messageId",
         revisions=(SDK_2_4_0,), notes="Judged by the schema of the revision."),
    Rule("SDK-RECEIPT-02", "agent", "MUST", "liveness",
         "The user message a receipt names is reported through session/update with that same "
         "messageId (before or after the response).",
         "sdk-2.4.0 schema $defs.PromptResponse.messageId; $defs.ClientRequest session/prompt "
         "('The Agent reports the user message with the same ID')",
         revisions=(SDK_2_4_0,),
         notes="Judged at the end of the trace (or fuzz example): no sentence bounds when the "
               "echo must come, only that it does during the live session."),
    Rule("SDK-RECEIPT-03", "agent", "MUST", "safety",
         "Two prompts' receipts never name the same messageId: message ids are unique per "
         "message type within a session.",
         "sdk-2.4.0 schema $defs.MessageId; $defs.PromptResponse",
         revisions=(SDK_2_4_0,)),
    Rule("SDK-PROMPT-03", "agent", "MUST NOT", "safety",
         "A prompt answered with an error was not inserted: no user message carries it "
         "afterwards.",
         "sdk-2.4.0 schema $defs.ClientRequest session/prompt ('An error response means the "
         "user message was not inserted ... A rejected submission produces no user-message "
         "updates')", revisions=(SDK_2_4_0,),
         notes="A definition of the revision, enforced as MUST NOT: the error told the client "
               "the message is not in the conversation. With SDK-PROMPT-02 (no error once "
               "inserted) it covers both orders of an insertion and an error.",
         from_definition=True),
    Rule("SDK-PROMPT-02", "agent", "MUST NOT", "safety",
         "Once a prompt's user message is inserted, its request is not answered with an error "
         "(failing work ends with the error stop reason instead).",
         "sdk-2.4.0 schema $defs.ClientRequest session/prompt ('Once it is inserted, the Agent "
         "MUST NOT answer with an error')", revisions=(SDK_2_4_0,),
         notes="Proved only when a user message carries the open prompt's content verbatim "
               "and no other open prompt has that content."),
    Rule("SDK-RESUME-01", "agent", "MUST", "safety",
         "A successful session/resume response follows a current state_update of the "
         "session (after any replay it asked for, even without one).",
         "sdk-2.4.0 schema $defs.ResumeSessionResponse ('The agent MUST send a current "
         "state_update after any requested history replay and before this response, even "
         "without replay')", revisions=(SDK_2_4_0,),
         notes="No race: the agent writes the update and the response, so their order on its "
               "stream is its own. Judged on successful responses only: a refused resume "
               "restores nothing to report."),
    Rule("SDK-CLOSE-01", "agent", "MUST", "safety",
         "When session/close cancels foreground work, the work's final updates and its idle "
         "with stopReason cancelled come before the successful close response.",
         "sdk-2.4.0 schema $defs.CloseSessionRequest ('When closing cancels active foreground "
         "work, the Agent MUST send the final updates for that work and the idle "
         "state_update with stopReason: \"cancelled\" before responding successfully')",
         revisions=(SDK_2_4_0,),
         notes="Judged at the close response: foreground work the session still shows then "
               "(no idle since it began) breaks it. No race: the agent writes both. Closing "
               "an idle session needs no idle. Final updates sent after the response are "
               "SDK-CLOSE-03's."),
    Rule("SDK-CLOSE-02", "agent", "MUST", "safety",
         "A prompt still open when session/close was sent, whose user message the close kept "
         "from being inserted, is answered with -32800 (Request Cancelled).",
         "sdk-2.4.0 schema $defs.CloseSessionRequest ('If closing prevents a prompt's user "
         "message from being inserted, the Agent MUST answer that request with -32800')",
         revisions=(SDK_2_4_0,),
         notes="Judged on the prompt's response, before or after the close response ('Prompt "
               "responses need not precede the close response'). A success must name an "
               "inserted message (SDK-RECEIPT-02); an error after insertion is SDK-PROMPT-02's. "
               "A refused close prevents nothing and binds nothing."),
    Rule("SDK-CLOSE-03", "agent", "MUST NOT", "safety",
         "After the session/close response the agent sends no other message for the session "
         "on that connection (responses to its prompts excepted).",
         "sdk-2.4.0 schema $defs.CloseSessionRequest ('After the close response, the Agent "
         "sends no other messages for the session on that connection')",
         revisions=(SDK_2_4_0,),
         notes="Stated as what the protocol does, enforced as MUST NOT (the client has "
               "freed the session). A session/resume or session/load of the session makes it "
               "live again. Prompt responses may follow the close response (same description)."),
    Rule("SDK-BG-01", "agent", "MUST", "safety",
         "An agent that has reported background work includes the background list on every "
         "later state update of the session.",
         "sdk-2.4.0 schema $defs.IdleStateUpdate.background", revisions=(SDK_2_4_0,),
         notes="'Reports background work' is read as: has listed at least one item; an agent "
               "that only ever sent [] is not bound (the permissive reading)."),
    Rule("SDK-BG-02", "agent", "MUST", "safety",
         "Each background item is announced (its tool call reported) before the first "
         "snapshot that lists it.", "sdk-2.4.0 schema $defs.BackgroundWork",
         revisions=(SDK_2_4_0,), notes="Judged for tool call items; terminals are not tracked."),
    Rule("SDK-BG-03", "agent", "MUST", "safety",
         "A tool call's final status is reported before the snapshot that removes it from the "
         "background list.", "sdk-2.4.0 schema $defs.BackgroundWork", revisions=(SDK_2_4_0,)),
    # --- what the audit of the texts found observable (docs/audit.md) -------------------
    Rule("INIT-11", "agent", "MUST", "safety",
         "Text and resource_link prompt blocks need no capability: the agent never refuses a "
         "prompt made of them as unsupported content.",
         "initialization.mdx §Session Prompt Capabilities ('MUST support ContentBlock::Text "
         "and ContentBlock::ResourceLink'); content.mdx §Text Content ('MUST support text "
         "content blocks')",
         revisions=(SEED, SDK_2_4_0, V1),
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.ContentBlock ('MUST support text "
                               "content blocks'; 'MUST support resource links in prompts'); "
                               "$defs.PromptRequest ('MUST support text and resource_link "
                               "content blocks')"),
                   (V1, "v1 initialization.mdx §Prompt capabilities ('MUST support "
                        "ContentBlock::Text and ContentBlock::ResourceLink'); v1 content.mdx "
                        "§Text Content ('MUST support text content blocks')")),
         notes="Judged on the prompt's error response: an error whose message calls text or "
               "resource_link content unsupported fails. A bare -32602 (the code the text "
               "gives for unsupported content) to a schema-valid prompt of such blocks, sent "
               "while the session was quiet, warns: the agent may have found something else "
               "invalid (a linked resource, a length), which the wire does not show."),
    Rule("INIT-12", "agent", "MUST", "safety",
         "An agent whose initialize result lists authentication methods implements auth/login "
         "and auth/logout: it never answers them with -32601.",
         "authentication.mdx §Advertising Authentication ('MUST implement both auth/login "
         "and auth/logout')",
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.InitializeResponse.authMethods ('MUST "
                               "support both auth/login and auth/logout'); $defs.LoginAuthRequest "
                               "('MUST support this method when their initialize response "
                               "included a non-empty authMethods list')"),)),
    Rule("INIT-13", "client", "MUST NOT", "safety",
         "The client calls auth/login and auth/logout only after the agent listed "
         "authentication methods, and logs in only with a listed method that is not a "
         "terminal one (v1: authenticate).",
         "authentication.mdx §Advertising Authentication ('Clients MUST NOT call either "
         "method'), §Terminal authentication ('MUST NOT send an auth/login request for a "
         "terminal method')",
         revisions=(SEED, SDK_2_4_0, V1),
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.LoginAuthRequest ('MUST NOT call this "
                               "method when authMethods was omitted or empty'); "
                               "$defs.AuthMethodTerminal ('MUST NOT pass this method to "
                               "auth/login')"),
                   (V1, "v1 schema $defs.AuthMethodTerminal ('The client MUST NOT pass this "
                        "method to authenticate')"))),
    Rule("INIT-16", "agent", "MUST", "safety",
         "The agent treats what the client's initialize did not advertise as unsupported: no "
         "request of a client method it lacks (fs/*, terminal/*, elicitation/create), no "
         "terminal authentication method, no boolean config option (v1).",
         "initialization.mdx §Capabilities ('MUST treat all capabilities omitted in the "
         "initialize request as UNSUPPORTED'); schema $defs.AuthMethodTerminal ('Agents MUST "
         "advertise this method only when the client enabled its terminal authentication "
         "capability')",
         revisions=(SEED, SDK_2_4_0, V1),
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.AuthMethodTerminal ('Agents MUST "
                               "advertise this method only when the client enabled its terminal "
                               "authentication capability'); $defs.ClientCapabilities"),
                   (V1, "v1 initialization.mdx §Capabilities ('MUST treat all capabilities "
                        "omitted in the initialize request as UNSUPPORTED'); v1 "
                        "session-config-options.mdx §Boolean Config Options ('MUST NOT include "
                        "type: \"boolean\" options'); v1 schema $defs.AuthMethodTerminal")),
         notes="Judged from the client's own initialize request (which capabilities it "
               "sent) and the agent's messages: each is a fact of the wire, no race."),
    Rule("INIT-17", "agent", "MUST", "safety",
         "The environment variables of a terminal authentication method have distinct names.",
         "authentication.mdx §Terminal authentication ('Every env entry MUST have a unique "
         "name'); schema $defs.AuthMethodTerminal.env",
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.AuthMethodTerminal.env ('Names MUST be "
                               "unique')"),)),
    Rule("INIT-02", "client", "SHOULD", "safety",
         "v1: the client's initialize states its capabilities (clientCapabilities).",
         "v1 initialization.mdx §Client Capabilities ('The Client SHOULD specify whether it "
         "supports the following capabilities')", revisions=(V1,),
         notes="The v1 schema defaults the field, so a request without it is valid: the "
               "SHOULD is what is left to judge. v2's capabilities are the schema's."),
    Rule("ENUM-11", "both", "SHOULD", "safety",
         "The _meta keys traceparent, tracestate and baggage carry W3C trace context "
         "(strings; traceparent in its version-trace-parent-flags form).",
         "extensibility.mdx §The _meta Field ('SHOULD be reserved for W3C trace context')",
         revisions=(SEED, V1),
         cited_in=((V1, "v1 extensibility.mdx §The _meta Field ('SHOULD be reserved for W3C "
                        "trace context')"),),
         notes="Read where a message carries _meta at its top: the params, the result, a "
               "session update."),
    Rule("SESS-03", "client", "MUST", "safety",
         "The client sends additionalDirectories only to an agent that advertised them.",
         "session-setup.mdx §Additional Workspace Roots ('MUST only send additionalDirectories "
         "when the Agent advertises')",
         revisions=(SEED, V1),
         cited_in=((V1, "v1 session-setup.mdx §Additional Workspace Roots ('MUST only send "
                        "additionalDirectories when the Agent advertises')"),),
         notes="An empty list activates nothing (the text says so): only a non-empty one is "
               "judged."),
    Rule("SESS-04", "client", "MUST", "safety",
         "The client lists an MCP server of a transport only when the agent advertised that "
         "transport (seed: stdio and http; v1: http and sse, stdio being every agent's).",
         "session-setup.mdx §Checking Transport Support",
         revisions=(SEED, V1),
         cited_in=((V1, "v1 session-setup.mdx §Checking Transport Support"),)),
    Rule("SESS-06", "agent", "MUST NOT", "safety",
         "session/resume without replayFrom replays no history: no earlier message of the "
         "conversation between the request and its response.",
         "session-setup.mdx §Resuming Sessions ('the Agent MUST NOT replay the conversation "
         "history')",
         revisions=(SEED, SDK_2_4_0), strength_in=((SDK_2_4_0, "SHOULD NOT"),),
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.ResumeSessionRequest.replayFrom "
                               "('Omitted and null are equivalent and mean the Agent should "
                               "resume without replaying previous conversation history': "
                               "lower case, a warning)"),),
         notes="Judged as a warning, like v1's V1-RESUME-01: content between the request and "
               "the response may have been written before the agent read the request. Only "
               "an earlier message counts (a user message while no prompt was open, or a "
               "message id the session used before)."),
    Rule("SESS-07", "agent", "MUST", "safety",
         "A request for the whole history (v2 session/resume with replayFrom start, v1 "
         "session/load) replays the entire conversation: every user message of a turn that "
         "ended normally before the request was sent comes back.",
         "session-setup.mdx §Resuming Sessions ('the Agent MUST replay the entire "
         "conversation'; 'When all requested replay entries have been reported to the Client, "
         "the Agent MUST respond')",
         revisions=(SEED, V1),
         cited_in=((V1, "v1 session-setup.mdx §Loading a Session ('The Agent MUST replay the "
                        "entire conversation to the Client in the form of session/update "
                        "notifications')"),),
         notes="The conversation is what the trace shows of the session: v1, the text of each "
               "prompt whose response ended its turn with end_turn, max_tokens or "
               "max_turn_requests; v2, each user message the agent reported live whose work "
               "then ended with one of those (a refused or cancelled turn may be left out; "
               "nothing before a compaction is required). Each must be contained, whitespace "
               "aside, in the user text replayed between the request and the next prompt. "
               "A replay still streaming after the response is V1-LOAD-01's (v1) or this "
               "rule's order warning (v2), not a missing entry. sdk-2.4.0 asks only for 'all "
               "retained conversation history': what an agent retains is its own."),
    Rule("SESS-17", "agent", "SHOULD", "safety",
         "v1: the files an agent asks the client to read or write lie in the session's root "
         "set (its cwd and additional directories).",
         "v1 session-setup.mdx §Additional Workspace Roots ('This root set SHOULD serve as a "
         "boundary for tool operations on the file system')", revisions=(V1,),
         notes="Judged on fs/read_text_file and fs/write_text_file, the file-system "
               "operations on the wire; v2 has no client file-system methods."),
    Rule("SESS-16", "client", "MUST NOT", "safety",
         "v1: the client calls session/load, session/resume and session/close only when the "
         "agent advertised them (loadSession, sessionCapabilities.resume, .close).",
         "v1 session-setup.mdx §Checking Support ('Clients MUST NOT attempt to call "
         "session/load')", revisions=(V1,),
         cited_in=((V1, "v1 session-setup.mdx §Loading Sessions, §Resuming Sessions, §Closing "
                        "Active Sessions ('Clients MUST NOT attempt to call session/load'; "
                        "'MUST NOT attempt to call session/resume'; 'MUST NOT attempt to call "
                        "session/close')"),)),
    Rule("PERM-14", "agent", "MUST", "safety",
         "The options of one permission request have distinct optionIds (the answer names "
         "one).",
         "sdk-2.4.0 schema $defs.PermissionOption.optionId ('MUST be unique within the "
         "request')",
         revisions=(SDK_2_4_0, SEED, V1), strength_in=((SEED, "SHOULD"), (V1, "SHOULD")),
         cited_in=((SEED, "schema $defs.PermissionOption.optionId (a 'Unique identifier for "
                          "this permission option', without a MUST: a warning)"),
                   (V1, "v1 schema $defs.PermissionOption.optionId (a 'Unique identifier for "
                        "this permission option', without a MUST: a warning)"))),
    Rule("TOOL-21", "agent", "MUST", "safety",
         "A diff's git_patch agrees with its changes: sections only for listed paths and "
         "their operations, absolute paths without a/ b/ prefixes, no commit metadata or "
         "mail envelope around the sections.",
         "tool-calls.mdx §Diffs; schema $defs.DiffPatchFormat ('Paths MUST be absolute')",
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.Diff ('MUST be consistent with "
                               "changes'); $defs.DiffPatchFormat ('every path MUST be absolute'; "
                               "'Surrounding commit metadata and email envelopes MUST NOT be "
                               "included')"),),
         notes="The patch text is parsed as Git writes it (diff --git sections, their "
               "extended headers and hunks, counted by the hunk headers). A patch may cover "
               "only some changes; a section for a path changes does not list, or with "
               "another operation, is inconsistent. Custom formats (_x) are not parsed."),
    Rule("TOOL-12", "agent", "SHOULD", "safety",
         "Once permission is granted, the agent runs the tool and reports it in_progress: the "
         "allowed tool call does not go to completed without that report.",
         f"{PL} §5 Tool Invocation and Status Reporting ('the Agent SHOULD invoke the tool "
         "and report a status update marking the tool as in_progress')",
         revisions=(SEED, V1),
         cited_in=((V1, "v1 prompt-turn.mdx §5 Tool Invocation and Status Reporting ('the "
                        "Agent SHOULD invoke the tool and report a status update marking the "
                        "tool as in_progress')"),),
         notes="Judged when the tool call a selected allow option approved next reports a "
               "status: completed shows it ran unreported (failed may mean it never ran). A "
               "tool call that never reports again is not judged: the agent may have stopped "
               "waiting first. One already shown in_progress owes no second report."),
    Rule("TOOL-22", "agent", "SHOULD", "safety",
         "A diff that changes a text file carries a patch.",
         "tool-calls.mdx §Diffs ('Agents SHOULD provide patch whenever feasible')",
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.Diff ('Agents SHOULD provide patch "
                               "whenever feasible')"),),
         notes="Feasible is read as: some change names fileType text (a binary file, a "
               "directory or a symlink has no useful text rendering)."),
    Rule("TOOL-23", "agent", "MUST", "safety",
         "Terminal output bytes are RFC 4648 base64: a terminal_output_chunk's data and the "
         "data of a terminal_update's output snapshot.",
         "tool-calls.mdx §Display-only Terminals ('Each data value is an independently RFC "
         "4648 base64-encoded byte chunk'; the output snapshot's 'required data is RFC 4648 "
         "base64-encoded bytes'); schema $defs.TerminalOutputChunk.data (contentEncoding "
         "base64); schema $defs.TerminalOutput.data (contentEncoding base64)",
         cited_in=((SDK_2_4_0, "sdk-2.4.0 schema $defs.TerminalOutputChunk.data "
                               "('Independently base64-encoded terminal output bytes'); "
                               "sdk-2.4.0 schema $defs.TerminalOutput.data ('Base64-encoded "
                               "replacement terminal output bytes')"),),
         from_definition=True,
         notes="JSON Schema validators read contentEncoding as an annotation, so the schema "
               "check passes any string. Read leniently: the standard alphabet with or "
               "without its = padding passes; a character outside it (whitespace, base64url's "
               "- and _), padding inside the data, or a length no padding completes fails."),
    Rule("SDK-ICON-01", "both", "MUST", "safety",
         "An icon's src is an https: or data: URI.",
         "sdk-2.4.0 schema $defs.Icon.src ('MUST be an https: or data: URI')",
         revisions=(SDK_2_4_0,)),
    Rule("SDK-MCP-01", "client", "SHOULD", "safety",
         "The environment variables of a stdio MCP server have distinct names.",
         "sdk-2.4.0 schema $defs.McpServerStdio.env ('Names SHOULD be unique')",
         revisions=(SDK_2_4_0,)),
    Rule("SDK-RESUME-02", "client", "MUST", "safety",
         "session/resume sends the working directory the session was created with on this "
         "connection.",
         "sdk-2.4.0 schema $defs.ResumeSessionRequest.cwd ('Clients MUST send the session's "
         "working directory')", revisions=(SDK_2_4_0,),
         notes="Paths are compared normalized (the text lets agents normalize them)."),
    Rule("SDK-RECEIPT-04", "agent", "MUST", "safety",
         "The receipt is returned without waiting for the work to finish: not after an idle "
         "that ended work in which the prompt's user message was already reported.",
         "sdk-2.4.0 schema $defs.ClientRequest session/prompt ('The Agent MUST return the "
         "inserted message's ID without waiting for processing to finish')",
         revisions=(SDK_2_4_0,),
         notes="A warning: the response came after the work ended, which waiting explains, "
               "but an agent's own scheduling could too; the wire does not show why."),
    Rule("SDK-CLOSE-04", "agent", "SHOULD", "safety",
         "Closing a session that is not active on the connection succeeds (or answers "
         "-32002, which clients treat as success).",
         "sdk-2.4.0 schema $defs.CloseSessionRequest ('Closing a session that does not exist "
         "or is not active SHOULD succeed')", revisions=(SDK_2_4_0,)),
    Rule("SDK-CONFIG-01", "agent", "MUST", "safety",
         "A select config option's values are distinct (across groups too) and its "
         "currentValue is one of them.",
         "sdk-2.4.0 schema $defs.SessionConfigSelect ('MUST be one of the values in "
         "options'; 'each value MUST be unique within the option')", revisions=(SDK_2_4_0,),
         notes="That there is at least one value is the schema's (minItems)."),
    Rule("SDK-CONFIG-02", "agent", "MUST", "safety",
         "An agent that advertised config options for a session implements "
         "session/set_config_option for it (no -32601).",
         "sdk-2.4.0 schema $defs.SetSessionConfigOptionRequest ('Agents MUST support this "
         "method for any session where they advertise config options')",
         revisions=(SDK_2_4_0,)),
    Rule("SDK-CMD-01", "agent", "MUST", "safety",
         "Available command names contain no whitespace and are unique within the list.",
         "sdk-2.4.0 schema $defs.Command.name ('MUST NOT contain whitespace and MUST be "
         "unique within the command list')", revisions=(SDK_2_4_0,)),
    Rule("SDK-STATE-01", "agent", "MUST", "safety",
         "Foreground work reported only in a custom state (no running or requires_action "
         "from its start to its idle) is so only for a client that advertised that state.",
         "sdk-2.4.0 schema $defs.StateUpdate ('Unless the Client advertised support for this "
         "state, Agents MUST still report the standard states')", revisions=(SDK_2_4_0,),
         notes="Judged at the idle that ends such work; a client advertises a custom state "
               "by naming it in its capabilities' _meta (extensibility.mdx)."),
    Rule("SDK-ELICIT-01", "agent", "SHOULD", "safety",
         "Work that ends cancelled withdraws ($/cancel_request) the elicitations it was "
         "blocked on (open at its requires_action) before its cancelled idle, unless the "
         "client answered them.",
         "sdk-2.4.0 schema $defs.CreateElicitationRequest ('Agents SHOULD cancel pending "
         "elicitations no longer needed by cancelled work')", revisions=(SDK_2_4_0,),
         notes="The text adds that 'the request's scope alone does not establish that "
               "dependency': only an elicitation open when the agent itself reported the work "
               "blocked (requires_action) is taken as needed by it, and only one still "
               "unanswered at the cancelled idle, which ends the aborted operations "
               "(session/cancel: 'After all ongoing operations have been successfully "
               "aborted'). A client that answers at once never shows it."),
    Rule("SDK-STOP-01", "agent", "SHOULD", "safety",
         "An idle with stopReason error carries the error that ended the work.",
         "sdk-2.4.0 schema $defs.ErrorStopReason.error ('Agents SHOULD include it')",
         revisions=(SDK_2_4_0,)),
    Rule("SDK-TOOL-01", "agent", "SHOULD", "safety",
         "A tool call (or terminal) that reached its end stops advertising capabilities.cancel.",
         "sdk-2.4.0 schema $defs.ToolCallCapabilities.cancel ('Agents SHOULD stop advertising "
         "it once the tool call reaches a final status'); $defs.TerminalCapabilities.cancel",
         revisions=(SDK_2_4_0,),
         notes="Judged on the client's view after the update that ends it: a final status "
               "(or a terminal's exitStatus) with cancel still advertised."),
    Rule("SDK-TOOL-02", "client", "MUST NOT", "safety",
         "The client sends tool_call/cancel (terminal/cancel) only for a tool call (terminal) "
         "that currently advertises capabilities.cancel.",
         "sdk-2.4.0 schema $defs.CancelToolCallRequest ('Clients MUST NOT send it unless the "
         "tool call currently advertises capabilities.cancel'); $defs.CancelTerminalRequest",
         revisions=(SDK_2_4_0,)),
    Rule("SDK-TOOL-03", "agent", "SHOULD", "safety",
         "tool_call/cancel (terminal/cancel) of a tool call that had reached a final status "
         "(a terminal that had exited) when the client sent it is answered with -32602, not "
         "a result.",
         "sdk-2.4.0 schema $defs.CancelToolCallRequest ('The Agent responds with -32602 if "
         "the tool call is unknown, already final, or not cancellable'); "
         "$defs.CancelTerminalRequest ('The Agent responds with -32602 if the terminal is "
         "unknown, has already exited, or is not cancellable')",
         revisions=(SDK_2_4_0,), from_definition=True,
         notes="Provable under every timing: the agent wrote the final status (the "
               "exitStatus) before the client read it, so before it read the request. Judged "
               "on a result only (an error with another code still refuses the cancel); an "
               "unknown or uncancellable target is the agent's to know, not the trace's. The "
               "schema states it without a BCP 14 keyword: SHOULD."),
    Rule("V1-CONFIG-02", "agent", "MUST", "safety",
         "v1: a successful session/set_config_option answers with the complete list of "
         "config options, so it lists the option that was set.",
         "v1 session-config-options.mdx §From the Client ('The Agent MUST respond with the "
         "complete list of all configuration options and their current values')",
         revisions=(V1,),
         notes="Only the option just set is required: one change may remove others "
               "(migration.mdx: 'one change can affect other options')."),
    Rule("V1-NOTICE-01", "agent", "MUST", "safety",
         "v1: the agent sends a notice session update only to a client that advertised the "
         "session.notices capability.",
         "v1 schema $defs.Notice ('Agents MUST only send notices when the Client advertised "
         "the `session.notices` Client capability'); $defs.ClientSessionCapabilities",
         revisions=(V1,),
         notes="sdk-2.4.0 states the opposite ('No Client capability is required, and "
               "unsupported Clients may ignore notices'): the rule is v1's alone."),
    Rule("V1-CONFIG-01", "agent", "SHOULD", "safety",
         "v1: an agent with a mode config option also sends the modes, and both name the "
         "same current mode.",
         "v1 session-config-options.mdx §Relationship to Session Modes ('Agents SHOULD keep "
         "both in sync')", revisions=(V1,),
         notes="Mode-like configuration is read as a config option of category mode."),
    # --- client-side reducer semantics (definitions, applied by model.reducers) ---------
    Rule("MSG-03", "client", "MUST", "definition",
         "user_message, agent_message and agent_thought are upserts keyed by messageId; an "
         "unseen id creates the message with client defaults.", f"{PL} §3 (Message IDs)"),
    Rule("MSG-04", "client", "MUST", "definition",
         "A message update without content leaves the stored content unchanged.",
         f"{PL} §3 (Message IDs)"),
    Rule("MSG-05", "client", "MUST", "definition",
         "content: null and content: [] both clear a message.", f"{PL} §3 (Message IDs)"),
    Rule("MSG-06", "client", "MUST", "definition",
         "A message update with a content array replaces everything stored, chunks included.",
         f"{PL} §3 (Message IDs)"),
    Rule("MSG-07", "client", "MUST", "definition",
         "A chunk appends its content block to whatever the message holds.",
         f"{PL} §3 (Message IDs)"),
    Rule("MSG-08", "client", "MUST", "definition",
         "Updates and chunks are applied in arrival order per messageId.",
         f"{PL} §3 (Message IDs)"),
    Rule("MSG-09", "client", "MUST", "definition",
         "A chunk's _meta is chunk-scoped; it never patches the message's _meta.",
         f"{PL} §3 (Message IDs)"),
    Rule("MSG-10", "client", "MUST", "definition",
         "A message update's _meta: omitted keeps it, null clears it, an object replaces it.",
         "schema $defs.AgentMessage"),
    Rule("ACPM-MSG-FAMILY", "agent", "SHOULD", "safety",
         "A messageId keeps the family it was first reported with (user, agent or thought): a "
         "chunk or update of another family reusing it is unspecified (RULES.md A-17).",
         f"{PL} §3 (Message IDs); RULES.md A-17",
         notes="Our own warning: the text neither allows nor forbids it, and clients render "
               "such a message differently."),
    Rule("TOOL-01", "agent", "SHOULD", "safety",
         "Each tool invocation is reported with tool_call_update straight away (before any "
         "content chunk names its toolCallId).",
         "tool-calls.mdx §Reporting; prompt-lifecycle.mdx §3 Agent Reports Output",
         notes="Judged on a tool_call_content_chunk for a toolCallId no update announced "
               "(RULES.md A-18 leaves the client's reaction open)."),
    Rule("TOOL-03", "client", "MUST", "definition",
         "tool_call_update is an upsert keyed by toolCallId; an unseen id is created with "
         "status pending and kind other.", "tool-calls.mdx §Reporting"),
    Rule("TOOL-04", "client", "MUST", "definition",
         "For title, kind, status, rawInput and rawOutput: omitted keeps, null clears, a value "
         "replaces.", "tool-calls.mdx §Updating"),
    Rule("TOOL-05", "client", "MUST", "definition",
         "content and locations are replaced wholesale; [] and null clear them.",
         "tool-calls.mdx §Updating"),
    Rule("TOOL-06", "client", "MUST", "definition",
         "_meta of a tool_call_update: omitted keeps, null clears, an object replaces.",
         "tool-calls.mdx §Updating"),
    Rule("TOOL-08", "client", "MUST", "definition",
         "Updates and content chunks apply in arrival order per toolCallId; content in an "
         "update replaces what chunks accumulated.", "tool-calls.mdx §Streaming Content"),
    Rule("TOOL-09", "client", "MUST", "definition",
         "A tool_call_content_chunk's _meta belongs to that chunk only.",
         "tool-calls.mdx §Streaming Content"),
    Rule("PLAN-07", "client", "MUST", "definition",
         "Each plan_update replaces that plan's entries completely; entries are never merged.",
         "agent-plan.mdx §Updating Plans"),
    Rule("PERM-03", "both", "MUST", "definition",
         "A permission request's title and description are prompt text only; they never patch "
         "the tool call.", "tool-calls.mdx §Requesting Permission"),
    Rule("PERM-04", "client", "SHOULD", "definition",
         "A tool_call subject's toolCall is applied like a tool_call_update (RULES.md A-24).",
         "migration.mdx §Migration checklist: Clients"),
    Rule("RPC-12", "both", "MUST", "definition",
         "The error codes: -32700 parse, -32600 invalid request, -32601 method not found, -32602 "
         "invalid params, -32603 internal, -32800 cancelled, -32000 auth required, -32002 "
         "resource not found.", "schema $defs.ErrorCode"),
    Rule("ENUM-01", "both", "MUST", "definition",
         "Values starting with _ are extensions; unknown values without _ belong to future ACP "
         "versions.", "extensibility.mdx §Enum and Tagged-Union Variants"),
    Rule("ENUM-09", "both", "MUST NOT", "safety",
         "No custom fields at the root of spec-defined types: custom data goes in _meta.",
         "extensibility.mdx §The _meta Field",
         unobservable="the schema leaves objects open, so an unknown root field may be custom "
                      "or belong to a newer revision; the wire cannot tell which"),
    Rule("CANCEL-12", "both", "MUST", "definition",
         "$/cancel_request{requestId} is a protocol notification by which the sender of a "
         "request withdraws it.", "cancellation.mdx §`$/cancel_request` Notification"),
]


def _with_v1(rules: list[Rule]) -> list[Rule]:
    """The v1 revision's rows (``rules_v1``): v1 added to the rules it states too, with its
    citation, and the rules only v1 has."""
    unknown = set(V1_CITATIONS) - {r.id for r in rules}
    if unknown:  # pragma: no cover - guards against a typo in rules_v1
        raise RuntimeError(f"rules_v1 cites rules the catalogue lacks: {sorted(unknown)}")
    out = [replace(r, revisions=(*r.revisions, V1), cited_in=(*r.cited_in,
                                                              (V1, V1_CITATIONS[r.id])))
           if r.id in V1_CITATIONS else r for r in rules]
    out += [Rule(rid, party, strength, kind, statement, citation,  # type: ignore[arg-type]
                 notes=notes[0] if notes else "", revisions=(V1,))
            for rid, party, strength, kind, statement, citation, *notes in V1_ONLY]
    return out


_R = _with_v1(_R)
RULES: dict[str, Rule] = {r.id: r for r in _R}
if len(RULES) != len(_R):  # pragma: no cover - guards against a copy/paste slip
    raise RuntimeError("duplicate rule id in the catalogue")


def strength_shown(rule_id: str, strength: str) -> str:
    """A rule's strength as a report's header prints it: a rule the text states as a
    definition (``Rule.from_definition``) says that it is enforced at that strength."""
    found = RULES.get(rule_id)
    if found is None or not found.from_definition:
        return strength
    return f"{strength}: a definition, enforced as {strength}"


def rule(rule_id: str) -> Rule:
    """Look a rule up by ID (or by an alias such as PERM-10)."""
    try:
        return RULES[rule_id]
    except KeyError:
        for r in _R:
            if rule_id in r.aliases:
                return r
        raise


def catalogue() -> list[Rule]:
    return list(_R)


def group_of(rule_id: str) -> str:
    """A rule's group is its ID prefix (``CANCEL`` for ``CANCEL-07``); the rules strict
    readings add form the group ``READING``."""
    return "READING" if "." in rule_id else rule_id.split("-", 1)[0]


def rule_groups(readings: Any = None) -> list[str]:
    """Rule groups in catalogue order (with ``readings``: the groups with an active rule)."""
    return list(dict.fromkeys(group_of(rule_id) for rule_id, r in RULES.items()
                              if readings is None or r.active(readings)))

