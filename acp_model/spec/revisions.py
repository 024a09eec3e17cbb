"""The revisions of ACP the model judges by: a vendored schema and the readings each decides.

A revision is data, not a second model: its schema (``spec/data/<name>/schema.json``), the
ambiguities its text decides (fixed reading values), and the rule rows that say which revisions
they apply to (``rules.Rule.revisions``, ``Rule.strength_in``). The model consults the
``SPEC`` reading for the few checks only one revision has. Adding the next upstream revision:
vendor its schema under ``spec/data/<name>/``, add a :class:`Revision` here, give the rules it
adds, changes or drops their revision rows, and write checks for its new MUSTs.

``v1`` is the protocol deployed agents speak (``protocol=1``): the same lifecycle model judges
it, its rule rows live in ``rules_v1.py`` and the oracle reads its wire dialect (the turn ends
with the prompt's response, not with an idle state update).

``auto`` is not a revision: front-ends decide it from the protocol version the agent answers in
``initialize`` and, for v2, from the agent's first prompt response; reading that off the wire
is wire logic (:mod:`acp_model.trace.dialect`), the :class:`Decision` it comes to is data here.
Every report names the revision and the evidence that decided it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SEED = "seed"
SDK_2_4_0 = "sdk-2.4.0"
V1 = "v1"
AUTO = "auto"


@dataclass(frozen=True, slots=True)
class Revision:
    """One revision of the ACP text."""

    name: str
    title: str
    source: str  # where its text comes from
    decides: Mapping[str, str]  # reading ID -> the value its text fixes
    why: Mapping[str, str]  # reading ID -> the sentence that decides it
    protocol: int = 2  # the protocolVersion its initialize negotiates
    # the session states its wire can show (empty: every state of the model); diagrams of the
    # revision leave the others out
    states: tuple[str, ...] = ()

    def citation(self, def_name: str) -> str:
        """Where a rule of this revision is written (its normative text is in ``$defs``)."""
        return f"{self.name} schema $defs.{def_name}"


REVISIONS: dict[str, Revision] = {r.name: r for r in (
    Revision(
        SEED, "ACP v2 as of the seed text (docs snapshot 2026-08-22, schema 2.0.0-alpha.3)",
        "prompt-lifecycle text and ../acp-v2 docs; spec/data/seed", {}, {}),
    Revision(
        SDK_2_4_0, "ACP v2 as shipped by the official SDKs 2.4.0 (schema with normative "
                   "$defs descriptions; prompt receipts)",
        "@agentclientprotocol/sdk 2.4.0 schema/v2/schema.json; spec/data/sdk-2.4.0",
        {"A-04": "noop", "A-05": "allow", "A-07": "allow", "A-10": "cancel", "A-16": "allow",
         "A-28": "may", "A-29": "may"},
        {"A-04": "ClientNotification session/cancel: idle(cancelled) is owed 'if cancellation "
                 "ended active foreground work'",
         "A-05": "IdleStateUpdate: 'Repeated or resume snapshots may carry the last stop "
                 "reason'",
         "A-07": "StateUpdate: 'It can start with a prompt or be agent-initiated'",
         "A-10": "ClientNotification session/cancel: 'Cancels a session's foreground work and "
                 "its prompts not yet inserted'",
         "A-16": "StateUpdate: 'report running when foreground work starts, or "
                 "requires_action if it starts blocked on user action'",
         "A-28": "StateUpdate: 'running may precede user-message insertion ... rejecting a "
                 "prompt does not itself end foreground work'",
         "A-29": "IdleStateUpdate cancelled: 'The user or client chose to stop the work: via "
                 "session/cancel, by closing the session, or through an interaction the agent "
                 "offers, such as a permission option that tells the agent to stop'"}),
    Revision(
        V1, "ACP v1, the protocol deployed agents speak (the turn ends with the prompt's "
            "response and its stopReason)",
        "v1 pages at the seed's upstream commit; @agentclientprotocol/sdk 2.4.0 "
        "schema/v1/schema.json; spec/data/v1",
        {"A-01": "forbid", "A-04": "noop", "A-10": "cancel", "A-13": "fail", "A-28": "none",
         "A-31": "read-answer"},
        {"A-01": "prompt-turn.mdx: 'Once a prompt turn completes, the Client may send another "
                 "session/prompt' (one turn at a time)",
         "A-04": "prompt-turn.mdx §Cancellation: cancel 'an ongoing prompt turn'; with no turn "
                 "there is nothing to answer (the turn's answer is the prompt's response)",
         "A-10": "one prompt at a time: a prompt is the turn, and the cancel ends it",
         "A-13": "prompt-turn.mdx §Cancellation: 'it MUST ensure that it does so before "
                 "responding to the session/prompt request'",
         "A-28": "a rejected prompt (an error response) is a turn that never ran",
         "A-31": "prompt-turn.mdx §5: 'Once permission is granted (if required), the Agent "
                 "SHOULD invoke the tool' (a SHOULD before the answer; tool-calls.mdx's "
                 "reject_once forbids only going against one)"},
        protocol=1, states=("unreported", "idle", "running")),  # no state_update in v1
)}
NAMES: tuple[str, ...] = tuple(REVISIONS)
CHOICES: tuple[str, ...] = (*NAMES, AUTO)


class RevisionError(ValueError):
    """A --spec value that names no revision, or a reading the revision decided otherwise."""


def get(name: str) -> Revision:
    try:
        return REVISIONS[name]
    except KeyError:
        raise RevisionError(f"unknown spec revision {name!r}; choose one of "
                            f"{', '.join(CHOICES)}") from None


@dataclass(frozen=True, slots=True)
class Decision:
    """Which revision judges a trace, and why (every report states both)."""

    revision: str
    requested: str  # what the user asked for: a revision name or "auto"
    evidence: str
    index: int | None = None  # the trace record that decided it
    fallback: bool = False  # nothing decided: the default revision stands in (said in evidence)
    # the protocol version the agent's initialize named when its messages speak another
    # (judged once, as INIT-03, and the trace by the revision it speaks)
    negotiated: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"revision": self.revision, "requested": self.requested,
                               "evidence": self.evidence}
        if self.index is not None:
            out["index"] = self.index
        if self.fallback:
            out["fallback"] = True
        if self.negotiated is not None:
            out["negotiated"] = self.negotiated
        return out


def chosen(name: str) -> Decision:
    """A revision named by the user."""
    get(name)
    return Decision(name, name, f"--spec {name}")
