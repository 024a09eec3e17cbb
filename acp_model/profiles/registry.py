"""Keeping profiles current: each profile's newer releases in its registry, and moving a profile
to one (``acp-model agents outdated`` / ``agents bump NAME``).

The registries are read through their public JSON APIs: npm's package document
(``GET {registry}/{package}``: ``dist-tags``, ``versions``, ``time``) and PyPI's
(``GET {pypi}/pypi/{name}/json``: ``releases`` with their files' upload times). Their
addresses come from ``npm_config_registry`` (npm's own setting) and ``ACP_MODEL_PYPI_URL``
(default ``https://pypi.org``), so a mirror, or a stand-in on loopback in the tests, serves
them. Only final releases count as newer (no pre-release, no yanked release).

Bumping writes the new version into ``profile.toml`` and refreshes the lock files from the
registry: ``npm install --package-lock-only`` (the whole tree pinned, nothing installed) for
npm, :func:`acp_model.profiles.lock.freeze` for PyPI. What a person verified for the old
release (the notes, the by-design reasons, the environment) is not re-verified: the command
says so, and the next matrix run shows whether it still holds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_model.profiles import Profile, ProfileError

NPM_REGISTRY = "https://registry.npmjs.org"
PYPI = "https://pypi.org"
TIMEOUT = 30.0
FINAL = re.compile(r"^\d+(?:\.\d+)*$")  # a final release: numbers only (no -rc, b1, .dev)


@dataclass(frozen=True)
class Release:
    version: str
    published: str  # ISO date (or "" when the registry does not say)


NPM_SETTING = "npm_config_registry"  # npm's own name for it (npm reads it in any case)


def npm_registry() -> str:
    return (os.environ.get(NPM_SETTING) or os.environ.get(NPM_SETTING.upper())
            or NPM_REGISTRY).rstrip("/")


def pypi_url() -> str:
    return (os.environ.get("ACP_MODEL_PYPI_URL") or PYPI).rstrip("/")


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")) if FINAL.match(version) else ()


def _get(url: str) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise ProfileError(f"{url}: the registry answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ProfileError(f"{url}: the registry cannot be reached ({reason})") from None
    except ValueError as exc:
        raise ProfileError(f"{url}: not JSON ({exc})") from None


def releases(profile: Profile) -> list[Release]:
    """Every final release of the profile's package, oldest first."""
    if profile.registry == "pypi":
        data = _get(f"{pypi_url()}/pypi/{urllib.parse.quote(profile.package)}/json")
        found = []
        for version, files in (data.get("releases") or {}).items():
            files = [f for f in files or [] if not f.get("yanked")]
            if FINAL.match(version) and files:
                found.append(Release(version, min(str(f.get("upload_time_iso_8601") or
                                                      f.get("upload_time") or "")
                                                  for f in files)[:10]))
    else:
        name = profile.package.replace("/", "%2f")
        data = _get(f"{npm_registry()}/{name}")
        times = data.get("time") or {}
        found = [Release(v, str(times.get(v) or "")[:10]) for v, meta in
                 (data.get("versions") or {}).items()
                 if FINAL.match(v) and not (isinstance(meta, dict) and meta.get("deprecated"))]
    return sorted(found, key=lambda r: version_key(r.version))


def newer(profile: Profile) -> list[Release]:
    """The final releases after the profile's pin, oldest first."""
    pin = version_key(profile.version)
    return [r for r in releases(profile) if version_key(r.version) > pin]


def data_dir(profile: Profile, root: Path | None = None) -> Path:
    """Where a profile's files are (``root/<name>``, default the bundled ones)."""
    return (root or Path(__file__).resolve().parent / "data") / profile.name


VERSION_LINE = re.compile(r'^version = "[^"]*"$', re.M)


def bump(profile: Profile, version: str | None = None, root: Path | None = None) -> Release:
    """Move ``profile`` to ``version`` (default: its newest final release) in its files under
    ``root``: the version in ``profile.toml`` and fresh lock files. Returns the release."""
    known = releases(profile)
    target = next((r for r in known if r.version == version), None) if version \
        else (known[-1] if known else None)
    if target is None:
        raise ProfileError(f"{profile.package}: no release {version}" if version
                           else f"{profile.package}: the registry lists no final release")
    folder = data_dir(profile, root)
    toml = folder / "profile.toml"
    text = toml.read_text(encoding="utf-8")
    if not VERSION_LINE.search(text):
        raise ProfileError(f"{toml}: no `version = \"...\"` line to move")
    moved = _at(profile, target.version)
    if profile.registry == "pypi":
        _lock_pypi(moved, folder)
    else:
        _lock_npm(moved, folder)
    toml.write_text(VERSION_LINE.sub(f'version = "{target.version}"', text, count=1),
                    encoding="utf-8")
    return target


def _at(profile: Profile, version: str) -> Profile:
    import dataclasses

    return dataclasses.replace(profile, version=version)


def _lock_npm(profile: Profile, folder: Path) -> None:
    """``package.json`` naming the release, and the ``package-lock.json`` npm resolves for it
    (``--package-lock-only``: nothing is downloaded or installed, no script runs)."""
    npm = shutil.which("npm")
    if npm is None:
        raise ProfileError("npm is not installed (Node.js 20 or newer is needed)")
    manifest = json.loads((folder / "package.json").read_text(encoding="utf-8"))
    deps = dict(manifest.get("dependencies") or {})
    deps[profile.package] = profile.version
    manifest["dependencies"] = deps
    with tempfile.TemporaryDirectory(prefix="acp-model-bump-") as scratch:
        work = Path(scratch)
        (work / "package.json").write_text(json.dumps(manifest) + "\n", encoding="utf-8")
        done = subprocess.run([npm, "install", "--package-lock-only", "--ignore-scripts",
                               "--no-audit", "--no-fund", "--loglevel=error",
                               f"--registry={npm_registry()}/"], cwd=work,
                              capture_output=True, text=True, check=False, timeout=600)
        if done.returncode != 0:
            raise ProfileError(f"npm install --package-lock-only {profile.package}@"
                               f"{profile.version} failed: {done.stderr.strip()[-800:]}")
        lock = (work / "package-lock.json").read_text(encoding="utf-8")
    (folder / "package.json").write_text(_manifest_text(manifest), encoding="utf-8")
    (folder / "package-lock.json").write_text(lock, encoding="utf-8")


def _manifest_text(manifest: dict[str, Any]) -> str:
    """A profile's ``package.json`` as the bundled ones are written: the name line, then the
    dependencies."""
    head = {k: v for k, v in manifest.items() if k != "dependencies"}
    return (json.dumps(head)[:-1] + ',\n "dependencies": '
            + json.dumps(manifest.get("dependencies") or {}) + "}\n")


def _lock_pypi(profile: Profile, folder: Path) -> None:
    from acp_model.profiles.lock import freeze

    index = os.environ.get("ACP_MODEL_PYPI_URL")
    (folder / "requirements.txt").write_text(
        freeze(profile, index=f"{index.rstrip('/')}/simple/" if index else None),
        encoding="utf-8")
