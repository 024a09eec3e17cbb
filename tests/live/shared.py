"""Runs the live tier shares: one fuzz run serves every test that asserts on it."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from acp_model.fuzzing.config import FuzzConfig


@dataclass(frozen=True)
class SharedRun:
    """A finished ``acp-model fuzz`` run: its exit code, output and files."""

    folder: Path
    result: dict[str, Any]

    @property
    def out(self) -> Path:
        return self.folder / "out"

    @property
    def report(self) -> Path:
        return self.folder / "report.json"

    @property
    def junit(self) -> Path:
        return self.folder / "junit.xml"

    @property
    def html(self) -> Path:
        return self.folder / "fuzz.html"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def shared_fuzz_run(factory: pytest.TempPathFactory, name: str, argv: list[str]) -> SharedRun:
    """Run ``acp-model fuzz argv`` once per pytest session, whichever xdist worker asks first
    (the others wait for it and read its files)."""
    base = factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # this session's
    folder = root / f"shared-{name}"
    done = folder / "result.json"
    with _locked(root / f"shared-{name}.lock"):
        if not done.exists():
            folder.mkdir(exist_ok=True)
            proc = subprocess.run(
                [sys.executable, "-m", "acp_model", "fuzz", "--out", str(folder / "out"),
                 "--report", str(folder / "report.json"), "--junit", str(folder / "junit.xml"),
                 "--html", str(folder / "fuzz.html"), *argv],
                capture_output=True, text=True, timeout=300)
            done.write_text(json.dumps({"returncode": proc.returncode, "stdout": proc.stdout,
                                        "stderr": proc.stderr}))
    return SharedRun(folder, json.loads(done.read_text()))


def fuzz_until_found(agent: list[str], rule: str, *, tries: int = 3, **options: Any) -> Any:
    """Fuzz ``agent`` in-process until ``rule`` fails (``stop_on``; the budget stays the cap)
    and return what was found for it. The counterexample is minimized for a few seconds and
    replayed once: the tests read the failure and the program, not how short it got. A rule
    whose strength only warns (a SHOULD) is found by its warning's first sighting.

    A race's draws depend on the agent's timing, which a loaded machine moves: a run that
    misses is followed by one on the next seed, ``tries`` runs in all (awaiting the proof,
    not a fixed count of examples), and the test fails only if every one misses."""
    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.fuzzing.run import run_fuzz

    settings: dict[str, Any] = {"time_budget": 90, "spec": "seed", "replay_runs": 1,
                                "minimize_budget": 3.0, "seed": 1, **options}
    seen: list[list[str]] = []
    for attempt in range(tries):
        tried = {**settings, "seed": settings["seed"] + attempt}
        result = run_fuzz(FuzzConfig(agent, stop_on=frozenset({rule}), **tried))
        found = result.recorder.sighted(rule)  # a SHOULD's: its warning's first sighting
        if found is not None:
            return result, found
        seen.append(sorted(result.recorder.found))
    raise AssertionError(f"{rule} not found in {tries} runs; found instead: {seen}")


def examples_until(rule: str, cfg: FuzzConfig) -> int | None:
    """How many examples of the run ``cfg`` had finished when ``rule`` was
    first recorded (None: never)."""
    from acp_model.fuzzing.run import run_fuzz

    seen: list[tuple[int, bool]] = []
    run_fuzz(cfg, on_progress=lambda rec: seen.append((rec.examples, rule in rec.found)))
    return next((n for n, hit in seen if hit), None)


def first_seed_finding(rule: str, cfg_of: Callable[[int], FuzzConfig],
                       seeds: tuple[int, ...] = (3, 4, 5)) -> list[int | None]:
    """``examples_until`` on the run ``cfg_of(seed)`` of each seed in turn, until one finds
    ``rule``: what Hypothesis draws is steered by the agent's timing (its targets score what
    each example reached), so a loaded machine may need another seed. The tries, in order;
    the test asserts on the last."""
    found: list[int | None] = []
    for seed in seeds:
        found.append(examples_until(rule, cfg_of(seed)))
        if found[-1] is not None:
            break
    return found
