"""Headless Chromium for the tests: load a page (console messages and the DOM after scripts
ran), take a screenshot, look for colours in it. Network is disabled for every load, so a page
that fetched anything from outside would log an error."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--proxy-server=127.0.0.1:9"]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("chromium is not installed: run `make services` (make test does)")
    return path


def load(page: Path) -> tuple[str, list[str]]:
    """The DOM after the page's scripts ran, and every console message it logged."""
    out = subprocess.run([chromium(), *FLAGS, "--enable-logging=stderr", "--v=0",
                          "--dump-dom", page.resolve().as_uri()],
                         capture_output=True, text=True, timeout=120, check=True)
    console = [line for line in out.stderr.splitlines() if ":CONSOLE" in line]
    return out.stdout, console


def screenshot(page: Path, png: Path, width: int = 1400, height: int = 1800) -> Path:
    subprocess.run([chromium(), *FLAGS, f"--screenshot={png}",
                    f"--window-size={width},{height}", page.resolve().as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert png.is_file(), f"no screenshot of {page}"
    return png


def colour_share(png: Path, rgb: tuple[int, int, int], *, rows: slice = slice(None),
                 tolerance: int = 6) -> float:
    """The share of pixels (within ``rows``) that have colour ``rgb``."""
    from matplotlib import image

    pixels = image.imread(str(png))[rows, :, :3] * 255.0
    close = (abs(pixels - rgb) <= tolerance).all(axis=-1)
    return float(close.mean())


EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|@import|url\(\s*["']?https?:""",
                      re.I)


ANCHOR = re.compile(r"<a\s[^>]*>", re.I)


def external_references(html: str) -> list[str]:
    """Anything the page would load from the network (a CDN script, a web font ...); a link
    the reader may follow (``<a href>``, e.g. a rule's documentation) loads nothing."""
    return EXTERNAL.findall(ANCHOR.sub("", html))
