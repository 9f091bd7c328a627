"""Claims on threads across processes that share a PostgreSQL store: one processor per thread.

A claim is a session advisory lock, `(space, hashtext(thread))`, taken with the non-blocking
`pg_try_advisory_lock` on one connection per process that is kept for claims and runs no
transaction: holding a claim blocks nothing but other claims of the thread, and a model call
made under it holds no transaction open. A process that dies loses its connection, and the
server releases its claims with it. Session locks are re-entrant, so the threads this process
holds are also kept in a set, and a second claim of one of them here is refused as well.

Claims save work; they are not what keeps the data right: every commit still checks the outline's
version, so a claim lost with a broken connection costs at most a batch done twice, never a
batch written twice.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager

import anyio
import asyncpg

from ..errors import ClosedError, StoreError, StoreGoneError

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


TAKE = "SELECT pg_try_advisory_lock($1, hashtext($2))"
RELEASE = "SELECT pg_advisory_unlock($1, hashtext($2))"


class Claims:
    """This process's claims on threads, on a connection of their own."""

    def __init__(self, dsn: str, *, url: str, space: int) -> None:
        """Args:
        dsn: the connection URL.
        url: the same without its password, for messages.
        space: the first key of every claim: one per schema, so schemas never meet.
        """
        self._dsn, self._url, self._space = dsn, url, space
        self._db: asyncpg.Connection | None = None
        self._lock = anyio.Lock()
        self._held: set[str] = set()
        self._closed = False

    @asynccontextmanager
    async def claim(self, thread: str) -> AsyncIterator[bool]:
        """Hold the thread: True when this process got it, False when someone holds it."""
        if thread in self._held or not await self._run(TAKE, thread):
            yield False
            return
        self._held.add(thread)
        try:
            yield True
        finally:
            self._held.discard(thread)
            with anyio.CancelScope(shield=True):
                try:
                    await self._run(RELEASE, thread)
                except (StoreError, ClosedError) as exc:
                    log.warning(
                        "thread %r: releasing the claim failed (%s)",
                        thread,
                        exc,
                        extra={"chat_thread": thread},
                    )

    async def close(self) -> None:
        """Let every claim go: the connection closes."""
        async with self._lock:
            self._closed = True
            db, self._db = self._db, None
            if db is not None:
                await quietly(db.close())

    async def _run(self, sql: str, thread: str) -> bool:
        async with self._lock:
            if self._closed:
                raise ClosedError(f"the store {self._url!r} is closed")
            try:
                if self._db is None:
                    self._db = await asyncpg.connect(self._dsn)
                # Shielded: a claim taken but never recorded would be held until the process ends.
                with anyio.CancelScope(shield=True):
                    done = await self._db.fetchval(sql, self._space, thread)
                return bool(done)
            except DRIVER_ERRORS as exc:
                # A broken connection has lost every claim it held: drop it, so that the next
                # claim starts a new session.
                db, self._db = self._db, None
                if db is not None:
                    db.terminate()
                raise store_error(exc, self._url) from exc


async def quietly(closing: Awaitable[object]) -> None:
    """Close a connection or pool; a failure to close is logged, not raised."""
    try:
        await closing
    except DRIVER_ERRORS as exc:
        log.warning("closing a PostgreSQL connection failed: %s", exc)
