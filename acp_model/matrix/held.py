"""The held line of a matrix failure (:mod:`acp_model.fuzzing.held`), from the files its
row's run kept."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp_model.fuzzing.held import held_in_files


def held_of(f: Mapping[str, Any], base: Path) -> str | None:
    """The line for a matrix failure ``f`` (its paths relative to ``base``): the schedule its
    replay file names, beside it."""
    if not f.get("replay") or not f.get("transcript"):
        return None
    replay = base / str(f["replay"])
    try:
        name = json.loads(replay.read_text(encoding="utf-8")).get("schedule")
    except (OSError, ValueError):
        return None
    if not isinstance(name, str):
        return None
    return held_in_files(replay.parent / name, base / str(f["transcript"]), f.get("index"))
