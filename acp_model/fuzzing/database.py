"""Hypothesis' example database for a fuzz run: one store per agent, readings and session bound."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from acp_model.fuzzing.config import FuzzConfig


def example_database(cfg: FuzzConfig) -> ExampleDatabase | None:
    """Hypothesis' example database for this agent, or None when ``cfg.database`` is unset.

    A stored entry is a Hypothesis choice sequence, not our action list: it means the same
    client program only for the same agent command line (its advertised capabilities shape the
    prompts) and the same ``max_sessions``, and it fails only under the same readings. Hence
    one subdirectory of ``cfg.database`` per such key, shared by every run and process that
    fuzzes that agent (the directory database is safe for concurrent processes).
    """
    if cfg.database is None:
        return None
    ident = json.dumps([cfg.argv, cfg.max_sessions, cfg.readings.as_dict()], sort_keys=True)
    key = hashlib.sha256(ident.encode()).hexdigest()[:16]
    return DirectoryBasedExampleDatabase(Path(cfg.database) / key)


class _KeepStored(ExampleDatabase):
    """The database as seen by rounds after the first: saves and moves, never deletes.

    Those rounds mask the rules already found, so a stored failure replays as a pass there and
    Hypothesis would delete it; it must stay for the next run (which masks nothing).
    """

    def __init__(self, db: ExampleDatabase) -> None:
        super().__init__()
        self.db = db

    def save(self, key: bytes, value: bytes) -> None:
        self.db.save(key, value)

    def fetch(self, key: bytes) -> Any:
        return self.db.fetch(key)

    def delete(self, key: bytes, value: bytes) -> None:
        pass

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.db.move(src, dest, value)
