"""Which revision an agent's messages follow, shape by shape (the report header's revision fit).

A message the judged revision rejects but another revision of the same protocol version
accepts is a *shape* of that revision (sdk-2.4.0's receipts with the seed's
``AvailableCommand``). Each distinct shape is reported once, saying which revision it follows;
its later messages are counted here, not reported again (one cause, one finding).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_INDEX = re.compile(r"/\d+(?=/|$)")


def shape_path(path: str) -> str:
    """``update/availableCommands/0/type`` -> ``update/availableCommands/*/type``: one shape
    whatever item it is found in."""
    return _INDEX.sub("/*", path)


@dataclass(slots=True)
class ForeignShape:
    """One distinct shape another revision accepts."""

    what: str  # the definition and field (``AvailableCommandsUpdate update/...``) or a value
    follows: tuple[str, ...]  # the revisions whose schema accepts it
    first: int  # the record it was first seen in
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"shape": self.what, "follows": list(self.follows), "first": self.first,
                "messages": self.count}


@dataclass(slots=True)
class RevisionFit:
    """The shapes of other revisions seen so far in one connection."""

    revision: str
    shapes: dict[str, ForeignShape] = field(default_factory=dict)

    def note(self, what: str, follows: tuple[str, ...], idx: int) -> bool:
        """Count a message of shape ``what``; True the first time (report it then)."""
        known = self.shapes.get(what)
        if known is not None:
            known.count += 1
            return False
        self.shapes[what] = ForeignShape(what, follows, idx)
        return True

    def summary(self) -> str:
        if not self.shapes:
            return f"the agent's messages fit {self.revision}"
        parts = [f"{s.what} follows {' and '.join(s.follows)} ({s.count} message"
                 f"{'s' if s.count != 1 else ''})" for s in self.shapes.values()]
        return f"the agent speaks {self.revision} except: " + "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"revision": self.revision, "fits": not self.shapes,
                "summary": self.summary(),
                "shapes": [s.to_json() for s in self.shapes.values()]}
