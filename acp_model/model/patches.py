"""A reader of the ``git_patch`` text a v2 diff carries (``$defs.DiffPatchFormat``).

The format is Git's ``--patch`` output: one or more ``diff --git`` sections, each with its
extended header lines (modes, renames, copies, ``index``), its ``---`` / ``+++`` lines and its
hunks, whose ``@@`` headers count the lines that follow. Reading the counts is what tells a
hunk's last line from text after it (a mail signature), so the reader needs no guessing about
where the patch ends. It reports what TOOL-21 judges (``messages.diff_patch_consistent``): the
sections with their paths and operations, and the lines that belong to no section (commit
metadata, an email envelope). It never raises: an unreadable patch is a finding, not a crash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
# extended header lines Git writes between "diff --git" and the first hunk
_HEADERS = ("old mode ", "new mode ", "deleted file mode ", "new file mode ", "copy from ",
            "copy to ", "rename from ", "rename to ", "similarity index ",
            "dissimilarity index ", "index ", "--- ", "+++ ", "Binary files ")
_ESCAPES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
            '"': '"', "\\": "\\"}
DEV_NULL = "/dev/null"


def unquote(text: str) -> str:
    """A path as Git writes it, unquoted (C-style quotes and octal escapes of its bytes)."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text
    out, body, i = bytearray(), text[1:-1], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.match(r"[0-7]{3}", body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += ch.encode()
        i += 1
    return out.decode("utf-8", "replace")


def _header_paths(rest: str) -> tuple[str, str] | None:
    """The two paths of a ``diff --git`` line (None: it cannot be split unambiguously)."""
    if rest.startswith('"'):
        end = re.match(r'"(?:[^"\\]|\\.)*"', rest)
        if end is None:
            return None
        first, second = rest[:end.end()], rest[end.end():].lstrip(" ")
        return unquote(first), unquote(second)
    if rest.endswith('"'):
        start = rest.rfind(' "')
        return (rest[:start], unquote(rest[start + 1:])) if start > 0 else None
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " " and rest[:half] == rest[half + 1:]:
        return rest[:half], rest[half + 1:]
    parts = rest.split(" ")
    if len(parts) == 2:
        return parts[0], parts[1]
    return None


def _path_of(value: str) -> str:
    """A ``---`` / ``+++`` / ``rename from`` path, unquoted (Git ends a path that holds a
    space with a tab)."""
    return unquote(value.split("\t", 1)[0].rstrip("\n"))


@dataclass(slots=True)
class Section:
    """One ``diff --git`` section: its line number and what its headers say."""

    line: int
    header: tuple[str, str] | None
    old: str | None = None  # the --- path (DEV_NULL for an added file)
    new: str | None = None  # the +++ path
    rename: tuple[str | None, str | None] = (None, None)
    copy: tuple[str | None, str | None] = (None, None)
    added: bool = False
    deleted: bool = False

    @property
    def operation(self) -> str:
        if self.added or self.old == DEV_NULL:
            return "add"
        if self.deleted or self.new == DEV_NULL:
            return "delete"
        if self.rename != (None, None):
            return "move"
        if self.copy != (None, None):
            return "copy"
        return "modify"

    def _side(self, which: int) -> str | None:
        pair = self.rename if self.rename != (None, None) else self.copy
        named = pair[which] or (self.old, self.new)[which]
        if named is not None and named != DEV_NULL:
            return named
        return self.header[which] if self.header is not None else None

    @property
    def path(self) -> str | None:
        """The path the section changes (a deleted file: the one it removes)."""
        return self._side(0) if self.operation == "delete" else self._side(1)

    @property
    def old_path(self) -> str | None:
        return self._side(0)

    def paths(self) -> list[tuple[str, str]]:
        """Every path the section writes, with where (the header's, ---, rename from ...)."""
        out: list[tuple[str, str]] = []
        if self.header is not None:
            out += [("diff --git", self.header[0]), ("diff --git", self.header[1])]
        out += [(where, p) for where, p in (("---", self.old), ("+++", self.new),
                                            ("rename from", self.rename[0]),
                                            ("rename to", self.rename[1]),
                                            ("copy from", self.copy[0]),
                                            ("copy to", self.copy[1]))
                if p is not None and p != DEV_NULL]
        return out


@dataclass(slots=True)
class Patch:
    """A read patch: its sections and the lines outside them (line number, text)."""

    sections: list[Section] = field(default_factory=list)
    outside: list[tuple[int, str]] = field(default_factory=list)
    unreadable: list[tuple[int, str]] = field(default_factory=list)  # a header we cannot split


class _Reader:
    """Reads a patch line by line: inside a hunk (its counts say how many lines are left),
    in a section's headers, or outside every section."""

    def __init__(self) -> None:
        self.patch = Patch()
        self.section: Section | None = None
        self.old_left = self.new_left = 0  # lines of the current hunk still to come
        self.binary = False

    def in_hunk(self, line: str) -> bool:
        """Take ``line`` as a line of the current hunk, if one is still open."""
        if self.old_left <= 0 and self.new_left <= 0:
            return False
        mark = line[:1]
        if mark == "\\":
            return True  # "\ No newline at end of file"
        if mark in (" ", "", "-", "+"):
            self.old_left -= mark != "+"
            self.new_left -= mark != "-"
            return True
        self.old_left = self.new_left = 0  # a short hunk: read on as headers
        return False

    def line(self, n: int, line: str) -> None:
        if self.in_hunk(line):
            return
        if line.startswith("diff --git "):
            header = _header_paths(line[len("diff --git "):])
            if header is None:
                self.patch.unreadable.append((n, line))
            self.section = Section(n, header)
            self.patch.sections.append(self.section)
            self.binary = False
        elif (self.section is None or not (self.binary or self._section_line(line))) \
                and line.strip():
            self.patch.outside.append((n, line))

    def _section_line(self, line: str) -> bool:
        """Is ``line`` part of the current section (a hunk header, a header line)?"""
        assert self.section is not None
        hunk = _HUNK.match(line)
        if hunk is not None:
            self.old_left = int(hunk.group(1)) if hunk.group(1) is not None else 1
            self.new_left = int(hunk.group(2)) if hunk.group(2) is not None else 1
            return True
        if line == "GIT binary patch":
            self.binary = True  # base85 data follows, up to the next section
            return True
        if line.startswith(_HEADERS):
            _header_line(self.section, line)
            return True
        return line.startswith("\\")


def read(text: str) -> Patch:
    """Read a ``git_patch`` text (see the module docstring)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    reader = _Reader()
    for n, line in enumerate(lines, 1):
        reader.line(n, line)
    return reader.patch


def _header_line(section: Section, line: str) -> None:
    for prefix, setter in (
            ("--- ", lambda p: setattr(section, "old", p)),
            ("+++ ", lambda p: setattr(section, "new", p)),
            ("rename from ", lambda p: setattr(section, "rename", (p, section.rename[1]))),
            ("rename to ", lambda p: setattr(section, "rename", (section.rename[0], p))),
            ("copy from ", lambda p: setattr(section, "copy", (p, section.copy[1]))),
            ("copy to ", lambda p: setattr(section, "copy", (section.copy[0], p)))):
        if line.startswith(prefix):
            setter(_path_of(line[len(prefix):]))
            return
    if line.startswith("new file mode "):
        section.added = True
    elif line.startswith("deleted file mode "):
        section.deleted = True
