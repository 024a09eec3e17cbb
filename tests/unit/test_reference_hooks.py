"""The reference agent's planted bugs are per-part hooks: each mutant replaces one part's hooks
and nothing else, builds fresh memory for every agent, and every hook is asked by the part that
holds it (a hook no part asks would plant nothing)."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from acp_model.agents.mutants import BY_NAME
from acp_model.agents.reference import faults
from acp_model.agents.reference.faults import FAULTS, Fault, Hooks

PARTS = [f.name for f in dataclasses.fields(Fault) if f.name != "name"]
GROUPS = [cls for cls in vars(faults).values()
          if isinstance(cls, type) and issubclass(cls, Hooks) and "part" in vars(cls)]
REFERENCE = Path(faults.__file__).parent


def test_each_part_has_one_hooks_class() -> None:
    assert sorted(cls.part for cls in GROUPS) == sorted(PARTS)
    conforming = Fault()
    for cls in GROUPS:
        assert type(getattr(conforming, cls.part)) is cls


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_a_mutant_replaces_one_part_s_hooks(name: str) -> None:
    planted, conforming = FAULTS[name](), Fault()
    assert planted.name == name and name in BY_NAME
    changed = [p for p in PARTS if type(getattr(planted, p)) is not type(getattr(conforming, p))]
    assert len(changed) == 1, changed
    part = changed[0]
    group = type(getattr(conforming, part))
    assert isinstance(getattr(planted, part), group)
    assert getattr(FAULTS[name](), part) is not getattr(planted, part), "memory is shared"


def test_every_hook_is_asked_by_the_agent() -> None:
    source = "\n".join(p.read_text(encoding="utf-8") for p in REFERENCE.glob("*.py")
                       if p.name != "faults.py")
    for cls in GROUPS:
        hooks = [n for n, v in vars(cls).items() if not n.startswith("_")
                 and (inspect.isfunction(v) or n == "replay_id")]
        assert hooks, cls
        for hook in hooks:
            assert re.search(rf"\.{hook}\b", source), f"{cls.__name__}.{hook} is asked nowhere"
