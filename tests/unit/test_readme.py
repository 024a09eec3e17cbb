"""The README is a front door: short, its links resolve, its two commands exist; the option
reference lives on the generated command line page (docs/cli.md, built from the parsers), and
every command's --help ends with an example that parses."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from acp_model.cli.main import build_parser
from sitegen.pages import cli_reference, subcommands

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_is_at_most_200_lines() -> None:
    assert len(README.splitlines()) <= 200


def test_every_relative_link_of_the_readme_resolves() -> None:
    targets = [t.split("#")[0] for t in LINK.findall(README) if "://" not in t]
    assert len(targets) >= 10  # the scan finds the links it checks
    assert [t for t in targets if t and not (ROOT / t).exists()] == []


def test_the_readme_gives_the_two_commands_and_the_makefile_has_them() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, re.M), target


def test_the_readme_has_no_placeholders() -> None:
    assert not re.search(r"FIGURES_|ACP_[A-Z_]+_OUTPUT|TODO", README)


@pytest.mark.parametrize("name", sorted(subcommands(build_parser())))
def test_the_cli_page_lists_every_option_of_every_command(name: str) -> None:
    """The page is generated from the parser; this guards the generator (an option it drops,
    a subcommand it skips, a hidden worker option it shows)."""
    page = cli_reference()
    sub = subcommands(build_parser())[name]
    start = page.index(f"## acp-model {name} ")
    end = page.find("\n## ", start + 1)
    section = page[start:end if end != -1 else None]
    for action in sub._actions:
        for opt in action.option_strings:
            if opt in ("-h", "--help"):
                continue
            shown = f"`{opt}`" in section
            assert shown == (action.help != argparse.SUPPRESS), f"{opt} of {name}"


@pytest.mark.parametrize("name", sorted(subcommands(build_parser())))
def test_every_command_help_ends_with_an_example_that_parses(name: str) -> None:
    sub = subcommands(build_parser())[name]
    examples = re.findall(rf"^\s*(?:example:|\$)\s*(acp-model {name}\b.*)$",
                          sub.format_help(), re.M)
    assert examples, f"`acp-model {name} --help` has no example line"
    words = shlex.split(examples[-1])[1:]
    words = words[:words.index("--")] if "--" in words else words
    args = build_parser().parse_args(words)
    assert args.func is not None
