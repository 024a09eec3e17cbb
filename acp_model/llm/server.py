"""The scripted model: a loopback HTTP server that answers an agent's model API as a program says.

One :class:`ScriptedModel` serves one model API (an adapter module: Anthropic Messages, OpenAI
Responses, ...) on ``127.0.0.1`` from its own thread, with aiohttp's HTTP/1.1 server (real
chunked streaming and server-sent events; a stalled stream notices the agent hanging up).

The fuzzer registers a turn's :data:`~acp_model.llm.script.ModelScript` under a tag and writes
the tag into the prompt (``[acpm:7]``). Each model request the agent makes is matched to its
turn by that tag in the conversation it sends, and to a step of the script by the number of
tool-result rounds since the tagged message. Requests that belong to no scripted turn (title
generation, suggestions, a prompt sent without a script) get a one-chunk text at once, so side
requests cost the agent almost nothing. The adapters know the wire formats; this module knows
the behaviour.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from acp_model.llm.apis import ADAPTERS
from acp_model.llm.script import (
    END,
    Fail,
    ModelScript,
    ModelToolCall,
    Reply,
    Stall,
    StopReply,
    Text,
    Tools,
)
from acp_model.llm.tools import OfferedTool, escapes, long_running, materialize, plan
from acp_model.llm.wire import Gone, ModelGate, ModelRequest, ReplyContext, ResponsePart, tag_text

__all__ = ["Adapter", "ModelGate", "ResponsePart", "ScriptedModel", "Served", "TurnWindow",
           "tag_text"]

STALL_LIMIT = 60.0  # seconds a stalled response waits for the agent to hang up
JOURNAL = 2000  # model requests remembered (tests and reports read them)
OFFERED = 200  # turns whose offered tools are remembered (``acp-model agents tools``)
SENT_TURNS = 20000  # turns whose tool calls are remembered (counterexamples resolve them)


@dataclass(frozen=True, slots=True)
class Served:
    """One entry of the journal: which turn, which step, what the model did."""

    tag: str | None
    step: int
    reply: str  # the reply name ("side" for a request of no scripted turn)
    attempt: int
    calls: tuple[ModelToolCall, ...] = ()  # the concrete tool calls sent (a ``Tools`` reply)


class TurnWindow(Protocol):
    """Who hears when a scripted turn's model requests open and end, by owner (the fuzzer's
    ``ModelWindow``: whether the turn was done when a cancel was written)."""

    def requested(self, owner: str) -> None: ...

    def answered(self, owner: str, *, final: bool) -> None: ...


class Adapter(Protocol):
    """One model API's wire format."""

    name: str
    routes: tuple[tuple[str, str], ...]  # (method, path) of the model requests it serves

    def env(self, base_url: str) -> dict[str, str]:
        """The environment that points a client of this API at ``base_url``."""

    def parse(self, body: Any) -> ModelRequest: ...

    async def respond(self, request: web.Request, reply: Reply, req: ModelRequest,
                      ctx: ReplyContext) -> web.StreamResponse: ...

    async def other(self, request: web.Request) -> web.StreamResponse | None:
        """Answer an auxiliary endpoint (token counts, model lists), or None."""


class ScriptedModel:
    """A loopback model server for one API; ``with ScriptedModel("anthropic") as m:``."""

    def __init__(self, api: str, *, workspace: str | None = None,
                 stall_limit: float = STALL_LIMIT, prefer_tools: Sequence[str] = ()) -> None:
        if api not in ADAPTERS:
            raise ValueError(f"unknown model API {api!r}; choose one of "
                             f"{', '.join(sorted(ADAPTERS))}")
        self.api = api
        self.adapter: Adapter = ADAPTERS[api]()
        self.workspace = workspace
        self.stall_limit = stall_limit
        self.prefer_tools = tuple(prefer_tools)  # a profile's steering of the tool choice
        # calls the guard kept back (a path outside the scratch folder): (tag, call, path)
        self.refused: list[tuple[str | None, ModelToolCall, str]] = []
        self._offered: OrderedDict[str, tuple[OfferedTool, ...]] = OrderedDict()
        self.port = 0
        self.journal: deque[Served] = deque(maxlen=JOURNAL)
        self.requests = 0
        self._scripts: dict[str, ModelScript] = {}
        self._gates: dict[str, ModelGate] = {}  # tag -> who hears (and may hold) its turn
        self._windows: dict[str, TurnWindow] = {}  # tag -> who hears its requests open and end
        self._latest: dict[str, str] = {}  # owner (the fuzzer: a session) -> its newest tag
        self._owners: dict[str, str] = {}  # tag -> its owner
        self._released: set[str] = set()  # tags whose stalls end now (``end_stalls``)
        self._stalls: dict[str, int] = {}  # tag -> responses of its turn stalled right now
        self._serving: dict[str, int] = {}  # tag -> responses of its turn in flight right now
        # tag -> the step whose long-running command may still run (no request of a later
        # step, the one carrying its result, has come yet)
        self._running: dict[str, int] = {}
        self._attempts: dict[tuple[str, int], int] = {}
        # tag -> step -> the tool calls sent (what a counterexample shows and a replay resends)
        self._sent: OrderedDict[str, dict[int, tuple[ModelToolCall, ...]]] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    # --- life ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The environment variables a client of this API reads to find the server."""
        return self.adapter.env(self.url)

    def start(self) -> ScriptedModel:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve())
            except BaseException as exc:  # reported to start() below
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup() if self._runner else asyncio.sleep(0))
            loop.close()

        self._thread = threading.Thread(target=run, name=f"scripted-model-{self.api}",
                                        daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure:
            raise failure[0]
        return self

    async def _serve(self) -> None:
        app = web.Application(client_max_size=64 << 20)
        for method, path in self.adapter.routes:
            app.router.add_route(method, path, self._model_request)
        app.router.add_route("*", "/{tail:.*}", self._other)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server  # the bound socket tells the port chosen for 0
        self.port = server.sockets[0].getsockname()[1] if server is not None else 0

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the program's side ------------------------------------------------------------------
    def register(self, script: ModelScript, owner: str | None = None,
                 gate: ModelGate | None = None, window: TurnWindow | None = None) -> str:
        """Keep a turn's script; returns the tag to write into its prompt. ``owner`` names
        whose turn it is, for :meth:`stalling`; ``gate`` hears every request and release of
        the turn, and may hold them (the boundary schedule of the connection that prompts);
        ``window`` hears the owner's newest turn's requests open and end."""
        with self._lock:
            tag = f"{next(self._ids):x}"
            self._scripts[tag] = tuple(script)
            if gate is not None:
                self._gates[tag] = gate
            if window is not None and owner is not None:
                self._windows[tag] = window
            if owner is not None:
                self._latest[owner] = tag
                self._owners[tag] = owner
        return tag

    def end_stalls(self, owner: str) -> int:
        """End every stalled response of ``owner``'s turns now (each finishes as a one-chunk
        text), and let no later request of those turns stall: an agent that waits for its
        model's stream to end before it answers a cancel is slow, not provably dead, and
        only a stream that ends can show which. Returns how many responses were stalled."""
        with self._lock:
            tags = [t for t, n in self._stalls.items() if n > 0 and self._owners.get(t) == owner]
            self._released.update(tags)
            return sum(self._stalls[t] for t in tags)

    def running_long(self, owner: str) -> bool:
        """May a long-running command the model asked for in one of ``owner``'s turns still
        run (no request of that turn has carried its result back yet)?"""
        with self._lock:
            return any(self._owners.get(t) == owner for t in self._running)

    def _stall_ended(self, tag: str) -> bool:
        with self._lock:
            return tag in self._released

    def stalling(self, owner: str) -> bool:
        """Is a response of ``owner``'s newest turn stalled right now? Then nothing more comes
        of it until a cancel: a client need not wait for the turn to settle. (An older turn's
        stall says nothing: the agent may have left it.)"""
        with self._lock:
            tag = self._latest.get(owner)
            return tag is not None and self._stalls.get(tag, 0) > 0

    def commanding(self, owner: str) -> bool:
        """Did the model give ``owner``'s newest turn a long-running command whose result has
        not come back yet? Only once the agent reports it running does nothing more come until
        it ends or a cancel (before that, the agent still reports it, or asks to run it)."""
        with self._lock:
            tag = self._latest.get(owner)
            return tag is not None and tag in self._running

    def serving(self, owner: str) -> bool:
        """Is a response of ``owner``'s newest turn in flight right now (streaming, or
        stalled)? A cancel then meets a model request, which the agent should stop."""
        with self._lock:
            tag = self._latest.get(owner)
            return tag is not None and self._serving.get(tag, 0) > 0

    def served(self, tag: str | None = None) -> list[Served]:
        with self._lock:
            return [s for s in self.journal if tag is None or s.tag == tag]

    def offered(self, tag: str) -> tuple[OfferedTool, ...]:
        """The tools the agent offered its model in the first request of turn ``tag``
        (empty: no request of that turn came yet)."""
        with self._lock:
            return self._offered.get(tag, ())

    def sent(self, tag: str) -> dict[int, tuple[ModelToolCall, ...]]:
        """The tool calls the model sent in the turn ``tag``, by step (the first attempt's)."""
        with self._lock:
            return dict(self._sent.get(tag, {}))

    def reply_for(self, req: ModelRequest) -> tuple[Reply, int, tuple[ModelToolCall, ...]]:
        """The reply a request gets, the attempt it is (a retry of a failed step), and the
        concrete calls of a ``Tools`` reply (the agent's own tools, ``llm.tools``)."""
        with self._lock:
            self.requests += 1
            script = self._scripts.get(req.tag) if req.tag is not None else None
            if script is None:
                self.journal.append(Served(req.tag, req.step, "side", 1))
                return END, 1, ()
            tag = req.tag or ""
            if req.tools and tag not in self._offered:
                self._offered[tag] = req.tools
                while len(self._offered) > OFFERED:
                    self._offered.popitem(last=False)
            if self._running.get(tag, req.step) < req.step:
                del self._running[tag]  # this request carries the long command's result
            key = (req.tag or "", req.step)
            attempt = self._attempts[key] = self._attempts.get(key, 0) + 1
            reply = script[req.step] if req.step < len(script) else END
            if isinstance(reply, Fail) and attempt > 1:
                reply = Text(1)  # the retry of a failed request goes through
        calls: tuple[ModelToolCall, ...] = ()
        if isinstance(reply, Tools):  # outside the lock: a schema's first draw takes a while
            planned = plan(reply, req.tools, f"acpm-{req.tag}-{req.step}", self.prefer_tools)
            calls = self._confined(req.tag, planned)
            if planned and not calls:
                reply = END  # every call was kept back: the turn ends with a short text
        with self._lock:
            self.journal.append(Served(req.tag, req.step, reply.reply, attempt, calls))
            if req.tag is not None and any(long_running(c) for c in calls):
                self._running[req.tag] = req.step
            if calls and req.tag is not None:
                self._sent.setdefault(req.tag, {}).setdefault(req.step, calls)
                self._sent.move_to_end(req.tag)
                while len(self._sent) > SENT_TURNS:
                    self._sent.popitem(last=False)
        return reply, attempt, calls

    def _confined(self, tag: str | None, calls: tuple[ModelToolCall, ...]
                  ) -> tuple[ModelToolCall, ...]:
        """``calls`` without those whose arguments, as sent, name a path outside the run's
        scratch folder (``llm.tools.escapes``): such a call is kept back and noted."""
        kept = []
        for call in calls:
            bad = escapes(materialize(call.arguments, self.workspace), self.workspace)
            if bad is None:
                kept.append(call)
            else:
                with self._lock:
                    self.refused.append((tag, call, bad))
        return tuple(kept)

    # --- HTTP --------------------------------------------------------------------------------
    async def _model_request(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": {"message": "body is not JSON"}}, status=400)
        except ConnectionError:  # the agent hung up (a cancel) before its request was read
            return web.Response(status=499)
        req = self.adapter.parse(body)
        reply, attempt, calls = self.reply_for(req)
        gate = self._gates.get(req.tag) if req.tag is not None else None
        ctx = ReplyContext(req.tag or "side", req.step, self.workspace, self.stall_limit, calls,
                           lambda: req.tag is not None and self._stall_ended(req.tag),
                           gate, attempt, reply.pace_ms if isinstance(reply, Text) else 0,
                           reply.pause_ms if isinstance(reply, Tools) else 0)
        stalled = req.tag if isinstance(reply, Stall) else None
        self._count(self._stalls, stalled, 1)
        self._count(self._serving, req.tag, 1)
        owner, window = self._window_of(req.tag)
        if window is not None:
            window.requested(owner)
        final = False
        try:
            if gate is not None and req.tag is not None:
                await gate.requested(req.tag, req.step, attempt)
            if reply.first_byte_ms:  # the model thinks before its response starts
                await asyncio.sleep(reply.first_byte_ms / 1000)
            response = await self.adapter.respond(request, reply, req, ctx)
            # the turn's end, written whole: nothing is left for the agent but its stop reason
            final = isinstance(reply, Text | StopReply) and not calls
            return response
        except (Gone, ConnectionError):
            # The agent hung up (a cancel), mid-stream or before the headers went out:
            # nothing more to send, and nothing for the user's terminal.
            if gate is not None and req.tag is not None and not isinstance(reply, Fail):
                gate.hung_up(req.tag, req.step, attempt)  # (a dropped stream is the model's)
            return web.Response(status=499)
        finally:
            self._count(self._stalls, stalled, -1)
            self._count(self._serving, req.tag, -1)
            if window is not None:  # (a final of a turn the owner has left says nothing)
                window.answered(owner, final=final and self._window_of(req.tag)[1] is not None)

    def _window_of(self, tag: str | None) -> tuple[str, TurnWindow | None]:
        """The owner of turn ``tag`` and its window, while it is the owner's newest turn."""
        with self._lock:
            owner = self._owners.get(tag or "")
            window = self._windows.get(tag or "")
            if owner is None or window is None or self._latest.get(owner) != tag:
                return "", None
            return owner, window

    def _count(self, counts: dict[str, int], tag: str | None, step: int) -> None:
        if tag is not None:
            with self._lock:
                if n := counts.get(tag, 0) + step:
                    counts[tag] = n
                else:
                    del counts[tag]

    async def _other(self, request: web.Request) -> web.StreamResponse:
        answer = await self.adapter.other(request)
        if answer is not None:
            return answer
        return web.json_response({"error": {"message": f"not served: {request.path}"}},
                                 status=404)


