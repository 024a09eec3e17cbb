"""The lifecycle checks on prompts and their messages: acceptance, receipts, user messages.

:class:`PromptRules` owns no state: each check reads the session's
:class:`~acp_model.model.prompt_queue.PromptQueue` (and its foreground state). The lifecycle
names the checks by reference (``cond=guards(PromptRules.work_has_a_prompt)``); the engine runs
each on the part of ``SessionModel.PARTS`` that holds it.
"""

from __future__ import annotations

from acp_model.model.check import check
from acp_model.model.events import Payload
from acp_model.model.race_facts import ModelSession
from acp_model.model.vocab import WORK, Level, PromptStatus, Reads, Role

__all__ = ["PromptRules"]


class PromptRules:
    """Checks on what the client prompted and what the agent said about each prompt."""

    __slots__ = ("m",)

    def __init__(self, m: ModelSession) -> None:
        self.m = m

    @check("A-01.forbid", reading="A-01", levels={"join": "off", "forbid": "rule"}, role=Role.GUARD)
    def prompt_while_busy_allowed(self, ev: Payload) -> bool:
        """Under reading A-01=forbid the client may only prompt a quiet session whose prompts
        are all answered and ended (v1: 'Once a prompt turn completes')."""
        return self.m.state not in WORK and not self.m.queue.prompts

    @check("PROMPT-05", role=Role.GUARD)
    def acknowledgement_only(self, ev: Payload) -> bool:
        """The prompt result acknowledges acceptance; a v1-style stopReason is a leftover."""
        return not ev.result_keys or "stopReason" not in ev.result_keys

    @check("SDK-RECEIPT-03", reading="SPEC", levels={"seed": "off", "sdk-2.4.0": "rule"},
           evidence="receipt_evidence", role=Role.GUARD)
    def receipt_names_a_new_message(self, ev: Payload) -> bool:
        """A receipt names a user message no earlier receipt of the session named (message ids
        are unique per type within a session; two prompts are two messages)."""
        return ev.message_id is None or ev.message_id not in self.m.queue.receipt_ids

    @check("SDK-PROMPT-02", reading="SPEC", levels={"seed": "off", "sdk-2.4.0": "rule"},
           evidence="insertion_evidence", role=Role.GUARD)
    def no_error_after_insertion(self, ev: Payload) -> bool:
        """A prompt whose user message was inserted is not answered with an error."""
        p = self.m.queue.find(ev.id)
        return p is None or p.echo_idx < 0

    @check("SDK-PROMPT-03", reading="SPEC", levels={"seed": "off", "sdk-2.4.0": "rule"},
           evidence="rejected_insertion_evidence", role=Role.GUARD)
    def rejected_prompt_not_inserted(self, ev: Payload) -> bool:
        """A prompt answered with an error was not inserted: no user message carries it."""
        return self.m.queue.inserted_rejected(ev.text_key) is None

    @check("A-03.diagram", reading="A-03", levels={"free": "off", "diagram": "rule"},
           role=Role.GUARD)
    def user_message_after_accept(self, ev: Payload) -> bool:
        """Diagram order: the user message follows the prompt response."""
        if ev.new_message is False:
            return True
        queue = self.m.queue
        return queue.count(PromptStatus.ACCEPTED) > 0 or queue.count(PromptStatus.PENDING) == 0

    @check("A-03.diagram", reading="A-03", levels={"free": "off", "diagram": "rule"},
           role=Role.GUARD)
    def running_after_user_message(self, ev: Payload) -> bool:
        """Diagram order: running follows the prompt response and the user message."""
        queue = self.m.queue
        if queue.count(PromptStatus.ACCEPTED) > 0:
            return False
        return not (queue.count(PromptStatus.PENDING) > 0
                    and queue.count(PromptStatus.INSERTED) == 0)

    @check("A-07.forbid", reading="A-07", levels={"allow": "off", "forbid": "rule"},
           role=Role.GUARD)
    def work_has_a_prompt(self, ev: Payload) -> bool:
        """Under A-07=forbid, foreground work only exists because of a prompt."""
        return bool(self.m.queue.prompts)


@check("SDK-RECEIPT-04", role=Role.FINDING, level=Level.WARN, reads=[Reads.RESPONSE])
def receipt_not_held_back(message_id: object, prompt: int, reported: int | None,
                          ended: int | None) -> str | None:
    """The receipt does not wait for the work to finish: no idle ending work between the
    report of the user message it names (``reported``, after the prompt was sent) and the
    response (a warning: waiting explains the order, the agent's own scheduling could too).
    An id first reported before the prompt names another message: SDK-RECEIPT-03's."""
    if reported is None or ended is None or ended < reported or reported < prompt:
        return None
    return (f"the receipt for user message {message_id!r}, reported at #{reported}, came only "
            f"after the idle at #{ended} ended the work: the agent probably waited for "
            "processing to finish before returning the inserted message's id")
