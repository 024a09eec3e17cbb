"""One run's measurement of the agent's own coverage (``--coverage``).

The :class:`Collector` owns a temporary folder with the runtime hooks (``data/``) and what they
write. :meth:`Collector.env` is what the agent's environment gains: a ``--require`` of the
Node hook in ``NODE_OPTIONS`` and the Python hook's folder first on ``PYTHONPATH``, so every
Node or Python process the agent starts is measured, each registering itself
(``pid-PID.json``). :meth:`Collector.snapshot` (after each example) asks every registered
process that still runs for what it ran (SIGUSR2, the request's number in ``request``) and
waits for each one's acknowledgement file, the proof its snapshot is written, then reads the
snapshots: the lines reached for the first time are the fuzzer's compass
(``fuzzing/machine.py``). :meth:`Collector.result` is the run's figures.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from acp_model.agentcov import pycov, v8
from acp_model.agentcov.result import AgentCoverage, FileFigures
from acp_model.agentcov.scope import Scope, read_source

SNAPSHOT_WAIT = 5.0  # seconds a snapshot waits for every process's acknowledgement


@dataclass
class _Script:
    """A JavaScript file in scope: its lines as V8 counts them, restricted to the scope."""

    lines: v8.ScriptLines
    scoped: set[int] | None  # None: every line of the file


@dataclass
class Process:
    pid: int
    runtime: str
    start: str = ""
    executable: str = ""

    def alive(self) -> bool:
        """Still the process that registered (a reused pid has another start time)."""
        try:
            os.kill(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        if not self.start:
            return True
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text(encoding="utf-8")
            return stat.split(") ")[1].split(" ")[19] == self.start
        except (OSError, IndexError):
            return True  # no /proc (not Linux): the pid is all there is


@dataclass
class Collector:
    """The hooks, the snapshots and what they add up to, for one run."""

    scope: Scope
    folder: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="acp-model-coverage-"))
    processes: dict[int, Process] = field(default_factory=dict)
    js: dict[str, v8.ScriptCoverage] = field(default_factory=dict)
    py: dict[str, set[int]] = field(default_factory=dict)
    reached: set[tuple[str, int]] = field(default_factory=set)  # (file, line) ever reached
    samples: list[dict[str, Any]] = field(default_factory=list)
    _scripts: dict[str, _Script | None] = field(default_factory=dict)
    _read: set[str] = field(default_factory=set)  # snapshot files read (JS: once each)
    _request: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.data = os.path.join(self.folder, "data")
        self.hooks = os.path.join(self.folder, "hooks")
        os.makedirs(self.data, exist_ok=True)
        os.makedirs(os.path.join(self.hooks, "py"), exist_ok=True)
        here = resources.files("acp_model.agentcov").joinpath("data")
        self.preload = os.path.join(self.hooks, "preload.cjs")
        Path(self.preload).write_bytes(here.joinpath("preload.cjs").read_bytes())
        site = os.path.join(self.hooks, "py", "sitecustomize.py")
        Path(site).write_bytes(here.joinpath("sitecustomize.py").read_bytes())
        # coverage.py for the agent's interpreter: this one's package, and nothing else of ours
        os.symlink(os.path.join(pycov.coverage_home(), "coverage"),
                   os.path.join(self.hooks, "py", "coverage"))

    # --- the agent's side --------------------------------------------------------------------
    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """The variables that make the agent's processes measure themselves (on top of
        ``base``, the environment they would get)."""
        node = f"{base.get('NODE_OPTIONS', '')} --require {self.preload}".strip()
        path = os.path.join(self.hooks, "py")
        if base.get("PYTHONPATH"):
            path += os.pathsep + base["PYTHONPATH"]
        return {"ACPM_COVERAGE_DIR": self.data, "NODE_OPTIONS": node, "PYTHONPATH": path,
                "ACPM_COVERAGE_FILES": json.dumps(self.scope.file_regexes()),
                "ACPM_COVERAGE_MAIN": json.dumps(self.scope.main_regexes()),
                "ACPM_COVERAGE_INCLUDE": json.dumps(self.scope.python_include())}

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Collector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- snapshots ------------------------------------------------------------------------------
    def _register(self) -> None:
        for name in os.listdir(self.data):
            if name.startswith("pid-") and name.endswith(".json"):
                pid = int(name[4:-5])
                if pid in self.processes:
                    continue
                try:
                    facts = json.loads(Path(self.data, name).read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue  # still being written: the next look finds it
                self.processes[pid] = Process(pid, str(facts.get("runtime", "")),
                                              str(facts.get("start", "")),
                                              str(facts.get("executable", "")))

    def snapshot(self, timeout: float = SNAPSHOT_WAIT) -> int:
        """Ask each live process for its coverage and await its acknowledgement (at most
        ``timeout``); returns how many lines in scope were reached for the first time."""
        with self._lock:
            self._register()
            self._request += 1
            ask = str(self._request)
            request = os.path.join(self.data, "request")
            Path(request + ".part").write_text(ask, encoding="utf-8")
            os.replace(request + ".part", request)
            waiting = []
            for proc in self.processes.values():
                if proc.alive():
                    try:
                        os.kill(proc.pid, signal.SIGUSR2)
                        waiting.append(proc)
                    except ProcessLookupError:
                        pass
            end = time.monotonic() + timeout
            while waiting and time.monotonic() < end:
                waiting = [p for p in waiting
                           if not os.path.exists(os.path.join(self.data, f"ack-{p.pid}-{ask}"))
                           and p.alive()]
                if waiting:
                    time.sleep(0.01)  # an acknowledgement is a file: looked for, not slept on
            return self._collect()

    def _collect(self) -> int:
        """Read the snapshots written since the last look; the count of newly reached lines."""
        before = len(self.reached)
        names = sorted(os.listdir(self.data))
        for name in names:
            full = os.path.join(self.data, name)
            if name.startswith("v8-") and name.endswith(".json") and name not in self._read:
                self._read.add(name)
                for script in v8.read_snapshot(full):
                    self._add_script(script)
            elif name.startswith("py-") and name.endswith(".json") and name not in self._read:
                self._read.add(name)  # cumulative per process: the newest one holds the rest
                for path, lines in pycov.read_snapshot(full).items():
                    if self.scope.auto or self.scope.wants(path):
                        self.py.setdefault(path, set()).update(lines)
                        self.reached.update((path, n) for n in lines)
        return len(self.reached) - before

    def _add_script(self, script: Mapping[str, Any]) -> None:
        path = v8.script_path(str(script.get("url", "")))
        if path is None or not self.scope.wants(path):
            return
        known = self._scripts.get(path, False)
        if known is False:
            text = read_source(path)
            known = None if text is None else _Script(v8.ScriptLines.of(text),
                                                      self.scope.lines(path, text))
            if known is not None and known.scoped is not None:
                known.lines.first = {n: o for n, o in known.lines.first.items()
                                     if n in known.scoped}
            self._scripts[path] = known
        if known is None:
            return
        cov = self.js.setdefault(path, v8.ScriptCoverage(path))
        cov.add(script.get("functions") or (), known.lines)
        self.reached.update((path, n) for n in cov.lines)

    def sample(self, seconds: float, examples: int) -> None:
        """One point of the run's curve: lines reached so far."""
        self.samples.append({"seconds": round(seconds, 3), "examples": examples,
                             "lines": len(self.reached)})

    # --- the figures ---------------------------------------------------------------------------
    def result(self, *, html: str | None = None) -> AgentCoverage:
        """The run's figures (a last look at what the processes wrote as they exited)."""
        with self._lock:
            self._register()
            self._collect()
        files = [self._js_figures(path, cov) for path, cov in sorted(self.js.items())]
        files += self._unloaded_js()
        notes: list[str] = []
        files += self._python_figures(notes, html)
        runtimes = sorted({p.runtime for p in self.processes.values()})
        if not self.processes:
            notes.append("no process of the agent was measured: neither the Node hook nor the "
                          "Python one ran in it (a native executable, or a runtime such as "
                          "Bun that reads neither)")
        return AgentCoverage(scope=self.scope.describe(), runtimes=runtimes,
                             processes=len(self.processes), files=files,
                             samples=list(self.samples), notes=notes)

    def _js_figures(self, path: str, cov: v8.ScriptCoverage) -> FileFigures:
        script = self._scripts.get(path)
        lines = set(script.lines.first) if script else set()
        scoped = script.scoped if script else None
        functions = {start: ran for start, (_, ran) in cov.functions.items()
                     if script is None or scoped is None
                     or script.lines.line_of(start) in scoped}
        return FileFigures(path, "node", lines & cov.lines, lines,
                           sum(functions.values()), len(functions), loaded=True, span=scoped)

    def _unloaded_js(self) -> list[FileFigures]:
        """Layer scripts no process loaded: listed, not counted (a bundler copies modules
        into several chunks, of which a run loads one)."""
        out = []
        for path in self.scope.files_on_disk():
            if path.endswith((".js", ".mjs", ".cjs")) and path not in self.js:
                out.append(FileFigures(path, "node", set(), set(), 0, 0, loaded=False))
        return out

    def _python_figures(self, notes: list[str], html: str | None) -> list[FileFigures]:
        ran = dict(self.py)
        for path in self.scope.files_on_disk():
            if path.endswith(".py"):
                ran.setdefault(path, set())  # in the layer, never imported: nothing ran
        if self.scope.auto:
            ran = {p: lines for p, lines in ran.items() if _imports_sdk(p)}
        if not ran:
            return []
        executable = next((p.executable for p in self.processes.values()
                           if p.runtime == "python" and p.executable), "")
        if not executable:
            notes.append("no Python process of the agent registered: its layer's files are "
                          "listed with nothing run")
        found, problem = pycov.analyse(ran, executable, os.path.join(self.hooks, "py"),
                                       html=os.path.join(html, "python") if html else None,
                                       title="acp-model: the agent's ACP layer")
        if problem:
            notes.append(problem)
        out = []
        for path, lines in sorted(ran.items()):
            f = found.get(path) or pycov.PythonFile(path, lines)
            if f.error:
                notes.append(f"{path}: not analysed ({f.error})")
            out.append(FileFigures(path, "python", f.reached, f.statements,
                                   f.functions_reached(), len(f.functions), loaded=bool(lines)))
        return out


def _imports_sdk(path: str) -> bool:
    from acp_model.agentcov.scope import PY_SDK

    text = read_source(path)
    return text is not None and bool(PY_SDK.search(text))


__all__ = ["Collector", "Process"]
