"""The shared store: PostgreSQL through an asyncpg pool, for several servers and workers.

The collections are the same SQL files as SQLite's, but where a `.postgresql.sql` variant says
otherwise; search reads the same postings table on both. What several processes need on top,
all here:

- a thread's `seq` is assigned under a transaction-scoped advisory lock on the thread, so two
  processes storing messages of one thread at once commit them in order with no gaps (an erase
  and a load take the same lock);
- processing a thread is claimed with a lease (`_claims.py`), which another process takes over
  once a process that died or stopped lets it lapse;
- migrations are applied under an advisory lock, so workers starting together on an empty
  database apply each step once;
- every connection waits at most `LOCK_TIMEOUT` for a lock, and the server ends a session left
  idle inside a transaction for `IDLE_IN_TRANSACTION` (a process stopped in the middle of
  one), so nobody waits on a stopped process's locks for long.

A transaction body runs on one pooled connection, handed back without the pool's reset query.
The schema is the connection's `search_path` (`postgresql://.../db?search_path=chat`). Driver
errors become StoreError here (through `_driver.py`) and nowhere else.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit, urlunsplit

import anyio
import asyncpg

from ..errors import ClosedError, StoreError
from ._adapter import Body, Mode
from ._claims import LEASE
from ._driver import DRIVER_ERRORS, quietly, store_error
from ._migrations import MIGRATIONS
from ._queries import QUERIES, Dialect, compile_named
from ._rows import Params, Row
from ._sql import SQLStore

T = TypeVar("T")

_SPACES = (
    "SELECT hashtext('chat-history:seq:' || current_schema()), "
    "hashtext('chat-history:migrate:' || current_schema()), current_schema()"
)
"""Advisory lock namespaces, one per schema: stores in other schemas of a database never meet."""

_STORE_MESSAGE = compile_named(
    "SELECT seq, idx, sidx FROM store_message(:space, :id, :thread, :author, :to, :text, :at, "
    ":step, :files, :weight, :native, :outline)",
    "postgresql",
)
"""A message stored, with `insert_message`'s parameters, the thread locks' key and the outline
row a thread's first message makes (`writes.store_message` is the same for SQLite)."""

CLOSE_TIMEOUT = 10.0
"""Seconds closing waits for connections in use before it drops them."""

LOCK_TIMEOUT = "10s"
"""How long a statement waits for a lock (a row another transaction is writing, a thread's seq
lock) before it fails with a StoreError; the batch is tried again after a pause. A transaction of
the store holds its locks for milliseconds, so only a stuck process makes anyone wait this long."""
IDLE_IN_TRANSACTION = "30s"
"""How long the server lets a session sit idle inside a transaction before it ends it, and lets
its locks go. The store never waits on anything but the database inside a transaction (model
calls are made outside), so only a process that was stopped or hung gets there."""


class PostgresStore(SQLStore):
    """The collections in a PostgreSQL database, shared by every process that opens it."""

    def __init__(
        self,
        url: str,
        *,
        pool: int = 10,
        language: str | None = None,
        create: bool = True,
        read_only: bool = False,
        lease: float = LEASE,
    ) -> None:
        """Args:
        url: a `postgresql://` URL; its query parameters are server settings (`search_path`).
        pool: the most connections this store opens at once.
        language: the language search stems in (`history._languages`); see `SQLStore`.
        create: make the store's tables where the schema has none; False refuses such a schema.
        read_only: only read (implies not `create`): a store whose migrations are all applied
            is read as it is, so a role that may only SELECT reads it; an older one is migrated.
        lease: seconds a claim on a thread lasts unless renewed; see `SQLStore`.
        """
        database = PostgreSQL(url, pool=pool, create=create, read_only=read_only)
        super().__init__(database, language=language, lease=lease)


class _Connection(asyncpg.Connection):
    """A pooled connection handed back as it is, without the pool's reset query (a round trip
    at every release): the store leaves nothing in a session to reset (no LISTEN, no session
    lock, no SET; its settings are the pool's, given when a connection is made)."""

    def get_reset_query(self) -> str:
        return ""


class PostgreSQL:
    """A PostgreSQL schema through an asyncpg pool: the `adapter.Database` of PostgreSQL."""

    dialect: Dialect = "postgresql"
    shared = True

    def __init__(
        self, url: str, *, pool: int, create: bool = True, read_only: bool = False
    ) -> None:
        self.read_only = read_only
        self._create = create and not read_only
        self.url = _redacted(url)
        """The URL without its password, for messages and logs."""
        self._dsn = url
        self._size = pool
        self._pool: asyncpg.Pool | None = None
        self._spaces: tuple[int, int] = (0, 0)
        """The keys of the thread locks and of the migrations' lock in this schema."""

    async def connect(self, recognise: Callable[[], Awaitable[set[str]]]) -> bool:
        try:
            self._pool = await asyncpg.create_pool(
                self._dsn,
                min_size=1,
                max_size=self._size,
                connection_class=_Connection,
                server_settings=_settings(self._dsn),
            )
        except (*DRIVER_ERRORS, ValueError) as exc:
            reason = str(exc).partition("\n")[0]  # without the server's DETAIL and HINT
            raise StoreError(f"cannot open the PostgreSQL store {self.url!r}: {reason}") from exc
        try:
            async with self._pool.acquire() as db:
                spaces = await db.fetchrow(_SPACES)
        except DRIVER_ERRORS as exc:
            raise store_error(exc, self.url) from exc
        if spaces is None or spaces[2] is None:
            raise StoreError(f"{self.url!r}: the search_path names no schema that exists")
        seq_space, migrate_space, _ = spaces
        self._spaces = (int(seq_space), int(migrate_space))
        if self._create:
            return True
        done = await recognise()
        if not done:
            raise StoreError(f"no chat-outline store at {self.url!r} (the schema has no tables)")
        return not (self.read_only and all(name in done for name, _ in MIGRATIONS))

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        with anyio.CancelScope(shield=True):
            if pool is not None:
                with anyio.move_on_after(CLOSE_TIMEOUT) as waited:
                    await quietly(pool.close())
                if waited.cancelled_caught:
                    pool.terminate()

    @property
    def closed(self) -> bool:
        return self._pool is None

    async def run(self, body: Body[T], *, mode: Mode = "auto") -> T:
        async with self._connection() as db:
            tx = _Transaction(db, self._spaces)
            if mode in ("auto", "read"):
                return await body(tx)
            snapshot = mode == "snapshot"
            async with db.transaction(
                isolation="repeatable_read" if snapshot else None, readonly=snapshot
            ):
                return await body(tx)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.pool.PoolConnectionProxy]:
        """A pooled connection; the driver's errors as StoreError."""
        if self._pool is None:
            raise ClosedError(f"the store {self.url!r} is closed")
        try:
            async with self._pool.acquire() as db:
                yield db
        except DRIVER_ERRORS as exc:
            raise store_error(exc, self.url) from exc

    async def store_message(self, message: Params, outline: Params) -> Row | None:
        """In one round trip: the `store_message` function (migration 0018)."""
        params = {**message, "space": self._spaces[0], "outline": json.dumps(outline)}
        async with self._connection() as db:
            found: Row | None = await db.fetchrow(_STORE_MESSAGE.text, *_STORE_MESSAGE.args(params))
            return found


class _Transaction:
    """Statements on one pooled connection."""

    def __init__(self, db: asyncpg.pool.PoolConnectionProxy, spaces: tuple[int, int]) -> None:
        self._db = db
        self._seq_space, self._migrate_space = spaces

    async def fetch(self, name: str, /, **params: Any) -> Sequence[Row]:
        statement = QUERIES[name].postgresql
        return await self._db.fetch(statement.text, *statement.args(params))

    async def one(self, name: str, /, **params: Any) -> Row | None:
        statement = QUERIES[name].postgresql
        return await self._db.fetchrow(statement.text, *statement.args(params))

    async def execute(self, name: str, /, **params: Any) -> int:
        statement = QUERIES[name].postgresql
        status = await self._db.execute(statement.text, *statement.args(params))
        # `UPDATE 1`, `DELETE 3`, `INSERT 0 1`: the count comes last.
        count = status.rsplit(" ", 1)[-1]
        return int(count) if count.isdigit() else 0

    async def executemany(self, name: str, many: Sequence[Params], /) -> None:
        if many:  # asyncpg would still make a round trip
            statement = QUERIES[name].postgresql
            await self._db.executemany(statement.text, [statement.args(p) for p in many])

    async def script(self, sql: str, /) -> None:
        await self._db.execute(sql)

    async def lock_thread(self, thread: str) -> None:
        await self._db.execute(
            "SELECT pg_advisory_xact_lock($1, hashtext($2))", self._seq_space, thread
        )

    async def lock_migrations(self) -> None:
        # Waiting for another process's migration is waiting as long as it takes (not
        # LOCK_TIMEOUT): a step may index a large store again.
        await self._db.execute("SET LOCAL lock_timeout = 0")
        await self._db.execute("SELECT pg_advisory_xact_lock($1)", self._migrate_space)

    async def few_rows(self) -> None:
        # A search's statements read a few hundred postings: compiling them (JIT) or starting
        # workers to read them in parallel, which a misjudged plan asks for, costs more than
        # running them (a term's postings are one thread's, which no estimate of the table's
        # knows: in a store of 100,000 messages the workers alone took 50 ms a statement).
        await self._db.execute("SET LOCAL jit = off; SET LOCAL max_parallel_workers_per_gather = 0")


def _settings(url: str) -> dict[str, str]:
    """The timeouts every connection is made with, but those the URL sets itself."""
    named = parse_qs(urlsplit(url).query)
    given = {
        "lock_timeout": LOCK_TIMEOUT,
        "idle_in_transaction_session_timeout": IDLE_IN_TRANSACTION,
    }
    return {name: value for name, value in given.items() if name not in named}


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
