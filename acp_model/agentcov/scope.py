"""Which of an agent's code is its ACP layer: the files (and, in a bundle, the modules) whose
coverage ``--coverage`` reports.

A scope is a list of patterns, each ``GLOB`` or ``GLOB#MODULE``: ``GLOB`` names files (``*``
within a folder, ``**`` across folders), relative to the agent's install directory when it
is not absolute; ``#MODULE`` narrows a bundled file to the modules whose bundler marker names
match (esbuild writes ``// src/acp/session.ts`` before each module it inlines: the module runs
from its marker to the next one). A profile lists its agent's layer (``[coverage] layer``);
without one, every file outside ``node_modules`` (Node) and every Python file that imports the
ACP SDK (``acp``) is in scope (:data:`AUTO`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

AUTO = "auto"
# esbuild's module marker: a comment line holding the inlined module's path
MARKER = re.compile(r"^// ((?:[\w@.+-]+/)*[\w@.+-]+\.[cm]?[jt]sx?)\s*$")
PY_SDK = re.compile(r"^\s*(?:from\s+acp(?:\.[\w.]+)?\s+import|import\s+acp\b)", re.MULTILINE)


def glob_regex(pattern: str) -> str:
    """A regular expression (Python's and JavaScript's alike) for a path glob: ``**``
    crosses folders, ``*`` and ``?`` do not."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "^" + "".join(out) + "$"


@dataclass(frozen=True)
class Pattern:
    """One pattern of a scope: files, and optionally the modules of a bundle."""

    files: str  # an absolute glob
    modules: str | None = None

    @cached_property
    def file_re(self) -> re.Pattern[str]:
        return re.compile(glob_regex(self.files))

    @cached_property
    def module_re(self) -> re.Pattern[str] | None:
        return re.compile(glob_regex(self.modules)) if self.modules else None


@dataclass(frozen=True)
class Scope:
    """An agent's ACP layer (:mod:`module docstring <acp_model.agentcov.scope>`)."""

    patterns: tuple[Pattern, ...] = ()
    source: str = AUTO  # where it comes from ("profile NAME", "--coverage-scope", "auto")
    root: str | None = None  # what relative globs are relative to

    @classmethod
    def parse(cls, specs: Sequence[str], root: str | os.PathLike[str] | None = None,
              source: str = "") -> Scope:
        """A scope from ``GLOB[#MODULE]`` strings (none: :data:`AUTO`)."""
        if not specs:
            return cls((), AUTO, str(root) if root else None)
        patterns = []
        for spec in specs:
            files, _, modules = spec.partition("#")
            if not files:
                raise ValueError(f"coverage scope {spec!r} names no files")
            if not os.path.isabs(files):
                if root is None:
                    files = os.path.join(os.getcwd(), files)
                else:
                    files = os.path.join(str(root), files)
            patterns.append(Pattern(os.path.normpath(files) if "**" not in files else files,
                                    modules or None))
        return cls(tuple(patterns), source or "scope", str(root) if root else None)

    @property
    def auto(self) -> bool:
        return not self.patterns

    def file_regexes(self) -> list[str]:
        """The patterns a runtime hook keeps scripts by (auto: everything outside
        ``node_modules``)."""
        if self.auto:
            return [r"^(?!.*/node_modules/).*$"]
        return [p.file_re.pattern for p in self.patterns]

    def main_regexes(self) -> list[str]:
        """The main scripts of the Node processes worth measuring: those of the packages the
        layer lies in (none: every process). An agent's other Node processes (a CLI it drives,
        a language server) run unmeasured: V8's block coverage slows a big bundle down."""
        out = []
        for p in self.patterns:
            package = _package_of(p.files)
            if package is None:
                return []
            out.append("^" + re.escape(package) + "/")
        return sorted(set(out))

    def python_include(self) -> list[str]:
        """coverage.py ``include`` globs (auto: none, coverage.py's own choice)."""
        return [p.files for p in self.patterns if p.modules is None]

    def wants(self, path: str) -> bool:
        """Is ``path`` in scope (wholly, or some of its modules)?"""
        if self.auto:
            return "/node_modules/" not in path and not path.startswith("node:")
        return any(p.file_re.match(path) for p in self.patterns)

    def lines(self, path: str, text: str) -> set[int] | None:
        """The 1-based lines of ``path`` in scope (None: all of them); a bundle pattern keeps
        the lines of its matching modules."""
        if self.auto:
            if path.endswith(".py") and not PY_SDK.search(text):
                return set()
            return None
        matching = [p for p in self.patterns if p.file_re.match(path)]
        if any(p.module_re is None for p in matching):
            return None
        keep: set[int] = set()
        regions = list(module_regions(text))
        for p in matching:
            assert p.module_re is not None
            for name, first, last in regions:
                if p.module_re.match(name):
                    keep.update(range(first, last + 1))
        return keep

    def files_on_disk(self) -> list[str]:
        """The files the scope's globs name that exist (a Python module never imported is
        still in the layer: 0 lines reached)."""
        found: set[str] = set()
        for p in self.patterns:
            base = _fixed_prefix(p.files)
            if os.path.isfile(base):
                found.add(base)
            elif os.path.isdir(base):
                found.update(path for path in _walk(base) if p.file_re.match(path))
        return sorted(path for path in found if self._holds_layer(path))

    def _holds_layer(self, path: str) -> bool:
        """A bundle pattern's file counts only if one of its modules is in scope."""
        if not any(p.modules for p in self.patterns if p.file_re.match(path)):
            return True
        text = read_source(path)
        return text is not None and self.lines(path, text) != set()

    def describe(self) -> str:
        if self.auto:
            return ("auto: every script outside node_modules (Node); every Python file that "
                    "imports the ACP SDK")
        shown = [_short(p, self.root) for p in self.patterns[:3]]
        more = len(self.patterns) - len(shown)
        return f"{self.source}: " + ", ".join(shown) + (f" and {more} more" if more else "")


def _short(p: Pattern, root: str | None) -> str:
    files = os.path.relpath(p.files, root) if root and p.files.startswith(root) else p.files
    return files + (f"#{p.modules}" if p.modules else "")


def _package_of(glob: str) -> str | None:
    """The ``node_modules`` package folder a glob lies in (``.../node_modules/@scope/pkg``),
    or None (not inside an installed package)."""
    parts = _fixed_prefix(glob).split("/")
    if "node_modules" not in parts:
        return None
    at = len(parts) - 1 - parts[::-1].index("node_modules")
    name = parts[at + 1: at + 3] if at + 1 < len(parts) and parts[at + 1].startswith("@") \
        else parts[at + 1: at + 2]
    return "/".join(parts[: at + 1] + name) if name else None


def _fixed_prefix(glob: str) -> str:
    parts = []
    for part in glob.split("/"):
        if any(c in part for c in "*?["):
            break
        parts.append(part)
    return "/".join(parts) or "/"


def _walk(base: str) -> Iterable[str]:
    for folder, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".git")]
        for name in files:
            if name.endswith((".py", ".js", ".mjs", ".cjs")):
                yield os.path.join(folder, name)


def module_regions(text: str) -> Iterable[tuple[str, int, int]]:
    """(module path, first line, last line) of each module a bundle inlines, by its
    bundler markers (1-based lines; a module runs to the line before the next marker)."""
    marks = [(n, m.group(1)) for n, line in enumerate(text.splitlines(), start=1)
             if line.startswith("// ") and (m := MARKER.match(line))]
    total = text.count("\n") + 1
    for k, (line, name) in enumerate(marks):
        end = marks[k + 1][0] - 1 if k + 1 < len(marks) else total
        yield name, line, end


def read_source(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


__all__ = ["AUTO", "Pattern", "Scope", "glob_regex", "module_regions", "read_source"]
