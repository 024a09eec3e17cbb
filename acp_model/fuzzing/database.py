"""Hypothesis' example database for a fuzz run: one store per agent, readings and session bound,
in a local directory, on shared Redis servers, or both."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    ExampleDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)

from acp_model.fuzzing.config import FuzzConfig

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


class DatabaseError(Exception):
    """A database location that cannot be used (a usage error: unreachable, malformed)."""


def is_shared(location: str) -> bool:
    return location.startswith(REDIS_SCHEMES)


def locations(values: Iterable[str], base: Path | None = None
              ) -> tuple[str | None, tuple[str, ...]]:
    """``--db`` values (repeated or comma-separated) -> (directory root, Redis URLs); a
    relative directory is taken from ``base``. More than one directory is an error."""
    dirs: list[str] = []
    urls: list[str] = []
    for value in values:
        for part in (v.strip() for v in value.split(",")):
            if not part:
                continue
            if is_shared(part):
                urls.append(part)
            else:
                dirs.append(str(base / part) if base is not None and
                            not Path(part).is_absolute() else part)
    if len(dirs) > 1:
        raise DatabaseError(f"one local database directory at most, got {', '.join(dirs)}")
    return (dirs[0] if dirs else None), tuple(dict.fromkeys(urls))


def check_reachable(cfg: FuzzConfig) -> None:
    """Ping every shared store now (a usage error before fuzzing, not a failure after)."""
    for url in cfg.shared_databases:
        redis_database(url, "ping")


def store_key(cfg: FuzzConfig) -> str:
    """What a stored entry means: the same client program only for the same agent command
    line (its advertised capabilities shape the prompts) and the same ``max_sessions``; it
    fails only under the same readings, the revision among them. Budgets, seeds and deadlines
    are not part of it: any run of that agent may replay what another stored."""
    ident = json.dumps([cfg.argv, cfg.max_sessions, cfg.readings.as_dict()], sort_keys=True)
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def example_database(cfg: FuzzConfig) -> ExampleDatabase | None:
    """Hypothesis' example database for this agent, or None when no location is set.

    ``cfg.database`` is a directory root (one subdirectory per :func:`store_key`; safe for
    concurrent processes); ``cfg.shared_databases`` are Redis URLs (``redis://HOST:PORT/N``),
    where the key becomes the key prefix. With several, Hypothesis' ``MultiplexedDatabase``
    saves to all and replays from all, so a failure one worker stored replays first on every
    other; ``cfg.database_readonly`` wraps the shared stores in ``ReadOnlyDatabase`` (a fork's
    CI reads the team's corpus and writes only to its own directory).
    """
    key = store_key(cfg)
    stores: list[ExampleDatabase] = []
    if cfg.database is not None:
        stores.append(DirectoryBasedExampleDatabase(Path(cfg.database) / key))
    for url in cfg.shared_databases:
        shared: ExampleDatabase = redis_database(url, key)
        stores.append(ReadOnlyDatabase(shared) if cfg.database_readonly else shared)
    if not stores:
        return None
    return stores[0] if len(stores) == 1 else MultiplexedDatabase(*stores)


def redis_database(url: str, key: str) -> ExampleDatabase:
    """Hypothesis' ``RedisExampleDatabase`` on ``url``, its entries under ``acp-model:<key>:``;
    checked with a ping, so an unreachable server is a clear error before fuzzing starts."""
    import redis
    from hypothesis.extra.redis import RedisExampleDatabase

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=30)
        client.ping()
    except ValueError as exc:
        raise DatabaseError(f"--db {url}: {exc}") from None
    except redis.RedisError as exc:
        raise DatabaseError(f"--db {url}: cannot reach the Redis server ({exc})") from None
    return RedisExampleDatabase(client, key_prefix=f"acp-model:{key}:".encode())


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
