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
    (V1, r"Agent MUST respond|all the conversation entries have been streamed", "V1-LOAD-01"),
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
)

# (a phrase of where the sentence is: its $def or page, why no rule judges it); these come
# first: the place says what the sentence is about where its words alone do not
NOT_MODELLED_AT: tuple[tuple[str, str], ...] = (
    (r"^\$defs\.(SessionConfig|SessionMode)|^session-config-options\.mdx",
     "session modes and config options are not modelled"),
    (r"^\$defs\.(AuthMethod|Authenticate)|^authentication\.mdx",
     "authentication is outside the prompt lifecycle model"),
    (r"^\$defs\.McpServer|mcpServers$", "MCP server connections happen outside the ACP "
                                          "connection"),
    (r"^\$defs\.(CreateElicitation|Elicitation)", "elicitation is not modelled (the fuzzer "
                                                   "advertises no elicitation capability)"),
    (r"^\$defs\.Icon", "icons are not checked: they are display data outside the lifecycle"),
    (r"^\$defs\.(Diff|DiffPatchFormat)", "diff contents are not checked: the patch text is "
                                          "not parsed and not compared with `changes`"),
    (r"^\$defs\.ToolCallCapabilities|^\$defs\.CancelToolCall",
     "cancelling one tool call (its `cancel` capability) is not modelled"),
    (r"^transports\.mdx", "transport set-up: the fuzzer always launches the agent over stdio "
                          "(what it writes there: RPC-04, the batch rules)"),
)

# Places whose sentences no phrase of JUDGED_BY may claim: they speak of requests the model
# leaves out, in the words of the lifecycle it judges (elicitation's requires_action)
OUTSIDE = r"^\$defs\.(CreateElicitation|Elicitation)"

# (a phrase of the sentence, why no rule judges it); the first that matches gives the reason
NOT_MODELLED: tuple[tuple[str, str], ...] = (
    (r"assign meaning to keys|_meta|traceparent",
     "how a receiver reads _meta keys: not observable on the wire"),
    (r"Agents that support the .?session.? method surface MUST support .?session/close",
     "not judged: an agent that answers session/close with -32601 is not reported (INIT-10 "
     "watches session/new and session/prompt); SESS-10 judges what a close does"),
    (r"Closing a session that does not exist or is not active SHOULD succeed",
     "not judged: the fuzzer closes only sessions it opened, never an unknown one"),
    (r"Clients MUST call the .?session/close|attempt(ing)? to close a session|MUST NOT "
     r"attempt to call .?session/close",
     "a client obligation: the fuzzer closes a session only through session/close, and only "
     "when asked to (--close-sessions)"),
    (r"SHOULD cancel (them|each of them) with .?\$/cancel_request",
     "not judged: withdrawing the cancelled work's permission requests is optional in effect "
     "(A-14: an agent may also just stop waiting); a request it withdraws is not held against "
     "it (PERM-11)"),
    (r"MUST support .?text.? and .?resource_link|MUST support text content blocks|MUST support "
     r"resource links|MUST support .?ContentBlock::Text",
     "not judged: a refused text or resource_link prompt is not told apart from a refusal for "
     "another reason (only -32601 on session/prompt is, INIT-10)"),
    (r"MUST return the inserted message's ID without waiting",
     "not judged: the wire shows when the receipt came, not whether the agent waited for "
     "processing (running updates may precede it)"),
    (r"MUST be unique within the request",
     "not checked: PERM-02 checks each option's fields, not that option ids differ"),
    (r"MUST NOT contain whitespace and MUST be unique within the command list",
     "available commands' names are not checked (commands are not modelled)"),
    (r"Agents SHOULD include it\.", "the detail of an error stop reason is not checked"),
    (r"MUST NOT be counted as new completions",
     "how a client counts replayed idles: not on the wire"),
    (r"Unless the Client advertised support for this state",
     "custom states a client advertised are not modelled; the standard ones are judged by "
     "STATE-01, STATE-02 and STATE-03"),
    (r"SHOULD NOT restore servers from earlier requests",
     "MCP servers a resume restores are outside the ACP connection"),
    (r"Otherwise, the Agent MUST respond with the latest version it supports",
     "not judged: the fuzzer asks for a version the agent speaks; which version is an "
     "agent's latest is not visible on the wire"),
    (r"Agent SHOULD specify whether it supports the following capabilities|extensions SHOULD "
     r"advertise their custom capabilities",
     "what an agent chooses to advertise is its own; the schema checks the shape (ACPM-SCHEMA)"),
    (r"Upon receiving a custom request, implementations MUST respond",
     "judged as a request: every request is answered (ACPM-ANSWER); the answer to an "
     "unrecognised one is ENUM-12's"),
    (r"implementations SHOULD ignore unrecognized notifications",
     "not judged: ignoring a notification leaves nothing on the wire (a reply to one is "
     "RPC-09's)"),
    (r"SHOULD invoke the tool and report a status update marking the tool as .?in_progress",
     "not judged: an allow permits the tool, it does not oblige it to run (the work may still "
     "end); running it without one is PERM-11's"),
    (r"Agent MUST send a complete list of all plan entries",
     "judged by how a client applies it (PLAN-07: an update replaces the entries); whether "
     "the agent left an entry out is not visible"),
    (r"SHOULD report updates by sending more .?session/update",
     "not judged: whether a plan's progress is reported is the agent's to decide"),
    (r"When internal cancellation occurs",
     "internal cancellation happens inside a peer: not on the wire"),
    (r"Agents MUST always provide a default value for every configuration option|SHOULD place "
     r"higher-priority options first", "session config options are not modelled"),
    (r"MUST support the stdio transport", "the fuzzer always speaks stdio: an agent that does "
                                          "not cannot be started"),
    (r"MUST NOT add any custom fields at the root", "ENUM-09 judges it in the v2 revisions; "
                                                    "v1's schema keeps such fields out"),
    (r"Every server config MUST carry a .?type", "MCP server configs are the client's to send"),
    (r"transport types MUST begin", "MCP transports are outside the ACP connection"),
    (r"Custom method types MUST begin", "authentication is outside the prompt lifecycle "
                                        "model"),
    (r"They SHOULD also provide a name and version", "v1's client info: the fuzzer sends it"),
    (r"SHOULD also provide a name and version to the Client|SHOULD provide information about "
     r"their implementation in the .?clientInfo",
     "v1: identifying oneself is a SHOULD the model does not judge (INIT-09 is the v2 "
     "revisions' MUST)"),
    (r"consistent with .?changes|^Paths MUST be absolute|commit metadata and email envelopes|"
     r"SHOULD provide .?patch", "diff contents are not checked: the patch text is not parsed "
                               "and not compared with `changes`"),
    (r"session/resume|ResumeSession|resumed session",
     "what a resume restores is not modelled (SDK-RESUME-01 judges sdk-2.4.0's state "
     "snapshot before the response; V1-RESUME-01 v1's replay)"),
    (r"replay", "what a replay contains and its order are not modelled (SESS-08 judges its "
                "message ids; v1's V1-LOAD-01 and V1-RESUME-01 when it comes)"),
    (r"elicitation", "elicitation is not modelled"),
    (r"\b(display|render|UI|show)\b", "about what a client shows the user: not on the wire"),
    (r"\b(store|storing|preserve|forward|proxy)", "about what a peer keeps or forwards: "
                                                    "not observable on one connection"),
    (r"\bterminal", "terminals are not part of the prompt lifecycle model"),
    (r"\b(auth|authenticat)", "authentication is outside the prompt lifecycle model"),
    (r"\bMCP\b|mcpServers", "MCP server connections happen outside the ACP connection"),
    (r"\b(mode|config option|configOption)", "session modes and config options are not "
                                              "modelled"),
    (r"\bfs/|file system|readTextFile|writeTextFile", "file-system methods are not modelled"),
    (r"\bClients? (MUST|SHOULD)[^.]*(initialize|protocol version|capabilit|info)|Clients "
     r"and Agents (MUST|SHOULD) (agree|treat|support)|Before a Session can be created|"
     r"initialize.? request MUST include",
     "a client obligation of the handshake: the fuzzer initializes first, with its version, "
     "capabilities and info (INIT-01 judges a client that does not)"),
    (r"\bClients? (MUST|SHOULD)[^.]*(cancel|tool call updates)",
     "a client obligation about cancelled work: the fuzzer answers as CANCEL-04 requires and "
     "keeps reading updates"),
    (r"\bClients? (MUST|SHOULD)[^.]*(load|resume|additionalDirectories|transports?|send)",
     "a client obligation about what it sends: the fuzzer sends only what the agent "
     "advertised"),
    (r"\bClients? (MUST|SHOULD)[^.]*(handle|replace|ignore|adapt|respect|use|overwrite)",
     "how a client treats what it receives: not on the wire"),
    (r"\bClients?\b", "a client obligation the model does not judge (the fuzzer is the "
                      "client)"),
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
    if re.search(OUTSIDE, sentence.where):
        return None  # the lifecycle's words about a request the model leaves out
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
