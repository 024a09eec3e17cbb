"""A small, deterministic ACP v2 agent on the official Python SDK (``acp.experimental.v2``).

It exists as a fuzzing target: the protocol code (framing, routing, validation, concurrency) is
the SDK's, the agent logic follows the v2 prompt lifecycle with no LLM behind it. One prompt runs
this script, with a short delay (``ACP_EXAMPLE_DELAY_MS``, default 20) between steps so that a
``session/cancel`` can land mid-turn::

    prompt accepted (response carries the user messageId)
    user_message_chunk (one per prompt block)   state_update running
    agent_message_chunk x2                      tool_call_update pending (title, kind)
    state_update requires_action                session/request_permission
    state_update running
      allowed:   tool in_progress, tool_call_content_chunk, tool completed
      rejected:  tool failed
    agent_message_chunk                         usage_update
    state_update idle (stopReason end_turn)

A prompt whose text contains ``no tools`` skips the tool call. ``session/cancel`` cancels the
turn's asyncio task; the SDK then withdraws a pending permission request with
``$/cancel_request`` and the turn ends with the tool ``cancelled`` and idle ``cancelled``.
A prompt sent while the session is busy is held (its response is deferred) until the current
turn ends; a cancel answers held prompts with -32800.

Run it with the example venv: ``examples/sdk-python/.venv/bin/python examples/sdk-python/agent.py``.
stdout carries only the protocol; logs go to stderr (``ACP_EXAMPLE_LOG_LEVEL``, default WARNING).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from acp.exceptions import RequestError
from acp.experimental.v2 import PROTOCOL_VERSION, AgentSideConnection, run_agent
from acp.experimental.v2 import schema as s
from pydantic import ValidationError

log = logging.getLogger("sdk-python-agent")

AGENT_NAME = "acp-model-sdk-python-example"
AGENT_VERSION = "0.1.0"
CONTEXT_SIZE = 200_000

PromptBlock = (
    s.TextContentBlock
    | s.ImageContentBlock
    | s.AudioContentBlock
    | s.ResourceContentBlock
    | s.EmbeddedResourceContentBlock
    | s.OtherContentBlock
)
Update = Any  # one of the SDK's session update models (a long union in acp.experimental.v2)


def _delay_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("ACP_EXAMPLE_DELAY_MS", "20")) / 1000.0)
    except ValueError:
        return 0.02


def _not_found(session_id: str) -> RequestError:
    # -32002 Resource not found is the stable schema's code for an unknown entity.
    return RequestError(-32002, "Resource not found", {"sessionId": session_id})


def _text(text: str) -> s.TextContentBlock:
    return s.TextContentBlock(text=text)


def _prompt_text(prompt: list[PromptBlock]) -> str:
    return " ".join(block.text for block in prompt if isinstance(block, s.TextContentBlock))


@dataclass
class Turn:
    """One foreground turn; ``started`` flips once ``running`` is on the wire."""

    number: int
    user_message_id: str
    prompt: list[PromptBlock]
    task: asyncio.Task[None] | None = None
    started: bool = False
    finishing: bool = False  # past the work: a cancel now only changes the stop reason
    cancel_requested: bool = False
    open_tool_call: str | None = None  # a tool call not yet in a final status


@dataclass
class Session:
    session_id: str
    cwd: str
    turns: int = 0
    tool_calls: int = 0
    used_tokens: int = 0
    cost: float = 0.0
    current: Turn | None = None
    cancel_epoch: int = 0  # bumped by each session/cancel: held prompts compare against it
    history: list[tuple[str, str, list[PromptBlock]]] = field(default_factory=list)
    closed: bool = False
    shown: Update | None = None  # the last state update sent: a resume reports it again


class ExampleAgent:
    """Handlers looked up by name by the SDK's v2 router (see ``acp.experimental.v2.Agent``)."""

    def __init__(self) -> None:
        self._conn: AgentSideConnection | None = None
        self._sessions: dict[str, Session] = {}
        self._session_counter = 0
        self._delay = _delay_seconds()

    # -- connection ----------------------------------------------------------------------

    def on_connect(self, conn: AgentSideConnection) -> None:
        # Called by AgentSideConnection.__init__; the handle sends our requests/notifications.
        self._conn = conn

    @property
    def conn(self) -> AgentSideConnection:
        assert self._conn is not None, "on_connect was not called"
        return self._conn

    async def _send(self, session: Session, update: Update) -> None:
        if isinstance(update, (s.RunningSessionStateUpdate, s.IdleSessionStateUpdate,
                               s.RequiresActionSessionStateUpdate)):
            session.shown = update
        await self.conn.session_update(session_id=session.session_id, update=update)

    async def _pause(self) -> None:
        if self._delay:
            await asyncio.sleep(self._delay)

    # -- initialization and sessions -------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        info: s.Implementation,
        capabilities: s.ClientCapabilities | None = None,
        **kwargs: Any,
    ) -> s.InitializeResponse:
        # The SDK rejects protocol_version != 2 before this runs (see docs/sdk-agents.md).
        log.info("initialize from %s %s (protocol %s)", info.name, info.version, protocol_version)
        return s.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            info=s.Implementation(
                name=AGENT_NAME, title="SDK example (Python)", version=AGENT_VERSION
            ),
            capabilities=s.AgentCapabilities(
                session=s.SessionCapabilities(prompt=s.PromptCapabilities(embedded_context={}))
            ),
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> s.NewSessionResponse:
        self._session_counter += 1
        session_id = f"sess_py_{self._session_counter:04d}"  # deterministic for trace replay
        self._sessions[session_id] = Session(session_id=session_id, cwd=cwd)
        return s.NewSessionResponse(session_id=session_id)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> s.ListSessionsResponse:
        infos = [
            s.SessionInfo(session_id=sess.session_id, cwd=sess.cwd)
            for sess in self._sessions.values()
            if cwd is None or sess.cwd == cwd
        ]
        return s.ListSessionsResponse(sessions=infos)

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        replay_from: Any = None,
        **kwargs: Any,
    ) -> s.ResumeSessionResponse:
        session = self._sessions.get(session_id)
        if session is None:
            raise _not_found(session_id)
        session.closed = False
        if isinstance(replay_from, s.ReplayFromStartVariant):
            # Replay full messages (not chunks), keyed by their original messageIds.
            for kind, message_id, content in session.history:
                if kind == "user":
                    await self._send(
                        session, s.UserMessageUpdate(message_id=message_id, content=content)
                    )
                else:
                    await self._send(
                        session, s.AgentMessageUpdate(message_id=message_id, content=content)
                    )
        # sdk-2.4.0 ResumeSessionResponse: a current state_update before this response
        shown = session.shown
        await self._send(session, s.IdleSessionStateUpdate() if shown is None
                         or isinstance(shown, s.IdleSessionStateUpdate) else shown)
        return s.ResumeSessionResponse()

    async def close_session(self, session_id: str, **kwargs: Any) -> s.CloseSessionResponse:
        session = self._sessions.get(session_id)
        if session is None or session.closed:
            raise _not_found(session_id)
        turn = self._cancel(session)
        if turn is not None and turn.task is not None:
            # "as if session/cancel had been called": the cancelled idle precedes our response.
            await asyncio.wait({turn.task})
        session.closed = True  # kept (not deleted) so session/resume can restore it
        return s.CloseSessionResponse()

    # -- prompts ---------------------------------------------------------------------------

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> s.PromptResponse:
        session = self._sessions.get(session_id)
        if session is None or session.closed:
            raise _not_found(session_id)
        epoch = session.cancel_epoch
        # Busy: hold the prompt until the current turn has reported idle.
        while session.current is not None and session.current.task is not None:
            await asyncio.wait({session.current.task})
            if session.cancel_epoch != epoch or session.closed:
                raise RequestError.request_cancelled({"sessionId": session_id})
        session.turns += 1
        turn = Turn(
            number=session.turns,
            user_message_id=f"msg_user_{session.turns}",
            prompt=list(prompt),
        )
        session.current = turn
        turn.task = asyncio.create_task(
            self._run_turn(session, turn), name=f"turn-{session_id}-{turn.number}"
        )
        # The response is the insertion receipt: it names the user message the turn will echo.
        return s.PromptResponse(message_id=turn.user_message_id)

    async def cancel_session(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            log.warning("session/cancel for unknown session %s", session_id)
            return
        self._cancel(session)

    def _cancel(self, session: Session) -> Turn | None:
        session.cancel_epoch += 1
        turn = session.current
        if turn is None or turn.cancel_requested:
            return turn
        turn.cancel_requested = True
        # Before `running` is sent the turn checks the flag itself: cancelling a task that has
        # not started would skip its body, and with it the user message and the final idle.
        if turn.started and not turn.finishing and turn.task is not None:
            turn.task.cancel()
        return turn

    async def _run_turn(self, session: Session, turn: Turn) -> None:
        stop_reason = "end_turn"
        try:
            # Report the insertion, then announce foreground work (both always sent).
            for block in turn.prompt:
                await self._send(
                    session, s.UserMessageChunk(message_id=turn.user_message_id, content=block)
                )
            if not turn.prompt:  # the schema allows an empty prompt; it is still inserted
                await self._send(
                    session, s.UserMessageUpdate(message_id=turn.user_message_id, content=[])
                )
            session.history.append(("user", turn.user_message_id, turn.prompt))
            await self._send(session, s.RunningSessionStateUpdate())
            turn.started = True
            try:
                if turn.cancel_requested:
                    raise asyncio.CancelledError
                await self._work(session, turn)
            except asyncio.CancelledError:
                # session/cancel: the SDK already sent $/cancel_request for a pending permission.
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    current.uncancel()  # handled here; the cleanup below must still await
                stop_reason = "cancelled"
                if turn.open_tool_call is not None:
                    await self._send(
                        session,
                        s.SessionToolCallUpdate(
                            tool_call_id=turn.open_tool_call, status="cancelled"
                        ),
                    )
                    turn.open_tool_call = None
            turn.finishing = True
            await self._send(session, self._usage(session))
            # A cancel read while finishing still ends this work as cancelled (CANCEL-07).
            if turn.cancel_requested:
                stop_reason = "cancelled"
            await self._send(session, s.IdleSessionStateUpdate(stop_reason=stop_reason))
        except ConnectionError:
            # The client went away (stdin closed): nobody is left to report to.
            log.info("connection closed during turn %s of %s", turn.number, session.session_id)
        except Exception:
            log.exception("turn %s of %s failed", turn.number, session.session_id)
            # A custom (underscore) stop reason keeps the lifecycle closed for the client.
            with contextlib.suppress(ConnectionError):
                await self._send(session, s.IdleSessionStateUpdate(stop_reason="_internal_error"))
        finally:
            if session.current is turn:
                session.current = None

    async def _work(self, session: Session, turn: Turn) -> None:
        text = _prompt_text(turn.prompt)
        words = len(text.split())
        agent_message_id = f"msg_agent_{turn.number}"
        reply: list[PromptBlock] = []

        async def say(chunk: str) -> None:
            block = _text(chunk)
            reply.append(block)
            session.used_tokens += len(chunk.split()) + 1
            await self._send(
                session, s.AgentMessageChunk(message_id=agent_message_id, content=block)
            )

        session.used_tokens += words + 1
        await self._pause()
        await say("Let me look at your message. ")
        await self._pause()
        await say(f"It has {words} word(s). ")
        if "no tools" not in text.lower():
            await self._pause()
            await self._tool(session, turn, text, say)
        await self._pause()
        await say("Done.")
        session.history.append(("agent", agent_message_id, reply))

    async def _tool(self, session: Session, turn: Turn, text: str, say: Any) -> None:
        session.tool_calls += 1
        call_id = f"call_{session.tool_calls}"
        turn.open_tool_call = call_id
        await self._send(
            session,
            s.SessionToolCallUpdate(
                tool_call_id=call_id,
                title="Counting characters in the prompt",
                kind="read",
                status="pending",
                raw_input={"chars": len(text)},
            ),
        )
        await self._send(session, s.RequiresActionSessionStateUpdate())
        outcome: Any = None
        try:
            response = await self.conn.request_permission(
                session_id=session.session_id,
                title="Allow the character counter?",
                description="The example tool reads the prompt text and counts its characters.",
                subject=s.ToolCallPermissionSubjectVariant(
                    tool_call=s.ToolCallUpdate(tool_call_id=call_id)
                ),
                options=[
                    s.PermissionOption(
                        option_id="allow-once", name="Allow once", kind="allow_once"
                    ),
                    s.PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
                ],
            )
            outcome = response.outcome
        except (RequestError, ValidationError) as error:
            # An error or malformed answer is no approval: the tool fails, the turn goes on.
            log.warning("permission request for %s failed: %s", call_id, error)
        if turn.cancel_requested:
            raise asyncio.CancelledError  # the answer raced our cancellation
        await self._send(session, s.RunningSessionStateUpdate())
        # Only the allow option approves; any other selection or outcome does not (PERM-11).
        allowed = (
            isinstance(outcome, s.SelectedPermissionOutcomeVariant)
            and outcome.option_id == "allow-once"
        )
        if not allowed:
            final = "cancelled" if isinstance(outcome, s.CancelledPermissionOutcome) else "failed"
            await self._send(
                session,
                s.SessionToolCallUpdate(
                    tool_call_id=call_id,
                    status=final,
                    content=[
                        s.ContentToolCallContent(content=_text("Permission was not granted."))
                    ],
                ),
            )
            turn.open_tool_call = None
            await say("I did not run the tool. ")
            return
        await self._send(
            session, s.SessionToolCallUpdate(tool_call_id=call_id, status="in_progress")
        )
        await self._pause()
        await self._send(
            session,
            s.ToolCallContentChunkUpdate(
                tool_call_id=call_id, content=s.ContentToolCallContent(content=_text("Counting..."))
            ),
        )
        await self._pause()
        result = f"{len(text)} characters"
        await self._send(
            session,
            s.SessionToolCallUpdate(
                tool_call_id=call_id,
                status="completed",
                content=[s.ContentToolCallContent(content=_text(result))],
                raw_output={"chars": len(text)},
            ),
        )
        turn.open_tool_call = None
        await say(f"The tool counted {result}. ")

    def _usage(self, session: Session) -> s.UsageUpdate:
        session.cost = round(session.used_tokens * 0.000002, 6)
        return s.UsageUpdate(
            used=min(session.used_tokens, CONTEXT_SIZE),
            size=CONTEXT_SIZE,
            cost=s.Cost(amount=session.cost, currency="USD"),
        )


def main() -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("ACP_EXAMPLE_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    asyncio.run(run_agent(ExampleAgent()))


if __name__ == "__main__":
    main()
