"""Every file the code and the docs point a reader at is one the repository holds.

A docstring or comment that names ``model/check.py``, a page that names
``benchmarks/bench_check.py`` or links ``[design](design.md)``: each is resolved against the
checkout, and a path that is not there fails. (The rules' own citations, the docs pages and
schema ``$defs`` they name and ``RULES.md``'s entries, are checked by
``tests/unit/test_catalogue.py``.) Commands in code blocks and string values are not read:
they name files a run writes (a matrix's ``matrix.json``) or an agent's workspace.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "acp_model"
# the first catalogue, vendored as it was written: its paths are those of the upstream repository
VENDORED = {ROOT / "RULES.md"}
SUFFIXES = "py|md|toml|json|jsonl|yml|yaml|txt|html|js|css|mdx|svg|png|sh|cfg|ini|ipynb"
PATH = re.compile(rf"(?<![\w./<-])((?:[A-Za-z_][\w.-]*/)+[\w.-]+\.(?:{SUFFIXES}))(?![\w/-])")
# a document named without its folder (``RULES.md``, ``prompt-lifecycle.mdx``): held somewhere
BARE = re.compile(r"(?<![\w./<-])([A-Za-z_][\w.-]*\.mdx?)(?![\w/-])")
# documents of other repositories, named as theirs: where they are cited, and why
UPSTREAM = {("docs/sdk-agents.md", "experimental-v2.md"):
            "the Python SDK's v2 page, in the upstream repository"}
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def _roots() -> tuple[set[str], set[str]]:
    """A path's first segment decides where it is read from: a top-level directory of the
    repository, or a subpackage of ``acp_model`` (``model/check.py``)."""
    top = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")}
    sub = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("_")}
    return top, sub


def _prose_of_python(text: str) -> Iterator[str]:
    """A module's docstrings and comments (its string values are data, not pointers)."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) \
                and (doc := ast.get_docstring(node, clean=False)):
            yield doc
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.string


def _prose_of_markdown(text: str) -> str:
    return FENCE.sub("", text)


def _sources() -> Iterator[tuple[Path, list[str]]]:
    for path in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "benchmarks").glob("*.py"),
                        *(ROOT / "tests").rglob("*.py")]):
        yield path, list(_prose_of_python(path.read_text(encoding="utf-8")))
    for path in sorted([*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"),
                        *PACKAGE.rglob("*.md")]):
        if path not in VENDORED:
            yield path, [_prose_of_markdown(path.read_text(encoding="utf-8"))]


def _placeholder(path: str) -> bool:
    """``profiles/data/NAME/profile.toml``: a pattern for the reader, not a file."""
    return any(part.split(".")[0].isupper() or part.startswith("<") for part in path.split("/"))


def dangling_paths(path: Path, texts: list[str]) -> list[str]:
    top, sub = _roots()
    out = []
    for text in texts:
        for match in PATH.finditer(text):
            cited = match.group(1)
            first = cited.split("/")[0]
            if _placeholder(cited) or (first not in top and first not in sub):
                continue
            bases = [ROOT if first in top else PACKAGE, path.parent]
            if not any((base / cited).exists() for base in bases):
                out.append(cited)
    return out


def _held_names() -> set[str]:
    """The file names the checkout holds, outside hidden and generated folders."""
    skip = {"node_modules", "site", "acp_model.egg-info"}
    return {name for folder, dirs, files in os.walk(ROOT)
            if not dirs.__setitem__(slice(None), [d for d in dirs if not d.startswith(".")
                                                  and d not in skip])
            for name in files}


def dangling_documents(path: Path, texts: list[str], held: set[str]) -> list[str]:
    """The documents ``texts`` name by file name alone that no folder of the repository holds
    (``RULES.md`` was cited 59 times before it was vendored; the first plan never was)."""
    where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    return [name for text in texts for name in BARE.findall(text)
            if name not in held and (where, name) not in UPSTREAM]


def dangling_links(path: Path, text: str) -> list[str]:
    out = []
    for match in LINK.finditer(text):
        target = match.group(1).split("#")[0]
        if target and not re.match(r"[a-z][a-z0-9+.-]*:", target) \
                and not (path.parent / target).exists():
            out.append(target)
    return out


def test_every_path_the_code_and_docs_cite_is_held() -> None:
    found = {}
    cited = 0
    for path, texts in _sources():
        cited += sum(len(PATH.findall(text)) for text in texts)
        if bad := dangling_paths(path, texts):
            found[str(path.relative_to(ROOT))] = bad
    assert cited > 200  # the scan sees the pointers it is meant to check
    assert found == {}


def test_every_document_named_alone_is_held() -> None:
    held = _held_names()
    found = {}
    for path, texts in _sources():
        if bad := dangling_documents(path, texts, held):
            found[str(path.relative_to(ROOT))] = bad
    assert found == {}


def test_every_relative_link_of_the_docs_resolves() -> None:
    found = {}
    for path, texts in _sources():
        if path.suffix == ".md" and (bad := dangling_links(path, texts[0])):
            found[str(path.relative_to(ROOT))] = bad
    assert found == {}


def test_the_scans_see_a_dangling_path_and_link() -> None:
    here = PACKAGE / "model" / "planted.py"
    planted = list(_prose_of_python('"""See model/check.py and docs/architecture.md."""\n'
                                    'x = "model/gone.py"  # and oracle/nowhere.py\n'))
    assert dangling_paths(here, planted) == ["docs/architecture.md", "oracle/nowhere.py"]
    page = _prose_of_markdown("[a](design.md) [b](gone.md#x) [c](https://x.org)\n"
                              "```sh\nopen [d](fenced.md)\n```\n")
    assert dangling_links(ROOT / "docs" / "page.md", page) == ["gone.md"]
    named = ["Where we departed from `ARCHITECTURE.md`; see RULES.md and cancellation.mdx"]
    assert dangling_documents(here, named, {"RULES.md", "cancellation.mdx"}) == [
        "ARCHITECTURE.md"]
