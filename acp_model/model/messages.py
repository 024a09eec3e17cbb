"""Checks on single messages that the schema cannot express.

The schema keeps its open enums open (a ``"other"`` fallback accepts any string) for forward
compatibility, so a typo such as ``stopReason: "done"`` validates. The spec reserves unknown
values without a leading ``_`` for future ACP versions, so a v2 sender that emits one is wrong.
The known values are read from the schema itself (``known_values``), never listed here.
Also here: absolute-path and ISO 4217 checks, and the prompt-capability gate.

Every check yields ``(rule_id, path, explanation)``; the monitor turns them into violations.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from acp_model.spec.schema import is_reserved

Finding = tuple[str, str, str]

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

_MESSAGE_KINDS = frozenset({
    "user_message", "user_message_chunk", "agent_message", "agent_message_chunk",
    "agent_thought", "agent_thought_chunk",
})

# Which prompt capability unlocks which content block type (PROMPT-02).
_GATED_BLOCKS = {"image": "image", "audio": "audio", "resource": "embeddedContext"}


# Rules each check function examines, per message kind (for the "exercised" counts).
COVERS: dict[str, tuple[str, ...]] = {
    "state_update": ("STATE-09", "STOP-03", "ENUM-02"),
    "message": ("MSG-01", "ENUM-02"),
    "tool_call_update": ("TOOL-14", "TOOL-15", "TOOL-19", "ENUM-02"),
    "tool_call_content_chunk": ("TOOL-07", "TOOL-19"),
    "plan_update": ("PLAN-04", "PLAN-09"),
    "usage_update": ("USAGE-04",),
    "update": ("ENUM-02",),
    "permission_request": ("PERM-02", "PERM-07", "ENUM-02"),
    "permission_result": ("ENUM-02",),
    "prompt": ("PROMPT-02", "ENUM-02"),
    "session/new": ("SESS-02",),
    "initialize_result": ("INIT-03", "INIT-07", "INIT-09"),
}


def covers_update(params: Any) -> tuple[str, ...]:
    update = params.get("update") if isinstance(params, dict) else None
    kind = update.get("sessionUpdate") if isinstance(update, dict) else None
    if kind in _MESSAGE_KINDS:
        return COVERS["message"]
    return COVERS.get(kind, COVERS["update"])  # type: ignore[arg-type]


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


def _content_block_types(content: Any, where: str) -> Iterator[Finding]:
    for path, block in _blocks(content, where):
        if isinstance(block, dict) and is_reserved("content_block", block.get("type")):
            yield ("ENUM-02", f"{path}/type",
                   f"content block type {block.get('type')!r} is neither defined nor _-prefixed")


def _tool_content(items: Any, where: str, *, chunk: bool) -> Iterator[Finding]:
    for path, item in _blocks(items, where):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if is_reserved("tool_content", kind):
            rule = "TOOL-07" if chunk else "ENUM-02"
            yield (rule, f"{path}/type",
                   f"tool call content type {kind!r} is not content/diff/terminal or _-prefixed"
                   + (" (a bare content block must be wrapped as {type: content, content: ...})"
                      if chunk else ""))
        elif kind == "content":
            yield from _content_block_types(item.get("content"), f"{path}/content")
        elif kind == "diff" and "path" in item and not is_absolute_path(item["path"]):
            yield ("TOOL-19", f"{path}/path", f"diff path {item['path']!r} is not absolute")


def _tool_call(update: Mapping[str, Any], where: str) -> Iterator[Finding]:
    if is_reserved("tool_status", update.get("status")):
        yield ("TOOL-14", f"{where}/status",
               f"tool call status {update['status']!r} is neither defined nor _-prefixed")
    if is_reserved("tool_kind", update.get("kind")):
        yield ("TOOL-15", f"{where}/kind",
               f"tool kind {update['kind']!r} is neither defined nor _-prefixed")
    locations = update.get("locations")
    if isinstance(locations, list):
        for i, loc in enumerate(locations):
            if isinstance(loc, dict) and "path" in loc and not is_absolute_path(loc["path"]):
                yield ("TOOL-19", f"{where}/locations/{i}/path",
                       f"tool call location {loc['path']!r} is not an absolute path")
    yield from _tool_content(update.get("content"), f"{where}/content", chunk=False)


def session_update(params: Any) -> Iterator[Finding]:
    """Checks on ``session/update`` params beyond the schema."""
    update = params.get("update") if isinstance(params, dict) else None
    if not isinstance(update, dict):
        return
    kind = update.get("sessionUpdate")
    where = "params/update"
    if is_reserved("session_update", kind):
        yield ("ENUM-02", f"{where}/sessionUpdate",
               f"sessionUpdate kind {kind!r} is neither defined by v2 nor _-prefixed")
    elif kind == "state_update":
        state = update.get("state")
        if is_reserved("state", state):
            yield ("STATE-09", f"{where}/state",
                   f"state {state!r} is not running/idle/requires_action or _-prefixed")
        if state == "idle" and is_reserved("stop_reason", update.get("stopReason")):
            yield ("STOP-03", f"{where}/stopReason",
                   f"stop reason {update['stopReason']!r} is neither defined nor _-prefixed "
                   "(unknown values are reserved for future ACP versions)")
    elif kind in _MESSAGE_KINDS:
        yield from _content_block_types(update.get("content"), f"{where}/content")
    elif kind == "tool_call_update":
        yield from _tool_call(update, where)
    elif kind == "tool_call_content_chunk":
        yield from _tool_content(update.get("content"), f"{where}/content", chunk=True)
    elif kind == "plan_update":
        plan = update.get("plan")
        if isinstance(plan, dict):
            if is_reserved("plan_type", plan.get("type")):
                yield ("PLAN-04", f"{where}/plan/type",
                       f"plan type {plan.get('type')!r} is neither defined nor _-prefixed")
            for i, entry in enumerate(plan.get("entries") or []):
                if not isinstance(entry, dict):
                    continue
                for field, enum in (("priority", "plan_priority"), ("status", "plan_status")):
                    if is_reserved(enum, entry.get(field)):
                        yield ("PLAN-09", f"{where}/plan/entries/{i}/{field}",
                               f"plan entry {field} {entry[field]!r} is neither defined nor "
                               "_-prefixed")
    elif kind == "usage_update":
        cost = update.get("cost")
        if isinstance(cost, dict):
            currency = cost.get("currency")
            if isinstance(currency, str) and currency not in ISO_4217:
                yield ("USAGE-04", f"{where}/cost/currency",
                       f"currency {currency!r} is not an ISO 4217 code")


def permission_request(params: Any) -> Iterator[Finding]:
    if not isinstance(params, dict):
        return
    for i, option in enumerate(params.get("options") or []):
        if isinstance(option, dict) and is_reserved("option_kind", option.get("kind")):
            yield ("PERM-07", f"params/options/{i}/kind",
                   f"permission option kind {option['kind']!r} is neither defined nor _-prefixed")
    subject = params.get("subject")
    if isinstance(subject, dict):
        if is_reserved("subject", subject.get("type")):
            yield ("ENUM-02", "params/subject/type",
                   f"permission subject type {subject.get('type')!r} is reserved")
        elif subject.get("type") == "tool_call" and isinstance(subject.get("toolCall"), dict):
            yield from _tool_call(subject["toolCall"], "params/subject/toolCall")


def permission_result(result: Any) -> Iterator[Finding]:
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if isinstance(outcome, dict) and is_reserved("outcome", outcome.get("outcome")):
        yield ("ENUM-02", "result/outcome/outcome",
               f"permission outcome {outcome.get('outcome')!r} is neither defined nor _-prefixed")


def prompt_request(params: Any, prompt_caps: Mapping[str, Any] | None) -> Iterator[Finding]:
    """PROMPT-02: image/audio/embedded resources only when the agent advertised them."""
    if not isinstance(params, dict):
        return
    caps = prompt_caps or {}
    for i, block in enumerate(params.get("prompt") or []):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if is_reserved("content_block", kind):
            yield ("ENUM-02", f"params/prompt/{i}/type",
                   f"content block type {kind!r} is neither defined nor _-prefixed")
        gate = _GATED_BLOCKS.get(kind)  # type: ignore[arg-type]
        if gate is not None and caps.get(gate) is None:
            yield ("PROMPT-02", f"params/prompt/{i}",
                   f"a {kind!r} block needs the prompt capability {gate!r}, which the agent "
                   "did not advertise")


def new_session_request(params: Any) -> Iterator[Finding]:
    if isinstance(params, dict) and "cwd" in params and not is_absolute_path(params["cwd"]):
        yield ("SESS-02", "params/cwd", f"cwd {params['cwd']!r} is not an absolute path")


def initialize_result(result: Any) -> Iterator[Finding]:
    if isinstance(result, dict) and "capabilities" not in result:
        yield ("INIT-03", "result/capabilities",
               "the initialize result omits capabilities (the docs require them; the schema "
               "defaults them to {})")
