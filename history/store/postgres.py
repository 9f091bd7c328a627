"""The shared store: PostgreSQL through an asyncpg pool, for several servers and workers.

The collections are the same SQL files as SQLite's, but where the dialects differ (the
`*.postgresql.sql` variants: search's functions and triggers). What several processes need on
top:

- a thread's `seq` is assigned under a transaction-scoped advisory lock on the thread, so two
  processes storing messages of one thread at once commit them in order with no gaps (an erase
  takes the same lock);
- processing a thread is claimed with a session advisory lock (`claims.py`), which a process
  that dies lets go;
- a commit checks the outline's epoch and version (the UPDATE locks the row, so two commits of
  one thread are serialized and the second finds the version moved).

Thread ids sort in code-point order (`COLLATE "C"`), whatever the database's collation. The
schema is the connection's `search_path` (`postgresql://.../db?search_path=chat`). Driver errors
become StoreError here and nowhere else.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import asyncpg

from .. import terms
from ..contract import About, Ask, Hit, Message, Outline, Stored, Summary
from ..errors import ClosedError, StoreError
from . import queries, ranking, records, rows
from .claims import DRIVER_ERRORS, Claims, quietly, store_error
from .postgres_records import INSERT_SEARCH, apply, foreign, index_lines, thread_records
from .records import Loaded, ThreadRecords
from .rows import (
    CALL_COLUMNS,
    MESSAGE_COLUMNS,
    PG,
    SUMMARY_COLUMNS,
    THREAD_COLUMNS,
)

log = logging.getLogger(__name__)

_SPACES = (
    "SELECT hashtext('chat-history:seq:' || current_schema()), "
    "hashtext('chat-history:claim:' || current_schema()), "
    "hashtext('chat-history:migrate:' || current_schema()), current_schema()"
)
"""Advisory lock namespaces, one per schema: stores in other schemas of a database never meet."""

CLOSE_TIMEOUT = 10.0
"""Seconds closing waits for connections in use before it drops them."""


class _Stale(Exception):
    """The outline changed under a batch: roll back, and tell the caller to redo."""


class _Connection(asyncpg.Connection):
    """A pooled connection handed back as it is, without the pool's reset query (a round trip
    at every release): the store leaves nothing in a session to reset (no LISTEN, no session
    lock, no SET; claims hold their locks on a connection of their own)."""

    def get_reset_query(self) -> str:
        return ""


class PostgresStore:
    """The collections in a PostgreSQL database, shared by every process that opens it."""

    shared = True

    def __init__(self, url: str, *, pool: int = 10, language: str | None = None) -> None:
        """Args:
        url: a `postgresql://` URL; its query parameters are server settings (`search_path`).
        pool: the most connections this store opens at once, besides the claims' one.
        language: the language search stems in (`history.terms`; `simple` stems nothing);
            None for the one the database was indexed in (English for a new one).
        """
        self._language = None if language is None else terms.check_language(language)
        self.language = language or terms.DEFAULT_LANGUAGE
        self.url = _redacted(url)
        """The URL without its password, for messages and logs."""
        self._dsn = url
        self._size = pool
        self._pool: asyncpg.Pool | None = None
        self._claims: Claims | None = None
        self._seq_space = 0

    async def open(self) -> None:
        try:
            self._pool = await asyncpg.create_pool(
                self._dsn, min_size=1, max_size=self._size, connection_class=_Connection
            )
        except (*DRIVER_ERRORS, ValueError) as exc:
            reason = str(exc).partition("\n")[0]  # without the server's DETAIL and HINT
            raise StoreError(f"cannot open the PostgreSQL store {self.url!r}: {reason}") from exc
        try:
            claim_space = await self._migrate()
        except BaseException:
            await self.close()
            raise
        self._claims = Claims(self._dsn, url=self.url, space=claim_space)

    async def close(self) -> None:
        claims, self._claims = self._claims, None
        pool, self._pool = self._pool, None
        with anyio.CancelScope(shield=True):
            if claims is not None:
                await claims.close()
            if pool is not None:
                with anyio.move_on_after(CLOSE_TIMEOUT) as waited:
                    await quietly(pool.close())
                if waited.cancelled_caught:
                    pool.terminate()

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[asyncpg.pool.PoolConnectionProxy]:
        if self._pool is None:
            raise ClosedError(f"the store {self.url!r} is closed")
        try:
            async with self._pool.acquire() as db:
                yield db
        except DRIVER_ERRORS as exc:
            raise store_error(exc, self.url) from exc

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[asyncpg.pool.PoolConnectionProxy]:
        async with self._read() as db, db.transaction():
            yield db

    async def _lock_thread(self, db: asyncpg.pool.PoolConnectionProxy, thread: str) -> None:
        """Serialize writers of one thread's rows (its next seq, its erase) until commit."""
        await db.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", self._seq_space, thread)

    async def _migrate(self) -> int:
        """Apply the missing steps; the key space of this schema's claims."""
        async with self._read() as db:
            spaces = await db.fetchrow(_SPACES)
            if spaces is None or spaces[3] is None:
                raise StoreError(f"{self.url!r}: the search_path names no schema that exists")
            self._seq_space, claim_space, migrate_space, schema = spaces
            tables = {r[0] for r in await db.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = $1", schema)}  # fmt: skip
        if tables and "migration" not in tables:
            raise StoreError(
                f"{self.url!r} is not a chat-outline database (tables: {sorted(tables)})"
            )
        # Each step is checked and applied under one lock, so that workers starting together on
        # an empty database apply it once.
        lock = "SELECT pg_advisory_xact_lock($1)"
        async with self._write() as db:
            await db.execute(lock, migrate_space)
            await db.execute(rows.MIGRATION_TABLE)
            done = {r[0] for r in await db.fetch("SELECT name FROM migration")}
        unknown = done - {name for name, _ in rows.MIGRATIONS}
        if unknown:
            raise StoreError(f"{self.url!r} was written by a newer chat-outline: {sorted(unknown)}")
        for name, filename in rows.MIGRATIONS:
            if name in done:
                continue
            async with self._write() as db:
                await db.execute(lock, migrate_space)
                if await db.fetchval("SELECT 1 FROM migration WHERE name = $1", name):
                    continue
                for statement in rows.statements(filename, dialect="postgresql"):
                    await db.execute(statement)
                await db.execute(
                    "INSERT INTO migration (name, applied) VALUES ($1, $2)",
                    name,
                    datetime.now(UTC).isoformat(),
                )
        async with self._write() as db:
            await db.execute(lock, migrate_space)
            await self._index(db)
        return int(claim_space)

    async def _index(self, db: asyncpg.pool.PoolConnectionProxy) -> None:
        """Index every thread for search again when the index is missing or in another
        language (a store written by an older version, or opened with another language)."""
        done = await db.fetch("SELECT language FROM search_language")
        recorded = [r[0] for r in done]
        self.language = self._language or next(iter(recorded), terms.DEFAULT_LANGUAGE)
        if recorded == [self.language]:
            return
        log.info("indexing %r for search in %s", self.url, self.language)
        await db.execute("DELETE FROM search")
        await db.execute("DELETE FROM search_language")
        for (thread,) in await db.fetch("SELECT DISTINCT thread FROM message"):
            messages = await db.fetch(
                f"SELECT {MESSAGE_COLUMNS} FROM message WHERE thread = $1", thread
            )
            nodes = await db.fetch(
                f"SELECT {SUMMARY_COLUMNS} FROM summary WHERE thread = $1", thread
            )
            found = rows.thread_search_rows(
                [rows.stored_from_row(_values(r)) for r in messages],
                [rows.summary_from_row(_values(r)) for r in nodes],
                self.language,
            )
            if found:
                await db.executemany(INSERT_SEARCH, found)
        await db.execute("INSERT INTO search_language (language) VALUES ($1)", self.language)

    async def add(
        self, message: Message, weight: int, *, native: str | None = None
    ) -> Stored | None:
        async with self._write() as db:
            # Under the thread's lock, two processes storing its messages at once take its next
            # seq in turn.
            await self._lock_thread(db, message.thread)
            args = rows.insert_message_args(message, weight, native)
            placed = await db.fetchrow(rows.numbered(rows.INSERT_MESSAGE), *args)
            if placed is None:
                # ON CONFLICT waited for any other writer of the id: its row is committed now.
                found = await db.fetchrow(
                    f"SELECT {MESSAGE_COLUMNS} FROM message WHERE id = $1", message.id
                )
                if found is None:
                    raise StoreError(f"message id {message.id!r} conflicted, then vanished")
                rows.check_redelivery(message, rows.stored_from_row(_values(found)))
                return None
            seq, index, step_index = placed
            stored = Stored(
                message=message, seq=seq, index=index, weight=weight, step_index=step_index
            )
            indexed = rows.stored_search_rows([stored], self.language)
            if indexed:
                await db.executemany(INSERT_SEARCH, indexed)
            if seq == 0:
                await db.execute(
                    rows.numbered(queries.NEW_OUTLINE), *rows.new_outline_row(message.thread)
                )
        return Stored(message=message, seq=seq, index=index, weight=weight, step_index=step_index)

    async def outline(self, thread: str) -> Outline | None:
        async with self._read() as db:
            row = await db.fetchrow(queries.OUTLINE_POSTGRESQL, thread)
        if row is None:
            return None
        *outline, tail = _values(row)
        return rows.outline_from_row(outline, json.loads(tail))

    async def pending(self, thread: str, after: int, limit: int) -> list[Stored]:
        async with self._read() as db:
            found = await db.fetch(
                f"SELECT {MESSAGE_COLUMNS} FROM message WHERE thread = $1 AND seq > $2 "
                "ORDER BY seq LIMIT $3",
                thread, after, limit,
            )  # fmt: skip
        return [rows.stored_from_row(_values(r)) for r in found]

    async def natives(self, thread: str, after: int) -> dict[str, str]:
        async with self._read() as db:
            found = await db.fetch(rows.numbered(queries.NATIVES), thread, after)
        return {str(r["id"]): str(r["native"]) for r in found}

    async def message(self, id: str) -> Stored | None:
        async with self._read() as db:
            row = await db.fetchrow(f"SELECT {MESSAGE_COLUMNS} FROM message WHERE id = $1", id)
        return None if row is None else rows.stored_from_row(_values(row))

    async def messages(self, thread: str, first: int, last: int) -> list[Stored]:
        async with self._read() as db:
            found = await db.fetch(
                f"SELECT {MESSAGE_COLUMNS} FROM message "
                "WHERE thread = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq",
                thread, first, last,
            )  # fmt: skip
        return [rows.stored_from_row(_values(r)) for r in found]

    async def summary(
        self, thread: str, level: int, index: int, *, agent: str = ""
    ) -> Summary | None:
        async with self._read() as db:
            row = await db.fetchrow(
                f"SELECT {SUMMARY_COLUMNS} FROM summary "
                "WHERE thread = $1 AND agent = $2 AND level = $3 AND idx = $4",
                thread, agent, level, index,
            )  # fmt: skip
        return None if row is None else rows.summary_from_row(_values(row))

    async def summaries(self, thread: str | None = None) -> list[Summary]:
        where, args = ("WHERE thread = $1", (thread,)) if thread is not None else ("", ())
        async with self._read() as db:
            found = await db.fetch(
                f"SELECT {SUMMARY_COLUMNS} FROM summary {where} "
                'ORDER BY thread COLLATE "C", agent COLLATE "C", level, idx',
                *args,
            )
        return [rows.summary_from_row(_values(r)) for r in found]

    async def commit(
        self,
        before: Outline,
        after: Outline,
        written: Sequence[Summary],
        asks: Sequence[Ask],
        model: str,
        *,
        lines_changed: bool,
    ) -> bool:
        assignments, values = rows.outline_update(after, lines_changed=lines_changed)
        # The UPDATE locks the outline row: a concurrent commit of the thread waits, then finds
        # the version moved and matches nothing.
        update = rows.numbered(
            f"UPDATE outline SET {assignments}, version = version + 1 "
            "WHERE thread = ? AND epoch = ? AND version = ?"
        )
        args = (*values, before.thread, before.epoch, before.version)
        if not written and not asks:
            # Most messages only join the tail: one statement is its own transaction.
            async with self._read() as db:
                return await db.execute(update, *args) == "UPDATE 1"
        try:
            async with self._write() as db:
                if await db.execute(update, *args) != "UPDATE 1":
                    raise _Stale
                if written:
                    await db.executemany(
                        rows.insert("summary", SUMMARY_COLUMNS, dialect=PG),
                        [rows.summary_row(node) for node in written],
                    )
                    await index_lines(db, before.thread, written, self.language)
                if asks:
                    first = await db.fetchval(
                        "SELECT coalesce(max(n), -1) + 1 FROM call WHERE thread = $1",
                        before.thread,
                    )
                    await db.executemany(
                        rows.numbered(rows.INSERT_CALL),
                        [rows.call_row(ask, model, first + k) for k, ask in enumerate(asks)],
                    )
        except _Stale:
            return False
        return True

    async def erase(self, thread: str) -> bool:
        async with self._write() as db:
            await self._lock_thread(db, thread)
            erased = 0
            # The outline goes first: its row lock waits for a commit in flight, and the later
            # deletes (each a new snapshot) then see that commit's summaries and calls.
            for table in ("outline", "message", "summary", "call", "search"):
                status = await db.execute(f"DELETE FROM {table} WHERE thread = $1", thread)
                erased += int(status.rsplit(" ", 1)[-1])
            await db.execute("DELETE FROM thread WHERE thread = $1", thread)
        return erased > 0

    async def threads(self) -> list[str]:
        async with self._read() as db:
            # A thread's outline row is written in the transaction of its first message, so
            # the outlines name every thread (and far fewer rows than the messages do).
            found = await db.fetch('SELECT thread FROM outline ORDER BY thread COLLATE "C"')
        return [r[0] for r in found]

    async def about(self, thread: str | None = None) -> list[About]:
        where, args = ("WHERE thread = $1", (thread,)) if thread is not None else ("", ())
        async with self._read() as db:
            found = await db.fetch(
                f'SELECT {THREAD_COLUMNS} FROM thread {where} ORDER BY thread COLLATE "C"', *args
            )
        return [rows.about_from_row(_values(r)) for r in found]

    async def describe(
        self, thread: str, *, title: str | None = None, settings: str | None = None
    ) -> None:
        async with self._read() as db:
            await db.execute(rows.numbered(rows.DESCRIBE), thread, title, settings)

    async def behind(self) -> list[str]:
        async with self._read() as db:
            # Each outline row is checked against the (thread, seq) index: workers poll this.
            found = await db.fetch(
                "SELECT o.thread FROM outline o WHERE EXISTS (SELECT 1 FROM message m "
                'WHERE m.thread = o.thread AND m.seq > o.position) ORDER BY o.thread COLLATE "C"'
            )
        return [r[0] for r in found]

    async def calls(self, thread: str | None = None) -> list[Ask]:
        where, args = ("WHERE thread = $1", (thread,)) if thread is not None else ("", ())
        async with self._read() as db:
            found = await db.fetch(
                f'SELECT {CALL_COLUMNS} FROM call {where} ORDER BY thread COLLATE "C", n', *args
            )
        return [rows.ask_from_row(_values(r)) for r in found]

    async def nodes(
        self, thread: str, keys: Sequence[tuple[int, int]], *, agent: str = ""
    ) -> list[Summary]:
        if not keys:
            return []
        async with self._read() as db:
            found = await db.fetch(
                queries.NODES_POSTGRESQL,
                thread, agent, [level for level, _ in keys], [index for _, index in keys],
            )  # fmt: skip
        nodes = (rows.summary_from_row(_values(r)) for r in found)
        by_key = {(node.level, node.index): node for node in nodes}
        return [by_key[key] for key in keys if key in by_key]

    async def search(
        self, thread: str, query: str, limit: int, *, agent: str | None = None
    ) -> list[Hit]:
        async with self._read() as db, db.transaction(isolation="repeatable_read", readonly=True):
            # A search's statements read a few hundred postings: compiling them (JIT, which a
            # misjudged plan asks for) costs more than running them.
            await db.execute("SET LOCAL jit = off")
            reads = _SearchReads(db=db, thread=thread)
            return await ranking.search(
                reads, thread, query, limit, language=self.language, agent=agent
            )

    async def export_thread(self, thread: str) -> ThreadRecords | None:
        async with self._read() as db, db.transaction(isolation="repeatable_read", readonly=True):
            return await thread_records(db, thread, lock=False)

    async def load_records(
        self, batch: Sequence[ThreadRecords], *, replace: bool = False
    ) -> Loaded:
        records.check_batch(batch)
        async with self._write() as db:
            # In one order, so that two loads sharing threads cannot deadlock.
            for thread in sorted(r.thread for r in batch):
                await self._lock_thread(db, thread)
            plans = [
                records.plan(
                    await thread_records(db, incoming.thread, lock=True),
                    incoming,
                    foreign=await foreign(db, incoming),
                    replace=replace,
                )
                for incoming in batch
            ]  # every plan first: a contradiction is refused before anything is written
            for plan in plans:
                await apply(db, plan, self.language)
        return Loaded(
            threads=len(plans),
            written=sum(p.written for p in plans),
            skipped=sum(p.skipped for p in plans),
        )

    def claim(self, thread: str) -> AbstractAsyncContextManager[bool]:
        if self._claims is None:
            raise ClosedError(f"the store {self.url!r} is closed")
        return self._claims.claim(thread)


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


@dataclass(frozen=True, kw_only=True)
class _SearchReads:
    """Search's reads (`ranking.Reads`) of one thread, in one read-only snapshot."""

    db: asyncpg.pool.PoolConnectionProxy
    thread: str

    async def postings(self, agent: str, terms: Sequence[str]) -> list[Any]:
        sql = queries.SEARCH_POSTINGS_POSTGRESQL
        return [_values(r) for r in await self.db.fetch(sql, terms, self.thread, agent)]

    async def places(self, agent: str, indexes: Sequence[int]) -> list[Any]:
        sql = queries.SEARCH_PLACES_POSTGRESQL
        return [_values(r) for r in await self.db.fetch(sql, self.thread, agent, indexes)]

    async def corpora(self, agent: str) -> list[Any]:
        sql = rows.numbered(queries.SEARCH_CORPORA)
        return [_values(r) for r in await self.db.fetch(sql, self.thread, agent)]

    async def details(self, keys: Sequence[ranking.Key]) -> list[Any]:
        columns = [[key[k] for key in keys] for k in range(4)]
        sql = queries.SEARCH_DETAILS_POSTGRESQL
        return [_values(r) for r in await self.db.fetch(sql, self.thread, *columns)]


def _values(record: asyncpg.Record) -> tuple[Any, ...]:
    return tuple(record.values())
