"""What a client that advertised file-system, terminal or elicitation capabilities owes the
agent: answers to ``fs/read_text_file``, ``fs/write_text_file``, ``terminal/*`` and
``elicitation/create``, served as an editor would, inside the run's workspace.

A path or a working directory outside the workspace is refused (invalid params), as an editor
refuses a file outside its project; a missing file is ``resource not found``. Terminals run
their command in their own process group (a command with no arguments and a space in it runs
through ``sh -c``, as agents that send a whole command line expect), keep their output up to
the byte limit the agent asked for (the oldest output dropped first, at a character boundary),
and are killed when released, killed or when the connection closes. Elicitations are
answered in turn with each action of the schema (``accept`` with content that fits the
requested form, ``decline``, ``cancel``), as users who fill in, refuse or dismiss it; the
monitor sees the request and its answer as any other (a session-scoped one is a user-action
wait of its session: STATE-05/06, SDK-ELICIT-01). Requests are served on worker threads:
``terminal/wait_for_exit`` may wait for a command for as long as it runs, and the connection's
delivery thread must never wait on one.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from acp_model.fuzzing.calls import AgentExited
from acp_model.model.vocab import ElicitationAction, ErrorCode

FS_READ, FS_WRITE = "fs/read_text_file", "fs/write_text_file"
TERMINAL_METHODS = ("terminal/create", "terminal/output", "terminal/wait_for_exit",
                    "terminal/kill", "terminal/release")
ELICIT = "elicitation/create"
DEFAULT_OUTPUT_LIMIT = 1 << 20
# the answers a user gives an elicitation ($defs.CreateElicitationResponse)
USER_ELICITATION_ACTIONS = (ElicitationAction.ACCEPT, ElicitationAction.DECLINE,
                            ElicitationAction.CANCEL)


def form_value(spec: Any) -> Any:
    """A value a user could enter in one field of an elicitation form
    (``$defs.ElicitationPropertySchema``): an offered choice where there are some, else a
    value of the field's type within its bounds."""
    spec = spec if isinstance(spec, Mapping) else {}
    kind = spec.get("type")
    choices = spec.get("enum") or [o.get("const") for o in spec.get("oneOf") or []
                                   if isinstance(o, Mapping) and "const" in o]
    if kind == "array":
        items = spec.get("items") if isinstance(spec.get("items"), Mapping) else {}
        options = items.get("enum") or [o.get("const") for o in items.get("anyOf") or []
                                        if isinstance(o, Mapping) and "const" in o]
        return list(options[:max(int(spec.get("minItems") or 0), 1)]) if options else []
    if choices:
        return choices[0]
    if kind == "boolean":
        return True
    if kind in ("number", "integer"):
        low = spec.get("minimum")
        return low if isinstance(low, (int, float)) else 1
    if kind == "string":
        text = "acp-model"
        return text + "x" * max(int(spec.get("minLength") or 0) - len(text), 0)
    return spec.get("default")


def elicitation_result(params: Mapping[str, Any], action: ElicitationAction
                       ) -> dict[str, Any]:
    """The response a user gives an elicitation with ``action``: accept (a form's fields
    filled in, a URL's visited), decline or cancel."""
    if action != ElicitationAction.ACCEPT:
        return {"action": str(action)}
    form = params.get("requestedSchema")
    if params.get("mode") != "form" or not isinstance(form, Mapping):
        return {"action": "accept"}
    fields = form.get("properties") if isinstance(form.get("properties"), Mapping) else {}
    return {"action": "accept",
            "content": {name: form_value(spec) for name, spec in fields.items()}}


class Refused(Exception):
    """A request the client answers with an error (code, message)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class ClientTerminal:
    """One command the agent runs through the client."""

    proc: subprocess.Popen[bytes]
    limit: int
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    reader: threading.Thread | None = None

    def pump(self) -> None:
        assert self.proc.stdout is not None
        for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):  # type: ignore[union-attr]
            with self.lock:
                self.output += chunk
                if len(self.output) > self.limit:
                    cut = len(self.output) - self.limit
                    while cut < len(self.output) and (self.output[cut] & 0xC0) == 0x80:
                        cut += 1  # not inside a UTF-8 character
                    del self.output[:cut]
                    self.truncated = True

    def status(self) -> dict[str, Any] | None:
        code = self.proc.poll()
        if code is None:
            return None
        if code < 0:
            return {"exitCode": None, "signal": signal.Signals(-code).name}
        return {"exitCode": code, "signal": None}

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


class ClientServices:
    """The client's side of the methods its capabilities advertised, for one connection.

    ``respond(request_id, result=..., error=...)`` writes an answer; ``workspace`` bounds every
    path. ``offered`` names the methods served (``editors.serves``); any other is left to the
    caller (method not found)."""

    def __init__(self, offered: Mapping[str, bool], workspace: str,
                 respond: Callable[..., None], served: Counter[str] | None = None) -> None:
        self.offered = {m for m, on in offered.items() if on}
        self.workspace = os.path.realpath(workspace)
        self.respond = respond
        self.terminals: dict[str, ClientTerminal] = {}
        # method -> requests answered, with a result or an error (the report's client.served)
        self.served: Counter[str] = served if served is not None else Counter()
        self._ids = itertools.count(1)
        self._elicitations = itertools.cycle(USER_ELICITATION_ACTIONS)
        self._lock = threading.Lock()
        # requests taken whose answer is not yet written: the client still owes them, and a
        # look at what the agent owes must not judge them before the worker answered
        self._answering: list[Any] = []
        self._answered = threading.Condition(self._lock)
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False

    def handles(self, method: str) -> bool:
        if method in (FS_READ, FS_WRITE):
            return method in self.offered
        if method in TERMINAL_METHODS:
            return "terminal" in self.offered
        return method == ELICIT and "elicitation" in self.offered

    def take(self, msg: Mapping[str, Any]) -> bool:
        """Answer the agent's request ``msg`` on a worker thread if it is one of the methods
        served (True); False leaves it to the caller."""
        if not self.handles(str(msg.get("method"))):
            return False
        with self._lock:
            if not self._closed:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=8,
                                                    thread_name_prefix="client-svc")
                self._answering.append(msg.get("id"))
                self._pool.submit(self._answer, msg)
        return True

    def answering(self, timeout: float = 0.0) -> list[Any]:
        """The ids of the requests taken whose answer is not yet written, once none is left
        or ``timeout`` seconds have passed (a worker on a loaded machine, or one waiting for a
        terminal's exit, may take long)."""
        with self._answered:
            self._answered.wait_for(lambda: not self._answering, timeout)
            return list(self._answering)

    def serve(self, msg: Mapping[str, Any]) -> None:
        """Answer ``msg`` (one of the methods served) on a worker thread."""
        self.take(msg)

    def _send(self, rid: Any, result: Any = None, error: Any = None) -> None:
        with contextlib.suppress(AgentExited, TimeoutError):  # the agent went meanwhile
            self.respond(rid, result=result, error=error)

    def _answer(self, msg: Mapping[str, Any]) -> None:
        try:
            self._serve(msg)
        finally:  # written (the transcript has it) or given up: owed no more by this worker
            with self._answered:
                with contextlib.suppress(ValueError):
                    self._answering.remove(msg.get("id"))
                self._answered.notify_all()

    def _serve(self, msg: Mapping[str, Any]) -> None:
        method = str(msg.get("method"))
        params = msg.get("params") if isinstance(msg.get("params"), Mapping) else {}
        with self._lock:
            self.served[method] += 1  # answered, with a result or an error
        try:
            result = self._dispatch(method, params)
        except Refused as exc:
            self._send(msg["id"], error={"code": exc.code, "message": str(exc)})
            return
        except Exception as exc:  # an OS error serving it: the agent gets an internal error
            self._send(msg["id"], error={"code": ErrorCode.INTERNAL_ERROR,
                                         "message": f"{type(exc).__name__}: {exc}"})
            return
        self._send(msg["id"], result=result)

    def _dispatch(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if method == FS_READ:
            return self.read(params)
        if method == FS_WRITE:
            return self.write(params)
        if method == ELICIT:
            return self.elicit(params)
        if method == "terminal/create":
            return self.create(params)
        term = self._terminal(params)
        if method == "terminal/output":
            status = term.status()
            if status is not None and term.reader is not None:
                term.reader.join(5)  # all the output (and its truncation) before the exit status
            with term.lock:
                out = {"output": term.output.decode("utf-8", "replace"),
                       "truncated": term.truncated}
            if status is not None:
                out["exitStatus"] = status
            return out
        if method == "terminal/wait_for_exit":
            term.proc.wait()
            return term.status() or {"exitCode": None, "signal": None}
        if method == "terminal/kill":
            term.kill()
            return {}
        with self._lock:  # terminal/release
            self.terminals.pop(str(params.get("terminalId")), None)
        term.kill()
        return {}

    # --- files ------------------------------------------------------------------------------
    def inside(self, path: Any, what: str = "path") -> str:
        """``path`` resolved, refused unless it is absolute and inside the workspace."""
        if not isinstance(path, str) or not os.path.isabs(path):
            raise Refused(ErrorCode.INVALID_PARAMS, f"{what} {path!r} is not an absolute path")
        real = os.path.realpath(path)
        if os.path.commonpath([self.workspace, real]) != self.workspace:
            raise Refused(ErrorCode.INVALID_PARAMS,
                          f"{what} {path} is outside the workspace {self.workspace}")
        return real

    def read(self, params: Mapping[str, Any]) -> dict[str, Any]:
        path = self.inside(params.get("path"))
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines(keepends=True)
        except FileNotFoundError:
            raise Refused(ErrorCode.RESOURCE_NOT_FOUND, f"no such file: {path}") from None
        except IsADirectoryError:
            raise Refused(ErrorCode.INVALID_PARAMS, f"{path} is a directory") from None
        first = max(int(params.get("line") or 1), 1) - 1
        limit = params.get("limit")
        chosen = lines[first:] if limit is None else lines[first:first + max(int(limit), 0)]
        return {"content": "".join(chosen)}

    def write(self, params: Mapping[str, Any]) -> dict[str, Any]:
        path = self.inside(params.get("path"))
        content = params.get("content")
        if not isinstance(content, str):
            raise Refused(ErrorCode.INVALID_PARAMS, "content is not a text")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(content)
        return {}

    # --- elicitations -------------------------------------------------------------------------
    def elicit(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The next action in turn: accept (a form's fields filled in, a URL's visited),
        decline or cancel."""
        with self._lock:
            action = next(self._elicitations)
        return elicitation_result(params, action)

    # --- terminals ----------------------------------------------------------------------------
    def create(self, params: Mapping[str, Any]) -> dict[str, Any]:
        command = params.get("command")
        if not isinstance(command, str) or not command:
            raise Refused(ErrorCode.INVALID_PARAMS, "command is not a text")
        args = [str(a) for a in params.get("args") or []]
        cwd = self.inside(params["cwd"], "cwd") if params.get("cwd") else self.workspace
        env = {**os.environ}
        for var in params.get("env") or []:
            if isinstance(var, Mapping) and isinstance(var.get("name"), str):
                env[var["name"]] = str(var.get("value", ""))
        argv = [command, *args] if args or " " not in command else ["sh", "-c", command]
        limit = params.get("outputByteLimit")
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        except OSError as exc:
            raise Refused(ErrorCode.INTERNAL_ERROR, f"cannot run {command!r}: {exc}") from None
        term = ClientTerminal(proc, int(limit) if isinstance(limit, int) else DEFAULT_OUTPUT_LIMIT)
        term.reader = threading.Thread(target=term.pump, daemon=True, name="terminal-output")
        term.reader.start()
        tid = f"acpm-term-{next(self._ids)}"
        with self._lock:
            self.terminals[tid] = term
        return {"terminalId": tid}

    def _terminal(self, params: Mapping[str, Any]) -> ClientTerminal:
        with self._lock:
            term = self.terminals.get(str(params.get("terminalId")))
        if term is None:
            raise Refused(ErrorCode.INVALID_PARAMS,
                          f"no terminal {params.get('terminalId')!r} (never made, or released)")
        return term

    def close(self) -> None:
        """Kill every terminal and stop serving (the connection is closing)."""
        with self._lock:
            self._closed = True
            terms, self.terminals = list(self.terminals.values()), {}
            pool = self._pool
            self._answering.clear()  # the queued answers are cancelled below
            self._answered.notify_all()
        for term in terms:
            term.kill()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


__all__ = [
    "USER_ELICITATION_ACTIONS",
    "ClientServices",
    "ClientTerminal",
    "Refused",
    "elicitation_result",
]
