"""The rule map: where each rule is decided, read off the ``@check`` registry.

Every module that decides a rule registers its checks when imported; :data:`DECIDING_MODULES`
lists them (``tests/unit/test_catalogue.py``
fails if a module decides a rule without being listed).
The docs site's rule map (docs/design.md) is :func:`markdown`, generated when the site is
built, so it cannot drift from the code.
"""

from __future__ import annotations

import importlib
import inspect
from collections import defaultdict
from collections.abc import Iterable

from acp_model.model.check import ALLOWS, CHECKS, CheckMeta
from acp_model.spec.rules import RULES

DECIDING_MODULES = (
    "acp_model.model.session",
    "acp_model.model.prompt_queue",
    "acp_model.model.prompt_rules",
    "acp_model.model.cancel_rules",
    "acp_model.model.state_rules",
    "acp_model.model.obligations",
    "acp_model.model.connection",
    "acp_model.model.messages",
    "acp_model.model.closing",
    "acp_model.model.offered",
    "acp_model.model.reducers",
    "acp_model.model.views",
    "acp_model.model.replay",
    "acp_model.model.replay_order",
    "acp_model.model.capabilities",
    "acp_model.model.permissions",
    "acp_model.oracle.rpc",
    "acp_model.oracle.validate",
    "acp_model.oracle.liveness",
    "acp_model.oracle.router",
    "acp_model.fuzzing.client",
    "acp_model.fuzzing.handshake",
    "acp_model.fuzzing.sessions",
    "acp_model.fuzzing.stalls",
)

WHAT = {
    "acp_model.model.session": "the session machine's actions: the moves that may happen "
                               "(MAY rules) and what they discharge",
    "acp_model.model.prompt_queue": "the prompts' own moves: acceptance, user messages",
    "acp_model.model.prompt_rules": "the session machine's checks on prompts, receipts and "
                                    "user messages",
    "acp_model.model.cancel_rules": "the session machine's checks on cancellation, over the "
                                    "race facts of race_facts.py, proofs in evidence.py",
    "acp_model.model.state_rules": "the session machine's checks on reported states and tool "
                                   "calls, over the race facts of race_facts.py",
    "acp_model.model.obligations": "what a session still owes (liveness): answers, user "
                                   "messages, the end of work, the cancelled idle",
    "acp_model.model.connection": "the connection machine: initialize first, session ids, "
                                  "known sessions, baseline methods",
    "acp_model.model.closing": "sdk-2.4.0's session/close order: the cancelled work's idle "
                               "before the close response, held prompts answered -32800, "
                               "nothing after it",
    "acp_model.model.offered": "what an agent owes for what it offers: a valid initialize let "
                               "in, its sessions kept until the client closes them",
    "acp_model.model.reducers": "the client's view (messages, tool calls, plans) and what it "
                                "alone shows",
    "acp_model.model.views": "how each update kind changes the client's view (the merge "
                             "rules it applies: message upserts and chunks, tool call "
                             "patches, plans, usage, terminals)",
    "acp_model.model.replay": "replayed history: session/load and a resume from the start "
                              "replay the entire conversation, one id per replayed message",
    "acp_model.model.replay_order": "where replayed history comes: before a load's or a "
                                    "resume's answer, never in a resume without a cursor",
    "acp_model.model.capabilities": "what each peer advertised at initialize, and what the "
                                    "other then used or refused (client methods, "
                                    "authentication, session methods, baseline content)",
    "acp_model.model.permissions": "what a permission answer means, and the tool call an "
                                   "allow approved reported running",
    "acp_model.model.messages": "single-message checks the schema cannot express (reserved "
                                "enum values, absolute paths, ISO 4217, prompt capabilities, "
                                "unique ids and names, a diff's patch against its changes)",
    "acp_model.oracle.rpc": "JSON-RPC framing: ids, envelopes, batches, answers to "
                            "notifications",
    "acp_model.oracle.validate": "schema validation per method and direction, and which rule "
                                 "a schema failure breaks",
    "acp_model.oracle.liveness": "obligations about requests: every request answered at all "
                                 "(one verdict for a peer stuck on a request; a request in an "
                                 "ignored batch is the batch rules' ACPM-BATCH)",
    "acp_model.oracle.router": "session/close routed as a cancel",
    "acp_model.fuzzing.client": "facts only the fuzzer sees: the process stays alive, its "
                                "output bounded",
    "acp_model.fuzzing.handshake": "the fuzzer's initialize: answered within the start-up "
                                   "deadline, with the protocol version the client asked for",
    "acp_model.fuzzing.sessions": "sessions the fuzzer makes ahead of need: session/new "
                                  "answered within the start-up deadline",
    "acp_model.fuzzing.stalls": "a model request still stalled a deadline after the cancel "
                                "(CANCEL-05's warning; the drain then ends the stall)",
}


def _load() -> None:
    for name in DECIDING_MODULES:
        importlib.import_module(name)


def decisions() -> dict[str, list[CheckMeta]]:
    """rule ID -> the checks that decide it, in registration order."""
    _load()
    out: dict[str, list[CheckMeta]] = defaultdict(list)
    for meta in CHECKS.values():
        if meta.module in DECIDING_MODULES:
            out[meta.rule].append(meta)
            for _, choice in meta.levels:  # a strict reading's own rule
                if choice in RULES and meta not in out[choice]:
                    out[choice].append(meta)
    return dict(out)


def allowances() -> dict[str, list[str]]:
    """rule ID -> the actions that exercise it without judging (MAY rules, definitions)."""
    _load()
    out: dict[str, list[str]] = defaultdict(list)
    for name in DECIDING_MODULES:
        module = importlib.import_module(name)
        for obj in _members(module):
            for rule_id in getattr(obj, ALLOWS, ()):
                out[rule_id].append(f"{name}.{obj.__qualname__}")
    return dict(out)


def _members(module: object) -> Iterable[object]:
    for _, obj in inspect.getmembers(module):
        if getattr(obj, "__module__", None) != getattr(module, "__name__", None):
            continue
        if inspect.isfunction(obj):
            yield obj
        elif inspect.isclass(obj):
            yield from (v for _, v in inspect.getmembers(obj, inspect.isfunction))


def _path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def markdown() -> str:
    """The rule map: per module, what it decides and the rules it decides there."""
    decided = decisions()
    by_module: dict[str, list[str]] = defaultdict(list)
    for rule_id in RULES:
        for meta in decided.get(rule_id, []):
            if rule_id not in by_module[meta.module]:
                by_module[meta.module].append(rule_id)
    lines = ["| where | what | rules decided there |", "| --- | --- | --- |"]
    for module in DECIDING_MODULES:
        rules = ", ".join(by_module.get(module, [])) or "-"
        lines.append(f"| `{_path(module)}` | {WHAT[module]} | {rules} |")
    return "\n".join(lines) + "\n"


def reads_markdown() -> str:
    """What each single-message check reads: the message kinds the monitor hands it (its
    ``@check(reads=...)`` declaration, which the dispatch table is built from)."""
    _load()
    from acp_model.model import wire_table
    from acp_model.model.messages import CARRIES

    carried_by: dict[str, list[str]] = defaultdict(list)  # part -> the kinds carrying it
    update_parts = {row.kind: row.parts for row in wire_table.UPDATES}
    for kind, parts in (*update_parts.items(), *CARRIES.items()):
        for part, _ in parts:
            carried_by[part].append(f"`{kind}`")
    for row in wire_table.MESSAGES:  # an answer's or a use's kind: the requests naming it
        for named in (row.answer_reads, row.use_reads):
            if named is not None:
                carried_by[named].append(f"`{row.method}`")
    lines = ["| check | rule | reads | carried by |", "| --- | --- | --- | --- |"]
    for meta in CHECKS.values():
        if meta.module in DECIDING_MODULES and meta.reads:
            kinds = ", ".join(f"`{kind}`" for kind in meta.reads)
            via = ", ".join(sorted({c for k in meta.reads for c in carried_by[k]})) or "-"
            lines.append(f"| `{_path(meta.module)}:{meta.name}` | {meta.rule} | {kinds} "
                         f"| {via} |")
    return "\n".join(lines) + "\n"


def decided_in(rule_id: str) -> list[str]:
    """``module:check`` names deciding ``rule_id`` (for `acp-model rules`)."""
    return [f"{_path(m.module)}:{m.name}" for m in decisions().get(rule_id, [])]
