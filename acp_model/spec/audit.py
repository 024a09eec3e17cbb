"""The audit of the normative sentences: every MUST / SHOULD of the three revisions' texts,
with the rule that judges it or why none does.

The sentences are read from the vendored texts (the sdk-2.4.0 schema's ``$defs`` descriptions,
the seed's v2 pages and the v1 pages), never copied by hand. Which rule judges a sentence is
data: a rule's citation that quotes the sentence, or a row of :data:`JUDGED_BY` (a phrase of
the sentence and the rule ID); a sentence no rule judges gets the reason of the first row of
:data:`NOT_MODELLED` that matches it. ``docs/audit.md`` is :func:`markdown` (a test keeps it
current), so a sentence is never silently missing: it is judged, or the page says why not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources

import orjson

from acp_model.spec.revisions import SDK_2_4_0, SEED, V1
from acp_model.spec.rules import RULES

_STRENGTH = re.compile(r"\b(MUST NOT|MUST|SHOULD NOT|SHOULD|REQUIRED)\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\[])")


@dataclass(frozen=True, slots=True)
class Sentence:
    """One normative sentence: where it is, its strength, its text."""

    revision: str
    where: str  # ``$defs.PromptResponse.messageId`` or ``tool-calls.mdx``
    strength: str
    text: str


def _clean(text: str) -> str:
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    return " ".join(text.split())


def _normative(where: str, revision: str, text: str) -> Iterator[Sentence]:
    for part in _SENTENCE.split(_clean(text)):
        found = _STRENGTH.search(part)
        if found:
            yield Sentence(revision, where, found.group(1), part)


def _schema_sentences() -> Iterator[Sentence]:
    data = resources.files("acp_model.spec").joinpath("data", SDK_2_4_0, "schema.json")
    defs = orjson.loads(data.read_bytes())["$defs"]

    def walk(node: object, where: str) -> Iterator[Sentence]:
        if isinstance(node, dict):
            if isinstance(node.get("description"), str):
                yield from _normative(where, SDK_2_4_0, node["description"])
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    for prop, sub in value.items():
                        yield from walk(sub, f"{where}.{prop}")
                elif isinstance(value, (dict, list)) and key != "description":
                    yield from walk(value, where)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value, where)

    for name, body in defs.items():
        yield from walk(body, f"$defs.{name}")


def _page_sentences(revision: str) -> Iterator[Sentence]:
    docs = resources.files("acp_model.spec").joinpath("data", revision, "docs")
    for page in sorted(docs.iterdir(), key=lambda p: p.name):
        if not page.name.endswith(".mdx"):
            continue
        text = page.read_text(encoding="utf-8")
        text = re.sub(r"```.*?```", " ", text, flags=re.S)  # examples are not normative
        for para in re.split(r"\n\s*\n", text):
            if "**" in para and _STRENGTH.search(para.replace("**", "")) \
                    and re.search(r"\*\*(MUST|SHOULD|REQUIRED)", para):
                yield from _normative(page.name, revision, para)


@cache
def sentences() -> tuple[Sentence, ...]:
    """Every normative sentence of the three revisions, deduplicated per place."""
    seen: set[tuple[str, str, str]] = set()
    out: list[Sentence] = []
    for s in (*_schema_sentences(), *_page_sentences(SEED), *_page_sentences(V1)):
        key = (s.revision, s.where, s.text)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return tuple(out)


# (revision or "", a phrase of the sentence (case-insensitive regex), the rule that judges it)
JUDGED_BY: tuple[tuple[str, str, str], ...] = (
    ("", r"respond with the chosen protocol version|MUST respond with the same version",
     "INIT-03"),
    ("", r"(first )?complete the initialization phase", "INIT-01"),
    ("", r"MUST be UTF-8", "RPC-02"),
    ("", r"MUST NOT write anything to its .?stdout.? that is not a valid", "RPC-04"),
    ("", r"unique Session ID|MUST respond with a unique", "SESS-01"),
    ("", r"MUST be an absolute path|paths in the protocol MUST be absolute", "SESS-02"),
    ("", r"restrict types of content according to the Prompt Capabilities", "PROMPT-02"),
    ("", r"respond to all pending .?session/request_permission.? requests with the "
         r".?cancelled.? outcome", "CANCEL-04"),
    ("", r"catch these errors|with the .?cancelled.? stop reason", "CANCEL-07"),
    ("", r"stop all language model requests", "CANCEL-05"),
    ("", r"MUST cancel any ongoing work", "SESS-10"),
    ("", r"Extensions MUST NOT define custom non-underscore", "ENUM-02"),
    ("", r"MUST NOT add any custom fields at the root", "ENUM-09"),
    ("", r"doesn't recognize the custom method", "ENUM-12"),
    ("", r"MUST NOT reuse an ID while", "RPC-01"),
    ("", r"it MUST NOT be .?null", "RPC-01"),
    ("", r"MUST NOT answer with an error", "SDK-PROMPT-02"),
    ("", r"reports the user message with the same ID", "SDK-RECEIPT-02"),
    ("", r"unique per message type", "SDK-RECEIPT-03"),
    ("", r"MUST include the background list|background work.*every", "SDK-BG-01"),
    (V1, r"all the conversation entries have been streamed", "V1-LOAD-01"),
    (V1, r"MUST NOT replay the conversation history", "V1-RESUME-01"),
    ("", r"before responding to the .?session/prompt.? request", "CANCEL-09"),
    ("", r"MUST support .?session/new", "INIT-10"),
    ("", r"MUST respond to the original .?session/prompt", "PROMPT-04"),
    ("", r"-32602", "PROMPT-02"),
    ("", r"already been inserted, the Agent MUST respond successfully", "SDK-PROMPT-02"),
    ("", r"MUST report this stop reason on an idle", "CANCEL-07"),
    ("", r"MUST send them before the idle .?state_update.? that reports cancellation",
     "CANCEL-09"),
    ("", r"SHOULD ignore (late answers|responses for work that has already ended)", "CANCEL-09"),
    ("", r"treat them as not approved|MUST NOT proceed with the operation|MUST treat the "
         r"request as not approved|MUST NOT treat it as approval", "PERM-11"),
    ("", r"MUST report .?running.? when foreground work starts|When foreground work starts or "
         r"resumes, the Agent MUST send", "STATE-01"),
    ("", r"MUST report .?running.? when progress resumes", "STATE-06"),
    ("", r"MUST report .?idle.? when no foreground activity remains|ready to process a new "
         r"prompt, it MUST report .?idle", "STATE-02"),
    ("", r"transition ends foreground work, (the Agent|it) MUST include|SHOULD include a stop "
         r"reason on that idle", "STATE-03"),
    ("", r"MUST provide information about their implementation in the .?info", "INIT-09"),
    ("", r"SHOULD report this state when foreground work cannot progress|"
         r"SHOULD report .?requires_action|SHOULD send this while waiting on a permission|"
         r"permission request is pending, the Agent SHOULD report", "STATE-05"),
    ("", r"When work resumes, the Agent SHOULD report .?running", "STATE-06"),
    ("", r"SHOULD include .?title.? on the first report|SHOULD include the title the first "
         r"time", "TOOL-02"),
    ("", r"MUST respond once it has accepted the prompt|MUST respond to .?session/prompt.? as "
         r"soon as", "PROMPT-04"),
    ("", r"MUST report where the user message was inserted", "PROMPT-06"),
    ("", r"Custom plan content types MUST begin", "PLAN-04"),
    ("", r"Custom (priorities|statuses) MUST begin", "PLAN-09"),
    ("", r"Every plan content variant.*MUST carry a .?planId", "PLAN-02"),
    ("", r"Custom stop reasons MUST begin", "STOP-03"),
    ("", r"Custom (tool )?kinds MUST begin", "TOOL-15"),
    ("", r"Custom status values MUST begin", "TOOL-14"),
    ("", r"Custom (content block )?types MUST begin", "ENUM-02"),
    ("", r"Client MUST respond with the .?\"?cancelled", "CANCEL-04"),
    ("", r"messageId", "MSG-01"),
    ("", r"MUST reply with the same value", "RPC-01"),
    ("", r"MUST use an array, not .?null", "ACPM-SCHEMA-TOLERATED"),
    # what the audit of the texts added (issue 50): sentences no citation quotes word for word
    ("", r"MUST announce each item before the first snapshot", "SDK-BG-02"),
    ("", r"Resume MUST send a current-state snapshot", "SDK-RESUME-01"),
    (SDK_2_4_0, r"stop advertising it once the terminal reports", "SDK-TOOL-01"),
    (SDK_2_4_0, r"MUST NOT send it unless the terminal currently advertises", "SDK-TOOL-02"),
    ("", r"MUST call this method only with a method whose type defines|Clients MUST NOT call "
         r".?auth/login", "INIT-13"),
    (SDK_2_4_0, r"Clients MUST NOT send an empty array", "ACPM-SCHEMA"),
    (SDK_2_4_0, r"^MUST contain at least one value\.$", "ACPM-SCHEMA"),
    (SEED, r"Custom method types MUST begin with", "ENUM-02"),
    (SEED, r"Custom implementation-specific transport types MUST begin", "ENUM-02"),
    ("", r"Every server config MUST carry a .?type", "ACPM-SCHEMA"),
    ("", r"Before using (stdio or HTTP|HTTP or SSE) transports, Clients MUST verify", "SESS-04"),
    (V1, r"Before attempting to (load|resume|close) a session, Clients MUST verify", "SESS-16"),
    ("", r"To (resume|load) an existing session.*Clients MUST call|To close an active session, "
         r"Clients MUST call", "ACPM-SCHEMA"),
    ("", r"Before a Session can be created, Clients MUST initialize", "INIT-01"),
    ("", r"MUST agree on a protocol version", "INIT-03"),
    ("", r"The Agent SHOULD specify whether it supports the following capabilities",
     "INIT-03"),
    (V1, r"The Client SHOULD specify whether it supports", "INIT-02"),
    (V1, r"Both Clients and Agents SHOULD provide information", "INIT-09"),
    ("", r"Upon receiving a custom request, implementations MUST respond", "ACPM-ANSWER"),
    ("", r"extensions SHOULD advertise their custom capabilities|SHOULD use the .?_meta.? "
         r"field in capability objects to advertise", "ENUM-12"),
    ("", r"root-level keys in .?_meta.? SHOULD be reserved for W3C", "ENUM-11"),
    ("", r"working directory and MUST be absolute when supplied", "TOOL-19"),
    ("", r"SHOULD provide .?patch.? whenever feasible|SHOULD provide patch text whenever",
     "TOOL-22"),
    ("", r"MUST be an array with at least one value", "RPC-07"),
    ("", r"An empty array receives a single .?Invalid Request", "ACPM-BATCH"),
    ("", r"MUST NOT return an empty array", "RPC-09"),
    ("", r"SHOULD NOT batch lifecycle-sensitive", "RPC-10"),
    ("", r"delimited by newlines", "RPC-04"),
    (V1, r"Agents MUST always provide a default value for every configuration", "ACPM-SCHEMA"),
    (V1, r"mode-like configuration SHOULD send both", "V1-CONFIG-01"),
    (SDK_2_4_0, r"return the inserted message's ID without waiting", "SDK-RECEIPT-04"),
)

# (a phrase of where the sentence is: its $def or page, why no rule judges it); these come
# first: the place says what the sentence is about where its words alone do not
NOT_MODELLED_AT: tuple[tuple[str, str], ...] = (
    (r"^\$defs\.(CreateElicitation|Elicitation)",
     "what a client renders of an elicitation, and what an agent does with an action it does "
     "not understand, happen inside them; the wire shows the wait, which the session machine "
     "judges (STATE-05/06, SDK-ELICIT-01), and the fuzz client answers only with the "
     "schema's accept, decline or cancel"),
    (r"^transports\.mdx", "transport set-up: the fuzzer always launches the agent over stdio "
                          "(what it writes there: RPC-04, the batch rules)"),
)


# (a phrase of the sentence, why no rule judges it); the first that matches gives the reason
NOT_MODELLED: tuple[tuple[str, str], ...] = (
    (r"assign meaning to keys|MUST NOT make assumptions about values",
     "how a receiver reads _meta keys it does not recognize happens inside it: no message "
     "shows it"),
    (r"SHOULD cancel (them|each of them) with .?\$/cancel_request",
     "no moment is owed: the client answers the cancelled work's pending requests itself "
     "(CANCEL-04), and an agent that withdraws after that answer, or never, cannot be told "
     "apart on the wire from one whose withdrawal the answer made moot"),
    (r"Closing a session that does not exist",
     "judged as SDK-CLOSE-04 in sdk-2.4.0, whose text says it"),
    (r"Agents SHOULD include it\.", "judged as SDK-STOP-01"),
    (r"MUST NOT be counted as new completions",
     "how a client counts replayed idles happens inside it: no message shows it"),
    (r"Agents SHOULD provide arguments that enter a login-only flow",
     "what the arguments do happens in a process the client starts outside the ACP "
     "connection"),
    (r"SHOULD NOT restore servers from earlier requests|SHOULD connect to all MCP servers|"
     r"MUST support connecting to MCP servers|SHOULD support the HTTP transport",
     "the agent's connections to MCP servers are not messages of the ACP connection"),
    (r"Otherwise, the Agent MUST respond with the latest version it supports",
     "which versions an agent supports is not on the wire: it names one, and INIT-03 judges "
     "that it then speaks it"),
    (r"MUST include the latest protocol version the Client supports",
     "which versions a client supports is not on the wire: it names one"),
    (r"SHOULD support all possible combinations of their peer's capabilities",
     "coping is not a message: what a peer does with capabilities shows only where it uses "
     "one the other lacks (INIT-13, INIT-16, SESS-03, SESS-04, SESS-16)"),
    (r"implementations SHOULD ignore unrecognized notifications",
     "ignoring leaves nothing on the wire; a reply to a notification is RPC-09's"),
    (r"SHOULD preserve (unknown values|the raw payload)|should preserve the raw payload",
     "what a peer stores or forwards shows only in a later replay or on another connection, "
     "and the fuzzer sends no unknown value a replay would have to give back"),
    (r"Agent MUST send a complete list of all plan entries|MUST send a complete list",
     "an entry left out cannot be told from an entry the plan dropped (entries may be "
     "removed as the plan evolves); how a client applies an update is PLAN-07's"),
    (r"SHOULD report updates by sending more .?session/update",
     "how the plan progressed happens in the model: only the updates the agent chose to "
     "send are on the wire"),
    (r"When the language model (creates an execution plan|requests a tool invocation)",
     "what the language model produced is on the model API, not on the ACP wire"),
    (r"When internal cancellation occurs",
     "internal cancellation happens inside a peer: no message shows it (its -32800 answer is "
     "an ordinary answer)"),
    (r"SHOULD place higher-priority options first",
     "which option is higher-priority is the agent's own judgement: not on the wire"),
    (r"Categories are for UX purposes only and MUST NOT be required|It MUST NOT be required "
     r"for correctness",
     "whether a peer relies on a category happens inside it: no message shows it"),
    (r"MUST support the stdio transport|SHOULD support stdio",
     "the fuzzer always speaks stdio: an agent that does not cannot be started"),
    (r"custom transports|Custom transports",
     "a custom transport is not the stdio connection the fuzzer and the checker read"),
    (r"The client launches the agent as a subprocess",
     "transport set-up: the fuzzer always launches the agent over stdio (what it writes "
     "there: RPC-04, the batch rules)"),
    (r"This root set SHOULD serve as a boundary",
     "v2 has no client file-system methods: a tool's file operations happen inside the agent, "
     "and its locations say what to follow, not what it was allowed (v1's fs requests: "
     "SESS-17)"),
    (r"MUST NOT be reused for a different terminal",
     "the wire names a terminal by its id only: a second terminal under a reused id looks "
     "like more updates of the first (its exitStatus is patchable)"),
    (r"ENUM-09|MUST NOT add any custom fields at the root",
     "as in the v2 revisions (ENUM-09): the schema leaves objects open, so an unknown root "
     "field may be custom or belong to a newer revision; the wire cannot tell which"),
    (r"\b(display|render|UI|show|Markdown|CommonMark)\b|adapt its interface",
     "about what a client shows the user: not on the wire"),
    (r"\bClients? (MUST|SHOULD)[^.]*(handle|replace|ignore|adapt|respect|use|overwrite|"
     r"treat|be prepared|accept|mark|merge|splice|concatenate)|\bClients decode|"
     r"\b[Cc]lients (MUST|SHOULD) (handle|use|fall back)|MUST NOT merge or splice|"
     r"\bClients SHOULD:|it SHOULD ignore that option",
     "how a client treats what it receives happens inside it: no message shows it"),
    (r"\bClients? (MUST|SHOULD)[^.]*(cancel|tool call updates)",
     "how a client treats cancelled work happens inside it; what it answers is CANCEL-04's"),
    (r".", "no check of the lifecycle model reads it yet"),
)


def _quotes(rule_id: str) -> list[str]:
    rule = RULES[rule_id]
    cites = " ".join([rule.citation, *(c for _, c in rule.cited_in)])
    return [q for q in re.findall(r"'([^']{12,})'", cites)]


@cache
def _quote_index() -> tuple[tuple[str, str], ...]:
    return tuple((q.lower().rstrip(".…"), rid) for rid in RULES for q in _quotes(rid))


def judged_by(sentence: Sentence) -> str | None:
    """The rule that judges a sentence (one that applies to its revision), else None."""
    low = sentence.text.lower().replace("`", "")
    for quote, rid in _quote_index():
        if quote.split(" ... ")[0] in low and RULES[rid].applies(sentence.revision):
            return rid
    for revision, phrase, rid in JUDGED_BY:
        if (not revision or revision == sentence.revision) \
                and re.search(phrase, sentence.text, re.I) \
                and RULES[rid].applies(sentence.revision):
            return rid
    return None


def reason(sentence: Sentence) -> str:
    for place, why in NOT_MODELLED_AT:  # a _meta field's sentence is about _meta
        if re.search(place, sentence.where) and "_meta" not in sentence.where:
            return why
    for phrase, why in NOT_MODELLED:
        if re.search(phrase, sentence.text):
            return why
    raise AssertionError("the last NOT_MODELLED row matches every sentence")


def markdown() -> str:
    """``docs/audit.md``."""
    rows = sentences()
    judged = [s for s in rows if judged_by(s)]
    lines = [
        "# Audit: the normative sentences and the rules that judge them",
        "",
        "Generated by `acp_model.spec.audit` from the vendored texts (the sdk-2.4.0 schema's "
        "`$defs` descriptions, the seed's v2 pages, the v1 pages); `tests/unit/test_audit.py` "
        "keeps it current. A sentence is judged by the rule named, or the last column says why "
        "no rule judges it. How each rule is decided: the rule map; the single-message checks "
        "against the newer revision: `revision-audit.md`.",
        "",
        f"{len(rows)} sentences, {len(judged)} judged by a rule, "
        f"{len(rows) - len(judged)} not modelled (with the reason).",
        "",
        "| revision | where | strength | sentence | rule, or why not modelled |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in rows:
        rid = judged_by(s)
        text = s.text.replace("|", "\\|")
        if len(text) > 300:
            text = text[:297] + "..."
        verdict = f"**{rid}**" if rid else f"not modelled: {reason(s)}"
        lines.append(f"| {s.revision} | `{s.where}` | {s.strength} | {text} | {verdict} |")
    return "\n".join(lines) + "\n"
