"""The git_patch reader TOOL-21 judges with (acp_model.model.patches): sections, operations,
paths, and the lines outside every section, told apart by the hunks' counts."""

from __future__ import annotations

from typing import Any

import pytest

from acp_model.model import messages, patches

MODIFY = ("diff --git /p/a.py /p/a.py\nindex 1..2 100644\n--- /p/a.py\n+++ /p/a.py\n"
          "@@ -1,3 +1,3 @@\n x\n-y\n+z\n--- not a header: a removed line\n")


def test_a_hunk_is_read_by_its_counts_so_a_signature_after_it_is_outside() -> None:
    text = MODIFY.replace("@@ -1,3 +1,3 @@", "@@ -1,3 +1,2 @@") + "-- \n2.43.0\n"
    read = patches.read(text)
    [section] = read.sections
    assert (section.operation, section.path) == ("modify", "/p/a.py")
    assert read.outside == [(10, "-- "), (11, "2.43.0")]
    assert patches.read(MODIFY).outside == []


def test_commit_metadata_before_the_first_section_is_outside() -> None:
    read = patches.read("From abc Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n" + MODIFY)
    assert [n for n, _ in read.outside] == [1, 2]


@pytest.mark.parametrize(("text", "operation", "path", "old"), [
    ("diff --git /p/n /p/n\nnew file mode 100644\n--- /dev/null\n+++ /p/n\n@@ -0,0 +1 @@\n+x\n",
     "add", "/p/n", "/p/n"),
    ("diff --git /p/d /p/d\ndeleted file mode 100644\n--- /p/d\n+++ /dev/null\n"
     "@@ -1 +0,0 @@\n-x\n", "delete", "/p/d", "/p/d"),
    ('diff --git "/p/a b" "/p/c\\td"\nsimilarity index 100%\nrename from "/p/a b"\n'
     'rename to "/p/c\\td"\n', "move", "/p/c\td", "/p/a b"),
    ("diff --git /p/a /p/b\nsimilarity index 90%\ncopy from /p/a\ncopy to /p/b\n", "copy",
     "/p/b", "/p/a"),
    ("diff --git /p/m /p/m\nold mode 100644\nnew mode 100755\n", "modify", "/p/m", "/p/m"),
    ("diff --git /p/i.png /p/i.png\nindex 1..2\nGIT binary patch\nliteral 5\nMcmZ?\n\n"
     "literal 0\nHcmV?d00001\n\n", "modify", "/p/i.png", "/p/i.png"),
])
def test_each_operation_and_its_paths(text: str, operation: str, path: str, old: str) -> None:
    read = patches.read(text)
    [section] = read.sections
    assert (section.operation, section.path, section.old_path) == (operation, path, old)
    assert read.outside == []


def test_a_path_is_unquoted_as_git_quotes_it() -> None:
    assert patches.unquote('"/p/caf\\303\\251 \\"x\\""') == '/p/café "x"'
    assert patches.unquote("/p/plain") == "/p/plain"


def _problems(text: str, changes: list[dict[str, Any]]) -> list[str]:
    return messages._patch_problems({"type": "diff", "changes": changes,
                                     "patch": {"format": "git_patch", "text": text}})


def test_the_patch_is_compared_with_changes() -> None:
    modify = [{"operation": "modify", "path": "/p/a.py"}]
    assert _problems(MODIFY, modify) == []
    assert _problems(MODIFY, []) == ["the section at line 1 changes '/p/a.py', which changes "
                                     "does not list"]
    [wrong] = _problems(MODIFY, [{"operation": "add", "path": "/p/a.py"}])
    assert "is a modify" in wrong and "as a add" in wrong
    [prefixed] = _problems(MODIFY.replace("/p/a.py /p/a.py", "a/p/a.py b/p/a.py"), modify)
    assert "must be absolute (Git's a/ b/ prefixes)" in prefixed
    moved = 'diff --git /p/a /p/b\nrename from /p/a\nrename to /p/b\n'
    assert _problems(moved, [{"operation": "move", "oldPath": "/p/a", "path": "/p/b"}]) == []
    [elsewhere] = _problems(moved, [{"operation": "move", "oldPath": "/p/z", "path": "/p/b"}])
    assert "names '/p/z'" in elsewhere
    assert _problems("", modify) == ["the text holds no diff --git section"]
    # a custom format, a change of a custom operation: not judged
    assert messages._patch_problems({"changes": [], "patch": {"format": "_hg", "text": "x"}}) \
        == []
    assert _problems(MODIFY, [{"operation": "_touch", "path": "/p/a.py"}]) == []
