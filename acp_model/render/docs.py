"""Diagrams for the lifecycle page (``acp-model diagram --style docs``), in the spec's words.

The engineer diagrams show every (state, event) edge with its guard functions; a doc page
needs one small picture per concern, states named and described as the text names them, and
edges labelled with what travels on the wire. Nothing here is drawn by hand: every edge
names the model transition it shows and generation fails if the model has no such
transition (or it leads elsewhere); the rule IDs in each legend are those of the checks on
the transitions drawn; and every sequence diagram is a trace built with
:class:`~acp_model.trace.builder.TraceBuilder` that must pass ``acp-model check`` under the
revision it is drawn for. v1 has its own set (:data:`V1_DOCS`): its pages name no session
states and report none, so its pictures show the same model transitions in v1's words (the
prompt turn, ended by the prompt's response).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from acp_model.model.engine import Table, TransitionSpec
from acp_model.model.vocab import Event, Level
from acp_model.model.vocab import State as St
from acp_model.oracle.offline import check_records
from acp_model.render.graphs import session_table
from acp_model.spec import revisions
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.spec.revisions import SEED
from acp_model.trace.builder import TraceBuilder
from acp_model.trace.describe import summarize

# The seed's "Session States" section, word for word.
STATE_TEXT = {
    St.IDLE: "The Agent is ready to process a new prompt.",
    St.RUNNING: "Foreground work is in progress.",
    St.REQUIRES_ACTION: "Foreground work is blocked on user action.",
}


class DocsDrift(Exception):
    """A docs diagram names a transition the model does not have, or a flow fails the check."""


@dataclass(frozen=True)
class DrawnEdge:
    """One drawn edge: the model transition (``src``, ``event``) and where it must lead."""

    src: St
    event: Event
    dst: St
    label: str  # wire messages, as the text names them


@dataclass(frozen=True)
class Concern:
    name: str
    title: str
    edges: tuple[DrawnEdge, ...]
    start: str | None = None  # label of an edge from [*] into the first edge's source
    notes: tuple[tuple[St, str], ...] = ()


CONCERNS = (
    Concern("turn", "A prompt turn (steps 1-6)", (
        DrawnEdge(St.IDLE, Event.RUNNING_REPORTED, St.RUNNING,
                  "1 session/prompt, 2 response {} (accepted), user_message, "
                  "3 state_update running"),
        DrawnEdge(St.RUNNING, Event.OUTPUT, St.RUNNING,
                  "3 agent_message_chunk, plan, tool_call, usage_update"),
        DrawnEdge(St.RUNNING, Event.IDLE_REPORTED, St.IDLE,
                  "4 state_update idle (stopReason end_turn, max_tokens, max_turn_requests, "
                  "refusal)"),
    ), start="session/new", notes=((St.RUNNING, "6 the cycle returns to step 3 until the "
                                                "model completes or work is stopped"),)),
    Concern("permissions", "A tool call that needs permission (step 5)", (
        DrawnEdge(St.RUNNING, Event.REQUIRES_ACTION_REPORTED, St.REQUIRES_ACTION,
                  "session/request_permission, state_update requires_action"),
        DrawnEdge(St.REQUIRES_ACTION, Event.RUNNING_REPORTED, St.RUNNING,
                  "permission response (selected), state_update running"),
        DrawnEdge(St.RUNNING, Event.TOOL_UPDATE, St.RUNNING,
                  "tool_call_update in_progress, completed"),
        DrawnEdge(St.REQUIRES_ACTION, Event.IDLE_REPORTED, St.IDLE,
                  "state_update idle (stopReason)"),
    )),
    Concern("cancellation", "Cancellation", (
        DrawnEdge(St.RUNNING, Event.CANCEL, St.RUNNING, "session/cancel"),
        DrawnEdge(St.REQUIRES_ACTION, Event.CANCEL, St.REQUIRES_ACTION, "session/cancel"),
        DrawnEdge(St.REQUIRES_ACTION, Event.PERMISSION_ANSWER, St.REQUIRES_ACTION,
                  "the client answers pending permission requests: cancelled"),
        DrawnEdge(St.RUNNING, Event.OUTPUT, St.RUNNING,
                  "content and tool call updates still allowed, before the idle"),
        DrawnEdge(St.RUNNING, Event.IDLE_REPORTED, St.IDLE,
                  "state_update idle (stopReason cancelled)"),
        DrawnEdge(St.REQUIRES_ACTION, Event.IDLE_REPORTED, St.IDLE,
                  "state_update idle (stopReason cancelled)"),
    ), notes=((St.IDLE, "after session/cancel the idle that ends the work MUST carry "
                        "cancelled, never an error"),)),
)

STATE_NAMES = {St.IDLE: "idle", St.RUNNING: "running", St.REQUIRES_ACTION: "requires_action"}


# v1's prompt-turn.mdx names no session states: the turn is the unit, in its own words.
V1_STATE_NAMES = {St.IDLE: "between_turns", St.RUNNING: "prompt_turn"}
V1_STATE_TEXT = {
    St.IDLE: "Once a prompt turn completes, the Client may send another session/prompt.",
    St.RUNNING: "A complete interaction cycle, starting with a user message and continuing "
                "until the Agent completes its response.",
}
_V1_END = "response to session/prompt {stopReason"
V1_CONCERNS = (
    Concern("turn", "A v1 prompt turn (steps 1-6)", (
        DrawnEdge(St.IDLE, Event.RUNNING_REPORTED, St.RUNNING,
                  "1 session/prompt, then 3 the turn's first session/update (no acknowledgement, "
                  "no state report)"),
        DrawnEdge(St.RUNNING, Event.OUTPUT, St.RUNNING,
                  "3 agent_message_chunk, plan, tool_call, tool_call_update"),
        DrawnEdge(St.RUNNING, Event.IDLE_REPORTED, St.IDLE,
                  f"4 {_V1_END} end_turn, max_tokens, max_turn_requests, refusal}}"),
    ), start="session/new", notes=((St.RUNNING, "6 the turn goes back to the language model "
                                                "until it completes"),)),
    Concern("permissions", "A tool call that needs permission (step 5)", (
        DrawnEdge(St.RUNNING, Event.PERMISSION_REQUEST, St.RUNNING,
                  "5 session/request_permission (the turn goes on: v1 reports no state)"),
        DrawnEdge(St.RUNNING, Event.PERMISSION_ANSWER, St.RUNNING,
                  "permission response (selected)"),
        DrawnEdge(St.RUNNING, Event.TOOL_UPDATE, St.RUNNING,
                  "tool_call_update in_progress, completed"),
        DrawnEdge(St.RUNNING, Event.IDLE_REPORTED, St.IDLE, f"{_V1_END}}}"),
    )),
    Concern("cancellation", "Cancellation", (
        DrawnEdge(St.RUNNING, Event.CANCEL, St.RUNNING, "session/cancel"),
        DrawnEdge(St.RUNNING, Event.PERMISSION_ANSWER, St.RUNNING,
                  "the client answers pending permission requests: cancelled"),
        DrawnEdge(St.RUNNING, Event.OUTPUT, St.RUNNING,
                  "content and tool call updates still allowed, before the response"),
        DrawnEdge(St.RUNNING, Event.IDLE_REPORTED, St.IDLE, f"{_V1_END} cancelled}}"),
    ), notes=((St.IDLE, "after session/cancel the response MUST carry cancelled, never an "
                        "error, and nothing of the turn follows it"),)),
)


def concern_rules(concern: Concern, table: Table, readings: Readings = DEFAULT) -> list[str]:
    """The rule IDs decided on the transitions drawn (checks active under ``readings``)."""
    rules: dict[str, None] = {}
    for edge in concern.edges:
        tr = _transition(table, edge)
        for c in tr.checks:
            if c.level(readings) != Level.OFF:
                rules.setdefault(c.rule, None)
    return sorted(rules)


def _transition(table: Table, edge: DrawnEdge) -> TransitionSpec:
    tr = table.transitions.get((edge.src.value, edge.event.value))
    if tr is None:
        raise DocsDrift(f"the model has no transition {edge.src}:{edge.event}")
    if tr.target != edge.dst.value:
        raise DocsDrift(f"{edge.src}:{edge.event} leads to {tr.target} in the model, "
                        f"the docs diagram says {edge.dst}")
    return tr


def state_mermaid(concern: Concern, table: Table, readings: Readings = DEFAULT,
                  names: Mapping[St, str] = STATE_NAMES,
                  words: Mapping[St, str] = STATE_TEXT) -> str:
    """Mermaid ``stateDiagram-v2`` of one concern; the legend is a note listing its rules.
    ``names`` and ``words``: the states as the protocol's pages name and describe them."""
    lines = ["---", f"title: {json.dumps(concern.title)}", "---", "stateDiagram-v2",
             "    direction LR"]
    states = list(dict.fromkeys(s for e in concern.edges for s in (e.src, e.dst)))
    for s in states:
        lines.append(f"    {names[s]} : {names[s]}<br/><i>{words[s]}</i>")
    if concern.start:
        lines.append(f"    [*] --> {names[concern.edges[0].src]} : {concern.start}")
    for e in concern.edges:
        _transition(table, e)
        lines.append(f"    {names[e.src]} --> {names[e.dst]} : {_text(e.label)}")
    for state, text in concern.notes:
        lines.append(f"    note right of {names[state]} : {_text(text)}")
    rules = concern_rules(concern, table, readings)
    lines.append(f"    note left of {names[states[0]]}")
    lines.append("        Rules checked on these transitions:")
    for chunk in range(0, len(rules), 4):
        lines.append("        " + ", ".join(rules[chunk:chunk + 4]))
    lines.append("    end note")
    return "\n".join(lines) + "\n"


def _text(label: str) -> str:
    # Mermaid reads ':' as a separator and ';' as a statement end; '#' starts an entity.
    return label.replace(":", " -").replace(";", ",").replace("#", "no. ")


# --- sequence diagrams of the text's flows -------------------------------------------------

S = "sess_abc123def456"


def _receipt(receipts: bool, message_id: str) -> dict[str, str] | None:
    """The prompt response: ``{}`` in the seed, a receipt naming the user message in
    sdk-2.4.0."""
    return {"messageId": message_id} if receipts else None


def _typical(receipts: bool) -> TraceBuilder:
    t = TraceBuilder().handshake().new_session(S)
    t.prompt(S, 2, "Can you analyze this code for potential issues?")
    t.accepted(2, _receipt(receipts, "msg_1"))
    t.user_message(S, "msg_1").running(S).agent_message(S, text="I'll analyze your code...")
    t.tool(S, "call_001", "pending", title="Analyzing Python code", kind="other")
    t.permission(S, 5, "call_001").requires_action(S).answer(5, "allow").running(S)
    t.tool(S, "call_001", "in_progress").tool(S, "call_001", "completed")
    t.agent_message(S, text="Found 2 issues.").idle(S, "end_turn")
    return t


def _cancel_during_work(receipts: bool) -> TraceBuilder:
    t = TraceBuilder().handshake().new_session(S)
    t.prompt(S, 2, "Refactor the module").accepted(2, _receipt(receipts, "msg_1"))
    t.user_message(S, "msg_1").running(S)
    t.agent_message(S, text="Starting...").cancel(S)
    t.agent_message(S, text="(last chunk before stopping)").idle(S, "cancelled")
    return t


def _cancel_during_permission(receipts: bool) -> TraceBuilder:
    t = TraceBuilder().handshake().new_session(S)
    t.prompt(S, 2, "Delete the build folder").accepted(2, _receipt(receipts, "msg_1"))
    t.user_message(S, "msg_1").running(S)
    t.tool(S, "call_001", "pending", title="rm -rf build", kind="delete")
    t.permission(S, 5, "call_001").requires_action(S).cancel(S).answer(5, "cancelled")
    t.tool(S, "call_001", "cancelled").idle(S, "cancelled")
    return t


def _prompt_while_busy(receipts: bool) -> TraceBuilder:
    t = TraceBuilder().handshake().new_session(S)
    t.prompt(S, 2, "Write the tests").accepted(2, _receipt(receipts, "msg_1"))
    t.user_message(S, "msg_1").running(S)
    t.agent_message(S, text="Writing tests...")
    t.prompt(S, 3, "Also cover the error paths").accepted(3, _receipt(receipts, "msg_2"))
    t.user_message(S, "msg_2")
    t.agent_message(S, text="Tests written, error paths included.").idle(S, "end_turn")
    return t


def _v1_typical(_: bool) -> TraceBuilder:
    t = TraceBuilder().v1.handshake().v1.new_session(S)
    t.prompt(S, 2, "Can you analyze this code for potential issues?")
    t.v1.chunk(S, "I'll analyze your code...")
    t.v1.tool_call(S, "call_001", title="Analyzing Python code")
    t.v1.permission(S, 5, "call_001").answer(5, "allow")
    t.tool(S, "call_001", "in_progress").tool(S, "call_001", "completed")
    return t.v1.chunk(S, "Found 2 issues.").v1.ended(2, "end_turn")


def _v1_cancel_during_work(_: bool) -> TraceBuilder:
    t = TraceBuilder().v1.handshake().v1.new_session(S)
    t.prompt(S, 2, "Refactor the module").v1.chunk(S, "Starting...").cancel(S)
    return t.v1.chunk(S, "(last chunk before stopping)").v1.ended(2, "cancelled")


def _v1_cancel_during_permission(_: bool) -> TraceBuilder:
    t = TraceBuilder().v1.handshake().v1.new_session(S)
    t.prompt(S, 2, "Delete the build folder").v1.tool_call(S, "call_001", title="rm -rf build")
    t.v1.permission(S, 5, "call_001").cancel(S).answer(5, "cancelled")
    return t.tool(S, "call_001", "failed").v1.ended(2, "cancelled")  # v1 has no cancelled status


Flow = tuple[str, str, Callable[[bool], TraceBuilder]]  # name, title, build(receipts)

V1_FLOWS: tuple[Flow, ...] = (
    ("typical", "A typical v1 prompt turn", _v1_typical),
    ("cancel-during-work", "Cancelling a v1 turn while the agent works", _v1_cancel_during_work),
    ("cancel-during-permission", "Cancelling a v1 turn while a permission request is pending",
     _v1_cancel_during_permission),
)

FLOWS: tuple[Flow, ...] = (
    ("typical", "A typical prompt-driven flow", _typical),
    ("cancel-during-work", "Cancelling while the agent works", _cancel_during_work),
    ("cancel-during-permission", "Cancelling while a permission request is pending",
     _cancel_during_permission),
    ("prompt-while-busy", "A prompt sent while work is running (reading A-01: it joins the "
                          "work)", _prompt_while_busy),
)

_SESSION = re.compile(r" \[[^\]]*\]")


def flow_mermaid(name: str, title: str, build: Callable[[bool], TraceBuilder],
                 readings: Readings = DEFAULT) -> str:
    """The flow as a Mermaid ``sequenceDiagram``; raises :class:`DocsDrift` if the trace
    does not pass the check (the picture would teach something the model rejects)."""
    t = build(readings.revision != SEED)
    report = check_records(t.records, readings=readings)
    if report["verdict"] != "pass" or report["violations"]:
        found = ", ".join(sorted({v["rule"] for v in report["violations"]}))
        raise DocsDrift(f"the {name} flow does not pass the check: {found}")
    lines = ["---", f"title: {json.dumps(title)}", "---", "sequenceDiagram",
             "    participant Client", "    participant Agent",
             f"    Note over Client,Agent: initialize and session/new done (session {S})"]
    # The handshake is the same in every flow: start at the first prompt.
    texts = summarize(t.records)
    first = next(n for n, (_, text) in enumerate(texts) if text.startswith("session/prompt"))
    for direction, text in texts[first:]:
        src, dst = ("Client", "Agent") if direction == "c2a" else ("Agent", "Client")
        label = _SESSION.sub("", text).replace("session/update ", "")
        arrow = "-->>" if label.startswith(("result ", "error ")) else \
            "->>" if " id=" in label else "-)"
        lines.append(f"    {src}{arrow}{dst}: {_seq_text(label)}")
    return "\n".join(lines) + "\n"


_RESPONSES = (
    (re.compile(r"^result id=(\S+) \(session/prompt\) \{\}$"),
     r"response {} to id=\1 (accepted)"),
    (re.compile(r"^result id=(\S+) \(session/prompt\) \{\"messageId\":\"(\w+)\"\}$"),
     r"response to id=\1: receipt messageId \2 (inserted)"),
    (re.compile(r"^result id=(\S+) \(session/prompt\) \{\"stopReason\":\"(\w+)\"\}$"),
     r"response to id=\1: stopReason \2 (the turn ends)"),
    (re.compile(r"^result id=(\S+) \(session/request_permission\) outcome=.*\"outcome\":"
                r"\"(\w+)\".*$"), r"response to id=\1: outcome \2"),
)


def _seq_text(label: str) -> str:
    for pattern, replacement in _RESPONSES:
        label = pattern.sub(replacement, label)
    return label.replace(";", ",").replace("#", "no. ")


def docs_sources(readings: Readings = DEFAULT) -> dict[str, str]:
    """File name -> Mermaid text of every docs diagram (v1's set under a v1 revision)."""
    table = session_table()
    v1 = revisions.get(readings.revision).protocol == 1
    concerns, flows = (V1_CONCERNS, V1_FLOWS) if v1 else (CONCERNS, FLOWS)
    words = {"names": V1_STATE_NAMES, "words": V1_STATE_TEXT} if v1 else {}
    out = {f"docs-{c.name}.mmd": state_mermaid(c, table, readings, **words) for c in concerns}
    for name, title, build in flows:
        out[f"docs-flow-{name}.mmd"] = flow_mermaid(name, title, build, readings)
    return out


RENDERS = "renders.json"  # source digest of each rendered picture (the drift test reads it)


def source_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_docs(out: Path, formats: tuple[str, ...] = ("mermaid", "svg", "png"),
               readings: Readings = DEFAULT) -> list[Path]:
    """Write the Mermaid sources, and render them with mermaid-cli for ``svg``/``png``
    (:class:`~acp_model.render.mermaid_cli.MermaidUnavailable` without it)."""
    from acp_model.render import mermaid_cli

    out.mkdir(parents=True, exist_ok=True)
    sources = docs_sources(readings)
    written = []
    for name, text in sources.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    pictures = [f for f in ("svg", "png") if f in formats]
    for fmt in pictures:
        written += mermaid_cli.render(sources, out, fmt)
    if pictures:
        index = out / RENDERS
        known = json.loads(index.read_text()) if index.is_file() else {}
        for name, text in sources.items():
            for fmt in pictures:
                known[f"{Path(name).stem}.{fmt}"] = source_digest(text)
        index.write_text(json.dumps(dict(sorted(known.items())), indent=2) + "\n")
        written.append(index)
    return written
