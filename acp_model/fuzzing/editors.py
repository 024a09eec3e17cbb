"""Client profiles: the capabilities and habits of real editors, as the fuzz client plays them.

An agent takes other paths for a client that serves files and terminals, or that shows
terminal output, than for one that advertises nothing; and a client that writes a cancel right
before each prompt meets races no other does. A :class:`ClientProfile` (data:
``clients.toml``) holds what an editor sends in ``initialize`` for v1 and for v2 and its
habits. ``acp-model fuzz`` draws one per run from the run's seed (``--client-profile random``),
or takes the one named, or sends exactly the capabilities a user gives
(``--client-capabilities JSON|@FILE``: what their editor sends); the report names it. What a
profile advertises, the client serves (``fuzzing/services.py``); what it cannot serve, it does
not advertise.
"""

from __future__ import annotations

import copy
import json
import random
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

RANDOM = "random"
CUSTOM = "custom"


class ClientProfileError(ValueError):
    """An unknown profile name, or capabilities that are not a JSON object."""


@dataclass(frozen=True)
class ClientProfile:
    """What one client sends in ``initialize`` and how it writes."""

    name: str
    title: str = ""
    source: str = ""
    v1: Mapping[str, Any] = field(default_factory=dict)  # clientCapabilities
    v2: Mapping[str, Any] = field(default_factory=dict)  # capabilities
    info: Mapping[str, Any] | None = None  # clientInfo / info (None: acp-model's own)
    cancel_before_prompt: bool = False  # a session/cancel written right before each prompt
    drawn: bool = False  # drawn for the run (``random``), not named

    def capabilities(self, protocol: int) -> dict[str, Any]:
        return copy.deepcopy(dict(self.v1 if protocol == 1 else self.v2))

    def to_json(self) -> dict[str, Any]:
        """What the report says of the client the run played."""
        out: dict[str, Any] = {"profile": self.name, "drawn": self.drawn, "title": self.title,
                               "capabilities": {"v1": dict(self.v1), "v2": dict(self.v2)},
                               "habits": self.habits()}
        if self.info is not None:
            out["info"] = dict(self.info)
        return out

    def habits(self) -> list[str]:
        return ["cancel before every prompt"] if self.cancel_before_prompt else []

    def describe(self) -> str:
        how = " (drawn for this run)" if self.drawn else ""
        return f"{self.name}{how}: {self.title}" if self.title else f"{self.name}{how}"


def _load() -> dict[str, ClientProfile]:
    text = resources.files("acp_model.fuzzing").joinpath("clients.toml").read_text("utf-8")
    out = {}
    for name, row in tomllib.loads(text).items():
        out[name] = ClientProfile(name, row.get("title", ""), row.get("source", ""),
                                  row.get("v1", {}), row.get("v2", {}), row.get("info"),
                                  bool(row.get("cancel_before_prompt", False)))
    return out


PRESETS: dict[str, ClientProfile] = _load()
BARE = PRESETS["bare"]


def named(name: str, seed: int | None = None) -> ClientProfile:
    """The preset ``name``, or one drawn from the run's seed for ``random`` (no seed: any)."""
    if name == RANDOM:
        # a stream of its own: the run's seed also seeds Hypothesis, whose draws this one
        # must not mirror
        rng = random.Random(f"client-profile:{seed}") if seed is not None \
            else random.SystemRandom()
        chosen = PRESETS[rng.choice(sorted(PRESETS))]
        return ClientProfile(**{**chosen.__dict__, "drawn": True})
    try:
        return PRESETS[name]
    except KeyError:
        raise ClientProfileError(f"no client profile {name!r}; known: "
                                 f"{', '.join(sorted(PRESETS))}, or {RANDOM}") from None


def custom(text: str) -> ClientProfile:
    """The capabilities a user's editor sends, sent exactly as given (``JSON`` or ``@FILE``),
    for whichever protocol the run speaks."""
    source = "--client-capabilities"
    if text.startswith("@"):
        source = text[1:]
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise ClientProfileError(f"--client-capabilities: cannot read {source}: "
                                     f"{exc.strerror or exc}") from None
    try:
        caps = json.loads(text)
    except ValueError as exc:
        raise ClientProfileError(f"--client-capabilities: not JSON ({exc})") from None
    if not isinstance(caps, dict):
        raise ClientProfileError("--client-capabilities: the capabilities are a JSON object, "
                                 f"not {type(caps).__name__}")
    return ClientProfile(CUSTOM, "the capabilities given on the command line", source,
                         caps, caps)


def from_json(doc: Mapping[str, Any] | None) -> ClientProfile | None:
    """The client a report or replay file names (:meth:`ClientProfile.to_json`), as it was
    played: its capabilities and habits as stored, whatever the presets say now."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("profile"), str):
        return None
    caps = doc.get("capabilities") if isinstance(doc.get("capabilities"), Mapping) else {}
    return ClientProfile(doc["profile"], str(doc.get("title", "")), "", caps.get("v1") or {},
                         caps.get("v2") or {}, doc.get("info"),
                         "cancel before every prompt" in (doc.get("habits") or ()),
                         bool(doc.get("drawn", False)))


def serves(caps: Mapping[str, Any]) -> dict[str, bool]:
    """Which client methods a capabilities object obliges the client to serve."""
    fs = caps.get("fs") if isinstance(caps.get("fs"), Mapping) else {}
    elicitation = caps.get("elicitation")
    return {"fs/read_text_file": fs.get("readTextFile") is True,
            "fs/write_text_file": fs.get("writeTextFile") is True,
            "terminal": caps.get("terminal") is True,
            "elicitation": isinstance(elicitation, Mapping) and bool(
                {k for k, v in elicitation.items() if v is not None and k != "_meta"})}


__all__ = ["BARE", "CUSTOM", "PRESETS", "RANDOM", "ClientProfile", "ClientProfileError",
           "custom", "from_json", "named", "serves"]
