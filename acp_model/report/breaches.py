"""The client's deliberate breaches in a counterexample, and whether its proof rests on them.

The fuzz client breaks some client rules on purpose, to see how the agent copes (a probe:
``"probe": true`` on the record). A maintainer reading a counterexample that still holds one
asks "did your client not break the protocol first?", so the counterexample names each breach
it keeps and says whether the proof rests on what the text leaves undefined after it:

* a request the client should not send (a prompt for a session the agent never made, a prompt
  without its content, a line that is no JSON-RPC at all): the text defines the answer (an
  error, and the agent goes on; which error is open, and the oracle accepts any: reading
  A-26), and the oracle does not blame the client for it (``oracle/store.py`` drops a client
  rule's finding at a probe). A proof may cite the answer as a response that proves what the
  agent had read: that rests on the order of stdio, not on the breach;
* a permission answer the client should not send (an allow after its cancel, CANCEL-04; a
  second answer to the same request, PERM-12): what the agent does with it is left undefined
  (it may run the tool call the request guarded). A proof that cites the agent's messages
  about that tool call after the breach rests on that, and is a warning. A proof that cites
  the answer as a stray allow the agent took for another request (PERM-11) does not: that
  request's tool needed that request's own allow, which the text defines.

An allow for a request the agent withdrew is no breach (CANCEL-14: a withdrawn request is
still answered, with a result or -32800), nor is an unknown ``_``-prefixed method (an
extension, answered "method not found") or a batch (RPC-06): those probes are not named.

The breaches are read from the transcript's records, so a transcript written before the fuzz
client stamped its writes is read the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from acp_model.report.proof import record_session
from acp_model.trace.authors import author_of
from acp_model.trace.format import TraceError, numbers_of, read_trace


class Breach(StrEnum):
    """A client rule the fuzz client breaks on purpose."""

    UNKNOWN_SESSION = "unknown_session"  # a prompt for a session the agent never made
    INVALID_PARAMS = "invalid_params"  # a prompt without its content
    GARBAGE = "garbage"  # a line that is not JSON-RPC
    ALLOW_AFTER_CANCEL = "allow_after_cancel"  # a permission allowed after the cancel
    SECOND_ANSWER = "second_answer"  # a second answer to one permission request

    @property
    def rule(self) -> str:
        """The catalogued client rule it breaks."""
        return RULE_OF[self]

    @property
    def answers(self) -> bool:
        """An answer to the agent's request (what the agent does with it is undefined), not
        a request of the client's (whose answer the text defines)."""
        return self in (Breach.ALLOW_AFTER_CANCEL, Breach.SECOND_ANSWER)


RULE_OF = {
    Breach.UNKNOWN_SESSION: "SESS-13",
    Breach.INVALID_PARAMS: "ACPM-SCHEMA",
    Breach.GARBAGE: "RPC-01",
    Breach.ALLOW_AFTER_CANCEL: "CANCEL-04",
    Breach.SECOND_ANSWER: "PERM-12",
}
WORDS = {
    Breach.UNKNOWN_SESSION: "a prompt for a session the agent never made",
    Breach.INVALID_PARAMS: "a prompt without its content",
    Breach.GARBAGE: "a line that is not JSON-RPC",
    Breach.ALLOW_AFTER_CANCEL: "an allow, not the cancelled outcome, after the session's cancel",
    Breach.SECOND_ANSWER: "a second answer to a permission request it had answered",
}
# What the text says the agent answers to each request breach, and why the client is not
# judged for it (``oracle/store.py`` drops a client rule's finding at a probe).
ANSWER = {
    Breach.UNKNOWN_SESSION: "an error (which one is open: reading A-26 accepts any)",
    Breach.INVALID_PARAMS: "an error (JSON-RPC 2.0's -32602, invalid params)",
    Breach.GARBAGE: "a parse error, or nothing (JSON-RPC 2.0)",
}
NOT_JUDGED = ("and the agent goes on; the oracle does not judge the client for it "
              "(oracle/store.py drops a client rule's finding at a probe)")


_PERMISSION = "session/request_permission"  # a new request: its own tool, not the allowed one


@dataclass(frozen=True)
class Kept:
    """One deliberate breach a transcript holds: its message number, what it breaks, the
    program's action that wrote it (None: not stamped), and for an answer the agent's request
    it answered and the tool call that request guarded."""

    number: int
    breach: Breach
    action: int | None = None
    request: int | None = None  # the message number of the request it answered
    tool_call: str | None = None

    def rested_on(self) -> str:
        """Why a failure whose proof rests on this breach is a warning (one wording for the
        run's report and for re-judging it)."""
        return (f"its proof rests on what the agent did after the client's deliberate breach "
                f"#{self.number} ({self.breach.rule}), which the text leaves undefined: "
                "reported as a warning")

    def words(self) -> str:
        by = f", written by action {self.action}" if self.action is not None else ""
        return (f"#{self.number} is a deliberate breach of {self.breach.rule} by the client"
                f"{by}: {WORDS[self.breach]}")


def kept_breaches(records: Sequence[Mapping[str, Any]], numbers: Sequence[int]  # noqa: C901
                  ) -> list[Kept]:
    """The deliberate breaches among ``records`` (numbered ``numbers``), in order: one pass
    that learns the sessions, the agent's requests, the answers and cancels as it goes."""
    sessions: set[str] = set()
    asked: dict[Any, tuple[int, Mapping[str, Any]]] = {}  # the agent's requests by id
    answered: set[Any] = set()
    withdrawn: set[Any] = set()
    cancelled: dict[str, int] = {}  # session -> the number of its latest cancel
    out: list[Kept] = []
    for rec, n in zip(records, numbers, strict=True):
        msg = rec.get("msg")
        inbound = rec.get("dir") == "c2a"
        if not isinstance(msg, dict):
            if inbound and rec.get("probe") and "raw" in rec:
                out.append(Kept(n, Breach.GARBAGE, _action(rec)))
            continue
        method, rid = msg.get("method"), msg.get("id")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        named = params.get("sessionId")
        if isinstance(named, str) and (not inbound or not rec.get("probe")):
            sessions.add(named)  # one the agent wrote for, or the client used in earnest
        if not inbound:
            result = msg.get("result")
            if isinstance(result, dict) and isinstance(result.get("sessionId"), str):
                sessions.add(result["sessionId"])
            if method is not None and rid is not None:
                asked[_key(rid)] = (n, msg)
            elif method == "$/cancel_request":
                withdrawn.add(_key(params.get("requestId")))
            continue
        if method == "session/cancel" and isinstance(params.get("sessionId"), str):
            cancelled[params["sessionId"]] = n
        breach = _breach(rec, msg, sessions, asked, answered, withdrawn, cancelled)
        if method is None and rid is not None:
            answered.add(_key(rid))
        if breach is None:
            continue
        request, tool = None, None
        if breach.answers and _key(rid) in asked:
            request, req = asked[_key(rid)]
            tool = _tool_call(req)
        out.append(Kept(n, breach, _action(rec), request, tool))
    return out


def _breach(rec: Mapping[str, Any], msg: Mapping[str, Any], sessions: set[str],
            asked: Mapping[Any, tuple[int, Mapping[str, Any]]], answered: set[Any],
            withdrawn: set[Any], cancelled: Mapping[str, int]) -> Breach | None:
    """What client rule a probe record breaks (None: none, or not a probe)."""
    if not rec.get("probe"):
        return None
    method, rid = msg.get("method"), msg.get("id")
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    if method is None:  # an answer to the agent's request
        if _key(rid) in answered:
            return Breach.SECOND_ANSWER
        if _key(rid) in withdrawn:
            return None  # CANCEL-14: a withdrawn request is still answered
        req = asked.get(_key(rid))
        sid = req[1].get("params", {}).get("sessionId") if req is not None else None
        return Breach.ALLOW_AFTER_CANCEL if req is not None and isinstance(sid, str) \
            and cancelled.get(sid, -1) > req[0] else None
    if method == "session/prompt":
        if "prompt" not in params:
            return Breach.INVALID_PARAMS
        if params.get("sessionId") not in sessions:
            return Breach.UNKNOWN_SESSION
    return None  # an extension method, a batch: legal


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _action(rec: Mapping[str, Any]) -> int | None:
    author = author_of(rec)
    return author.n if author is not None and author.numbered else None


def _key(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | type(None)) else repr(value)


def _tool_call(request: Mapping[str, Any]) -> str | None:
    """The tool call a permission request guards (v1's ``toolCall``, the seed's and
    sdk-2.4.0's ``subject.toolCall``)."""
    params = request.get("params")
    if not isinstance(params, dict):
        return None
    subject = params.get("subject") if isinstance(params.get("subject"), dict) else {}
    call = params.get("toolCall", subject.get("toolCall"))
    tid = call.get("toolCallId") if isinstance(call, dict) else None
    return tid if isinstance(tid, str) else None


def _names(msg: Any, kept: Kept) -> bool:
    """Whether an agent message is about what ``kept`` answered: the request itself, or the
    tool call it guarded."""
    if not isinstance(msg, dict):
        return False
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    update = params.get("update") if isinstance(params.get("update"), dict) else {}
    tools = {update.get("toolCallId"), _tool_call(msg)}
    return kept.tool_call is not None and kept.tool_call in tools


def rests_on(kept: Kept, records: Sequence[Mapping[str, Any]], numbers: Sequence[int],
             index: Any, evidence: Sequence[int]) -> bool:
    """Whether a proof (the offending message ``index`` and the ``evidence`` it cites) rests
    on what the text leaves undefined after ``kept``: it cites an agent message after the
    answer about the tool call the answered request guarded (what the agent did with an
    answer it should not have had)."""
    if not kept.breach.answers:
        return False  # the text defines the answer to the client's request
    # (a proof may cite the breach itself: PERM-11's stray allow, taken for another request
    # whose own answer never came; that request's tool needed its own allow, as the text
    # says, so citing the breach is no resting on it)
    cited = {*evidence, *([index] if isinstance(index, int) else [])}
    at = dict(zip(numbers, records, strict=True))
    return any(n > kept.number and at.get(n, {}).get("dir") == "a2c"
               and (_names(at[n].get("msg"), kept) or _runs_it(at, n, kept)) for n in cited)


def _runs_it(at: Mapping[int, Mapping[str, Any]], n: int, kept: Kept) -> bool:
    """Whether the agent's message ``n`` may be the allowed tool running: a request of the
    client's methods (fs/*, terminal/*: none names its tool call) in the session of the
    request ``kept`` answered, before the client's next prompt there (opencode v1's INIT-16,
    s15: its fs/write_text_file came right after a late allow of the tool that writes)."""
    msg = at[n].get("msg")
    request = at.get(kept.request) if kept.request is not None else None
    if not isinstance(msg, dict) or request is None or msg.get("id") is None \
            or msg.get("method") in (None, _PERMISSION):
        return False
    sid = record_session(request)
    if sid is None or record_session(at[n]) != sid:
        return False
    return not any(kept.number < m < n and rec.get("dir") == "c2a"
                   and isinstance(rec.get("msg"), dict)
                   and rec["msg"].get("method") == "session/prompt"
                   and record_session(rec) == sid for m, rec in at.items())


def breach_words(records: Sequence[Mapping[str, Any]], numbers: Sequence[int], index: Any,
                 evidence: Sequence[int]) -> tuple[list[str], list[Kept]]:
    """What a counterexample says of the breaches it keeps before its offending message: one
    sentence each, and those its proof rests on (its verdict is then a warning)."""
    upto = index if isinstance(index, int) else max(numbers, default=-1)
    lines, resting = [], []
    kept_ones = [k for k in kept_breaches(records, numbers) if k.number <= upto]
    requests: dict[Breach, list[Kept]] = {}
    for kept in kept_ones:
        if not kept.breach.answers:
            requests.setdefault(kept.breach, []).append(kept)
    cited = set(evidence)
    for breach, group in requests.items():
        which = _listed([f"#{k.number}" + (f" (action {k.action})" if k.action else "")
                         for k in group])
        used = [f"#{k.number}" for k in group if k.number in cited]
        are = "is a deliberate breach" if len(group) == 1 else "are deliberate breaches"
        lines.append(f"{which} {are} of {breach.rule} by the client ({WORDS[breach]}): the "
                     f"text defines the answer, {ANSWER[breach]}, {NOT_JUDGED}"
                     + (f"; the proof cites {_listed(used)} only as a request whose answer "
                        "proves what the agent had read before it (stdio keeps the order)"
                        if used else "") + ", so the proof does not rest on it.")
    for kept in kept_ones:
        if not kept.breach.answers:
            continue
        if rests_on(kept, records, numbers, index, evidence):
            resting.append(kept)
            lines.append(f"{kept.words()}; what the agent does with it is left undefined by "
                         "the text, and the proof rests on it (it cites "
                         + (f"tool call {kept.tool_call!r}, which that request guarded, "
                            if kept.tool_call else "that answer ")
                         + "after it): a warning, not a failure.")
        else:
            lines.append(f"{kept.words()}; what the agent does with it is left undefined by "
                         "the text (" + (f"whether it runs tool call {kept.tool_call!r}, "
                                         "which that request guarded" if kept.tool_call
                                         else "how it reads that answer")
                         + "), but the proof cites nothing the agent wrote about "
                         + ("that tool call" if kept.tool_call else "it") + " after it"
                         + (" (it cites the answer only as one the agent may have taken for "
                            "another request, whose own tool needed its own allow)"
                            if kept.number in cited else "")
                         + ", so it does not rest on it.")
    return lines, resting


def words_in_file(path: Path, index: Any, evidence: Sequence[Mapping[str, Any]]
                  ) -> tuple[list[str], list[Kept]]:
    """:func:`breach_words` of a stored transcript (nothing when it cannot be read)."""
    try:
        trace = read_trace(path)
    except TraceError:
        return [], []
    records, numbers = [r.to_json() for r in trace], numbers_of(trace)
    cited = [int(e["index"]) for e in evidence if isinstance(e.get("index"), int)]
    return breach_words(records, numbers, index, cited)


def resting_in_file(path: Path, index: Any, evidence: Sequence[Mapping[str, Any]]
                    ) -> Kept | None:
    """The first breach a stored transcript's proof rests on (None: none, or unreadable): a
    re-judged failure that rests on one is a warning, as the run's would be now."""
    resting = words_in_file(path, index, evidence)[1]
    return resting[0] if resting else None


__all__ = ["Breach", "Kept", "breach_words", "kept_breaches", "resting_in_file", "rests_on",
           "words_in_file"]
