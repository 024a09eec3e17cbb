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
    ("", r"messageId", "MSG-01"),
    ("", r"MUST reply with the same value", "RPC-01"),
    ("", r"MUST use an array, not .?null", "ACPM-SCHEMA-TOLERATED"),
)

# (a phrase of the sentence, why no rule judges it); the first that matches gives the reason
NOT_MODELLED: tuple[tuple[str, str], ...] = (
    (r"assign meaning to keys|_meta|traceparent",
     "how a receiver reads _meta keys: not observable on the wire"),
    (r"session/close|clos(e|ing) (the|a|active) session",
     "not modelled yet: session/close's order (final updates and the cancelled idle before "
     "the close response, held prompts answered -32800, nothing after it) has no check; "
     "SESS-10 judges only that close cancels"),
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
    for revision, phrase, rid in JUDGED_BY:
        if (not revision or revision == sentence.revision) \
                and re.search(phrase, sentence.text, re.I) \
                and RULES[rid].applies(sentence.revision):
            return rid
    return None


def reason(sentence: Sentence) -> str:
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
        "`$defs` descriptions, the seed's v2 pages, the v1 pages); `tests/test_audit.py` "
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
