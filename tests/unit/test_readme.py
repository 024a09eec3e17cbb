"""The README documents every CLI subcommand and option (the guide asks for both)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from acp_model.cli.main import build_parser

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("acp-model has no subcommands")


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_option_is_in_the_readme(name: str) -> None:
    sub = _subcommands()[name]
    assert f"acp-model {name}" in README
    missing = [opt for action in sub._actions for opt in action.option_strings
               if opt.startswith("--") and opt != "--help" and opt not in README
               and action.help != argparse.SUPPRESS]  # hidden: internal to --jobs workers
    assert missing == [], f"README.md does not mention {missing} of `acp-model {name}`"


def test_readme_has_no_placeholders_and_the_right_rule_count() -> None:
    from acp_model.spec.rules import RULES

    assert "FIGURES_" not in README
    assert f"{len(RULES)} rules" in README
