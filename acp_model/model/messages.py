"""Checks on single messages that the schema cannot express.

The schema keeps its open enums open (a ``"other"`` fallback accepts any string) for forward
compatibility, so a typo such as ``stopReason: "done"`` validates. The spec reserves unknown
values without a leading ``_`` for future ACP versions, so a v2 sender that emits one is wrong.
The known values are read from the schema itself (``known_values``), never listed here.
Also here: absolute-path and ISO 4217 checks, and the prompt-capability gate.

Each check decides one rule (``@check(..., role=FINDING)``) and yields ``(path, explanation)``
for what it finds; the entry points (``session_update``, ``prompt_request`` ...) run the checks
that apply to a message and collect :class:`Findings`: what was found and which checks ran
(the "exercised" counts of the report).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from acp_model.model.check import CheckMeta, check, meta_of
from acp_model.model.vocab import Level, Role
from acp_model.spec import revisions
from acp_model.spec.rules import RULES
from acp_model.spec.schema import SEED, defined_elsewhere, is_reserved

# Active ISO 4217 codes (including funds, precious metals and testing codes), plus a few
# recently withdrawn ones an agent might still emit.
ISO_4217 = frozenset("""
AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP
BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB
EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY
KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR
MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB
RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD
TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAF XAG XAU XBA XBB XBC XBD XCD XCG
XDR XOF XPD XPF XPT XSU XTS XUA XXX YER ZAR ZMW ZWG ZWL
""".split())

CURRENCY_SHAPE = re.compile(r"[A-Z]{3}")  # the seed schema's Cost.currency pattern

MESSAGE_KINDS = frozenset({
    "user_message", "user_message_chunk", "agent_message", "agent_message_chunk",
    "agent_thought", "agent_thought_chunk",
})

# Which prompt capability unlocks which content block type (PROMPT-02); the fuzzer's prompt
# generator reads the same table, so it obeys the rule the oracle judges.
PROMPT_CAPABILITY_GATES: Mapping[str, str] = {"image": "image", "audio": "audio",
                                              "resource": "embeddedContext"}

Found = Iterator[tuple[str, str]]  # what one check yields: (JSON path, explanation)


@dataclass
class Findings:
    """What the checks run on one message found, and which checks ran."""

    found: list[tuple[CheckMeta, str, str]] = field(default_factory=list)
    ran: list[CheckMeta] = field(default_factory=list)
    rev: str = SEED  # checks of rules this revision does not state are not run

    def run(self, fn: Callable[..., Found], *args: Any) -> None:
        meta = meta_of(fn)
        if not RULES[meta.rule].applies(self.rev):
            return
        self.ran.append(meta)
        for path, text in fn(*args):
            self.found.append((meta, path, text))


def is_absolute_path(path: object) -> bool:
    """POSIX or Windows absolute path (the spec allows either platform)."""
    if not isinstance(path, str) or not path:
        return False
    if path.startswith("/") or path.startswith("\\\\"):
        return True
    return len(path) > 2 and path[0].isalpha() and path[1] == ":" and path[2] in "\\/"


def _blocks(content: Any, where: str) -> Iterator[tuple[str, Any]]:
    if isinstance(content, dict):
        yield where, content
    elif isinstance(content, list):
        for i, block in enumerate(content):
            yield f"{where}/{i}", block


# --- open enums and tagged unions (ENUM-02 and the rules naming one enum) ----------------

@check("ENUM-02", role=Role.FINDING)
def content_blocks_known(content: Any, where: str, rev: str) -> Found:
    """Content block types are the defined ones or start with _."""
    for path, block in _blocks(content, where):
        if isinstance(block, dict) and is_reserved("content_block", block.get("type"), rev):
            yield (f"{path}/type",
                   f"content block type {block.get('type')!r} is neither defined nor _-prefixed")


@check("ENUM-02", role=Role.FINDING)
def update_kind_known(update: Mapping[str, Any], where: str, rev: str) -> Found:
    """sessionUpdate kinds are the v2 ones or start with _."""
    kind = update.get("sessionUpdate")
    if is_reserved("session_update", kind, rev):
        yield (f"{where}/sessionUpdate",
               f"sessionUpdate kind {kind!r} is neither defined by v2 nor _-prefixed")


@check("ENUM-02", role=Role.FINDING)
def tool_content_known(items: Any, where: str, rev: str) -> Found:
    """Tool call content types in a tool_call_update are content/diff/terminal or start with _."""
    for path, item in _blocks(items, where):
        if isinstance(item, dict) and is_reserved("tool_content", item.get("type"), rev):
            yield (f"{path}/type", f"tool call content type {item.get('type')!r} is not "
                   "content/diff/terminal or _-prefixed")


@check("TOOL-07", role=Role.FINDING)
def chunk_content_wrapped(items: Any, where: str, rev: str) -> Found:
    """A tool_call_content_chunk carries a tool-content wrapper, never a bare content block."""
    for path, item in _blocks(items, where):
        if isinstance(item, dict) and is_reserved("tool_content", item.get("type"), rev):
            yield (f"{path}/type", f"tool call content type {item.get('type')!r} is not "
                   "content/diff/terminal or _-prefixed (a bare content block must be wrapped "
                   "as {type: content, content: ...})")


@check("ENUM-02", role=Role.FINDING)
def subject_known(subject: Mapping[str, Any], rev: str) -> Found:
    """Permission subject types are the defined ones or start with _."""
    if is_reserved("subject", subject.get("type"), rev):
        yield ("params/subject/type",
               f"permission subject type {subject.get('type')!r} is reserved")


@check("ENUM-02", role=Role.FINDING)
def outcome_known(result: Any, rev: str) -> Found:
    """Permission outcomes are the defined ones or start with _."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if isinstance(outcome, dict) and is_reserved("outcome", outcome.get("outcome"), rev):
        yield ("result/outcome/outcome",
               f"permission outcome {outcome.get('outcome')!r} is neither defined nor _-prefixed")


# (field of a session/update payload, the open enum it holds)
_UPDATE_ENUMS: tuple[tuple[str, str], ...] = (
    ("sessionUpdate", "session_update"), ("state", "state"), ("stopReason", "stop_reason"),
    ("status", "tool_status"), ("kind", "tool_kind"))


@check("ACPM-ENUM-REVISION", role=Role.FINDING)
def variants_of_another_revision(update: Mapping[str, Any], where: str, rev: str) -> Found:
    """A value the revision does not list but another revision of its protocol defines: a
    future (or former) ACP variant, which the text reserves unknown values for."""
    for key, enum in _UPDATE_ENUMS:
        others = defined_elsewhere(enum, update.get(key), rev)
        if others:
            yield (f"{where}/{key}",
                   f"{key} {update[key]!r} is not a {rev} value but {' and '.join(others)} "
                   f"defines it: a {rev} client falls back to its generic handling")
    for path, block in _blocks(update.get("content"), f"{where}/content"):
        kind = block.get("type") if isinstance(block, dict) else None
        others = defined_elsewhere("content_block", kind, rev)
        if others:
            yield (f"{path}/type", f"content block type {kind!r} is not a {rev} value but "
                   f"{' and '.join(others)} defines it")


@check("STATE-09", role=Role.FINDING)
def state_known(update: Mapping[str, Any], where: str, rev: str) -> Found:
    """state_update.state is running, idle, requires_action or starts with _."""
    state = update.get("state")
    if is_reserved("state", state, rev):
        yield (f"{where}/state",
               f"state {state!r} is not running/idle/requires_action or _-prefixed")


@check("STOP-03", role=Role.FINDING)
def stop_reason_known(update: Mapping[str, Any], where: str, rev: str) -> Found:
    """Stop reasons are the defined ones or start with _ (others are reserved)."""
    if update.get("state") == "idle" and is_reserved("stop_reason", update.get("stopReason"), rev):
        yield (f"{where}/stopReason",
               f"stop reason {update['stopReason']!r} is neither defined nor _-prefixed "
               "(unknown values are reserved for future ACP versions)")


@check("TOOL-14", role=Role.FINDING)
def tool_status_known(update: Mapping[str, Any], where: str, rev: str) -> Found:
    """Tool call statuses are the defined ones or start with _."""
    if is_reserved("tool_status", update.get("status"), rev):
        yield (f"{where}/status",
               f"tool call status {update['status']!r} is neither defined nor _-prefixed")


@check("TOOL-15", role=Role.FINDING)
def tool_kind_known(update: Mapping[str, Any], where: str, rev: str) -> Found:
    """Tool kinds are the defined ones or start with _."""
    if is_reserved("tool_kind", update.get("kind"), rev):
        yield (f"{where}/kind",
               f"tool kind {update['kind']!r} is neither defined nor _-prefixed")


@check("PLAN-04", role=Role.FINDING)
def plan_type_known(plan: Mapping[str, Any], where: str, rev: str) -> Found:
    """Plan types other than items start with _."""
    if is_reserved("plan_type", plan.get("type"), rev):
        yield (f"{where}/plan/type",
               f"plan type {plan.get('type')!r} is neither defined nor _-prefixed")


@check("PLAN-09", role=Role.FINDING)
def plan_entries_known(plan: Mapping[str, Any], where: str, rev: str) -> Found:
    """Plan entry priorities and statuses are the defined values or start with _."""
    for i, entry in enumerate(plan.get("entries") or []):
        if not isinstance(entry, dict):
            continue
        for name, enum in (("priority", "plan_priority"), ("status", "plan_status")):
            if is_reserved(enum, entry.get(name), rev):
                yield (f"{where}/plan/entries/{i}/{name}",
                       f"plan entry {name} {entry[name]!r} is neither defined nor _-prefixed")


@check("PERM-07", role=Role.FINDING)
def option_kinds_known(params: Mapping[str, Any], rev: str) -> Found:
    """Permission option kinds are allow/reject once/always or start with _."""
    for i, option in enumerate(params.get("options") or []):
        if isinstance(option, dict) and is_reserved("option_kind", option.get("kind"), rev):
            yield (f"params/options/{i}/kind",
                   f"permission option kind {option['kind']!r} is neither defined nor _-prefixed")


# --- paths, currencies, capabilities -------------------------------------------------------

@check("TOOL-19", role=Role.FINDING)
def tool_paths_absolute(update: Mapping[str, Any], where: str) -> Found:
    """File paths in tool call locations and diffs are absolute."""
    locations = update.get("locations")
    if isinstance(locations, list):
        for i, loc in enumerate(locations):
            if isinstance(loc, dict) and "path" in loc and not is_absolute_path(loc["path"]):
                yield (f"{where}/locations/{i}/path",
                       f"tool call location {loc['path']!r} is not an absolute path")
    yield from _diff_paths(update.get("content"), f"{where}/content")


def _diff_paths(items: Any, where: str) -> Found:
    """The paths of a diff's ``changes`` (``path``, and ``oldPath`` of a move or copy): the
    schema types them ``AbsolutePath`` but cannot check it."""
    for path, item in _blocks(items, where):
        if not isinstance(item, dict) or item.get("type") != "diff":
            continue
        changes = item.get("changes")
        for i, change in enumerate(changes if isinstance(changes, list) else []):
            if not isinstance(change, dict):
                continue
            for key in ("path", "oldPath"):
                if key in change and not is_absolute_path(change[key]):
                    yield (f"{path}/changes/{i}/{key}",
                           f"diff {key} {change[key]!r} is not absolute")


@check("TOOL-19", role=Role.FINDING)
def diff_paths_absolute(items: Any, where: str) -> Found:
    """Diff paths in tool call content are absolute."""
    yield from _diff_paths(items, where)



@check("USAGE-04", role=Role.FINDING)
def currency_iso_4217(update: Mapping[str, Any], where: str) -> Found:
    """usage_update cost.currency is an ISO 4217 code.

    Only three capitals are looked up: any other shape breaks the seed schema's pattern,
    which reports it (one cause, one violation). The rule is the seed's: sdk-2.4.0 allows
    "another unit such as credits" (``Rule.revisions``).
    """
    cost = update.get("cost")
    if isinstance(cost, dict):
        currency = cost.get("currency")
        if isinstance(currency, str) and CURRENCY_SHAPE.fullmatch(currency) \
                and currency not in ISO_4217:
            yield (f"{where}/cost/currency", f"currency {currency!r} is not an ISO 4217 code")


@check("PROMPT-02", role=Role.FINDING)
def prompt_within_capabilities(params: Mapping[str, Any], caps: Mapping[str, Any]) -> Found:
    """Image, audio and embedded resources only when the agent advertised them."""
    for i, block in enumerate(params.get("prompt") or []):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        gate = PROMPT_CAPABILITY_GATES.get(kind)  # type: ignore[arg-type]
        if gate is not None and caps.get(gate) is None:
            yield (f"params/prompt/{i}",
                   f"a {kind!r} block needs the prompt capability {gate!r}, which the agent "
                   "did not advertise")


@check("SESS-02", role=Role.FINDING)
def cwd_absolute(params: Mapping[str, Any]) -> Found:
    """The cwd of session/new is an absolute path."""
    if "cwd" in params and not is_absolute_path(params["cwd"]):
        yield ("params/cwd", f"cwd {params['cwd']!r} is not an absolute path")


@check("INIT-03", role=Role.FINDING, level=Level.WARN)
def initialize_names_capabilities(result: Mapping[str, Any], key: str = "capabilities"
                                  ) -> Found:
    """The initialize result states the agent's capabilities.

    A warning at most: every revision's schema leaves the field out of ``required`` and gives
    it a ``default`` (v1 ``agentCapabilities``, v2 ``capabilities``; RULES.md C-09), so a
    result without it states the default capabilities, which may be all the agent has."""
    if key not in result:
        yield (f"result/{key}", f"the initialize result omits {key}: the schema's default "
               "stands for them (the docs say the agent responds with its capabilities)")


@check("INIT-03", role=Role.FINDING)
def speaks_negotiated_version(named: Any, spoken: int, negotiated: Any, evidence: str
                              ) -> str | None:
    """The protocol version the initialize result names is the one the agent speaks."""
    if negotiated is not None and named == negotiated and named != spoken:
        return (f"the initialize response names protocolVersion {named!r}, but the agent "
                f"speaks protocol {spoken}: {evidence}. The trace is judged by the revision "
                "it speaks, so this is its one failure for that cause")
    return None


# --- entry points: which checks apply to which message ---------------------------------------

def _tool_call(update: Mapping[str, Any], where: str, out: Findings, rev: str) -> None:
    out.run(tool_status_known, update, where, rev)
    out.run(tool_kind_known, update, where, rev)
    out.run(tool_paths_absolute, update, where)
    out.run(tool_content_known, update.get("content"), f"{where}/content", rev)
    for path, item in _blocks(update.get("content"), f"{where}/content"):
        if isinstance(item, dict) and item.get("type") == "content":
            out.run(content_blocks_known, item.get("content"), f"{path}/content", rev)


def session_update(params: Any, rev: str = SEED) -> Findings:
    """Checks on ``session/update`` params beyond the schema."""
    out = Findings(rev=rev)
    update = params.get("update") if isinstance(params, dict) else None
    if not isinstance(update, dict):
        return out
    kind = update.get("sessionUpdate")
    where = "params/update"
    out.run(update_kind_known, update, where, rev)
    out.run(variants_of_another_revision, update, where, rev)
    if kind == "state_update":
        out.run(state_known, update, where, rev)
        out.run(stop_reason_known, update, where, rev)
    elif kind in MESSAGE_KINDS:
        out.run(content_blocks_known, update.get("content"), f"{where}/content", rev)
    elif kind in ("tool_call_update", "tool_call"):  # tool_call: v1's first report
        _tool_call(update, where, out, rev)
    elif kind == "tool_call_content_chunk":
        items = update.get("content")
        out.run(chunk_content_wrapped, items, f"{where}/content", rev)
        out.run(diff_paths_absolute, items, f"{where}/content")
        for path, item in _blocks(items, f"{where}/content"):
            if isinstance(item, dict) and item.get("type") == "content":
                out.run(content_blocks_known, item.get("content"), f"{path}/content", rev)
    elif kind == "plan_update":
        plan = update.get("plan")
        if isinstance(plan, dict):
            out.run(plan_type_known, plan, where, rev)
            out.run(plan_entries_known, plan, where, rev)
    elif kind == "usage_update":
        out.run(currency_iso_4217, update, where)
    return out


def permission_request(params: Any, rev: str = SEED) -> Findings:
    out = Findings(rev=rev)
    if not isinstance(params, dict):
        return out
    out.run(option_kinds_known, params, rev)
    if isinstance(params.get("toolCall"), dict):  # v1: the tool call at the root
        _tool_call(params["toolCall"], "params/toolCall", out, rev)
    subject = params.get("subject")
    if isinstance(subject, dict):
        out.run(subject_known, subject, rev)
        if subject.get("type") == "tool_call" and isinstance(subject.get("toolCall"), dict):
            _tool_call(subject["toolCall"], "params/subject/toolCall", out, rev)
    return out


def permission_result(result: Any, rev: str = SEED) -> Findings:
    out = Findings(rev=rev)
    out.run(outcome_known, result, rev)
    return out


def prompt_request(params: Any, prompt_caps: Mapping[str, Any] | None, rev: str = SEED) -> Findings:
    """PROMPT-02 and the content block types of a prompt."""
    out = Findings(rev=rev)
    if not isinstance(params, dict):
        return out
    out.run(content_blocks_known, params.get("prompt"), "params/prompt", rev)
    out.run(prompt_within_capabilities, params, prompt_caps or {})
    return out


def new_session_request(params: Any, rev: str = SEED) -> Findings:
    out = Findings(rev=rev)
    if isinstance(params, dict):
        out.run(cwd_absolute, params)
    return out


def initialize_result(result: Any, rev: str = SEED) -> Findings:
    out = Findings(rev=rev)
    if isinstance(result, dict):
        out.run(initialize_names_capabilities, result, capabilities_key(rev))
    return out


def prompt_capabilities(result: Any, rev: str = SEED) -> dict[str, Any]:
    """The prompt capabilities an initialize result advertises, as v2 markers (``{}`` for a
    supported one): v2 ``capabilities.session.prompt``, v1 ``agentCapabilities.
    promptCapabilities`` whose flags are booleans."""
    caps = result.get(capabilities_key(rev)) if isinstance(result, dict) else None
    if not isinstance(caps, dict):
        return {}
    if revisions.get(rev).protocol == 1:
        flags = caps.get("promptCapabilities")
        return {k: {} for k, v in flags.items() if v is True} if isinstance(flags, dict) else {}
    session = caps.get("session")
    prompt = session.get("prompt") if isinstance(session, dict) else None
    return prompt if isinstance(prompt, dict) else {}


def capabilities_key(rev: str) -> str:
    """Where an initialize result states the agent's capabilities (v1: ``agentCapabilities``)."""
    return "agentCapabilities" if revisions.get(rev).protocol == 1 else "capabilities"


def reload_methods(result: Any, rev: str = SEED) -> frozenset[str]:
    """The requests that reopen an existing session which an initialize result lets a client
    send: v1 ``session/load`` with ``agentCapabilities.loadSession: true`` and
    ``session/resume`` with ``sessionCapabilities.resume`` (session-setup.mdx §Checking
    Support: without them the client MUST NOT call them); v2 ``session/resume``, which every
    agent of the session surface supports (session-setup.mdx §Resuming Sessions)."""
    caps = result.get(capabilities_key(rev)) if isinstance(result, dict) else None
    if not isinstance(caps, dict):
        return frozenset()
    if revisions.get(rev).protocol != 1:
        return frozenset({"session/resume"}) if isinstance(caps.get("session"), dict) \
            else frozenset()
    out = {"session/load"} if caps.get("loadSession") is True else set()
    session = caps.get("sessionCapabilities")
    if isinstance(session, dict) and isinstance(session.get("resume"), dict):
        out.add("session/resume")
    return frozenset(out)
