"""A profiled agent at another version than its pin: an old release that carries a published
bug, or the release that fixed it.

A profile pins one version and its whole dependency tree (its lockfiles). An old version has no
lockfile here, so :func:`install_version` asks npm for ``PACKAGE@VERSION`` and resolves its
dependencies as the registry stood shortly after that version was published (``npm install
--before``): what a user installing it then got, not today's newest dependencies. The install
goes to the cache directory ``<name>-<version>``, the one :meth:`Profile.install_dir` derives
from the version, so the profile returned by :func:`at_version` starts it with the profile's
own command, environment and files.

A version may have been published under an earlier package name (claude-agent-acp was
``@zed-industries/claude-agent-acp`` before 0.24.0): ``at_version(profile, "PACKAGE@VERSION")``
names it; the entry point's ``node_modules/<package>/`` prefix follows.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path

from acp_model.profiles import Profile, ProfileError

# how long after a version's publication its dependencies are resolved: a release is built
# and tested against what the registry held then, and fixes of the days after do not count
RESOLVE_WINDOW = dt.timedelta(days=2)


def split_spec(spec: str) -> tuple[str | None, str]:
    """``VERSION`` or ``PACKAGE@VERSION`` (a scoped package keeps its leading ``@``)."""
    at = spec.rfind("@")
    if at <= 0:
        return None, spec
    return spec[:at], spec[at + 1:]


def at_version(profile: Profile, spec: str, cache: Path | None = None) -> Profile:
    """``profile`` at ``VERSION`` (or ``PACKAGE@VERSION``): same command, environment, files
    and session configuration; its own install directory. Where an installed release has no
    file at the profile's entry (it was laid out differently then), the package's own
    command (its single ``bin``) is the entry."""
    package, version = split_spec(spec)
    if not version or any(c.isspace() or c in "/\\" for c in version):
        raise ProfileError(f"not a version: {spec!r} (VERSION or PACKAGE@VERSION)")
    if profile.registry != "npm":
        raise ProfileError(f"{profile.name} comes from {profile.registry}: only npm packages "
                           "install at another version")
    entry = profile.entry
    if package is not None and package != profile.package:
        prefix = f"node_modules/{profile.package}/"
        if not entry.startswith(prefix):
            raise ProfileError(f"{profile.name}: its entry {entry} is not inside "
                               f"{prefix}; cannot follow a package rename")
        entry = f"node_modules/{package}/" + entry.removeprefix(prefix)
    other = dataclasses.replace(profile, version=version, package=package or profile.package,
                                entry=entry)
    if other.install_dir(cache).is_dir() and not other.installed(cache):
        own = package_bin(other.install_dir(cache), other.package)
        if own is not None:
            other = dataclasses.replace(other, entry=own)
    return other


def package_bin(where: Path, package: str) -> str | None:
    """The one command an installed package declares (``bin``), relative to ``where``."""
    manifest = where / "node_modules" / package / "package.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    bins = data.get("bin")
    path = bins if isinstance(bins, str) else (
        next(iter(bins.values())) if isinstance(bins, dict) and len(bins) == 1 else None)
    if not isinstance(path, str):
        return None
    return f"node_modules/{package}/{path.removeprefix('./')}"


def published(package: str, version: str) -> dt.datetime | None:
    """When ``package@version`` was published (None when npm does not say)."""
    npm = _npm()
    done = subprocess.run([npm, "view", package, "time", "--json"], capture_output=True,
                          text=True, check=False, timeout=120)
    if done.returncode != 0:
        raise ProfileError(f"npm view {package} failed: {done.stderr.strip()[-400:]}")
    stamp = json.loads(done.stdout or "{}").get(version)
    if not stamp:
        return None
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def install_version(profile: Profile, cache: Path | None = None, *,
                    quiet: bool = True) -> Path:
    """``npm install --no-save PACKAGE@VERSION`` for ``profile`` (one from :func:`at_version`)
    into its cache directory, dependencies as of shortly after its publication."""
    npm = _npm()
    target = profile.install_dir(cache)
    target.mkdir(parents=True, exist_ok=True)
    (target / "package.json").write_text('{"private": true}\n', encoding="utf-8")
    cmd = [npm, "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error",
           f"{profile.package}@{profile.version}"]
    when = published(profile.package, profile.version)
    done = None
    if when is not None:  # a registry mirror may lack the versions of then: fall back
        dated = [*cmd, f"--before={(when + RESOLVE_WINDOW).isoformat()}"]
        done = subprocess.run(dated, cwd=target, capture_output=quiet, text=True, check=False)
    if done is None or done.returncode != 0:
        done = subprocess.run(cmd, cwd=target, capture_output=quiet, text=True, check=False)
    profile = at_version(profile, f"{profile.package}@{profile.version}", cache)
    if done.returncode != 0 or not profile.installed(cache):
        tail = (done.stderr or "")[-800:] if quiet else ""
        raise ProfileError(f"npm install {profile.package}@{profile.version} failed "
                           f"(exit {done.returncode})" + (f": {tail}" if tail else ""))
    return target


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise ProfileError("npm is not installed (Node.js 20 or newer is needed)")
    return npm
