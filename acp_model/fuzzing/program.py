"""A client program and its session numbering, in one place.

A program (the actions of an example, or of every example a shared agent process ran) names
sessions by their order of creation: ``s`` is the ``s``-th ``session/new`` of the program,
wrapping around past the sessions opened so far (:func:`session_at`), so what Hypothesis draws
never depends on how many sessions the agent made, and a program keeps its meaning when
shrinking removes actions. The labels of a counterexample, the example's client, the
shrinker's one-session slices and the renumbering of a shared process's history for a fresh
process all read the numbering from here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acp_model.fuzzing.actions import Action, NewSession, SessionAction, Sync, from_json


def session_at(s: int, opened: int) -> int | None:
    """The session a program's index ``s`` names once ``opened`` sessions exist, counted from
    0 in order of creation (None before the first)."""
    return s % opened if opened else None


@dataclass(frozen=True)
class Program:
    """Client actions in order. Derived programs (renumbered, sliced) come back as lists: the
    shrinker cuts and joins them and the replays run them."""

    actions: tuple[Action, ...]

    @classmethod
    def of(cls, actions: Iterable[Action | Mapping[str, Any]]) -> Program:
        """A program of typed actions or their JSON form (a replay file's)."""
        return cls(tuple(from_json(a) for a in actions))

    def __iter__(self) -> Iterator[Action]:
        return iter(self.actions)

    def __len__(self) -> int:
        return len(self.actions)

    @property
    def sessions(self) -> int:
        """Sessions the program asks for (its ``session/new`` actions)."""
        return sum(1 for a in self.actions if isinstance(a, NewSession))

    def labels(self) -> list[str]:
        """The session each action acts on, numbered from 1 in order of creation (``" s1"``;
        ``" (no session yet)"`` before the first, ``""`` for actions without a session)."""
        opened = 0
        out = []
        for a in self.actions:
            if isinstance(a, NewSession):
                opened += 1
                out.append(f" s{opened}")
            elif isinstance(a, SessionAction):
                idx = session_at(a.s, opened)
                out.append(" (no session yet)" if idx is None else f" s{idx + 1}")
            else:
                out.append("")
        return out

    def describe(self) -> list[str]:
        """One line per action, its session labelled as :meth:`labels` does."""
        return [a.describe(label) for a, label in zip(self.actions, self.labels(), strict=True)]

    def standalone(self) -> list[Action]:
        """Concrete actions from a shared process, renumbered for a fresh one.

        On a shared agent process session ``s13`` is the 14th session of the connection (the
        ``created`` index ``session/new`` recorded); replayed from scratch, the first session
        the actions create is ``s0``. A session an example took over from an earlier one in the
        actions (``reuses``) is that session again, not a new one.
        """
        return self.renumbered()[0]

    def renumbered(self) -> tuple[list[Action], dict[int, int]]:
        """:meth:`standalone`, and which fresh session each connection session became."""
        mapping: dict[int, int] = {}
        made = 0
        out: list[Action] = []
        for a in self.actions:
            if isinstance(a, NewSession):
                if a.reuses is not None and a.reuses in mapping and a.created is not None:
                    mapping[a.created] = mapping[a.reuses]
                    continue
                if a.created is not None:
                    mapping[a.created] = made
                    made += 1
                a = dataclasses.replace(a, created=None, reuses=None)
            elif isinstance(a, SessionAction):
                a = dataclasses.replace(a, s=mapping.get(a.s, a.s))
            out.append(a)
        return out, mapping

    def session_slice(self, target: int) -> list[Action] | None:
        """The program cut down to the session it creates ``target``-th (from 0): that
        session's ``session/new`` and actions, renumbered as the only session, and the syncs
        (they prove what was read); None when the program does not create it."""
        kept = self.session_slice_at(target)
        if kept is None:
            return None
        return [dataclasses.replace(a, s=0) if isinstance(a, SessionAction) else a
                for a in (self.actions[i] for i in kept)]

    def session_slice_at(self, target: int) -> list[int] | None:
        """Where the actions of :meth:`session_slice` are in the program."""
        created = -1
        out: list[int] = []
        for n, a in enumerate(self.actions):
            if isinstance(a, NewSession):
                created += 1
                if created == target:
                    out.append(n)
            elif isinstance(a, SessionAction):
                if created >= target and session_at(a.s, created + 1) == target:
                    out.append(n)
            elif isinstance(a, Sync) and created >= target:
                out.append(n)
        return out if created >= target else None


def standalone(actions: Sequence[Action]) -> list[Action]:
    """:meth:`Program.standalone` of a list (the shrinker's and the recorder's shorthand)."""
    return Program(tuple(actions)).standalone()
