"""The stores the contract suite runs on: SQLite always, PostgreSQL when a server is given.

`CHAT_OUTLINE_TEST_POSTGRES` (or its former name, `HISTORY_TEST_POSTGRES`) names the server
(`.ci/run` sets it). Without it the PostgreSQL tests are skipped with a message; under CI
(`CI=true`) a missing or unreachable server fails them.
Each PostgreSQL test gets a schema of its own, dropped afterwards.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from asyncpg import Record

POSTGRES_VARIABLE = "CHAT_OUTLINE_TEST_POSTGRES"
FORMER_POSTGRES_VARIABLE = "HISTORY_TEST_POSTGRES"
"""Its name before every variable took the `CHAT_OUTLINE_` prefix: still read."""
KINDS = ("sqlite", "postgresql")


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL is required under CI: {reason}")
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


def postgres_server() -> str:
    """The test server's URL; skips (fails under CI) when there is none."""
    url = os.environ.get(POSTGRES_VARIABLE) or os.environ.get(FORMER_POSTGRES_VARIABLE, "")
    if not url:
        _unavailable(f"set {POSTGRES_VARIABLE}=postgresql://user@host:port/database")
    return url


def postgres_sql(url: str, *statements: str) -> list[Record]:
    """Run statements on a fresh connection; the last one's rows."""
    import asyncpg

    async def run() -> list[Record]:
        db = await asyncpg.connect(url, timeout=10)
        try:
            found: list[Record] = []
            for sql in statements:
                found = list(await db.fetch(sql))
            return found
        finally:
            await db.close()

    return asyncio.run(run())


@contextmanager
def postgres_schema() -> Iterator[str]:
    """A URL whose `search_path` is a new, empty schema; the schema is dropped afterwards."""
    server = postgres_server()
    name = f"test_{uuid.uuid4().hex[:12]}"
    try:
        postgres_sql(server, f"CREATE SCHEMA {name}")
    except Exception as exc:  # no driver, no server, no database: all mean "not here"
        _unavailable(f"cannot reach {server!r}: {exc!r}")
    try:
        yield f"{server}{'&' if '?' in server else '?'}search_path={name}"
    finally:
        postgres_sql(server, f"DROP SCHEMA {name} CASCADE")


@contextmanager
def store_url(kind: str, directory: Path) -> Iterator[str]:
    """A fresh, empty database of one kind, by the URL (or path) `open_store` takes."""
    if kind == "sqlite":
        yield str(directory / f"store-{uuid.uuid4().hex[:8]}.sqlite")
    else:
        with postgres_schema() as url:
            yield url


def run_sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    """One statement outside any store, to set up or look into a database: its rows."""
    if url.startswith("postgresql://"):
        return [tuple(r.values()) for r in postgres_sql(url, statement)]
    with closing(sqlite3.connect(url)) as db, db:
        return db.execute(statement).fetchall()
