"""``acp-model agents``: the real agents profiled for fuzzing, and installing them."""

from __future__ import annotations

import argparse
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from acp_model.cli.common import EXIT_OK, UsageError
from acp_model.report.text import show


def cmd_agents(args: argparse.Namespace, console: Console) -> int:
    if args.action == "install":
        return _install(args, console)
    if args.action == "tools":
        return _tools(args, console)
    return _list(console)


def _tools(args: argparse.Namespace, console: Console) -> int:
    """Record the tools each named agent offers its model (``fuzzing.tool_lists``): the
    scripted model's choice per kind, with and without the profile's hints, and with
    ``--out`` the fixture files."""
    from pathlib import Path

    from acp_model.fuzzing.tool_lists import RecordingFailed, choices, record, tools_of, write
    from acp_model.profiles import PROFILES, ProfileError, get

    names = sorted(n for n, p in PROFILES.items() if not p.unavailable and p.installed()) \
        if args.all else list(args.names)
    if not names:
        raise UsageError("name the agents whose tools to record (or --all: every installed one)")
    failed = 0
    for name in names:
        try:
            profile = get(name)
            profile.argv()  # runnable and installed, or a usage error saying why
        except ProfileError as exc:
            raise UsageError(str(exc)) from None
        with console.status(f"{name}: one turn behind the scripted model"):
            try:
                doc = record(profile)
            except RecordingFailed as exc:
                console.print(f"[red]{name}: no tool list[/]: {exc}")
                failed += 1
                continue
        tools = tools_of(doc)
        plain = choices(tools)
        hinted = choices(tools, profile.prefer_tools)
        picks = ", ".join(f"{want} -> {plain[want] or '(none)'}"
                          + (f" (hint: {hinted[want]})" if hinted[want] != plain[want] else "")
                          for want in plain)
        show(console, f"{name} {profile.version}: {len(tools)} tools "
             f"({', '.join(t.name for t in tools)}); {picks}", indent="", hang="  ")
        if args.out:
            show(console, f"  written to {write(doc, Path(args.out))}", indent="")
    return 1 if failed else EXIT_OK


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
        "agents", help="real agents profiled for fuzzing offline: list, install, record tools",
        description="List the agent profiles (pinned package, model API, protocols) and "
        "whether each is installed, or why it cannot run offline; `install NAME...` (or --all: "
        "every one that can run) runs npm ci from the project's own lockfile, or pip install "
        "of a pinned requirements file into a virtual environment, in the cache "
        "($ACP_MODEL_AGENTS, default $XDG_CACHE_HOME/acp-model/agents); `tools NAME...` runs "
        "each installed agent for one turn behind the scripted model and records the tools "
        "it offers its model, with the tool the scripted model calls for each kind of call.",
        epilog="example: acp-model agents install claude-agent-acp",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.__class__ = _OptionsAnywhere  # the subparsers action makes every parser of one class
    p.add_argument("action", nargs="?", choices=["list", "install", "tools"], default="list")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="profiles to install, or whose tools to record")
    p.add_argument("--all", action="store_true",
                   help="install every profile that can run offline (tools: record every "
                        "installed one)")
    p.add_argument("--out", metavar="DIR",
                   help="tools: write each recorded tool list to DIR/NAME.json (the test "
                        "fixtures live in tests/data/tools)")
    p.add_argument("--force", action="store_true", help="reinstall even if installed")
    p.add_argument("--version", metavar="V|PACKAGE@V",
                   help="install that one agent at another release than its pin (npm, "
                        "dependencies as of its publication; PACKAGE@V for a release "
                        "published under an earlier package name); fuzz it with "
                        "`acp-model fuzz --agent NAME --agent-version V`")
    p.set_defaults(func=cmd_agents)
