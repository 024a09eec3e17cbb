"""Citations of the rule catalogue, parsed and resolved against the vendored sources.

A rule's ``citation`` is written for people (``prompt-lifecycle.mdx §Cancellation; schema
$defs.StopReason``). :func:`parse` splits it into parts a program can check: a docs page and its
sections, a schema ``$defs`` pointer, or a reference outside the vendored pages and schemas
(``RULES.md``, the first catalogue, held at the repository's root and checked by
``tests/unit/test_catalogue.py``; ``JSON-RPC 2.0``). :func:`unresolved` says which parts do
not exist in a revision's vendored pages and schema, so ``tests/unit/test_catalogue.py`` keeps
every citation pointing at real text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from acp_model.spec.revisions import REVISIONS
from acp_model.spec.schema import load_schema

EXTERNAL = ("RULES.md", "JSON-RPC 2.0", "the fuzzer's own limit", "schema.json (")


@dataclass(frozen=True, slots=True)
class Cite:
    """One part of a citation: ``source`` is ``page``, ``schema`` or ``external``."""

    source: str
    target: str  # page file name, $defs path, or the external reference
    sections: tuple[str, ...] = ()
    revision: str = "seed"  # whose schema a $defs pointer (or whose docs page) it is in


def parse(citation: str) -> list[Cite]:
    out: list[Cite] = []
    for part in (p.strip() for p in citation.split(";")):
        if not part:
            continue
        if part.startswith("schema $defs."):
            out.append(Cite("schema", part.removeprefix("schema ").split()[0]))
        elif " schema $defs." in part.split("(")[0] or part.startswith("$defs."):
            # "<revision> schema $defs.X (...)", or "$defs.X" after one in the same citation
            rev, _, rest = part.partition(" schema ")
            if part.startswith("$defs."):
                rev, rest = (out[-1].revision if out else "seed"), part
            out.append(Cite("schema", rest.split()[0], revision=rev))
        elif part.startswith(EXTERNAL) or ".mdx" not in part:
            out.append(Cite("external", part))
        else:
            page, _, rest = part.partition(".mdx")
            sections = tuple(s.strip() for s in re.findall(r"§([^§]+)", rest))
            rev, _, name = page.strip().rpartition(" ")  # "v1 prompt-turn.mdx": v1's page
            out.append(Cite("page", name + ".mdx",
                            tuple(s.rstrip(", ").strip() for s in sections),
                            revision=rev if rev in REVISIONS else ""))
    return out


def _norm(text: str) -> str:
    text = re.sub(r"^\d+\.?\s*", "", text.strip())
    return re.sub(r"[`*]", "", text).strip().lower()


@cache
def headings(revision_dir: str, page: str) -> tuple[str, ...] | None:
    """The headings of a vendored docs page (None: no such page)."""
    path = resources.files("acp_model.spec").joinpath("data", revision_dir, "docs", page)
    if not path.is_file():
        return None
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            out.append(line.lstrip("#").strip())
    return tuple(out)


def _section_found(section: str, heads: tuple[str, ...]) -> bool:
    if section in ("closing", "intro", "diagram"):
        return True  # the page's closing paragraph, introduction or sequence diagram
    m = re.match(r"^(?P<main>[^(]*)(\((?P<inner>[^)]*)\))?", section)
    main = (m.group("main") if m else section).strip()
    inner = (m.group("inner") or "") if m else ""
    number = re.match(r"^(\d+)\b", main)
    normal = [_norm(h) for h in heads]
    ok = any(n.startswith(_norm(main)) for n in normal) if main and not main.isdigit() else True
    if number and main.isdigit():
        ok = any(re.match(rf"^{number.group(1)}\.", h.strip()) for h in heads)
    inner = inner.strip()
    words = inner.split()
    if len(words) >= 2 and all(w[:1].isupper() for w in words):  # a sub-heading's name
        ok = ok and any(n.startswith(_norm(inner)) for n in normal)
    return ok


def _pointer_found(path: str, schema: dict[str, Any]) -> bool:
    node: Any = schema
    for key in path.removeprefix("$").split("."):
        if key == "defs":
            key = "$defs"
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, dict) and key in node.get("properties", {}):
            node = node["properties"][key]
        else:
            return False
    return True


def unresolved(citation: str, revision_dir: str = "seed") -> list[str]:
    """The parts of ``citation`` that do not exist in the revision's vendored sources."""
    bad = []
    for cite in parse(citation):
        if cite.source == "schema" and (cite.revision not in REVISIONS or not _pointer_found(
                cite.target, load_schema(cite.revision))):
            bad.append(f"{cite.revision} {cite.target}")
        elif cite.source == "page":
            heads = headings(cite.revision or revision_dir, cite.target)
            if heads is None:
                bad.append(f"{cite.revision} {cite.target}".strip())
                continue
            bad += [f"{cite.target} §{s}" for s in cite.sections if not _section_found(s, heads)]
    return bad
