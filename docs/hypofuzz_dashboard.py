"""Take the README's HypoFuzz dashboard screenshot (docs/hypofuzz-dashboard.png).

Runs ``hypothesis fuzz -n 1`` on ``fuzz/test_hypofuzz.py`` against the bundled reference agent
(a correct one: the campaign finds nothing and keeps running) for ``--seconds`` once the
dashboard lists the test, photographs the dashboard with the headless Chromium and puppeteer
that ``make services`` installs, and stops the campaign::

    python docs/hypofuzz_dashboard.py [--seconds 100] [--out docs/hypofuzz-dashboard.png]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from acp_model.render.mermaid_cli import PINNED, MermaidUnavailable, browser

ROOT = Path(__file__).resolve().parents[1]
PUPPETEER = PINNED / "node_modules" / "puppeteer-core"
SHOT = """
const puppeteer = require(process.env.PUPPETEER);
(async () => {
  const browser = await puppeteer.launch({executablePath: process.env.CHROMIUM,
    headless: true, args: ['--no-sandbox', '--disable-gpu', '--hide-scrollbars']});
  const page = await browser.newPage();
  await page.setViewport({width: 1300, height: 900});
  await page.goto(process.argv[1], {waitUntil: 'networkidle2', timeout: 60000});
  await page.waitForFunction(() => document.body.innerText.includes('runTest'),
                             {timeout: 60000});
  await page.waitForNetworkIdle({idleTime: 1000, timeout: 60000});
  await page.screenshot({path: process.argv[2]});
  await browser.close();
})().catch(e => { console.error(e); process.exit(1); });
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listed(port: int) -> bool:
    """Does the dashboard list the test yet? (False while it is starting.)"""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/tests/", timeout=5) as r:
            return bool(json.load(r))
    except OSError:
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=100.0)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "hypofuzz-dashboard.png")
    args = ap.parse_args()
    try:
        chromium = browser()
    except MermaidUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not PUPPETEER.is_dir() or shutil.which("node") is None:
        print("error: needs node and puppeteer: run `make services`", file=sys.stderr)
        return 2
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "ACP_DB": str(Path(tmp) / "db"),
               "ACP_AGENT": f"{sys.executable} -m acp_model.agents.reference"}
        hypothesis = Path(sys.executable).with_name("hypothesis")
        campaign = subprocess.Popen([str(hypothesis), "fuzz", "-n", "1", "--port", str(port),
                                     "--", "fuzz/test_hypofuzz.py"], cwd=ROOT, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
        try:
            started = time.monotonic()
            while not _listed(port):
                if campaign.poll() is not None or time.monotonic() - started > 300:
                    print("error: the dashboard never listed the test", file=sys.stderr)
                    return 1
                time.sleep(1)  # another process's HTTP API: no event to await
            time.sleep(args.seconds)  # the campaign's length is what the picture shows
            subprocess.run(["node", "-e", SHOT, f"http://127.0.0.1:{port}/",
                            str(args.out.resolve())], check=True, timeout=180,
                           env={**os.environ, "PUPPETEER": str(PUPPETEER),
                                "CHROMIUM": chromium})
        finally:
            os.killpg(campaign.pid, signal.SIGTERM)
            campaign.wait(30)
    print(f"wrote {args.out} ({args.seconds:g} s of fuzzing)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
