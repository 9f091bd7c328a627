"""The store a command works on: which one (`--db`, the environment, the default file), that it
exists, and opening it for the length of the command."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import NotFoundError

if TYPE_CHECKING:  # the drivers load in the commands that open a store
    from ..store import Store

DB_VARIABLE = "CHAT_OUTLINE_DB"
"""The environment variable naming the store of every command that takes `--db`."""


def store_of(given: str | None) -> str:
    """The store a command works on: `--db`, else $CHAT_OUTLINE_DB, else the default file."""
    if given:
        return given
    if os.environ.get(DB_VARIABLE):
        return os.environ[DB_VARIABLE]
    from ..store import default_store

    return default_store()


def must_exist(db: str) -> None:
    """Refuse a SQLite path with no file, rather than create an empty store there."""
    if "://" not in db and db != ":memory:" and not Path(db).exists():
        raise NotFoundError(f"no store at {db!r}: ingest a file first, or name one with --db")


@asynccontextmanager
async def opened(db: str, *, create: bool = False, read_only: bool = False) -> AsyncIterator[Store]:
    """The store at `db`, open while the block runs (created only when told)."""
    from ..store import open_store

    store = open_store(db, create=create, read_only=read_only)
    await store.open()
    try:
        yield store
    finally:
        await store.close()
