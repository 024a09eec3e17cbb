"""The terminal text every command prints through ``report.text.show``: wrapped to the width
with a hanging indent, the text's own line breaks kept, never read as rich markup."""

from __future__ import annotations

import io

from rich.console import Console

from acp_model.report.text import NBSP, show


def _shown(text: str, width: int = 40, **kw: str) -> list[str]:
    out = io.StringIO()
    show(Console(file=out, width=width, color_system=None), text, **kw)
    return out.getvalue().splitlines()


def test_wrapped_with_a_hanging_indent_and_no_padding() -> None:
    lines = _shown("one two three four five six seven eight nine ten eleven twelve", indent="")
    assert len(lines) > 1 and lines[0].startswith("one ")
    assert all(line.startswith("    ") for line in lines[1:])
    assert all(len(line) <= 40 and not line.endswith(" ") for line in lines)
    assert " ".join(line.strip() for line in lines) == \
        "one two three four five six seven eight nine ten eleven twelve"


def test_the_text_s_own_lines_stay_lines() -> None:
    assert _shown("stderr said:\nline one\n\nline three", indent="") == [
        "stderr said:", "    line one", "", "    line three"]


def test_brackets_are_text_and_glued_words_stay_together() -> None:
    assert _shown("[bold]not bold[/] [acpm:3]", indent="") == ["[bold]not bold[/] [acpm:3]"]
    glued = NBSP.join(["s1", "idle_reported(end_turn)"])
    lines = _shown(f"{'x' * 30} {glued}", indent="")
    assert lines[-1].strip() == "s1 idle_reported(end_turn)"  # moved whole, printed with a space
