"""Agent profiles: how to install, start and drive a real ACP agent offline, as data.

Each profile is ``data/<name>/profile.toml`` (the pinned package and version, the start
command, the environment and files that point the agent's model API at the scripted model,
the session configuration that makes it ask for permissions, the auth method to log in with)
next to the files that pin its whole dependency tree: ``package.json`` and
``package-lock.json`` for an npm package, ``requirements.txt`` (every distribution pinned with
``==``, written once by ``python -m acp_model.profiles.lock NAME``) for a PyPI one.
``acp-model agents install NAME`` runs ``npm ci`` from those files, or makes a virtual
environment and ``pip install --no-deps -r requirements.txt`` into it, in a cache directory
(``$ACP_MODEL_AGENTS``, default ``$XDG_CACHE_HOME/acp-model/agents``); ``acp-model fuzz --agent
NAME`` starts the installed agent behind the scripted model. A profile whose agent cannot run
offline (``unavailable``: the reason) is listed but never installed or started. What an agent
never does by design in the mode it runs in (``[never_by_design]``: a rule family of the
conformance matrix, such as ``permissions``, and why) makes that matrix cell "not applicable"
with the reason, rather than "not exercised", when its rules did not run.

Templates in commands, environment values and files: ``{entry}`` (the installed entry point),
``{home}`` (a fresh directory per run, the agent's ``HOME``), ``{model_url}`` (the scripted
model's base URL), ``{install}`` (the install directory, for an agent that starts another
installed program).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

# the files beside a profile that pin its dependency tree, by registry
LOCK_FILES = {"npm": ("package.json", "package-lock.json"), "pypi": ("requirements.txt",)}
REGISTRIES = tuple(LOCK_FILES)


class ProfileError(Exception):
    """A profile that does not exist, is not installed, or could not be installed."""


@dataclass(frozen=True)
class ConfigRequest:
    """A request the client sends after ``session/new`` (``sessionId`` is added)."""

    method: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    package: str
    version: str
    entry: str  # relative to the install directory
    command: tuple[str, ...]
    model_api: str
    protocols: tuple[int, ...] = (2,)
    env: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)
    session_config: Mapping[int, tuple[ConfigRequest, ...]] = field(default_factory=dict)
    auth_method: str | None = None
    sessions_ahead: int = 2  # sessions made ahead of need (a real agent takes ~1 s per session)
    close_sessions: bool = True  # session/close after each example (frees the agent's process)
    reuse_sessions: int = 3  # quiet sessions later examples take over (a session costs ~1 s)
    patience: float = 5.0  # the client's short waits last this many times longer
    notes: str = ""
    # the name the agent is told to ask the scripted model for ({model_name} in its env and
    # files; "" where the profile names none this way): an issue body explains an agent's
    # notice about that name (codex-acp: "Model metadata for `gpt-5` not found")
    model_name: str = ""
    # "ci" (npm ci: the lockfile exactly) or "install" (npm install --no-save, still from the
    # lockfile, for a package whose optional per-platform dependencies the registry cannot
    # lock: npm ci then refuses the lockfile as out of sync)
    npm: str = "ci"
    # where the pinned package comes from: "npm" (lockfiles beside the profile) or "pypi"
    registry: str = "npm"
    # tool names the scripted model prefers when the agent offers them (steering, as data);
    # without it the model picks from the tools each request offers, by what they do
    prefer_tools: tuple[str, ...] = ()
    # why this agent cannot run offline behind the scripted model ("" when it can): such a
    # profile is listed (and shown as a matrix row) but never installed or started
    unavailable: str = ""
    unavailable_short: str = ""  # the reason in a line (the matrix page's list)
    # the oldest Python a PyPI agent runs on ("3.12"; "" takes the running interpreter's)
    python: str = ""
    # distributions its entry point needs that its package does not declare (PyPI: resolved
    # with it into the same requirements file; npm lists them in package.json)
    companions: tuple[str, ...] = ()
    # rule families (matrix columns, spec/data/families.toml) whose rules this agent never
    # exercises by design in the mode it runs in -> why (an agent that never asks permission)
    never_by_design: Mapping[str, str] = field(default_factory=dict)
    # the agent's ACP layer, whose coverage ``--coverage`` reports: ``GLOB[#MODULE]`` under
    # the install directory (``#MODULE``: the modules of a bundle, by their bundler markers)
    coverage_layer: tuple[str, ...] = ()
    # where its lockfiles are (None: the bundled data folder of the same name)
    source: Path | None = field(default=None, compare=False)

    # --- where it lives --------------------------------------------------------------------
    def install_dir(self, cache: Path | None = None) -> Path:
        return (cache or agents_cache()) / f"{self.name}-{self.version}"

    def entry_path(self, cache: Path | None = None) -> Path:
        return self.install_dir(cache) / self.entry

    def installed(self, cache: Path | None = None) -> bool:
        return self.entry_path(cache).is_file()

    # --- how it starts ---------------------------------------------------------------------
    def lock_files(self) -> tuple[str, ...]:
        return LOCK_FILES[self.registry]

    def refuse_unavailable(self) -> None:
        """A :class:`ProfileError` naming why, for an agent that cannot run offline."""
        if self.unavailable:
            raise ProfileError(f"agent {self.name} cannot run offline behind the scripted "
                               f"model: {self.unavailable}")

    def argv(self, cache: Path | None = None) -> list[str]:
        self.refuse_unavailable()
        if not self.installed(cache):
            raise ProfileError(f"agent {self.name} {self.version} is not installed: run "
                               f"`acp-model agents install {self.name}`")
        entry = str(self.entry_path(cache))
        return [part.format(entry=entry) for part in self.command]

    def environment(self, home: str, model_url: str) -> dict[str, str]:
        """The variables the profile sets (on top of the caller's environment)."""
        install = str(self.install_dir())
        return {k: v.format(home=home, model_url=model_url, install=install,
                            model_name=self.model_name)
                for k, v in self.env.items()}

    def prepare(self, home: str, model_url: str) -> None:
        """Write the files the agent needs (its model provider configuration...)."""
        values = {"home": home, "model_url": model_url, "install": str(self.install_dir()),
                  "model_name": self.model_name}
        for path, content in self.files.items():
            target = Path(path.format(**values))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content.format(**values).lstrip("\n"), encoding="utf-8")

    def config_requests(self, protocol: int) -> tuple[ConfigRequest, ...]:
        return self.session_config.get(protocol, ())

    # --- installing --------------------------------------------------------------------------
    def install(self, cache: Path | None = None, *, quiet: bool = True) -> Path:
        """Install the pinned package into the cache from the profile's own lockfiles (no
        version is resolved at install time)."""
        self.refuse_unavailable()
        target = self.install_dir(cache)
        target.mkdir(parents=True, exist_ok=True)
        data = self.source or resources.files("acp_model.profiles").joinpath("data", self.name)
        for name in self.lock_files():
            (target / name).write_bytes(data.joinpath(name).read_bytes())
        if self.registry == "pypi":
            self._install_pypi(target, quiet)
        else:
            self._install_npm(target, quiet)
        if not self.installed(cache):
            raise ProfileError(f"installing {self.name} did not make its entry point "
                               f"{self.entry_path(cache)}")
        return target

    def _install_npm(self, target: Path, quiet: bool) -> None:
        npm = shutil.which("npm")
        if npm is None:
            raise ProfileError("npm is not installed (Node.js 20 or newer is needed)")
        cmd = [npm, "ci"] if self.npm == "ci" else [npm, "install", "--no-save"]
        _run([*cmd, "--no-audit", "--no-fund", "--loglevel=error"], target, quiet,
             f"npm {self.npm} for {self.name}")

    def _install_pypi(self, target: Path, quiet: bool) -> None:
        """A virtual environment in ``target/venv`` holding exactly the pinned distributions
        (``--no-deps``: the requirements file already names the whole tree)."""
        python = find_python(self.python)
        venv = target / "venv"
        if venv.exists():  # a half-made one from an interrupted install
            shutil.rmtree(venv)
        _run([python, "-m", "venv", str(venv)], target, quiet, f"python -m venv for {self.name}")
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-input",
              "--disable-pip-version-check", "--quiet", "-r", "requirements.txt"], target,
             quiet, f"pip install for {self.name}")


def _run(cmd: list[str], cwd: Path, quiet: bool, what: str) -> None:
    """Run an installer step; a :class:`ProfileError` with the tail of its output if it fails."""
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=quiet, text=True, check=False)
    except OSError as exc:
        raise ProfileError(f"{what} could not start: {exc}") from None
    if done.returncode != 0:
        said = ((done.stderr or "") + (done.stdout or "")).strip() if quiet else ""
        if len(said) > 1200:  # the cause is often first (npm), the last words last (pip)
            said = f"{said[:600]} ... {said[-600:]}"
        raise ProfileError(f"{what} failed (exit {done.returncode})"
                           + (f": {said}" if said else ""))


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def find_python(minimum: str = "") -> str:
    """An interpreter at least ``minimum`` ("3.12"): the running one, ``python3.X`` on the
    ``PATH`` (newest first), then pyenv's versions (``$PYENV_ROOT``, default ``~/.pyenv``)."""
    want = _version_tuple(minimum) if minimum else sys.version_info[:2]
    if sys.version_info[:2] >= want:
        return sys.executable
    candidates = [found for minor in range(20, want[1] - 1, -1)
                  if (found := shutil.which(f"python{want[0]}.{minor}"))]
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if root.is_dir():
        versions = sorted((v for v in root.iterdir() if re.fullmatch(r"\d+\.\d+\.\d+", v.name)),
                          key=lambda v: _version_tuple(v.name), reverse=True)
        candidates += [str(v / "bin" / "python3") for v in versions
                       if _version_tuple(v.name) >= want and (v / "bin" / "python3").is_file()]
    for candidate in candidates:
        done = subprocess.run([candidate, "-c", "import sys, venv; print(*sys.version_info[:2])"],
                              capture_output=True, text=True, check=False)
        if done.returncode == 0 and tuple(map(int, done.stdout.split())) >= want:
            return candidate
    raise ProfileError(f"no Python {'.'.join(map(str, want))} or newer found (looked at the "
                       f"running one, python3.X on the PATH and {root}): install one")


def agents_cache() -> Path:
    explicit = os.environ.get("ACP_MODEL_AGENTS")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "acp-model" / "agents"


KNOWN_KEYS = frozenset({
    "name", "title", "package", "version", "entry", "command", "model_api", "protocols", "env",
    "files", "session_config", "auth_method", "sessions_ahead", "close_sessions",
    "reuse_sessions", "patience", "notes", "model_name", "npm", "registry", "tools",
    "unavailable",
    "unavailable_short", "python",
    "companions", "never_by_design", "coverage"})


def _profile(data: dict[str, Any]) -> Profile:
    unknown = set(data) - KNOWN_KEYS
    if unknown:  # a typo would silently leave the default
        raise ProfileError(f"profile {data.get('name', '?')!r}: unknown keys "
                           f"{', '.join(sorted(unknown))}")
    if data.get("registry", "npm") not in REGISTRIES:
        raise ProfileError(f"profile {data.get('name', '?')!r}: registry "
                           f"{data['registry']!r} is not one of {', '.join(REGISTRIES)}")
    never = data.get("never_by_design", {})
    if not isinstance(never, dict) or not all(isinstance(v, str) and v.strip()
                                              for v in never.values()):
        raise ProfileError(f"profile {data.get('name', '?')!r}: never_by_design maps rule "
                           "families to the reason (a text) the agent never exercises them")
    config = {int(version.removeprefix("v")): tuple(ConfigRequest(r["method"], r["params"])
                                                    for r in requests)
              for version, requests in data.get("session_config", {}).items()}
    return Profile(
        name=data["name"], title=data["title"], package=data["package"],
        version=data["version"], entry=data["entry"], command=tuple(data["command"]),
        model_api=data["model_api"], protocols=tuple(data.get("protocols", (2,))),
        env=dict(data.get("env", {})), files=dict(data.get("files", {})),
        session_config=config, auth_method=data.get("auth_method"),
        sessions_ahead=int(data.get("sessions_ahead", 2)),
        close_sessions=bool(data.get("close_sessions", True)),
        reuse_sessions=int(data.get("reuse_sessions", 3)),
        patience=float(data.get("patience", 5.0)), notes=data.get("notes", ""),
        model_name=str(data.get("model_name", "")),
        npm=str(data.get("npm", "ci")), registry=str(data.get("registry", "npm")),
        prefer_tools=tuple(data.get("tools", {}).get("prefer", ())),
        unavailable=str(data.get("unavailable", "")),
        unavailable_short=str(data.get("unavailable_short", "")),
        python=str(data.get("python", "")),
        companions=tuple(data.get("companions", ())), never_by_design=dict(never),
        coverage_layer=tuple(data.get("coverage", {}).get("layer", ())))


def load(root: Path | None = None) -> dict[str, Profile]:
    """Every profile by name: the bundled ones, or those of ``root`` (a folder of
    ``<name>/profile.toml``, lockfiles beside them)."""
    out = {}
    where = root if root is not None else resources.files("acp_model.profiles").joinpath("data")
    for folder in sorted(where.iterdir(), key=lambda p: p.name):
        toml = folder.joinpath("profile.toml")
        if toml.is_file():
            profile = _profile(tomllib.loads(toml.read_text(encoding="utf-8")))
            if root is not None:
                profile = dataclasses.replace(profile, source=Path(str(folder)))
            out[profile.name] = profile
    return out


PROFILES = load()


def get(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ProfileError(f"no agent profile {name!r}; known: "
                           f"{', '.join(sorted(PROFILES))}") from None
