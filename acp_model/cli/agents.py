"""``acp-model agents``: the real agents profiled for fuzzing, and installing them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from acp_model.cli.common import EXIT_OK, UsageError
from acp_model.report.text import show


def cmd_agents(args: argparse.Namespace, console: Console) -> int:
    if args.action == "install":
        return _install(args, console)
    if args.action == "outdated":
        return _outdated(args, console)
    if args.action == "bump":
        return _bump(args, console)
    if args.json:
        return _list_json()
    return _list(console)


def _profiles(args: argparse.Namespace) -> dict[str, Any]:
    """The profiles to work on: the bundled ones, or those of --profiles DIR."""
    from acp_model.profiles import PROFILES, ProfileError, load

    if not args.profiles:
        return PROFILES
    root = Path(args.profiles)
    if not root.is_dir():
        raise UsageError(f"--profiles {root}: not a folder of <name>/profile.toml")
    try:
        return load(root)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None


def _list_json() -> int:
    """The profiles as data: what a workflow fans the matrix rows out from."""
    from acp_model.profiles import PROFILES

    out = [{"name": p.name, "title": p.title, "package": p.package, "version": p.version,
            "registry": p.registry, "model_api": p.model_api, "protocols": list(p.protocols),
            "status": ("unavailable" if p.unavailable else
                       "installed" if p.installed() else "not installed"),
            "unavailable": p.unavailable or None,
            "rows": [f"{p.name}@v{v}" for v in p.protocols]} for p in PROFILES.values()]
    print(json.dumps(out, indent=2))
    return EXIT_OK


def _outdated(args: argparse.Namespace, console: Console) -> int:
    """Each profile's newer final releases in its registry (npm, PyPI)."""
    from acp_model.profiles import ProfileError
    from acp_model.profiles.registry import newer

    profiles = _profiles(args)
    names = list(args.names) or sorted(profiles)
    unknown = [n for n in names if n not in profiles]
    if unknown:
        raise UsageError(f"no agent profile {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(profiles))}")
    found: dict[str, Any] = {}
    for name in names:
        profile = profiles[name]
        try:
            found[name] = {"package": profile.package, "registry": profile.registry,
                           "pinned": profile.version,
                           "newer": [{"version": r.version, "published": r.published}
                                     for r in newer(profile)]}
        except ProfileError as exc:
            found[name] = {"package": profile.package, "registry": profile.registry,
                           "pinned": profile.version, "error": str(exc)}
    if args.json:
        print(json.dumps(found, indent=2))
        return EXIT_OK
    table = Table(title="newer releases than the profiles pin", box=box.SIMPLE, pad_edge=False)
    table.add_column("name", no_wrap=True)
    table.add_column("pinned", no_wrap=True)
    table.add_column("newest", no_wrap=True)
    table.add_column("newer releases (published)", overflow="fold")
    for name, f in found.items():
        if "error" in f:
            table.add_row(name, f["pinned"], "?", f"[red]{escape(f['error'])}[/]")
            continue
        later = f["newer"]
        shown = ", ".join(f"{r['version']} ({r['published']})" for r in later[-6:])
        table.add_row(name, f["pinned"], later[-1]["version"] if later else "up to date",
                      (f"{len(later) - 6} more, " if len(later) > 6 else "") + shown)
    console.print(table)
    behind = [n for n, f in found.items() if f.get("newer")]
    if behind:
        show(console, "move one: acp-model agents bump NAME (newest) or bump NAME --version V",
             indent="")
    return EXIT_OK


def _bump(args: argparse.Namespace, console: Console) -> int:
    """A profile moved to a newer release: its version and lock files."""
    from acp_model.profiles import ProfileError
    from acp_model.profiles.registry import bump, data_dir

    if len(args.names) != 1:
        raise UsageError("bump moves one profile: name exactly one")
    profiles = _profiles(args)
    name = args.names[0]
    if name not in profiles:
        raise UsageError(f"no agent profile {name!r}; known: {', '.join(sorted(profiles))}")
    profile = profiles[name]
    root = Path(args.profiles) if args.profiles else None
    try:
        with console.status(f"resolving {profile.package} (a minute)"):
            release = bump(profile, args.version, root)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    folder = data_dir(profile, root)
    if release.version == profile.version:
        console.print(f"{name}: {profile.version} is already the newest; lock files "
                      f"refreshed in {folder}")
        return EXIT_OK
    console.print(f"{name}: {profile.version} -> {release.version} (published "
                  f"{release.published or '?'}): profile.toml and "
                  f"{', '.join(profile.lock_files())} rewritten in {folder}")
    show(console, f"not re-verified: what the profile says about {profile.version} (its "
         "notes, environment, by-design families). Install and fuzz the new release: "
         f"acp-model agents install {name}; acp-model matrix --row {name}@v"
         f"{profile.protocols[0]} --out row", indent="")
    return EXIT_OK


def _install(args: argparse.Namespace, console: Console) -> int:
    from acp_model.profiles import PROFILES, ProfileError, get

    names = sorted(PROFILES) if args.all else list(args.names)
    if not names:
        raise UsageError("name the agents to install (or --all); see `acp-model agents`")
    if args.version is not None and len(names) != 1:
        raise UsageError("--version installs one agent: name exactly one")
    for name in names:
        try:
            profile = get(name)
            if profile.unavailable and args.all:  # --all: every agent that can run
                console.print(f"{name}: skipped, cannot run offline: {profile.unavailable}")
                continue
            profile.refuse_unavailable()
            if args.version is not None:
                return _install_version(profile, args.version, args.force, console)
            if profile.installed() and not args.force:
                console.print(f"{name} {profile.version}: already installed in "
                              f"{profile.install_dir()}")
                continue
            console.print(f"{name}: {_how(profile)} ...")
            with console.status("installing (a minute or two)"):  # a spinner on a terminal
                where = profile.install()
        except ProfileError as exc:
            raise UsageError(str(exc)) from None
        console.print(f"{name} {profile.version}: installed in {where}")
    return EXIT_OK


def _list(console: Console) -> int:
    from acp_model.profiles import PROFILES, agents_cache

    table = Table(title="agent profiles", box=box.SIMPLE, pad_edge=False)
    # the name is what a user types next: never cut; a narrow terminal folds the package
    table.add_column("name", no_wrap=True)
    table.add_column("package", overflow="fold", min_width=16)
    for column in ("model API", "ACP"):
        table.add_column(column, no_wrap=True)
    table.add_column("status", no_wrap=True, min_width=len("not installed"))
    for profile in PROFILES.values():
        source = "" if profile.registry == "npm" else f"{profile.registry}:"
        status = ("unavailable" if profile.unavailable
                  else "installed" if profile.installed() else "not installed")
        table.add_row(profile.name, f"{source}{profile.package}@{profile.version}",
                      profile.model_api, ", ".join(f"v{v}" for v in profile.protocols), status)
    console.print(table)
    unavailable = [p for p in PROFILES.values() if p.unavailable]
    if unavailable:  # the row says so; the reason in full, where it has room
        show(console, "cannot run offline behind the scripted model:", indent="")
        for profile in unavailable:
            show(console, f"{profile.name}: {profile.unavailable}", indent="  ", hang="    ")
    show(console, f"installed into: {agents_cache()} (ACP_MODEL_AGENTS moves it)", indent="")
    show(console, "fuzz one: acp-model fuzz --agent NAME (install first: acp-model agents "
         "install NAME)", indent="")
    return EXIT_OK


def _how(profile: Any) -> str:
    """What installing ``profile`` runs, in a line."""
    if profile.registry == "pypi":
        return (f"pip install {profile.package}=={profile.version} (pinned tree) into a "
                f"virtual environment")
    return f"npm {profile.npm} {profile.package}@{profile.version}"


def _install_version(profile: Any, version: str, force: bool, console: Console) -> int:
    """Install ``profile`` at another release than its pin (an old release that carries a
    published bug, the one that fixed it)."""
    from acp_model.profiles import ProfileError
    from acp_model.profiles.versions import at_version, install_version

    try:
        other = at_version(profile, version)
        if other.installed() and not force:
            console.print(f"{other.name} {other.version}: already installed in "
                          f"{other.install_dir()}")
            return EXIT_OK
        console.print(f"{other.name}: npm install {other.package}@{other.version} ...")
        with console.status("installing (a minute or two)"):
            where = install_version(other)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    console.print(f"{other.name} {other.version}: installed in {where}")
    return EXIT_OK


class _OptionsAnywhere(argparse.ArgumentParser):
    """A parser whose options may come before, among or after its positionals
    (``agents install --force NAME`` as ``agents install NAME --force``).

    argparse matches all positionals to the first run of words (``install``, no names), so a
    name after an option was left over and refused; intermixed parsing takes the options out
    first. It calls ``parse_known_args`` itself, hence the guard."""

    _intermixing = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def register(sub: Any) -> None:
    p = sub.add_parser(
        "agents", help="real agents profiled for fuzzing offline: list, install, outdated, "
                       "bump",
        description="List the agent profiles (pinned package, model API, protocols) and "
        "whether each is installed, or why it cannot run offline; `install NAME...` (or --all: "
        "every one that can run) runs npm ci from the project's own lockfile, or pip install "
        "of a pinned requirements file into a virtual environment, in the cache "
        "($ACP_MODEL_AGENTS, default $XDG_CACHE_HOME/acp-model/agents).",
        epilog="example: acp-model agents install claude-agent-acp",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.__class__ = _OptionsAnywhere  # the subparsers action makes every parser of one class
    p.add_argument("action", nargs="?", choices=["list", "install", "outdated", "bump"],
                   default="list",
                   help="list (default); install NAME...; outdated [NAME...]: newer releases "
                        "in the profile's registry (npm_config_registry, ACP_MODEL_PYPI_URL "
                        "move them); bump NAME: move the profile to its newest release (or "
                        "--version V) and refresh its lock files")
    p.add_argument("names", nargs="*", metavar="NAME", help="profiles to install, check or bump")
    p.add_argument("--json", action="store_true", help="list, outdated: print JSON (a "
                   "workflow fans the matrix rows out from the list's `rows`)")
    p.add_argument("--profiles", metavar="DIR", help="outdated, bump: the profiles of DIR "
                   "(<name>/profile.toml and lock files) instead of the bundled ones")
    p.add_argument("--all", action="store_true", help="install every profile that can run offline")
    p.add_argument("--force", action="store_true", help="reinstall even if installed")
    p.add_argument("--version", metavar="V|PACKAGE@V",
                   help="bump: the release to move to (default the newest); install: "
                        "install that one agent at another release than its pin (npm, "
                        "dependencies as of its publication; PACKAGE@V for a release "
                        "published under an earlier package name); fuzz it with "
                        "`acp-model fuzz --agent NAME --agent-version V`")
    p.set_defaults(func=cmd_agents)
