"""One-sided recordings: the agent's messages alone, with the client's side inferred.

Vendors keep golden files of what their agent sent (one JSON object a line: ``kind``
``request`` / ``notification`` / ``response``, the ``method`` and the ``payload``: params or
result; ids and paths normalized). An agent's answer implies the request it answers: an
``initialize`` result an initialize request, a ``session/new`` result a session/new, a prompt
response a session/prompt. This module rebuilds a two-sided trace from them, says what it
inferred and why, and names the rules such a recording cannot decide: every rule of the
client's messages, and the agent's rules that are judged on what the client sent or when (a
cancel's race proof, a permission answer). Those are reported as *not judged*, never as held.

Also read: a trace of the monitor's format holding only ``a2c`` records (the fuzzer's or the
proxy's transcript filtered to the agent's lines), where a response's method is told from its
result's shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from acp_model.model import implied, wire_table
from acp_model.model.vocab import State
from acp_model.report.stats import RuleStat
from acp_model.spec.levels import Level
from acp_model.spec.rules import RULES
from acp_model.trace.format import DIRECTIONS, Record
from acp_model.trace.methods import Method

AGENT = "agent"
SIDES = (AGENT,)
KINDS = ("request", "notification", "response", "error")  # "error": our own, a JSON-RPC error
FORK = "session/fork"  # sdk-2.4.0's unstable schema only: no row of the wire table
REPLAYED = wire_table.replayed_kinds()  # the update kinds a replayed conversation is made of

# The agent's rules a one-sided recording cannot decide (the client's rules: all of them).
NEEDS_CLIENT: dict[str, str] = {
    "INIT-04": "the version the client requested is not recorded",
    "SESS-10": "the client's session/close and its timing are not recorded",
    "SESS-12": "the sessions a client loads, resumes or forks are named in its requests",
    "PROMPT-04": "prompts are inferred from their responses: one response each by construction",
    "STATE-05": "when the client answered a permission request is not recorded",
    "STATE-06": "when the client answered a permission request is not recorded",
    "PERM-11": "the client's permission answers are not recorded",
    "ENUM-12": "the client's custom requests are not recorded",
    "A-04.idle-cancelled": "the client's cancels are not recorded",
    "A-07.forbid": "prompts are inferred just before the work they start",
    "A-10.cancel": "the client's cancels are not recorded",
    "ACPM-ANSWER": "requests are inferred from their answers; the client's answers are not "
                   "recorded",
    "INIT-11": "the prompts' content blocks are inferred, not recorded",
    "INIT-16": "the capabilities the client's initialize advertised are not recorded",
    "SESS-06": "the cursor of the client's session/resume is inferred, not recorded",
    "SESS-07": "the client's prompts, which make the conversation a replay owes, are "
               "inferred, not recorded",
    "SESS-17": "the client's working directory and additional roots are not recorded",
    "TOOL-12": "the client's permission answers are not recorded",
    "SDK-RECEIPT-04": "when the client sent each prompt is inferred, not recorded",
    "SDK-CLOSE-04": "which sessions the client closed before is not recorded",
}
_CANCEL = "the client's cancels and when the agent read them are not recorded"
_ENVELOPE = "the recording keeps messages, not the JSON-RPC envelope, ids or batches"


def not_judged() -> dict[str, str]:
    """Every rule a recording of the agent's messages cannot decide, with the reason."""
    out: dict[str, str] = {}
    for rule in RULES.values():
        if rule.party == "client":
            out[rule.id] = "a rule of the client's messages, which the recording does not hold"
        elif rule.id.startswith("CANCEL-"):
            out[rule.id] = _CANCEL
        elif rule.id.startswith(("RPC-", "ACPM-BATCH")):
            out[rule.id] = _ENVELOPE
    out.update({rid: why for rid, why in NEEDS_CLIENT.items() if rid in RULES})
    return out


def set_aside(violations: list[dict[str, Any]], recording: Recording,
              rules: Mapping[str, str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split a rebuilt trace's violations: those it can decide (each given the ``line`` of the
    recording it happened at) and those set aside: under a rule it cannot decide, or a safety
    finding about an inferred client message (the inference's, never the agent's)."""
    kept: list[dict[str, Any]] = []
    aside: list[dict[str, Any]] = []
    for v in violations:
        index = v.get("index")
        line = recording.lines[index] if isinstance(index, int) and 0 <= index < len(
            recording.lines) else None
        about_client = line is None and v.get("kind") != "liveness"
        if v["rule"] in rules or about_client:
            why = rules.get(v["rule"], "a finding about an inferred client message")
            aside.append({"rule": v["rule"], "level": v["level"], "index": index,
                          "why": why})
        else:
            kept.append({**v, "line": line} if line is not None else v)
    return kept, aside


def discount(stats: Mapping[str, RuleStat], aside: Iterable[Mapping[str, Any]]) -> None:
    """Take the findings set aside out of their rules' counts (a rule whose only finding was
    about an inferred message is not violated)."""
    for v in aside:
        stat = stats.get(v["rule"])
        if stat is None:
            continue
        if v["level"] == Level.FAIL:
            stat.violations = max(0, stat.violations - 1)
        else:
            stat.warnings = max(0, stat.warnings - 1)


class OneSidedError(ValueError):
    """An unusable one-sided recording: the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Line:
    """One message the agent sent, as the recording states it."""

    number: int  # 1-based line of the file
    kind: str
    method: str
    payload: Any


@dataclass(frozen=True, slots=True)
class Inferred:
    """A client message the recording implies: what it is and which agent line implies it."""

    index: int  # its record index in the rebuilt trace
    what: str
    because: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "what": self.what, "because": self.because}


@dataclass(slots=True)
class Recording:
    """The rebuilt two-sided trace: ``lines[i]`` is record i's line in the file (None for an
    inferred client message)."""

    records: list[Record] = field(default_factory=list)
    lines: list[int | None] = field(default_factory=list)
    inferred: list[Inferred] = field(default_factory=list)
    replaced: dict[str, str] = field(default_factory=dict)  # placeholder -> the path used

    def summary(self) -> dict[str, Any]:
        return {"side": AGENT, "agent_messages": sum(n is not None for n in self.lines),
                "inferred": [i.to_json() for i in self.inferred],
                "placeholders": dict(self.replaced)}


# ---------------------------------------------------------------- reading the file


def read_lines(path: str | Path) -> list[Line]:
    """The agent's messages of a one-sided recording (golden lines, or an ``a2c``-only trace)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise OneSidedError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise OneSidedError(f"{p}: is a directory, expected a .jsonl recording") from None
    except OSError as exc:
        raise OneSidedError(f"{p}: cannot read: {exc.strerror}") from None
    objects = list(_objects(p, data))
    if not objects:
        raise OneSidedError(f"{p}: no messages (an empty recording)")
    if all("dir" in obj for _, obj in objects):
        return list(_from_trace(p, objects))
    return [_golden(p, n, obj) for n, obj in objects]


def _objects(p: Path, data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise OneSidedError(f"{p}:{number}: not valid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise OneSidedError(f"{p}:{number}: expected a JSON object, got "
                                f"{type(obj).__name__}")
        yield number, obj


def _golden(p: Path, number: int, obj: Mapping[str, Any]) -> Line:
    where = f"{p}:{number}"
    kind, method = obj.get("kind"), obj.get("method")
    if kind not in KINDS:
        raise OneSidedError(f"{where}: 'kind' must be one of {', '.join(KINDS)}, got {kind!r} "
                            '(expected {"kind", "method", "payload"} per line)')
    if not isinstance(method, str) or not method:
        raise OneSidedError(f"{where}: 'method' must name the message's method, got {method!r}")
    if "payload" not in obj:
        raise OneSidedError(f"{where}: 'payload' is missing (the params, result or error)")
    return Line(number, kind, method, obj["payload"])


def _from_trace(p: Path, objects: list[tuple[int, dict[str, Any]]]) -> Iterator[Line]:
    """An ``a2c``-only trace: each message as a line, a response's method told from its result
    (ids are kept only as the order of the answers)."""
    for number, obj in objects:
        where = f"{p}:{number}"
        if obj.get("dir") not in DIRECTIONS:
            raise OneSidedError(f"{where}: 'dir' must be \"c2a\" or \"a2c\"")
        if obj["dir"] != "a2c":
            raise OneSidedError(f"{where}: a client message in a one-sided recording of the "
                                "agent (check the full trace without --one-sided)")
        msg = obj.get("msg")
        for item in msg if isinstance(msg, list) else [msg]:
            if not isinstance(item, dict):
                raise OneSidedError(f"{where}: expected a JSON-RPC message object")
            yield _trace_line(where, number, item)


def _trace_line(where: str, number: int, msg: Mapping[str, Any]) -> Line:
    if isinstance(msg.get("method"), str):
        kind = "request" if "id" in msg else "notification"
        return Line(number, kind, msg["method"], msg.get("params"))
    if "error" in msg:
        raise OneSidedError(f"{where}: an error response does not say which request it "
                            'answers; record it as {"kind": "error", "method": ...}')
    method = method_of_result(msg.get("result"))
    if method is None:
        raise OneSidedError(f"{where}: cannot tell which request this result answers; record "
                            'it as {"kind": "response", "method": ..., "payload": ...}')
    return Line(number, "response", method, msg.get("result"))


def method_of_result(result: Any) -> str | None:
    """The request a result answers, where its shape says so (None: ambiguous, e.g. ``{}``):
    the method whose row tells it (``told``)."""
    if not isinstance(result, dict):
        return None
    return next((row.method for row in wire_table.MESSAGES
                 if row.told is not None and row.told(result)), None)


def _implies(method: str) -> implied.Implies:
    """How the params of a request of ``method`` are inferred: its row's ``implies`` (a
    method without a row: for its session, a fork as a reopen that reopens nothing)."""
    row = wire_table.messages().get(method)
    if row is not None:
        return row.implies
    return implied.fork if method == FORK else implied.session_scoped


# ---------------------------------------------------------------- inference


def infer(lines: list[Line]) -> Recording:
    """The two-sided trace the agent's lines imply (see the module's docstring)."""
    return _Inference(lines).run()


def is_idle(line: Line) -> bool:
    return wire_table.reported_state(_update(line)) == State.IDLE


def _update(line: Line) -> Mapping[str, Any]:
    payload = line.payload
    if line.method == Method.UPDATE and isinstance(payload, dict):
        update = payload.get("update")
        if isinstance(update, dict):
            return update
    return {}


def _session(line: Line) -> str | None:
    sid = line.payload.get("sessionId") if isinstance(line.payload, dict) else None
    return sid if isinstance(sid, str) else None


class _Inference:
    """Walks the agent's lines once, planning each client message before the line it must
    precede (a request as late as the agent's previous answer or idle allows it to be sent;
    a permission answer just before the work it unblocks; a cancel before the stop it
    explains)."""

    def __init__(self, lines: list[Line]) -> None:
        self.replaced: dict[str, str] = {}
        self.lines = [Line(ln.number, ln.kind, ln.method, self._fill(ln.payload))
                      for ln in lines]
        self.plan: list[tuple[int, int, dict[str, Any], str, str]] = []  # pos, seq, msg, ...
        self.agent_ids: dict[int, str] = {}
        self.anchor = 0  # where a client request may go: after the last answer or idle
        self.sessions: list[str] = []
        self.protocol = 2
        self.next_id = 0

    def _fill(self, value: Any) -> Any:
        """Normalized paths made absolute again (``<cwd>`` -> a made-up absolute path)."""
        if isinstance(value, str):
            for mark, path in implied.PLACEHOLDERS.items():
                if mark in value:
                    self.replaced[mark] = path
                    value = value.replace(mark, path)
            return value
        if isinstance(value, list):
            return [self._fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self._fill(v) for k, v in value.items()}
        return value

    def run(self) -> Recording:
        for i, line in enumerate(self.lines):
            if line.kind in ("response", "error"):
                self._answer(i, line)
            elif line.kind == "request":
                self.agent_ids[i] = f"agent-{len(self.agent_ids) + 1}"
                if line.method == Method.PERMISSION:
                    self._permission_answer(i, line)
            if self._stop_reason(line) == "cancelled":
                sid = _session(line) or (self.sessions[-1] if self.sessions else None)
                self._client(i, {"method": Method.CANCEL, "params": {"sessionId": sid}},
                             f"{Method.CANCEL} for session {sid}",
                             f"line {line.number}: the agent ended work with stopReason "
                             "cancelled")
            if self._ends_work(line) or (line.kind in ("response", "error")
                                         and self._ends_step(line)):
                self.anchor = i + 1
        return self._rebuild()

    def _stop_reason(self, line: Line) -> Any:
        if line.kind == "response" and line.method == Method.PROMPT \
                and isinstance(line.payload, dict):
            return line.payload.get("stopReason")
        return _update(line).get("stopReason") if is_idle(line) else None

    @staticmethod
    def _ends_work(line: Line) -> bool:
        """An idle with a stop reason: work ended (an idle without one, e.g. a replayed
        session's state, ends nothing the client waits for)."""
        return is_idle(line) and "stopReason" in _update(line)

    def _ends_step(self, line: Line) -> bool:
        """Does this answer end what the client waits for before its next request? (a v2
        prompt receipt does not: the turn goes on until its idle)"""
        return line.method != Method.PROMPT or line.kind == "error" or (
            isinstance(line.payload, dict) and "stopReason" in line.payload)

    def _client(self, pos: int, msg: dict[str, Any], what: str, because: str) -> None:
        self.plan.append((pos, len(self.plan), {"jsonrpc": "2.0", **msg}, what, because))

    def _answer(self, i: int, line: Line) -> None:
        """The request an agent's answer implies, sent at the anchor."""
        self.next_id += 1
        params = self._params(i, line)
        sid = params.get("sessionId")
        self._client(self.anchor, {"id": self.next_id, "method": line.method, "params": params},
                     f"{line.method} request" + (f" for session {sid}" if sid else ""),
                     f"line {line.number}: the agent's {line.method} "
                     + ("error" if line.kind == "error" else "response"))
        self.agent_ids[i] = str(self.next_id)
        result = line.payload if isinstance(line.payload, dict) else {}
        if line.method == Method.INITIALIZE and isinstance(result.get("protocolVersion"), int):
            self.protocol = result["protocolVersion"]
        if line.kind == "response" and isinstance(result.get("sessionId"), str):
            self.sessions.append(result["sessionId"])

    def _params(self, i: int, line: Line) -> dict[str, Any]:
        return _implies(line.method)(line.payload, _At(self, i))

    def _session_between(self, i: int) -> str | None:
        """The session a request that the answer at ``i`` implies was for: the first session
        the agent names since the anchor, else the last one it opened."""
        for line in self.lines[self.anchor:i + 1]:
            sid = _session(line)
            if sid:
                return sid
        return self.sessions[-1] if self.sessions else None

    def _replayed(self, i: int) -> bool:
        """Did the agent send conversation before the resume answer at ``i``? (then the
        client asked for a replay: ``replayFrom`` start)"""
        kinds = (_update(line).get("sessionUpdate") for line in self.lines[self.anchor:i])
        return any(isinstance(kind, str) and kind in REPLAYED for kind in kinds)

    def _prompt_content(self, i: int) -> list[Any]:
        """The prompt the agent's user message echoes (its content), else a stand-in."""
        for line in self.lines[self.anchor:i + 1]:
            update = _update(line)
            if update.get("sessionUpdate") in wire_table.user_kinds():
                content = update.get("content")
                if isinstance(content, list) and content:
                    return content
                if isinstance(content, dict):
                    return [content]
        return [{"type": "text", "text": "(inferred prompt)"}]

    def _permission_answer(self, i: int, line: Line) -> None:
        """An answer to a permission request, just before the first sign the agent has one
        (the guarded tool's next status, a state other than requires_action, a response)."""
        payload = line.payload if isinstance(line.payload, dict) else {}
        tool = payload.get("toolCall") or (payload.get("subject") or {}).get("toolCall") or {}
        tool_id = tool.get("toolCallId") if isinstance(tool, dict) else None
        pos, status = len(self.lines), None
        for j in range(i + 1, len(self.lines)):
            later, update = self.lines[j], _update(self.lines[j])
            if update.get("toolCallId") == tool_id and update.get("status") not in (None,
                                                                                     "pending"):
                pos, status = j, update.get("status")
                break
            if later.kind in ("response", "error") or (
                    update.get("sessionUpdate") in wire_table.state_kinds()
                    and update.get("state") != State.REQUIRES_ACTION):
                pos, status = j, ("cancelled" if self._stop_reason(later) == "cancelled"
                                  else None)
                break
        outcome = _outcome(payload.get("options"), status)
        self.plan.append((pos, len(self.plan), {"jsonrpc": "2.0", "id": i, "result": outcome},
                          f"answer to the permission request at line {line.number}: "
                          f"{_describe(outcome)} (the real answer is unknown)",
                          f"line {line.number}: the agent's {Method.PERMISSION}"))

    def _rebuild(self) -> Recording:
        out = Recording(replaced=dict(self.replaced))
        plan = sorted(self.plan, key=lambda p: (p[0], p[1]))
        k = 0
        for i, line in enumerate([*self.lines, None]):
            while k < len(plan) and plan[k][0] == i:
                _, _, msg, what, because = plan[k]
                if "result" in msg:  # a permission answer: the agent's id for the request
                    msg = {**msg, "id": self.agent_ids[msg["id"]]}
                out.inferred.append(Inferred(len(out.records), what, because))
                out.records.append(Record("c2a", msg=msg))
                out.lines.append(None)
                k += 1
            if line is not None:
                out.records.append(Record("a2c", msg=self._message(i, line)))
                out.lines.append(line.number)
        return out

    def _message(self, i: int, line: Line) -> dict[str, Any]:
        if line.kind == "notification":
            return {"jsonrpc": "2.0", "method": line.method, "params": line.payload}
        if line.kind == "request":
            return {"jsonrpc": "2.0", "id": self.agent_ids[i], "method": line.method,
                    "params": line.payload}
        rid = int(self.agent_ids[i])
        key = "error" if line.kind == "error" else "result"
        return {"jsonrpc": "2.0", "id": rid, key: line.payload}


@dataclass(frozen=True, slots=True)
class _At:
    """What the inference knows at the answer on line ``i`` (``implied.Where``)."""

    inference: _Inference
    i: int

    def session(self) -> str | None:
        return self.inference._session_between(self.i)

    def prompt(self) -> list[Any]:
        return self.inference._prompt_content(self.i)

    def replayed(self) -> bool:
        return self.inference._replayed(self.i)

    def reopened(self, sid: str) -> None:
        self.inference.sessions.append(sid)


def _outcome(options: Any, status: Any) -> dict[str, Any]:
    """The answer the agent's next step suggests: the tool ran (allow), failed or was
    cancelled (a reject, or the cancelled outcome when the work was cancelled)."""
    if status == "cancelled":
        return {"outcome": {"outcome": "cancelled"}}
    kinds = [o for o in options if isinstance(o, dict)] if isinstance(options, list) else []
    want = "reject" if status == "failed" else "allow"
    chosen = next((o for o in kinds if str(o.get("kind", "")).startswith(want)),
                  kinds[0] if kinds else None)
    if chosen is None:
        return {"outcome": {"outcome": "cancelled"}}
    return {"outcome": {"outcome": "selected", "optionId": chosen.get("optionId")}}


def _describe(outcome: Mapping[str, Any]) -> str:
    inner = outcome["outcome"]
    return f"selected {inner['optionId']!r}" if inner["outcome"] == "selected" else "cancelled"


# ---------------------------------------------------------------- from a full trace


def golden_lines(records: Iterable[Record]) -> list[dict[str, Any]]:
    """The agent's messages of a two-sided trace as golden lines (what a vendor keeps): the
    method of each response taken from the request it answers, ids dropped."""
    methods: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for rec in records:
        for msg in rec.msg if isinstance(rec.msg, list) else [rec.msg]:
            if not isinstance(msg, dict):
                continue
            method = msg.get("method")
            if rec.dir == "c2a":
                if isinstance(method, str) and "id" in msg:
                    methods[repr(msg["id"])] = method
                continue
            if isinstance(method, str):
                kind = "request" if "id" in msg else "notification"
                out.append({"kind": kind, "method": method, "payload": msg.get("params")})
            elif repr(msg.get("id")) in methods:
                kind = "error" if "error" in msg else "response"
                out.append({"kind": kind, "method": methods[repr(msg["id"])],
                            "payload": msg.get(kind if kind == "error" else "result")})
    return out
