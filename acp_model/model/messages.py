"""Checks on single messages that the schema cannot express.

The schema keeps its open enums open (a ``"other"`` fallback accepts any string) for forward
compatibility, so a typo such as ``stopReason: "done"`` validates. The spec reserves unknown
values without a leading ``_`` for future ACP versions, so a v2 sender that emits one is wrong.
The known values are read from the schema itself (``known_values``), never listed here.
Also here: absolute-path and ISO 4217 checks, and the prompt-capability gate.

Each check decides one rule (``@check(..., role=FINDING, reads=[...])``), names the message
kinds or parts it reads (:class:`~acp_model.model.vocab.Reads`) and yields ``(path,
explanation)`` for what it finds. A message goes only to the checks that read its kind and the
parts it carries (an update kind's: its wire-table row's ``parts``; a request's or a result's:
:data:`CARRIES`); the dispatch table is built from the declarations (:func:`dispatch_table`),
so adding a check is one decorated function. The entry points
(``prompt_request``, ``session_result`` ...; an update: its kind's plan,
:func:`update_checks`) collect :class:`Findings`: what was found and
which checks ran (the "exercised" counts of the report).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from acp_model.model import patches, wire_shapes, wire_table
from acp_model.model.check import CheckMeta, Dispatch, check, dispatch
from acp_model.model.parts import Locate, Parts, at, blocks, wrapped_content
from acp_model.model.vocab import Level, Reads, Role
from acp_model.spec.schema import SEED, defined_elsewhere, foreign_values, is_reserved
from acp_model.trace.methods import Method

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


# Which prompt capability unlocks which content block type (PROMPT-02); the fuzzer's prompt
# generator reads the same table, so it obeys the rule the oracle judges.
PROMPT_CAPABILITY_GATES: Mapping[str, str] = {"image": "image", "audio": "audio",
                                              "resource": "embeddedContext"}

# What one check finds: None, or the (JSON path, explanation) pairs it found
Found = list[tuple[str, str]] | None
Entry = tuple[tuple[Callable[..., Found], CheckMeta], ...]  # a dispatch table's entry


@dataclass(slots=True)
class Findings:
    """What the checks run on one message found, and which dispatch entries ran (each a
    static tuple of the table: the report's "exercised" counts are expanded from them when
    asked, not counted per check on every message)."""

    found: list[tuple[CheckMeta, str, str]] = field(default_factory=list)
    ran: list[Entry] = field(default_factory=list)
    rev: str = SEED  # the revision judging (its dispatch table leaves out rules it lacks)

    def apply(self, checks: Entry, *args: Any) -> None:
        """Run the checks of a dispatch table's entry on ``args``; keep what they find."""
        self.ran.append(checks)
        found = self.found
        for fn, meta in checks:
            got = fn(*args)
            if got:
                for path, text in got:
                    found.append((meta, path, text))


def found_by(entry: Entry, found: Findings | None, rev: str, *args: Any) -> Findings | None:
    """Run an entry's checks on ``args`` without logging the entry (a pipeline's tally counts
    it, ``oracle.updates``): what they find is added to ``found``, made on the first finding
    (None: nothing found, nothing made)."""
    for fn, meta in entry:
        got = fn(*args)
        if got:
            if found is None:
                found = Findings(rev=rev)
            found.found.extend((meta, path, text) for path, text in got)
    return found


@dataclass(frozen=True, slots=True)
class FindingContext:
    """What a check reads besides the message: the revision judging it, the prompt
    capabilities the agent advertised, and that revision's dispatch table."""

    rev: str
    prompt_caps: Mapping[str, Any] | None
    table: Readers
    # (update field, its open enum, the values only other revisions define), read once; the
    # fields whose enum has none are left out (no value of theirs can be another revision's)
    foreign: tuple[tuple[str, str, frozenset[str]], ...]
    foreign_blocks: frozenset[str]  # the content block types only other revisions define

    @staticmethod
    def of(rev: str, prompt_caps: Mapping[str, Any] | None = None) -> FindingContext:
        plain = _plain_context(rev)
        return plain if prompt_caps is None else \
            FindingContext(rev, prompt_caps, plain.table, plain.foreign, plain.foreign_blocks)


@cache
def _plain_context(rev: str) -> FindingContext:
    return FindingContext(rev, None, dispatch_table(rev),
                          tuple((key, enum, foreign) for key, enum in _UPDATE_ENUMS
                                if (foreign := foreign_values(enum, rev))),
                          foreign_values("content_block", rev))


def is_absolute_path(path: object) -> bool:
    """POSIX or Windows absolute path (the spec allows either platform)."""
    if not isinstance(path, str) or not path:
        return False
    if path.startswith("/") or path.startswith("\\\\"):
        return True
    return len(path) > 2 and path[0].isalpha() and path[1] == ":" and path[2] in "\\/"


# --- open enums and tagged unions (ENUM-02 and the rules naming one enum) ----------------
# Every check reads ``(value, where, ctx)``: the part of the message its ``reads`` names, that
# part's JSON path, and the context of the connection (revision, prompt capabilities).

@check("ENUM-02", role=Role.FINDING, reads=[Reads.CONTENT])
def content_blocks_known(content: Any, where: str, ctx: FindingContext) -> Found:
    """Content block types are the defined ones or start with _."""
    found: list[tuple[str, str]] = []
    for path, block in blocks(content, where):
        if isinstance(block, dict) and is_reserved("content_block", block.get("type"), ctx.rev):
            found.append((f"{path}/type",
                          f"content block type {block.get('type')!r} is neither defined nor "
                          "_-prefixed"))
    return found or None


@check("ENUM-02", role=Role.FINDING, reads=[Reads.UPDATE_KIND])
def update_kind_known(kind: Any, where: str, ctx: FindingContext) -> Found:
    """sessionUpdate kinds are the v2 ones or start with _."""
    if is_reserved("session_update", kind, ctx.rev):
        return [(f"{where}/sessionUpdate",
                 f"sessionUpdate kind {kind!r} is neither defined by v2 nor _-prefixed")]
    return None


@check("TOOL-07", role=Role.FINDING, reads=[Reads.TOOL_CALL_CONTENT_CHUNK])
def chunk_content_wrapped(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """A tool_call_content_chunk carries a tool-content wrapper, never a bare content block."""
    found: list[tuple[str, str]] = []
    for path, item in blocks(update.get("content"), f"{where}/content"):
        if isinstance(item, dict) and is_reserved("tool_content", item.get("type"), ctx.rev):
            found.append((f"{path}/type", f"tool call content type {item.get('type')!r} is not "
                          "content/diff/terminal or _-prefixed (a bare content block must be "
                          "wrapped "
                          "as {type: content, content: ...})"))
    return found or None


@check("ENUM-02", role=Role.FINDING, reads=[Reads.SUBJECT])
def subject_known(subject: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Permission subject types are the defined ones or start with _."""
    found: list[tuple[str, str]] = []
    if is_reserved("subject", subject.get("type"), ctx.rev):
        found.append((f"{where}/type",
                      f"permission subject type {subject.get('type')!r} is reserved"))
    return found or None


@check("ENUM-02", role=Role.FINDING, reads=[Reads.PERMISSION_RESULT])
def outcome_known(result: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Permission outcomes are the defined ones or start with _."""
    found: list[tuple[str, str]] = []
    outcome = result.get("outcome")
    if isinstance(outcome, dict) and is_reserved("outcome", outcome.get("outcome"), ctx.rev):
        found.append((f"{where}/outcome/outcome",
                      f"permission outcome {outcome.get('outcome')!r} is neither defined "
                      "nor _-prefixed"))
    return found or None


# (field of a session/update payload, the open enum it holds)
_UPDATE_ENUMS: tuple[tuple[str, str], ...] = (
    ("sessionUpdate", "session_update"), ("state", "state"), ("stopReason", "stop_reason"),
    ("status", "tool_status"), ("kind", "tool_kind"))


@check("ACPM-ENUM-REVISION", role=Role.FINDING, reads=[Reads.UPDATE])
def variants_of_another_revision(update: Mapping[str, Any], where: str, ctx: FindingContext
                                 ) -> Found:
    """A value the revision does not list but another revision of its protocol defines: a
    future (or former) ACP variant, which the text reserves unknown values for."""
    found: list[tuple[str, str]] = []
    rev = ctx.rev
    for key, enum, foreign in ctx.foreign:
        value = update.get(key)
        # one set lookup per field: most values are this revision's own
        others = defined_elsewhere(enum, value, rev) \
            if isinstance(value, str) and value in foreign else ()
        if others:
            found.append((f"{where}/{key}",
                          f"{key} {value!r} is not a {rev} value but {' and '.join(others)} "
                          f"defines it: a {rev} client falls back to its generic handling"))
    content = update.get("content")
    foreign = ctx.foreign_blocks
    if content is None or not foreign:
        return found or None
    for path, block in blocks(content, f"{where}/content"):
        kind = block.get("type") if isinstance(block, dict) else None
        others = defined_elsewhere("content_block", kind, rev) \
            if isinstance(kind, str) and kind in foreign else ()
        if others:
            found.append((f"{path}/type", f"content block type {kind!r} is not a {rev} value but "
                          f"{' and '.join(others)} defines it"))
    return found or None


@check("STATE-09", role=Role.FINDING, reads=[Reads.STATE_UPDATE])
def state_known(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """state_update.state is running, idle, requires_action or starts with _."""
    found: list[tuple[str, str]] = []
    state = update.get("state")
    if is_reserved("state", state, ctx.rev):
        found.append((f"{where}/state",
                      f"state {state!r} is not running/idle/requires_action or _-prefixed"))
    return found or None


@check("STOP-03", role=Role.FINDING, reads=[Reads.STATE_UPDATE])
def stop_reason_known(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Stop reasons are the defined ones or start with _ (others are reserved)."""
    found: list[tuple[str, str]] = []
    if update.get("state") == "idle" and is_reserved("stop_reason", update.get("stopReason"),
                                                     ctx.rev):
        found.append((f"{where}/stopReason",
                      f"stop reason {update['stopReason']!r} is neither defined nor _-prefixed "
                      "(unknown values are reserved for future ACP versions)"))
    return found or None


@check("TOOL-14", role=Role.FINDING, reads=[Reads.TOOL_REPORT])
def tool_status_known(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Tool call statuses are the defined ones or start with _."""
    found: list[tuple[str, str]] = []
    if is_reserved("tool_status", update.get("status"), ctx.rev):
        found.append((f"{where}/status",
                      f"tool call status {update['status']!r} is neither defined nor _-prefixed"))
    return found or None


@check("TOOL-15", role=Role.FINDING, reads=[Reads.TOOL_REPORT])
def tool_kind_known(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Tool kinds are the defined ones or start with _."""
    found: list[tuple[str, str]] = []
    if is_reserved("tool_kind", update.get("kind"), ctx.rev):
        found.append((f"{where}/kind",
                      f"tool kind {update['kind']!r} is neither defined nor _-prefixed"))
    return found or None


@check("PLAN-04", role=Role.FINDING, reads=[Reads.PLAN])
def plan_type_known(plan: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Plan types other than items start with _."""
    found: list[tuple[str, str]] = []
    if is_reserved("plan_type", plan.get("type"), ctx.rev):
        found.append((f"{where}/type",
                      f"plan type {plan.get('type')!r} is neither defined nor _-prefixed"))
    return found or None


@check("PLAN-09", role=Role.FINDING, reads=[Reads.PLAN])
def plan_entries_known(plan: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Plan entry priorities and statuses are the defined values or start with _."""
    found: list[tuple[str, str]] = []
    for i, entry in enumerate(plan.get("entries") or []):
        if not isinstance(entry, dict):
            continue
        for name, enum in (("priority", "plan_priority"), ("status", "plan_status")):
            if is_reserved(enum, entry.get(name), ctx.rev):
                found.append((f"{where}/entries/{i}/{name}",
                              f"plan entry {name} {entry[name]!r} is neither defined nor "
                              "_-prefixed"))
    return found or None


@check("PERM-07", role=Role.FINDING, reads=[Reads.PERMISSION_REQUEST])
def option_kinds_known(params: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Permission option kinds are allow/reject once/always or start with _."""
    found: list[tuple[str, str]] = []
    for i, option in enumerate(params.get("options") or []):
        if isinstance(option, dict) and is_reserved("option_kind", option.get("kind"), ctx.rev):
            found.append((f"{where}/options/{i}/kind",
                          f"permission option kind {option['kind']!r} is neither defined nor "
                          "_-prefixed"))
    return found or None


# --- paths, currencies, capabilities -------------------------------------------------------

@check("TOOL-19", role=Role.FINDING, reads=[Reads.TOOL_REPORT])
def tool_paths_absolute(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """File paths in tool call locations and diffs are absolute."""
    found: list[tuple[str, str]] = []
    locations = update.get("locations")
    if isinstance(locations, list):
        for i, loc in enumerate(locations):
            if isinstance(loc, dict) and "path" in loc and not is_absolute_path(loc["path"]):
                found.append((f"{where}/locations/{i}/path",
                              f"tool call location {loc['path']!r} is not an absolute path"))
    found.extend(_diff_paths(update.get("content"), f"{where}/content"))
    return found or None


@check("ENUM-02", role=Role.FINDING, reads=[Reads.TOOL_REPORT])
def tool_content_known(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Tool call content types in a tool_call_update are content/diff/terminal or start with _."""
    found: list[tuple[str, str]] = []
    for path, item in blocks(update.get("content"), f"{where}/content"):
        if isinstance(item, dict) and is_reserved("tool_content", item.get("type"), ctx.rev):
            found.append((f"{path}/type", f"tool call content type {item.get('type')!r} is not "
                          "content/diff/terminal or _-prefixed"))
    return found or None


def _diff_paths(items: Any, where: str) -> Iterator[tuple[str, str]]:
    """The paths of a diff's ``changes`` (``path``, and ``oldPath`` of a move or copy): the
    schema types them ``AbsolutePath`` but cannot check it."""
    for path, item in blocks(items, where):
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


@check("TOOL-19", role=Role.FINDING, reads=[Reads.TOOL_CALL_CONTENT_CHUNK])
def diff_paths_absolute(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Diff paths in tool call content are absolute."""
    found: list[tuple[str, str]] = []
    found.extend(_diff_paths(update.get("content"), f"{where}/content"))
    return found or None


@check("USAGE-04", role=Role.FINDING, reads=[Reads.USAGE_UPDATE])
def currency_iso_4217(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """usage_update cost.currency is an ISO 4217 code.

    Only three capitals are looked up: any other shape breaks the seed schema's pattern,
    which reports it (one cause, one violation). The rule is the seed's: sdk-2.4.0 allows
    "another unit such as credits" (``Rule.revisions``).
    """
    found: list[tuple[str, str]] = []
    cost = update.get("cost")
    if isinstance(cost, dict):
        currency = cost.get("currency")
        if isinstance(currency, str) and CURRENCY_SHAPE.fullmatch(currency) \
                and currency not in ISO_4217:
            found.append((f"{where}/cost/currency",
                          f"currency {currency!r} is not an ISO 4217 code"))
    return found or None


@check("PROMPT-02", role=Role.FINDING, reads=[Reads.PROMPT_REQUEST])
def prompt_within_capabilities(params: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Image, audio and embedded resources only when the agent advertised them."""
    found: list[tuple[str, str]] = []
    caps = ctx.prompt_caps or {}
    for i, block in enumerate(params.get("prompt") or []):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        gate = PROMPT_CAPABILITY_GATES.get(kind)  # type: ignore[arg-type]
        if gate is not None and caps.get(gate) is None:
            found.append((f"{where}/prompt/{i}",
                          f"a {kind!r} block needs the prompt capability {gate!r}, which the agent "
                          "did not advertise"))
    return found or None


@check("SESS-02", role=Role.FINDING, reads=[Reads.NEW_SESSION_REQUEST])
def cwd_absolute(params: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """The cwd of session/new is an absolute path."""
    found: list[tuple[str, str]] = []
    if "cwd" in params and not is_absolute_path(params["cwd"]):
        found.append((f"{where}/cwd", f"cwd {params['cwd']!r} is not an absolute path"))
    return found or None


@check("INIT-03", role=Role.FINDING, level=Level.WARN, reads=[Reads.INITIALIZE_RESULT])
def initialize_names_capabilities(result: Mapping[str, Any], where: str, ctx: FindingContext
                                  ) -> Found:
    """The initialize result states the agent's capabilities.

    A warning at most: every revision's schema leaves the field out of ``required`` and gives
    it a ``default`` (v1 ``agentCapabilities``, v2 ``capabilities``; RULES.md C-09), so a
    result without it states the default capabilities, which may be all the agent has."""
    found: list[tuple[str, str]] = []
    key = capabilities_key(ctx.rev)
    if key not in result:
        found.append((f"{where}/{key}", f"the initialize result omits {key}: the schema's default "
                      "stands for them (the docs say the agent responds with its capabilities)"))
    return found or None


@check("INIT-03", role=Role.FINDING, reads=[Reads.RESPONSE])
def speaks_negotiated_version(named: Any, spoken: int, negotiated: Any, evidence: str
                              ) -> str | None:
    """The protocol version the initialize result names is the one the agent speaks.

    Not a reader of one message kind: the monitor runs it once it knows the protocol the
    agent speaks (``oracle.answers``)."""
    if negotiated is not None and named == negotiated and named != spoken:
        return (f"the initialize response names protocolVersion {named!r}, but the agent "
                f"speaks protocol {spoken}: {evidence}. The trace is judged by the revision "
                "it speaks, so this is its one failure for that cause")
    return None


# --- what the audit of the texts found on single messages (docs/audit.md) --------------------

@check("PERM-14", role=Role.FINDING, reads=[Reads.PERMISSION_REQUEST])
def option_ids_unique(params: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """The options of one permission request have distinct optionIds."""
    found: list[tuple[str, str]] = []
    options = params.get("options")
    first: dict[str, int] = {}
    for i, option in enumerate(options if isinstance(options, list) else []):
        oid = option.get("optionId") if isinstance(option, dict) else None
        if not isinstance(oid, str):
            continue
        if oid in first:
            found.append((f"{where}/options/{i}/optionId",
                          f"options {first[oid]} and {i} share optionId {oid!r}: an answer "
                          "selecting it cannot say which option the user chose"))
        else:
            first[oid] = i
    return found or None


def _patch_problems(item: Mapping[str, Any]) -> list[str]:
    """What breaks TOOL-21 in one diff item (empty: its git_patch agrees with changes)."""
    patch = item.get("patch")
    if not isinstance(patch, dict) or patch.get("format") != "git_patch" \
            or not isinstance(patch.get("text"), str):
        return []
    read = patches.read(patch["text"])
    problems = [f"line {n} ({line[:60]!r}) lies outside every diff --git section: commit "
                "metadata and email envelopes must not surround the patch"
                for n, line in read.outside[:1]]
    if not read.sections:
        problems.append("the text holds no diff --git section")
    changes = item.get("changes")
    listed = {c.get("path"): c for c in (changes if isinstance(changes, list) else [])
              if isinstance(c, dict) and isinstance(c.get("path"), str)}
    for sec in read.sections:
        relative = [f"{where} {p!r}" for where, p in sec.paths() if not is_absolute_path(p)]
        if relative:
            prefix = " (Git's a/ b/ prefixes)" if any(
                p.startswith(("a/", "b/")) for _, p in sec.paths()) else ""
            problems.append(f"the section at line {sec.line} names {', '.join(relative[:2])}: "
                            f"paths must be absolute{prefix}")
            continue
        change = listed.get(sec.path) if sec.path is not None else None
        op = change.get("operation") if change is not None else None
        if sec.path is not None and change is None:
            problems.append(f"the section at line {sec.line} changes {sec.path!r}, which "
                            "changes does not list")
        elif op in DIFF_OPERATIONS and op != sec.operation:
            problems.append(f"the section at line {sec.line} is a {sec.operation} of "
                            f"{sec.path!r}, but changes lists it as a {op}")
        elif op in ("move", "copy") and change is not None \
                and change.get("oldPath") != sec.old_path:
            problems.append(f"the section at line {sec.line} {op}s {sec.old_path!r}, but "
                            f"changes names {change.get('oldPath')!r}")
    return problems


DIFF_OPERATIONS = frozenset({"add", "delete", "modify", "move", "copy"})


@check("TOOL-21", role=Role.FINDING,
       reads=[Reads.TOOL_REPORT, Reads.TOOL_CALL_CONTENT_CHUNK])
def diff_patch_consistent(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """A diff's git_patch agrees with its changes: absolute paths, no commit metadata or mail
    envelope, sections only for listed paths with their operations."""
    found: list[tuple[str, str]] = []
    for path, item in blocks(update.get("content"), f"{where}/content"):
        if isinstance(item, dict) and item.get("type") == "diff":
            problems = _patch_problems(item)
            if problems:
                more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
                found.append((f"{path}/patch/text",
                              f"the git_patch disagrees with the diff's changes: "
                              f"{problems[0]}{more}"))
    return found or None


@check("TOOL-19", role=Role.FINDING, reads=[Reads.TERMINAL_UPDATE])
def terminal_cwd_absolute(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """A terminal's cwd, when supplied, is absolute."""
    found: list[tuple[str, str]] = []
    cwd = update.get("cwd")
    if cwd is not None and not is_absolute_path(cwd):
        found.append((f"{where}/cwd", f"terminal cwd {cwd!r} is not an absolute path"))
    return found or None


_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/=]")  # outside RFC 4648 §4's alphabet and its padding


def base64_problem(data: str) -> str | None:
    """Why ``data`` is not RFC 4648 base64 (None: it is; the ``=`` padding may be left out)."""
    bad = _NOT_BASE64.search(data)
    if bad is not None:
        return (f"character {bad.group()!r} at offset {bad.start()} is not in the base64 "
                "alphabet (RFC 4648 §4)")
    body = data.rstrip("=")
    if "=" in body or len(data) - len(body) > 2:
        return "its = padding is not only at the end (at most two)"
    if body != data and len(data) % 4:
        return f"padded, its length ({len(data)}) is not a multiple of 4"
    if len(body) % 4 == 1:
        return f"its length ({len(body)}) leaves one character, which encodes no whole byte"
    return None


@check("TOOL-23", role=Role.FINDING, reads=[Reads.TERMINAL_OUTPUT])
def terminal_bytes_base64(output: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Terminal output data (a chunk's, a snapshot's) is base64."""
    found: list[tuple[str, str]] = []
    data = output.get("data")
    problem = base64_problem(data) if isinstance(data, str) else None
    if problem is not None:
        found.append((f"{where}/data", f"terminal output data is not base64: {problem}"))
    return found or None


@check("TOOL-19", role=Role.FINDING, reads=[Reads.SUBJECT])
def command_cwd_absolute(subject: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """A command permission subject's cwd is absolute."""
    found: list[tuple[str, str]] = []
    cwd = subject.get("cwd")
    if subject.get("type") == "command" and cwd is not None and not is_absolute_path(cwd):
        found.append((f"{where}/cwd", f"command cwd {cwd!r} is not an absolute path"))
    return found or None


@check("SDK-CMD-01", role=Role.FINDING, reads=[Reads.COMMANDS])
def command_names_valid(commands: Any, where: str, ctx: FindingContext) -> Found:
    """Available command names hold no whitespace and are unique within the list."""
    found: list[tuple[str, str]] = []
    first: dict[str, int] = {}
    for i, command in enumerate(commands if isinstance(commands, list) else []):
        name = command.get("name") if isinstance(command, dict) else None
        if not isinstance(name, str):
            continue
        if re.search(r"\s", name):
            found.append((f"{where}/{i}/name", f"command name {name!r} contains whitespace"))
        if name in first:
            found.append((f"{where}/{i}/name", f"commands {first[name]} and {i} are both named "
                          f"{name!r}"))
        else:
            first[name] = i
    return found or None


def _select_values(options: Any) -> list[Any]:
    """The values a select option offers, its groups' included."""
    out: list[Any] = []
    for entry in options if isinstance(options, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("options"), list):
            out += [o.get("value") for o in entry["options"] if isinstance(o, dict)]
        elif isinstance(entry, dict):
            out.append(entry.get("value"))
    return out


@check("SDK-CONFIG-01", role=Role.FINDING, reads=[Reads.CONFIG_OPTIONS])
def select_options_consistent(options: Any, where: str, ctx: FindingContext) -> Found:
    """A select config option's values are distinct and its currentValue is one of them."""
    found: list[tuple[str, str]] = []
    for i, option in enumerate(options if isinstance(options, list) else []):
        if not isinstance(option, dict) or option.get("type") != "select":
            continue
        values = _select_values(option.get("options"))
        name = option.get("configId", option.get("id"))
        twice = _repeated(values)
        if twice:
            found.append((f"{where}/{i}/options", f"config option {name!r} offers the value(s) "
                          f"{', '.join(twice)} more than once"))
        if values and option.get("currentValue") not in values:
            found.append((f"{where}/{i}/currentValue",
                          f"config option {name!r} has currentValue "
                          f"{option.get('currentValue')!r}, "
                          "which is none of its values"))
    return found or None


@check("V1-CONFIG-01", role=Role.FINDING, reads=[Reads.SESSION_RESULT])
def modes_kept_with_config(result: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """A mode config option comes with the modes, and both name the same current mode."""
    found: list[tuple[str, str]] = []
    options = result.get("configOptions")
    mode = next((o for o in options if isinstance(o, dict) and o.get("category") == "mode"),
                None) if isinstance(options, list) else None
    if mode is None:
        return found or None
    modes = result.get("modes")
    if not isinstance(modes, dict):
        found.append((f"{where}/modes", f"config option {mode.get('id')!r} is a mode selector but "
                      "the result carries no modes for clients of the older API"))
    elif modes.get("currentModeId") != mode.get("currentValue"):
        found.append((f"{where}/modes/currentModeId",
                      f"modes name the current mode {modes.get('currentModeId')!r}, the mode "
                      "config "
                      f"option {mode.get('currentValue')!r}: the two are not kept in sync"))
    return found or None


@check("SDK-STOP-01", role=Role.FINDING, reads=[Reads.STATE_UPDATE])
def error_stop_reported(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """An idle with stopReason error carries the error."""
    found: list[tuple[str, str]] = []
    if update.get("state") == "idle" and update.get("stopReason") == "error" \
            and update.get("error") is None:
        found.append((f"{where}/error", "the idle ends work with stopReason error but carries no "
                      "error object saying what failed"))
    return found or None


def _objects(container: Mapping[str, Any], key: str) -> list[tuple[int, dict[str, Any]]]:
    """The objects of the list at ``key``, with their positions (anything else skipped)."""
    items = container.get(key)
    return [(i, x) for i, x in enumerate(items) if isinstance(x, dict)] \
        if isinstance(items, list) else []


def _repeated(values: Iterable[Any]) -> list[str]:
    """The values that occur more than once."""
    seen = list(values)
    return sorted({str(v) for v in seen if seen.count(v) > 1})


def _reserved_types(container: Mapping[str, Any], key: str, enum: str, where: str,
                    ctx: FindingContext, what: str) -> Iterator[tuple[str, str]]:
    for i, item in _objects(container, key):
        if is_reserved(enum, item.get("type"), ctx.rev):
            yield (f"{where}/{key}/{i}/type",
                   f"{what} {item.get('type')!r} is neither defined nor _-prefixed")


def _env_names_repeated(container: Mapping[str, Any], key: str, name: str, where: str,
                        what: str) -> Iterator[tuple[str, str]]:
    """Items of the list at ``key`` whose ``env`` sets one variable twice."""
    for i, item in _objects(container, key):
        twice = _repeated(e.get("name") for _, e in _objects(item, "env"))
        if twice:
            yield (f"{where}/{key}/{i}/env",
                   f"{what} {item.get(name)!r} sets {', '.join(twice)} more than once")


@check("INIT-17", role=Role.FINDING, reads=[Reads.INITIALIZE_RESULT])
def auth_env_names_unique(result: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """The env entries of a terminal authentication method have distinct names."""
    found: list[tuple[str, str]] = []
    found.extend(_env_names_repeated(result, "authMethods", "methodId", where,
                 "authentication method"))
    return found or None


@check("ENUM-02", role=Role.FINDING, reads=[Reads.INITIALIZE_RESULT])
def auth_method_types_known(result: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """Authentication method types are the defined ones or start with _."""
    found: list[tuple[str, str]] = []
    found.extend(_reserved_types(result, "authMethods", "auth_method", where, ctx,
                 "authentication method type"))
    return found or None


@check("ENUM-02", role=Role.FINDING, reads=[Reads.NEW_SESSION_REQUEST])
def mcp_transports_known(params: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """MCP server transport types are the defined ones or start with _."""
    found: list[tuple[str, str]] = []
    found.extend(_reserved_types(params, "mcpServers", "mcp_transport", where, ctx,
                 "MCP server transport type"))
    return found or None


@check("INIT-09", role=Role.FINDING, reads=[Reads.INITIALIZE_RESULT, Reads.INITIALIZE_REQUEST])
def v1_info_given(message: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """v1: each peer names itself (agentInfo, clientInfo); v2's required info is the
    schema's."""
    found: list[tuple[str, str]] = []
    if not wire_shapes.shape(ctx.rev).info_required:
        return found or None
    key = "agentInfo" if where == "result" else "clientInfo"
    if not isinstance(message.get(key), dict):
        found.append((f"{where}/{key}",
                      f"the initialize {where} carries no {key} (name and version)"))
    return found or None


@check("TOOL-22", role=Role.FINDING,
       reads=[Reads.TOOL_REPORT, Reads.TOOL_CALL_CONTENT_CHUNK])
def diff_patch_given(update: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """A diff that changes a text file carries a patch."""
    found: list[tuple[str, str]] = []
    for path, item in blocks(update.get("content"), f"{where}/content"):
        if not isinstance(item, dict) or item.get("type") != "diff" \
                or item.get("patch") is not None or "changes" not in item:
            continue
        changes = item.get("changes")
        text = [c.get("path") for c in changes if isinstance(c, dict)
                and c.get("fileType") == "text"] if isinstance(changes, list) else []
        if text:
            found.append((f"{path}/patch",
                          f"the diff changes the text file {text[0]!r} but carries "
                          "no patch to render it"))
    return found or None


@check("SDK-ICON-01", role=Role.FINDING, reads=[Reads.CONTENT])
def icon_sources_safe(content: Any, where: str, ctx: FindingContext) -> Found:
    """A resource link's icons come from https: or data: URIs."""
    found: list[tuple[str, str]] = []
    for path, block in blocks(content, where):
        icons = block.get("icons") if isinstance(block, dict) else None
        for i, icon in enumerate(icons if isinstance(icons, list) else []):
            src = icon.get("src") if isinstance(icon, dict) else None
            if isinstance(src, str) and not src.lower().startswith(("https:", "data:")):
                found.append((f"{path}/icons/{i}/src",
                              f"icon src {src[:80]!r} is neither an https: nor a data: URI"))
    return found or None


@check("SDK-MCP-01", role=Role.FINDING, reads=[Reads.NEW_SESSION_REQUEST])
def mcp_env_names_unique(params: Mapping[str, Any], where: str, ctx: FindingContext) -> Found:
    """The environment variables of a stdio MCP server have distinct names."""
    found: list[tuple[str, str]] = []
    found.extend(_env_names_repeated(params, "mcpServers", "name", where, "MCP server"))
    return found or None


@check("INIT-02", role=Role.FINDING, reads=[Reads.INITIALIZE_REQUEST])
def v1_client_capabilities_given(params: Mapping[str, Any], where: str, ctx: FindingContext
                                 ) -> Found:
    """v1: the client's initialize states its capabilities."""
    found: list[tuple[str, str]] = []
    if "clientCapabilities" not in params:
        found.append((f"{where}/clientCapabilities", "the initialize request does not say which "
                      "capabilities the client supports (the schema's defaults stand for them)"))
    return found or None


_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")


def trace_context(meta: Any, where: str) -> list[tuple[str, str]]:
    """What breaks ENUM-11 in one ``_meta`` object (the W3C trace context keys)."""
    found: list[tuple[str, str]] = []
    if not isinstance(meta, dict):
        return found
    for key in ("traceparent", "tracestate", "baggage"):
        if key not in meta:
            continue
        value = meta[key]
        if not isinstance(value, str) or (key == "traceparent"
                                          and not _TRACEPARENT.fullmatch(value)):
            found.append((f"{where}/_meta/{key}", f"_meta.{key} is {str(value)[:60]!r}, not W3C "
                          "trace context (the key is reserved for it)"))
    return found


@check("ENUM-11", role=Role.FINDING, reads=[Reads.MESSAGE])
def trace_context_kept(direction: str, msg: Any) -> str | None:
    """The _meta keys traceparent, tracestate and baggage carry W3C trace context.

    Not a reader of one message kind: the router runs it on every message with the envelope
    checks, at the _meta of its params, its result and its session update (a message with a
    method that is no string is unreadable: its parts are not read)."""
    if not isinstance(msg, dict):
        return None
    method = msg.get("method")
    if method is not None and not isinstance(method, str):
        return None  # unreadable (rpc.method_is_string): its parts are not read
    found: list[tuple[str, str]] = []
    for part in ("params", "result"):
        body = msg.get(part)
        if not isinstance(body, dict):
            continue
        if "_meta" in body:
            found += trace_context(body["_meta"], part)
        update = body.get("update")
        if isinstance(update, dict) and "_meta" in update:
            found += trace_context(update["_meta"], f"{part}/update")
    return "; ".join(f"{path}: {text}" for path, text in found) if found else None


# --- dispatch: a message goes to the checks that read its kind -------------------------------
# Which parts each kind carries, and where (the anatomy of the messages, not a list of checks):
# a kind's own readers run first, then its parts' readers, part by part.

def _subject_tool_call(subject: Any, where: str) -> Iterator[tuple[str, Any]]:
    if subject.get("type") == "tool_call" and isinstance(subject.get("toolCall"), dict):
        yield f"{where}/toolCall", subject["toolCall"]


CARRIES: Mapping[Reads, Parts] = {  # (a session/update kind's: its row's ``parts``)
    Reads.SESSION_RESULT: ((Reads.CONFIG_OPTIONS, at("configOptions")),
                           (Reads.COMMANDS, at("availableCommands"))),
    Reads.CONFIG_RESULT: ((Reads.CONFIG_OPTIONS, at("configOptions")),),
    Reads.TOOL_REPORT: ((Reads.CONTENT, wrapped_content),),
    Reads.PROMPT_REQUEST: ((Reads.CONTENT, at("prompt")),),
    Reads.PERMISSION_REQUEST: ((Reads.TOOL_REPORT, at("toolCall", objects_only=True)),  # v1
                               (Reads.SUBJECT, at("subject", objects_only=True))),
    Reads.SUBJECT: ((Reads.TOOL_REPORT, _subject_tool_call),),
}

Readers = Dispatch  # message kind -> (check, its metadata), in definition order


def dispatch_table(rev: str = SEED) -> Readers:
    """Message kind -> the checks that read it, built from their ``reads`` declarations; the
    checks of rules ``rev`` does not state are left out."""
    return dispatch(__name__, rev)


# A kind's checks and, for each part it carries, where to find it and that part's own plan
# (parts no check reads are left out): built once per revision and kind.
Plan = tuple["Entry | None", tuple[tuple[Locate, "Plan"], ...]]


def _carried(rev: str, parts: Parts) -> tuple[tuple[Locate, Plan], ...]:
    """The plans of the parts some check reads, each with where to find it."""
    return tuple((locate, sub) for part, locate in parts
                 if (sub := _plan(rev, part)) is not None)


@cache
def _plan(rev: str, kind: Reads) -> Plan | None:
    """What a value of ``kind`` (a request's or a result's, or a part) gets under ``rev``
    (None: no check reads it or its parts)."""
    parts = _carried(rev, CARRIES.get(kind, ()))
    entry = dispatch_table(rev).get(kind)
    return None if entry is None and not parts else (entry, parts)


@cache
def _update_plan(rev: str, name: str | None) -> Plan | None:
    """A session update's plan (``name``: a kind of the wire table, None: another): the
    checks of every update and those of its kind as one entry, then the parts its row
    carries (a kind no check reads may carry parts some check reads)."""
    row = wire_table.updates().get(name) if name is not None else None
    every = _plan(rev, Reads.UPDATE) or (None, ())
    own = dispatch_table(rev).get(row.reads) if row is not None and row.reads is not None \
        else None
    entry = (every[0] or ()) + (own or ())
    parts = every[1] + (_carried(rev, row.parts) if row is not None else ())
    return (entry or None, parts) if entry or parts else None


def run_plan(plan: Plan, value: Any, where: str, ctx: FindingContext, out: Findings) -> None:
    """Run a plan (:func:`update_checks`, or a request's or a result's) on ``value`` at JSON
    path ``where``; what its checks find goes to ``out``."""
    entry, parts = plan
    if entry is not None:  # Findings.apply, written out: this runs on every update
        out.ran.append(entry)
        for fn, meta in entry:
            got = fn(value, where, ctx)
            if got:
                out.found.extend((meta, path, text) for path, text in got)
    for locate, sub in parts:
        for path, carried in locate(value, where):
            run_plan(sub, carried, path, ctx, out)


_ROOTS: Mapping[Reads, str] = {
    Reads.PROMPT_REQUEST: "params", Reads.NEW_SESSION_REQUEST: "params",
    Reads.PERMISSION_REQUEST: "params", Reads.PERMISSION_RESULT: "result",
    Reads.INITIALIZE_REQUEST: "params", Reads.INITIALIZE_RESULT: "result",
    Reads.SESSION_RESULT: "result", Reads.CONFIG_RESULT: "result"}


def judge(kind: Reads, value: Any, rev: str = SEED,
          prompt_caps: Mapping[str, Any] | None = None) -> Findings:
    """The findings of the checks that read a request's params or a response's result (``kind``)
    and of those reading the parts it carries."""
    out = Findings(rev=rev)
    plan = _plan(rev, kind)
    if isinstance(value, dict) and plan is not None:
        run_plan(plan, value, _ROOTS[kind], FindingContext.of(rev, prompt_caps), out)
    return out


def kind_checks(rev: str) -> Entry:
    """The checks that read an update's ``sessionUpdate`` kind alone (``Reads.UPDATE_KIND``):
    the same verdict for every update of one kind, so the oracle's plan of a kind decides them
    once (``oracle.updates``)."""
    return dispatch_table(rev).get(Reads.UPDATE_KIND, ())


def update_checks(rev: str, kind: Any) -> Plan | None:
    """The plan of the checks an update of ``kind`` gets under ``rev``: those reading every
    update, its kind's and its parts' (None: no check reads it). Built once per kind; the
    oracle's plan of a kind holds it (``oracle.updates``)."""
    known = isinstance(kind, str) and kind in wire_table.updates()
    return _update_plan(rev, kind if known else None)




def permission_request(params: Any, rev: str = SEED) -> Findings:
    return judge(Reads.PERMISSION_REQUEST, params, rev)


def permission_result(result: Any, rev: str = SEED) -> Findings:
    return judge(Reads.PERMISSION_RESULT, result, rev)


def prompt_request(params: Any, prompt_caps: Mapping[str, Any] | None, rev: str = SEED) -> Findings:
    """PROMPT-02 and the content block types of a prompt."""
    return judge(Reads.PROMPT_REQUEST, params, rev, prompt_caps)


def new_session_request(params: Any, rev: str = SEED) -> Findings:
    return judge(Reads.NEW_SESSION_REQUEST, params, rev)


def initialize_result(result: Any, rev: str = SEED) -> Findings:
    return judge(Reads.INITIALIZE_RESULT, result, rev)


def initialize_request(params: Any, rev: str = SEED) -> Findings:
    return judge(Reads.INITIALIZE_REQUEST, params, rev)


def session_result(result: Any, rev: str = SEED, method: str = Method.NEW_SESSION
                   ) -> Findings:
    """What a session/new, /load or /resume result carries (its config options, commands,
    modes), or a session/set_config_option result (its config options): its row's
    ``result_reads``."""
    row = wire_table.messages().get(method)
    kind = row.result_reads if row is not None and row.result_reads is not None \
        else Reads.SESSION_RESULT
    return judge(kind, result, rev)


def prompt_capabilities(result: Any, rev: str = SEED) -> dict[str, Any]:
    """The prompt capabilities an initialize result advertises, as v2 markers (``{}`` for a
    supported one): v2 ``capabilities.session.prompt``, v1 ``agentCapabilities.
    promptCapabilities`` whose flags are booleans."""
    caps = result.get(capabilities_key(rev)) if isinstance(result, dict) else None
    return wire_shapes.shape(rev).prompt_capabilities(caps) if isinstance(caps, dict) else {}


def capabilities_key(rev: str) -> str:
    """Where an initialize result states the agent's capabilities (v1: ``agentCapabilities``)."""
    return wire_shapes.shape(rev).agent_caps_key


def reload_methods(result: Any, rev: str = SEED) -> frozenset[str]:
    """The requests that reopen an existing session which an initialize result lets a client
    send: v1 ``session/load`` with ``agentCapabilities.loadSession: true`` and
    ``session/resume`` with ``sessionCapabilities.resume`` (session-setup.mdx §Checking
    Support: without them the client MUST NOT call them); v2 ``session/resume``, which every
    agent of the session surface supports (session-setup.mdx §Resuming Sessions)."""
    caps = result.get(capabilities_key(rev)) if isinstance(result, dict) else None
    return wire_shapes.shape(rev).reload_methods(caps) if isinstance(caps, dict) \
        else frozenset()


def closes_sessions(result: Any, rev: str = SEED) -> bool:
    """May a client send session/close to this agent? v1: only with
    ``sessionCapabilities.close`` (session-setup.mdx §Closing Active Sessions, SESS-16); v2:
    every agent of the session surface supports it."""
    caps = result.get(capabilities_key(rev)) if isinstance(result, dict) else None
    return isinstance(caps, dict) and wire_shapes.shape(rev).closes_sessions(caps)
