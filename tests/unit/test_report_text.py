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


def test_a_fixpoint_on_a_program_that_rarely_reproduces_is_not_called_minimal() -> None:
    """Minimizing keeps an action because its replay without it missed: against a program
    that itself reproduced 0 of 6 times, that is no proof (codex-acp v1's CANCEL-07 of the s9
    matrix: 18 actions "minimal", then 0/6 held and 0/6 free)."""
    from acp_model.report.matrix import minimized_text
    from acp_model.report.text import counterexample_line, proven_minimal

    fixpoint = {"fixpoint": True, "stage": "fixpoint", "steps": 18}
    assert proven_minimal(fixpoint, 18, 5, 6) is True
    assert proven_minimal(fixpoint, 18, 3, 6) is True  # half: as the measurement prefers
    assert proven_minimal(fixpoint, 18, 0, 6) is False
    assert proven_minimal(fixpoint, 17, 6, 6) is False  # not the fixpoint's own program
    assert proven_minimal(None, 18, 6, 6) is None
    ce = {"rule": "CANCEL-07", "steps": 18, "actions": [{}] * 18, "minimize": fixpoint,
          "reproduced": 2, "replays": 6, "free_reproduced": 1, "free_replays": 6}
    assert "counterexample (not proven minimal)" in counterexample_line(ce)
    assert "minimal counterexample" in counterexample_line({**ce, "reproduced": 3})
    words = minimized_text({"steps": 18, "minimize": fixpoint, "reproduction": "0/6",
                            "free_reproduction": "1/6"})
    assert "not proven minimal" in words and "0/6" in words
    assert "no single action can be removed" in minimized_text(
        {"steps": 18, "minimize": fixpoint, "reproduction": "6/6"})
    longer = minimized_text({"steps": 20, "minimize": fixpoint, "reproduction": "6/6"})
    assert "fixpoint at 18 action(s); this longer program reproduces more often" in longer


def test_a_rule_that_binds_both_parties_says_so_in_words() -> None:
    """Issue bodies, the pytest plugin and `acp-model rules` read "binds both parties", not
    "binds the both" (the s9 reader)."""
    from acp_model.spec.rules import RULES

    assert RULES["INIT-07"].binds == "binds both parties"
    assert RULES["CANCEL-07"].binds == "binds the agent"


def test_a_program_shown_instead_of_the_fixpoint_s_is_never_called_minimal() -> None:
    """claude-agent-acp v2's SDK-PROMPT-03 (s15): the fixpoint's 5-action program reproduced
    0/6, another 5-action program was shown, and its header said "minimal": only the lengths
    were compared."""
    from acp_model.fuzzing.artifacts import minimize_words
    from acp_model.report.text import proven_minimal

    fixpoint = {"fixpoint": True, "stage": "fixpoint", "steps": 5}
    assert proven_minimal(fixpoint, 5, 6, 6)
    other = {**fixpoint, "other": True}
    assert not proven_minimal(other, 5, 6, 6)
    said = minimize_words(other, 5, 6, 6)
    assert said is not None and said.startswith("not the minimal program (5 actions") \
        and "another that reproduces more often" in said
    longer = minimize_words({**fixpoint, "steps": 3, "other": True}, 5, 6, 6)
    assert longer is not None and "a longer one" in longer
