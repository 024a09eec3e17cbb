"""Which ACP SDK an installed agent bundles, read from its installed files.

Most agents do not write the JSON-RPC envelope themselves: the official SDK they bundle
frames messages, answers batches and unknown methods, and routes notifications. A failure of
an envelope rule may then be the SDK's doing, and its maintainers are the ones to tell; the
issue body says which SDK and version the agent carries (``acp-model report-bug``). Found in
general: an npm package's ``package.json`` under ``node_modules`` (at the top or one level
down), a Python distribution's ``METADATA`` under a ``site-packages``. Nothing found (a
binary, an agent with its own JSON-RPC code): nothing is said.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

# The SDKs the ACP project publishes, by registry: npm package names, Python distribution
# names as their .dist-info folders spell them
NPM_SDKS = ("@agentclientprotocol/sdk",)
PYPI_SDKS = ("agent_client_protocol",)


@dataclass(frozen=True, slots=True)
class BundledSdk:
    """One ACP SDK found in an agent's install directory."""

    package: str  # as its registry names it: "@agentclientprotocol/sdk", "agent-client-protocol"
    version: str
    where: str  # its folder, relative to the install directory
    home: str = ""  # where it is maintained (its metadata's repository or home page)

    def words(self) -> str:
        """``@agentclientprotocol/sdk 2.4.0 (node_modules/@agentclientprotocol/sdk)``"""
        return f"`{self.package}` {self.version} (`{self.where}`)"


def _npm(package_json: Path, install: Path) -> BundledSdk | None:
    try:
        meta = json.loads(package_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or not meta.get("version"):
        return None
    repo = meta.get("repository")
    url = repo.get("url") if isinstance(repo, dict) else repo
    home = str(url or meta.get("homepage") or "").removeprefix("git+").removesuffix(".git")
    return BundledSdk(str(meta.get("name") or ""), str(meta["version"]),
                      package_json.parent.relative_to(install).as_posix(), home)


def _pypi(metadata: Path, install: Path) -> BundledSdk | None:
    try:
        head = HeaderParser().parsestr(metadata.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    if not head.get("Version"):
        return None
    urls = dict(u.split(",", 1) for u in head.get_all("Project-URL") or [] if "," in u)
    home = (urls.get("Repository") or urls.get("Homepage") or head.get("Home-page") or "")
    return BundledSdk(str(head.get("Name") or ""), str(head["Version"]),
                      metadata.parent.relative_to(install).as_posix(), home.strip())


def bundled_sdks(install: Path) -> list[BundledSdk]:
    """The ACP SDKs under ``install`` (an agent's install directory), each once, the
    shallowest copy first (the one the agent's own code most likely loads)."""
    if not install.is_dir():
        return []
    found: list[BundledSdk] = []
    for name in NPM_SDKS:
        for pattern in (f"node_modules/{name}/package.json",
                        f"node_modules/*/node_modules/{name}/package.json",
                        f"node_modules/@*/*/node_modules/{name}/package.json"):
            found += [s for p in sorted(install.glob(pattern)) if (s := _npm(p, install))]
    for name in PYPI_SDKS:
        for pattern in (f"lib/python*/site-packages/{name}-*.dist-info/METADATA",
                        f"*/lib/python*/site-packages/{name}-*.dist-info/METADATA"):
            found += [s for p in sorted(install.glob(pattern)) if (s := _pypi(p, install))]
    once: dict[tuple[str, str], BundledSdk] = {}
    for sdk in found:
        once.setdefault((sdk.package, sdk.version), sdk)
    return list(once.values())
