"""asyncpg's errors as the PostgreSQL store raises them, and closing its connections quietly."""

from __future__ import annotations

import logging
from collections.abc import Awaitable

import asyncpg

from ..errors import StoreError, StoreGoneError

log = logging.getLogger(__name__)

DRIVER_ERRORS = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    OSError,
)
"""What asyncpg raises: server errors, misuse of a connection, its own state errors (a
connection cut in the middle of an operation), and network failures."""

GONE = (
    asyncpg.InvalidCatalogNameError,
    asyncpg.InvalidSchemaNameError,
    asyncpg.UndefinedTableError,
)
"""The database, the schema or the tables are not there: the store was dropped."""


def store_error(error: BaseException, url: str) -> StoreError:
    """A driver error as the store raises it (the one place they are translated), on one line:
    the server's DETAIL and HINT lines are left out."""
    reason = str(error).partition("\n")[0]
    if isinstance(error, GONE):
        return StoreGoneError(
            f"the PostgreSQL store {url!r} is gone ({reason}): was its database or schema "
            "dropped? Restore it, or start again on a new one"
        )
    return StoreError(f"PostgreSQL store {url!r}: {reason}")


async def quietly(closing: Awaitable[object]) -> None:
    """Close a connection or pool; a failure to close is logged, not raised."""
    try:
        await closing
    except DRIVER_ERRORS as exc:
        log.warning("closing a PostgreSQL connection failed: %s", exc)
