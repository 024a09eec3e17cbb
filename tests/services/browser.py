"""Headless Chromium for the tests: load a page (console messages and the DOM after scripts
ran), take a screenshot, look for colours in it. Network is disabled for every load, so a page
that fetched anything from outside would log an error."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

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


LOOPBACK_FLAGS = [f.replace("MAP * ~NOTFOUND", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
                  for f in FLAGS]


class DevTools:
    """A headless Chromium driven over the DevTools protocol (aiohttp's websocket client):
    for pages that must be used, not only loaded: type into a box, wait for a result, click.

    Network is disabled as for :func:`load`, except loopback, where the tests serve pages."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 900) -> None:
        import asyncio

        self._loop = asyncio.new_event_loop()
        self._proc = subprocess.Popen(
            [chromium(), *LOOPBACK_FLAGS, "--remote-debugging-port=0",
             f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self._id = 0
        self._ws: Any = None
        self._session: Any = None
        try:
            self._loop.run_until_complete(self._connect())
        except BaseException:
            self.close()
            raise

    def _browser_url(self) -> str:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:  # Chromium announces its endpoint on stderr
            match = re.search(r"DevTools listening on (ws://\S+)", line)
            if match:
                return match.group(1)
        raise AssertionError("chromium ended without a DevTools endpoint")

    async def _connect(self) -> None:
        import aiohttp

        browser = self._browser_url()
        port = re.search(r":(\d+)/", browser).group(1)  # type: ignore[union-attr]
        self._session = aiohttp.ClientSession()
        async with self._session.get(f"http://127.0.0.1:{port}/json/list") as r:
            pages = [t for t in await r.json() if t["type"] == "page"]
        self._ws = await self._session.ws_connect(pages[0]["webSocketDebuggerUrl"],
                                                  max_msg_size=0)
        await self._call("Page.enable")
        await self._call("Runtime.enable")

    async def _call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        mine = self._id
        await self._ws.send_json({"id": mine, "method": method, "params": params})
        while True:
            msg = await self._ws.receive_json(timeout=60)
            if msg.get("id") == mine:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    async def _until_event(self, method: str, timeout: float) -> None:
        import asyncio

        async def wait() -> None:
            while (await self._ws.receive_json()).get("method") != method:
                pass
        await asyncio.wait_for(wait(), timeout)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self._loop.run_until_complete(self._call(method, **params))

    def open(self, url: str, timeout: float = 60) -> None:
        """Navigate and return once the page's load event fired."""
        async def go() -> None:
            await self._call("Page.navigate", url=url)
            await self._until_event("Page.loadEventFired", timeout)
        self._loop.run_until_complete(go())

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression (promises awaited)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        """Poll ``expression`` until it is truthy: the page's own event, not a fixed sleep."""
        return self.js(f"""new Promise((ok, fail) => {{
            const t0 = Date.now();
            (function poll() {{
                const v = ({expression});
                if (v) return ok(v);
                if (Date.now() - t0 > {timeout * 1000}) return fail(new Error('timed out'));
                setTimeout(poll, 50);
            }})();
        }})""")

    def type(self, text: str) -> None:
        """Type into the focused element, as a keyboard would (input events fire)."""
        for ch in text:
            self.call("Input.dispatchKeyEvent", type="keyDown", text=ch)
            self.call("Input.dispatchKeyEvent", type="keyUp")

    def screenshot(self, png: Path) -> Path:
        import base64

        png.write_bytes(base64.b64decode(self.call("Page.captureScreenshot")["data"]))
        return png

    def close(self) -> None:
        if self._ws is not None:
            self._loop.run_until_complete(self._ws.close())
        if self._session is not None:
            self._loop.run_until_complete(self._session.close())
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._loop.close()
