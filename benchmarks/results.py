"""Where a benchmark's figures go: ``benchmarks/results/<name>.json``, one file per benchmark.

Figures are data, not prose: each run overwrites its file with the machine, the date, the
commit and the command that produced them, and the docs site's benchmarks page is rendered
from these files (``sitegen/pages.py``), so the page always shows the current figures only.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


@contextmanager
def locked(lock: str | None) -> Iterator[None]:
    """Hold ``flock LOCK`` for the block (no lock: nothing): a shared machine's heavy lock,
    taken per run so a benchmark's runs interleave with other sessions' work."""
    if lock is None:
        yield
        return
    import fcntl

    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                             check=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


def commit() -> str:
    """The short commit the figures were measured at (``+dirty`` with uncommitted changes)."""
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return _git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")


def machine() -> dict[str, Any]:
    """What the figures depend on: cores, CPU, Python, system, and how busy it was."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor()
    return {"cores": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "system": f"{platform.system()} {platform.release()}",
            # other work on the machine skews the figures: the 1-minute load when written
            "load": round(os.getloadavg()[0], 2)}


def figure(name: str, value: float | int | str, unit: str = "", *,
           target: str = "", met: bool | None = None) -> dict[str, Any]:
    """One headline figure, with its target when the benchmark has one."""
    row: dict[str, Any] = {"name": name, "value": value, "unit": unit}
    if target:
        row["target"] = target
        row["met"] = met
    return row


def stamp(name: str, title: str, figures: list[dict[str, Any]], *,
          table: dict[str, Any] | None = None, command: str) -> dict[str, Any]:
    """The fields every result file starts with (the benchmarks page reads them), for a
    benchmark that writes its own file with more detail after them."""
    doc: dict[str, Any] = {
        "benchmark": name, "title": title, "command": command,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": _git("rev-parse", "--short=12", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "machine": machine(), "figures": figures}
    if table is not None:
        doc["table"] = table
    return doc


def _without_notes(argv: list[str]) -> list[str]:
    """The arguments without ``--notes TEXT``: the page prints the notes under the figures,
    and a paragraph of them inside the command line only hides the command."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--notes":
            skip = True
        elif not arg.startswith("--notes="):
            out.append(arg)
    return out


def record(name: str, title: str, figures: list[dict[str, Any]], *,
           table: dict[str, Any] | None = None, parameters: dict[str, Any] | None = None,
           notes: str = "", command: str | None = None,
           detail: dict[str, Any] | None = None) -> Path:
    """Write ``results/<name>.json`` and return its path.

    ``table`` is ``{"columns": [...], "rows": [[...], ...]}`` for a benchmark whose detail is
    a table (one row per mutant, per rate ...); ``command`` defaults to how this process was
    started, so the page can tell a reader how to reproduce the figures; ``detail`` is what
    a benchmark keeps besides (``"detail"``: the page does not show it, a later run reads it).
    """
    script = Path(sys.argv[0]).resolve()
    try:
        script_name = script.relative_to(ROOT).as_posix()
    except ValueError:
        script_name = script.name
    doc = {
        "benchmark": name,
        "title": title,
        "command": command or shlex.join(["python", script_name, *_without_notes(sys.argv[1:])]),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": _git("rev-parse", "--short=12", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "machine": machine(),
        "parameters": parameters or {},
        "figures": figures,
    }
    if table is not None:
        doc["table"] = table
    if notes:
        doc["notes"] = notes
    if detail is not None:
        doc["detail"] = detail
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"figures written to {path.relative_to(ROOT)}")
    return path
