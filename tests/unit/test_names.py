"""One name per concept (issue 51 step 5): no two classes of the package share a name, and no
two checks do (a violation's ``check`` field names a check by its name alone).

Two classes with one name make a reader ask which one a signature means: the schedule's
``Event`` beside the model's, two ``Gate`` s, ``Terminal`` s, ``Part`` s, ``Edge`` s,
``ToolCall`` s and ``Stop`` s. The pairs still standing are pinned below with why (one
concept on both sides of the agent boundary, private writers, another helper's modules); the
pin may only shrink (an entry that no longer clashes fails too).
"""

from __future__ import annotations

import ast
from collections import Counter, defaultdict
from pathlib import Path

from acp_model.cli import rule_map
from acp_model.model.check import CHECKS

PACKAGE = Path(__file__).resolve().parents[2] / "acp_model"

# name -> (the modules defining it, why it stays)
SEPARATE = "two programs: the reference agent imports nothing of the package"
PINNED: dict[str, tuple[frozenset[str], str]] = {
    "Work": (frozenset({"agents/plain.py", "agents/reference/work.py", "model/work.py"}),
             "one concept (a turn's work) on each side: the agents import nothing of the "
             "package, the model's is its view of the agent's"),
    "_Out": (frozenset({"llm/apis/gemini.py", "llm/apis/openai_chat.py",
                        "llm/apis/openai_responses.py"}),
             "private, one writer per model API, never imported"),
    "Case": (frozenset({"matrix/rejudge.py", "report/html.py"}),
             "a recorded finding and a finding drawn on the page: matrix/ and report/ are the "
             "words helper's in session 13 (a rename there would only make its merge conflict)"),
    "Transcript": (frozenset({"fuzzing/transcript.py", "report/html.py"}),
                   "the page's view of a transcript's records: report/ is the words "
                   "helper's in session 13"),
}


def class_names(sources: dict[str, str]) -> dict[str, set[str]]:
    """Class name -> the modules (of ``sources``: path -> text) that define one so named."""
    out: dict[str, set[str]] = defaultdict(set)
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                out[node.name].add(path)
    return out


def clashes(sources: dict[str, str]) -> dict[str, frozenset[str]]:
    return {name: frozenset(where) for name, where in class_names(sources).items()
            if len(where) > 1}


def _package() -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text(encoding="utf-8")
            for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_two_classes_share_a_name_but_the_pinned() -> None:
    found = clashes(_package())
    assert set(found) - set(PINNED) == set(), "a class name defined twice"
    stale = {name for name in PINNED if found.get(name) != PINNED[name][0]}
    assert not stale, f"pinned clashes that changed or are gone (unpin them): {sorted(stale)}"


def test_no_two_checks_share_a_name() -> None:
    """A violation names its check by name: two checks of one name (the SDK-CLOSE-02 check was
    a second ``held_prompt_cancelled``) make it ambiguous."""
    rule_map.decisions()  # every deciding module imported
    named = Counter(meta.name for meta in CHECKS.values()  # (tests plant checks of their own)
                    if meta.module.startswith("acp_model."))
    assert len(named) > 150
    assert [name for name, n in named.items() if n > 1] == []


def test_the_scan_sees_a_name_defined_twice() -> None:
    planted = {"fuzzing/schedule.py": "class Event:\n    pass\n",
               "model/vocab.py": "class Event(StrEnum):\n    A = 'a'\n",
               "model/other.py": "class Crossing:\n    class Inner:\n        pass\n"}
    assert clashes(planted) == {"Event": frozenset({"fuzzing/schedule.py", "model/vocab.py"})}
