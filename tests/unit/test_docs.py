"""The code in README.md and docs/*.md runs: Python blocks execute, every ``acp-model`` command
line parses with the real CLI parser (an option renamed in the code fails here), and the cheap
commands run for real."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from acp_model.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
AGENT = shlex.join([sys.executable, "-m", "acp_model.agents.reference", "--timing", "fast"])
pytest_plugins = ["pytester"]


def _blocks(lang: str) -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        for m in FENCE.finditer(page.read_text(encoding="utf-8")):
            if m.group(1) == lang:
                out.append((page.name, m.group(2)))
    return out


def _commands() -> list[tuple[str, list[str]]]:
    """Every ``acp-model`` command line of the shell blocks (continuations joined, comments
    dropped), as argv without the program name."""
    out = []
    for page, block in _blocks("sh"):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("acp-model "):
                out.append((page, shlex.split(line)[1:]))
    return out


PYTHON = _blocks("python")
COMMANDS = _commands()


def test_the_pages_have_code() -> None:
    assert len(PYTHON) >= 2 and len(COMMANDS) >= 15


@pytest.mark.parametrize(("page", "argv"), COMMANDS,
                         ids=[f"{p}:{' '.join(a)[:50]}" for p, a in COMMANDS])
def test_every_command_line_parses(page: str, argv: list[str]) -> None:
    words = argv[:argv.index("--")] if "--" in argv else argv
    try:
        args = build_parser().parse_args(words)
    except SystemExit as exc:  # argparse exits on an unknown option or a bad value
        pytest.fail(f"{page}: `acp-model {' '.join(argv)}` does not parse (exit {exc.code})")
    assert getattr(args, "func", None) is not None


@pytest.mark.parametrize(("page", "argv"), [(p, a) for p, a in COMMANDS
                                            if a[0] == "rules" or (a[0] == "check" and
                                                                   (ROOT / a[1]).exists())])
def test_cheap_commands_run(page: str, argv: list[str], tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    argv = [str(tmp_path / w) if w.endswith((".json", ".xml")) else w for w in argv]
    assert main(argv) == 0


@pytest.mark.parametrize(("page", "source"), [b for b in PYTHON if "def test_" not in b[1]],
                         ids=lambda x: x if isinstance(x, str) and len(x) < 30 else "block")
def test_python_blocks_execute(page: str, source: str) -> None:
    exec(compile(source, f"<{page}>", "exec"), {"__name__": "docs_example"})


@pytest.mark.slow  # runs pytest against the reference agent
@pytest.mark.parametrize(("page", "source"), [b for b in PYTHON if "def test_" in b[1]],
                         ids=lambda x: x if isinstance(x, str) and len(x) < 30 else "tests")
def test_example_test_files_pass(page: str, source: str, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_docs_example=source)
    result = pytester.runpytest_subprocess("-p", "acp_model", "--acp-agent", AGENT,
                                           "--acp-profile", "quick", "--acp-seed", "1",
                                           "-k", "docs_example", "-q")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 2 and not outcomes.get("failed"), result.stdout.str()


XREF = re.compile(r":(?:mod|func|class|meth|data|attr):`~?(acp_model(?:\.\w+)+)`")


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module, or an attribute path inside the longest module prefix."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def test_docstring_cross_references_name_what_exists() -> None:
    """A docstring's cross-reference outlives a move only if someone re-reads it; this does."""
    refs = {(path.relative_to(ROOT).as_posix(), m.group(1))
            for path in sorted((ROOT / "acp_model").rglob("*.py"))
            for m in XREF.finditer(path.read_text(encoding="utf-8"))}
    assert len(refs) > 10  # the scan finds the references it is meant to check
    assert [ref for ref in sorted(refs) if not _resolves(ref[1])] == []


def test_the_agents_readme_lists_every_mutant_under_its_rule() -> None:
    """The mutant table of acp_model/agents/README.md is the zoo: each mutant once, under the
    rule it plants (the table had missed one added later)."""
    from acp_model.agents.mutants import MUTANTS

    text = (ROOT / "acp_model" / "agents" / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Mutants"):text.index("\n## ", text.index("## Mutants") + 1)]
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| ([A-Za-z0-9.\-]+) \|", section, re.M)
    assert len(rows) == len({name for name, _ in rows})  # no mutant twice
    assert sorted(rows) == sorted((m.name, m.rule) for m in MUTANTS)
    counts = re.search(r"(\d+) variants of the first .*?\((\d+) against the seed's revision, "
                       r"(\d+) against", text, re.S)
    assert counts is not None
    assert [int(n) for n in counts.groups()] == [
        len(MUTANTS), sum(m.revisions == ("seed",) for m in MUTANTS),
        sum(m.revisions == ("sdk-2.4.0",) for m in MUTANTS)]


def test_the_campaign_plans_have_the_sizes_the_plugin_docs_give() -> None:
    """docs/pytest-plugin.md states each zoo plan's case count; the plans grow with the zoo."""
    sys.path.insert(0, str(ROOT / "fuzz"))
    try:
        import acp_zoo_campaign
    finally:
        sys.path.remove(str(ROOT / "fuzz"))
    text = (ROOT / "docs" / "pytest-plugin.md").read_text(encoding="utf-8")
    for name in ("quick", "full", "designs"):
        row = re.search(rf"^\| `{name}` \|[^\n]*?(\d+) cases\)? \|", text, re.M)
        assert row is not None, name
        assert int(row.group(1)) == len(acp_zoo_campaign.plan(name)), name
