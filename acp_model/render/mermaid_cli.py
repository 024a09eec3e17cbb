"""Rendering Mermaid text to SVG/PNG with mermaid-cli (``mmdc``) on a system Chromium.

Mermaid is rendered by a browser, so this is the one renderer that is not matplotlib: it is
what a doc page (or GitHub) will show. ``mmdc`` is looked up in ``$ACPM_MMDC``, then the
test suite's pinned copy (``tests/services/mermaid``, installed by ``make services``), then
``PATH``; puppeteer is pointed at the system Chromium (``--no-sandbox``, as root in CI).
Several diagrams are rendered in one browser start through a Markdown file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PINNED = ROOT / "tests" / "services" / "mermaid"


class MermaidUnavailable(Exception):
    """No mmdc, or no Chromium for it to drive."""


class MermaidError(Exception):
    """mmdc rejected a diagram (a syntax error, or it failed to draw)."""


def mmdc() -> list[str]:
    env = os.environ.get("ACPM_MMDC")
    if env:
        return [env]
    pinned = PINNED / "node_modules" / ".bin" / "mmdc"
    if pinned.is_file():
        return [str(pinned)]
    found = shutil.which("mmdc")
    if found:
        return [found]
    raise MermaidUnavailable("mermaid-cli (mmdc) not found: set ACPM_MMDC, install it with "
                             "`make services`, or `npm install -g @mermaid-js/mermaid-cli`")


def browser() -> str:
    """The system Chromium (mermaid-cli's puppeteer drives it; so does the screenshot script
    of docs/hypofuzz_dashboard.py)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise MermaidUnavailable("no Chromium found for mermaid-cli (Debian: apt-get install "
                             "chromium)")


def render(diagrams: dict[str, str], out: Path, fmt: str = "svg") -> list[Path]:
    """Render ``{name: mermaid text}`` to ``out/<stem>.<fmt>``; one mmdc call for all."""
    if not diagrams:
        return []
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="acpm-mmdc-") as tmp:
        work = Path(tmp)
        config = work / "puppeteer.json"
        config.write_text(json.dumps({"executablePath": browser(),
                                      "args": ["--no-sandbox", "--disable-gpu"]}))
        names = list(diagrams)
        doc = work / "all.md"
        doc.write_text("".join(f"```mermaid\n{diagrams[n]}```\n\n" for n in names),
                       encoding="utf-8")
        cmd = [*mmdc(), "-q", "-p", str(config), "-i", str(doc), "-o", str(work / "out.md"),
               "-e", fmt, "-b", "white"]
        if fmt == "png":
            cmd += ["-s", "2"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise MermaidError((proc.stderr or proc.stdout).strip()[-2000:])
        written = []
        for k, name in enumerate(names, start=1):
            made = work / f"out-{k}.{fmt}"
            if not made.is_file():
                raise MermaidError(f"mmdc drew nothing for {name}")
            target = out / f"{Path(name).stem}.{fmt}"
            shutil.copyfile(made, target)
            written.append(target)
        return written
