"""A conforming ACP v2 reference agent, v1 when asked (and, with ``--mutant``, a seeded bug).

Run: ``python -m acp_model.agents.reference [--mutant NAME] [--design AXIS=VALUE,...] [--seed N]
[--timing fast|real|slow]`` (``--list-mutants`` prints the zoo, ``--list-design`` the design
axes). Newline-delimited JSON-RPC 2.0 on stdin/stdout, logs on stderr only.

Layout: ``agent.py`` (the connection and the parts), ``inbox.py`` (reading and routing),
``sessions.py``, ``prompts.py``, ``work.py`` (turns and the fake model's steps),
``permissions.py``, ``cancels.py``, ``state.py``, ``wire.py``, ``output.py``. Where the text
leaves a choice, the agent follows its :class:`~acp_model.agents.design.Design` (``--design``,
the default described below); a planted bug is a :class:`~.faults.Fault` (``faults.py``) in
which one part's hooks are replaced, and each part asks its hooks at its decision points, so the
code here reads as the conforming protocol.

This is an independent implementation of the protocol: it imports nothing from ``acp_model``
outside ``acp_model.agents``, so its mistakes are not correlated with the oracle's.

It is genuinely concurrent (asyncio): a thread keeps reading stdin while turns run, every
session has its own turn task, cancels / prompts / permission answers land mid-turn, and every
delay is an ``Event.wait`` with a timeout that a cancel interrupts at once. All output is
written by the event-loop thread, one whole line per message.

Readings (the oracle's defaults; ids refer to section 6 of RULES.md):

* A-01 prompt while a turn is running or blocked on a permission (design ``busy``, default
  ``join``): accepted (``{}``), its user message is reported at once, and its work is folded
  into the current turn: no second ``running``, one idle at the end of the combined turn (stop
  reason of the last prompt).
  A prompt read after a ``session/cancel`` of the running turn is not folded into the doomed
  turn: it is accepted once that turn has reported its cancelled idle, and starts a new turn.
* A-03 order: prompt response, then the user message, then ``running``.
* A-04 ``session/cancel`` with no foreground work: a no-op, nothing is sent.
* A-07 / A-09: foreground work only ever starts from a prompt; ``running`` always precedes any
  ``requires_action`` and the stop-reason idle; every turn ends with exactly one idle and it
  always carries a stop reason; no idle is sent after ``session/new``.
* A-10 a ``session/cancel`` read while a prompt is read but not yet accepted (the acceptance
  step is asynchronous, so the window exists in every timing): the prompt is still accepted
  (``{}``), its user message is reported, then the work is cancelled: if another turn is
  running the prompt joins it and the single idle says ``cancelled``; otherwise the agent
  sends ``running`` and immediately ``idle`` with ``cancelled``. A ``$/cancel_request`` for a
  prompt that is not accepted yet rejects it with -32800 (no user message, no turn).
* A-11 once the agent has read ``session/cancel`` while foreground work is in progress, the
  turn ends with ``idle`` + ``cancelled``, even if the model had just finished. Open tool calls
  are marked ``cancelled`` before that idle, never after it.
* A-12 a selected ``optionId`` that was not offered is treated as a rejection.
* A-14 pending permission requests at cancel: the agent stops waiting at once and alternates
  per session, deterministically, between (i) just dropping them (the client still owes the
  ``cancelled`` outcome) and (ii) also sending ``$/cancel_request`` for each (the client then
  answers with the cancelled outcome or -32800). Late answers (after the cancel, unknown ids,
  duplicates) are ignored and never resume anything.
* A-19 ``session/close`` cancels like ``session/cancel``, waits for the cancelled idle (if a
  turn was running), then answers ``{}``; prompts still awaiting acceptance get -32800.
* A-26 errors: unknown or closed session ids get -32602 (invalid params); requests before
  ``initialize`` (and a second ``initialize``) get -32600 (invalid request).
* Permission outcomes: ``selected`` with an allow option runs the tool (``in_progress`` ->
  ``completed``/``failed``); a reject option, an unknown/custom outcome or a JSON-RPC error
  (including -32800) marks the tool ``failed`` without ever reaching ``in_progress``; the
  ``cancelled`` outcome marks it ``cancelled``. The turn then continues.
* Background updates while idle: after every second completed turn of a session the agent
  sends a ``usage_update`` or an ``available_commands_update`` (alternating) right after idle.
* Batches from the client are answered with one array once every request in it is answered;
  notification-only batches get nothing; ``[]`` gets a single -32600.
"""

from acp_model.agents.reference.agent import Agent
from acp_model.agents.reference.main import main, serve

__all__ = ["Agent", "main", "serve"]
