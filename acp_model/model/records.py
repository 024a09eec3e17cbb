"""The records a session model holds: prompts, cancels, permission requests, tool calls.

Fields that hold a trace index carry ``metadata={"index": True}``: a snapshot ranks them (only
their order and whether the agent has read them matter), and ``model.snapshot`` finds them
without a list written by hand. Every record is a flat slots dataclass whose values are never
mutated in place except through its own fields, so a shallow copy is a full copy
(``snapshot.clone``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from acp_model.model.vocab import CancelStatus, PermState, PromptStatus

INDEX = MappingProxyType({"index": True})
# what an answered permission request no longer needs in a snapshot (DeadFields.canon_settled)
SETTLED = MappingProxyType({"canon": "dead.canon_settled"})


def _out(why: str, **extra: Any) -> MappingProxyType[str, Any]:
    """Metadata of a field the snapshot leaves out, with the reason (snapshot module)."""
    return MappingProxyType({"snapshot": False, "why": why, **extra})


# Why model fields stay out of the snapshot (the session module's fields use these)
EXPLAINS = _out("what a failure's evidence cites; no check reads it")
RETIRED = _out("the monitor's settled permission requests (see retire); the explorer never "
               "retires any")
LIVE_ONLY = _out("message ids of the live trace; the explorer's alphabet has none")
LIVE_CONTENT = _out("read only for content kinds of the live trace (v1's CANCEL-09); the "
                    "explorer's alphabet has none")


@dataclass(slots=True)
class PromptRec:
    idx: int = field(metadata=INDEX)
    id: Any = field(metadata=_out("pairs the response with its prompt; events name prompts "
                                  "by id, so its value never changes what a future allows"))
    status: PromptStatus = PromptStatus.PENDING  # pending -> accepted -> inserted
    # the client sent $/cancel_request for it (CANCEL-14 if unanswered; its work, still to
    # come while the prompt is listed, may end cancelled)
    withdrawn: bool = False
    withdrawn_at: int = field(default=-1, metadata=EXPLAINS)  # its first $/cancel_request
    # foreground work started or ended while this prompt was open (read only while quiet)
    ran: bool = field(default=False, metadata={"canon": "dead.canon_ran"})
    # The newer revision (SDK-PROMPT-02): the prompt's content, and the user message carrying
    # it verbatim while the prompt was open (it was inserted).
    content_key: str | None = field(default=None, metadata=_out(
        "compared only with user messages of the live trace; the explorer has no content"))
    echo_idx: int = field(default=-1, metadata=_out(
        "evidence of SDK-PROMPT-02, set only from live content"))
    text_key: str | None = field(default=None, metadata=_out(
        "compared only with user messages of the live trace (SDK-PROMPT-03)"))

    def ended_by(self, response_to: Any) -> bool:
        """Does an idle end this prompt? An idle ends the work of every inserted prompt; an
        idle that is a prompt's own response (v1, ``response_to`` its id) ends that prompt
        only: another still unanswered is unfinished, whatever content was attributed to it."""
        if response_to is not None:
            return self.id == response_to and type(self.id) is type(response_to)
        return self.status == PromptStatus.INSERTED


@dataclass(slots=True)
class CancelRec:
    idx: int = field(metadata=INDEX)
    status: CancelStatus  # the cancel automaton, see the session module
    # a prompt sent before this cancel may still be unfinished
    prior: bool = field(default=False, metadata={"canon": "dead.canon_prior"})
    # met no work to cancel: reading A-04=idle-cancelled wants an idle
    owes_reply: bool = field(default=False, metadata={"canon": "dead.canon_owes_reply"})
    # the prompts sent before it were held behind other work when it was sent (reading A-10)
    held: bool = field(default=False, metadata={"canon": "dead.canon_held"})
    # a prompt sent after it was rejected, and the work that prompt may have started lives on
    # until an idle (reading A-28=may): the work that ends next may be that prompt's, which
    # this cancel does not reach
    outrun: bool = field(default=False, metadata={"canon": "dead.canon_outrun"})
    # where the client reopened the session (session/load, /resume) while the work this
    # cancel could stop ran, the cancel sent after it (-1: not so): the text does not say
    # whether a reopen replaces the session that work runs in, so the cancel may not reach it
    reopened: int = field(default=-1, metadata=INDEX)
    # the fuzzer's record of this cancel's write says its scripted model had released the
    # whole final response of the session's turn after message #done, no model request open,
    # and no later record says the agent asked the model again (-1: not so, or not known):
    # nothing was left to abort, so answering with the turn's real end is defensible
    done: int = field(default=-1, metadata=_out(
        "set only from the fuzzer's records of the live trace; the explorer's alphabet has no "
        "scripted model", index=True))
    # a prompt was sent while this cancel was not yet provably read, and a prompt sent after
    # it is still open: the agent may have read the two together (an editor's "stop and
    # send" writes them in one write) and taken the prompt up before the cancel, so the
    # cancel may reach that prompt's work
    joint: bool = field(default=False, metadata={"canon": "dead.canon_joint"})
    # the last prompt sent while this cancel was not yet provably read (-1: none): only a
    # prompt up to it may have been read together with the cancel
    joint_upto: int = field(default=-1, metadata={"index": True,
                                                  "canon": "dead.canon_joint_upto"})
    # read before the work began, so stale but for ``joint``: the only thing that may make it
    # reach this work is the order the agent handled it and the prompt in (CANCEL-11 warns)
    joint_read: bool = field(default=False, metadata=_out(
        "read only once the work showed live content (Work.showed), which the explorer's "
        "alphabet never reports"))


@dataclass(slots=True)
class PermRec:
    """A user-action request of the agent: a permission request, or a session-scoped
    elicitation (``elicitation``)."""

    id: Any = field(metadata={"perm_ref": True})
    idx: int = field(metadata=_out("where the request was sent: explanations only", index=True))
    tool_call_id: str | None
    # optionId -> kind (read-only: clones share it); read when an answer is classified,
    # before the answer event reaches the model
    options: MappingProxyType[str, Any] = field(metadata=_out("read before the model sees an "
                                                              "answer (classification)"))
    state: PermState = PermState.OPEN
    # CANCEL-04: must be answered with the cancelled outcome
    owed_cancel: bool = field(default=False, metadata=SETTLED)
    answer: str | None = field(default=None, metadata=SETTLED)  # an Answer
    answer_idx: int = field(default=-1, metadata={  # -1: not answered
        "index": True, "canon": "dead.canon_answer_idx"})
    # STATE-05: the agent went on writing while the request was open and the session showed
    # running, and has not reported requires_action since (an answer that came before the
    # agent wrote anything else left it no time to report the block)
    unreported_block: bool = False
    # the agent withdrew it while it was open (PERM-11 leaves it be)
    withdrawn: bool = field(default=False, metadata=SETTLED)
    # the agent reported running after sending it: it says other foreground work progresses
    # meanwhile, which sdk-2.4.0 allows ("If other foreground work can progress, the state
    # remains running"), so what it writes while this request waits shows no block (STATE-05)
    overlapped: bool = field(default=False, metadata={"canon": "dead.canon_overlapped"})
    # another request of the session was answered after this one was sent: that request's
    # tool may be the work that progresses meanwhile (STATE-05, read while this one waits)
    sibling_answered: bool = field(default=False,
                                   metadata={"canon": "dead.canon_sibling_answered"})
    # the client's last allow sent after its first answer (a repeat no rule reads; PERM-11's
    # proof names it, as an agent that kept it may take it for a later request); -1: none
    repeat_allow_idx: int = field(default=-1, metadata=EXPLAINS)
    # a session-scoped elicitation/create, not a permission request: a user-action wait as
    # well (STATE-05/06), but no option, no guarded tool, nothing a cancel makes the client owe
    elicitation: bool = False
    # SDK-ELICIT-01: an elicitation sent during foreground work the agent reported as
    # requires_action while it was open (the blocked work needed it)
    blocked_work: bool = False


@dataclass(slots=True)
class ToolRec:
    # id of the permission request guarding it (PERM-11, STATE-06)
    perm: Any = field(default=None, metadata={"perm_ref": True})
    # reported in_progress or completed at least once (PERM-11: a tool that never started may
    # not start while the request guarding it is still open)
    started: bool = False
