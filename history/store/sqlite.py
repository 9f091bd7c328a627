"""The embedded default: an aiosqlite store (WAL, explicit `BEGIN IMMEDIATE` transactions).

One connection serves the process, on aiosqlite's thread; each read or transaction is one call
to that thread (not one per statement), under one lock, so a task never reads another task's
uncommitted writes. Driver errors become StoreError here and nowhere else.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import stat
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar
from urllib.parse import quote

import aiosqlite
import anyio

from .. import terms
from ..contract import About, Ask, Hit, Message, Outline, Stored, Summary
from ..errors import ClosedError, StoreError
from . import queries, ranking, records, rows
from .records import Loaded, ThreadRecords
from .rows import (
    CALL_COLUMNS,
    MESSAGE_COLUMNS,
    OUTLINE_COLUMNS,
    SEARCH_COLUMNS,
    SUMMARY_COLUMNS,
    THREAD_COLUMNS,
)

log = logging.getLogger(__name__)

NODES_AT_ONCE = 400
"""Keys per query: SQLite allows 32,766 parameters; far fewer keep each statement small."""
T = TypeVar("T")


class _Stale(Exception):
    """The outline changed under a batch: roll back, and tell the caller to redo."""


class SQLiteStore:
    """The collections in one SQLite file (or `:memory:`).

    A file that exists is first opened read-only and recognised by its `migration` table:
    another application's database is refused exactly as it was found (not switched to WAL).
    """

    shared = False

    def __init__(
        self,
        path: str,
        *,
        create: bool = True,
        read_only: bool = False,
        language: str | None = None,
    ) -> None:
        """Args:
        path: the file, or `:memory:`.
        create: make the store (the file and its collections) where there is none; False
            refuses a missing or empty file instead.
        read_only: only read (implies not `create`): a store of ours whose migrations are all
            applied is read through a read-only connection, so a read-only mount serves too.
        language: the language search stems in (`history.terms`; `simple` stems nothing);
            None for the one the database was indexed in (English for a new one). A read-only
            store searches in the database's.
        """
        self.url = path
        self._language = None if language is None else terms.check_language(language)
        self.language = language or terms.DEFAULT_LANGUAGE
        self._create = create and not read_only
        self._read_only = read_only
        self._db: aiosqlite.Connection | None = None
        self._lock = anyio.Lock()

    async def open(self) -> None:
        try:
            await self._open()
        except BaseException:
            # aiosqlite's thread would keep the process alive after a failed open.
            with anyio.CancelScope(shield=True):
                await self.close()
            raise

    async def _open(self) -> None:
        memory = self.url == ":memory:"
        found = not memory and _has_data(self.url)
        if not (memory or found or self._create):
            raise StoreError(f"no chat-outline store at {self.url!r} (no file, or an empty one)")
        if found:
            await self._connect(read_only=True)
            tables, done = await self._recognise()
            if not tables and not self._create:
                raise StoreError(f"no chat-outline store at {self.url!r} (the database is empty)")
            if self._read_only and not _pending(done):
                async with self._read() as db:
                    recorded = await db.execute_fetchall("SELECT language FROM search_language")
                self.language = next((r[0] for r in recorded), terms.DEFAULT_LANGUAGE)
                return
            await self.close()
        await self._connect(read_only=False)
        await self._migrate()
        await self._index()

    async def _connect(self, *, read_only: bool) -> None:
        """Connect; read-only: on a read-only mount, the file is read as immutable."""
        uri = f"file:{quote(_absolute(self.url))}?mode=ro" if read_only else self.url
        pragmas = ["busy_timeout = 30000"]
        if not read_only:
            pragmas += ["journal_mode = WAL", "synchronous = NORMAL"]
        try:
            self._db = await _connect(uri, uri=read_only)
            for pragma in pragmas:
                await self._db.execute(f"PRAGMA {pragma}")
            if read_only:
                await self._db.execute("SELECT count(*) FROM sqlite_master")
        except sqlite3.Error as exc:
            await self.close()
            if _writable(self.url) or not _has_data(self.url):
                raise StoreError(f"cannot open the SQLite store {self.url!r}: {exc}") from exc
            if not read_only:
                raise StoreError(
                    f"cannot write the SQLite store {self.url!r}: the file or its directory is "
                    f"read-only ({exc})"
                ) from exc
            # A WAL file cannot be read read-only without its shared-memory file, which a
            # read-only mount cannot hold: nobody can write there, so it cannot change either.
            try:
                self._db = await _connect(f"{uri}&immutable=1", uri=True)
                await self._db.execute("SELECT count(*) FROM sqlite_master")
            except sqlite3.Error as again:
                await self.close()
                raise StoreError(f"cannot open the SQLite store {self.url!r}: {again}") from again

    async def _recognise(self) -> tuple[set[str], set[str]]:
        """The database's tables and applied migrations; StoreError if it is not ours."""
        async with self._read() as db:
            tables = {r[0] for r in await db.execute_fetchall(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}  # fmt: skip
            if tables and "migration" not in tables:
                raise StoreError(
                    f"{self.url!r} is not a chat-outline database (tables: {sorted(tables)})"
                )
            done: set[str] = set()
            if tables:
                done = {r[0] for r in await db.execute_fetchall("SELECT name FROM migration")}
        unknown = done - {name for name, _ in rows.MIGRATIONS}
        if unknown:
            raise StoreError(f"{self.url!r} was written by a newer chat-outline: {sorted(unknown)}")
        return tables, done

    async def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            if self._db is None:
                raise ClosedError(f"the store {self.url!r} is closed")
            try:
                yield self._db
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.url!r}: {exc}") from exc

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._read() as db:
            await db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                await db.execute("COMMIT")
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await _roll_back(db)
                raise

    async def _migrate(self) -> None:
        """Apply the migrations not yet recorded, each in its own transaction.

        Each looks at what is applied under the write lock (`BEGIN IMMEDIATE`), so processes
        opening one fresh file at once create its collections once.
        """
        async with self._write() as db:
            tables = {r[0] for r in await db.execute_fetchall(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}  # fmt: skip
            if tables and "migration" not in tables:
                raise StoreError(
                    f"{self.url!r} is not a chat-outline database (tables: {sorted(tables)})"
                )
            await db.execute(rows.MIGRATION_TABLE)
        _, done = await self._recognise()
        for name, filename in rows.MIGRATIONS:
            if name in done:
                continue
            async with self._write() as db:
                if await _one(db, "SELECT 1 FROM migration WHERE name = ?", name):
                    continue  # another process applied it since we looked
                for statement in rows.statements(filename):
                    await db.execute(statement)
                await db.execute(
                    "INSERT INTO migration (name, applied) VALUES (?, ?)",
                    (name, datetime.now(UTC).isoformat()),
                )

    async def _index(self) -> None:
        """Index every thread for search again when the index is missing or in another
        language (a store written by an older version, or opened with another language)."""
        async with self._write() as db:
            done = await db.execute_fetchall("SELECT language FROM search_language")
            recorded = [r[0] for r in done]
            self.language = self._language or next(iter(recorded), terms.DEFAULT_LANGUAGE)
            if recorded == [self.language]:
                return
            log.info("indexing %r for search in %s", self.url, self.language)
            await db.execute("DELETE FROM search")
            await db.execute("DELETE FROM search_language")
            threads = await db.execute_fetchall("SELECT DISTINCT thread FROM message")
            for (thread,) in threads:
                messages = await db.execute_fetchall(
                    f"SELECT {MESSAGE_COLUMNS} FROM message WHERE thread = ?",
                    (thread,),
                )
                nodes = await db.execute_fetchall(
                    f"SELECT {SUMMARY_COLUMNS} FROM summary WHERE thread = ?", (thread,)
                )
                await db.executemany(
                    _INSERT_SEARCH,
                    rows.thread_search_rows(
                        [rows.stored_from_row(r) for r in messages],
                        [rows.summary_from_row(r) for r in nodes],
                        self.language,
                    ),
                )
            await db.execute("INSERT INTO search_language (language) VALUES (?)", (self.language,))

    async def _call(self, work: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        """Run `work` on the connection's own thread, in one hop: every statement of a read or
        a transaction goes at once. With `write`, inside `BEGIN IMMEDIATE ... COMMIT`, rolled
        back on any error on that thread too, so a cancelled caller leaves nothing half-done."""
        async with self._read() as db:
            run = partial(_transaction, work) if write else work
            return await _on_thread(db, run)

    async def add(
        self, message: Message, weight: int, *, native: str | None = None
    ) -> Stored | None:
        args = rows.insert_message_args(message, weight, native)
        language = self.language

        def insert(db: sqlite3.Connection) -> tuple[Any, Any]:
            # The thread's next seq and idx, or nothing for an id already stored; a shared
            # message is indexed for search in the same transaction.
            placed = next(iter(db.execute(rows.INSERT_MESSAGE, args).fetchall()), None)
            if placed is None:
                return None, db.execute(queries.MESSAGE, (message.id,)).fetchone()
            seq, index, step_index = placed
            stored = Stored(
                message=message, seq=seq, index=index, weight=weight, step_index=step_index
            )
            db.executemany(_INSERT_SEARCH, rows.stored_search_rows([stored], language))
            if seq == 0:
                db.execute(queries.NEW_OUTLINE, rows.new_outline_row(message.thread))
            return placed, None

        placed, found = await self._call(insert, write=True)
        if placed is None:
            rows.check_redelivery(message, rows.stored_from_row(found))
            return None
        seq, index, step_index = placed
        return Stored(message=message, seq=seq, index=index, weight=weight, step_index=step_index)

    async def outline(self, thread: str) -> Outline | None:
        read_only = self._read_only

        def read(db: sqlite3.Connection) -> Outline | None:
            row = db.execute(queries.OUTLINE, (thread,)).fetchone()
            if row is None:
                if db.execute(queries.ANY_MESSAGE, (thread,)).fetchone() is None:
                    return None
                if read_only:  # a crash came between the two: it is made as it is read
                    return rows.outline_from_row(rows.new_outline_row(thread), [])
                db.execute(queries.NEW_OUTLINE, rows.new_outline_row(thread))
                row = db.execute(queries.OUTLINE, (thread,)).fetchone()
            tail = db.execute(queries.TAIL, (thread, row[8], row[11])).fetchall()
            return rows.outline_from_row(row, tail)

        return await self._call(read)

    async def pending(self, thread: str, after: int, limit: int) -> list[Stored]:
        found = await self._call(
            lambda db: db.execute(queries.PENDING, (thread, after, limit)).fetchall()
        )
        return [rows.stored_from_row(r) for r in found]

    async def natives(self, thread: str, after: int) -> dict[str, str]:
        found = await self._call(lambda db: db.execute(queries.NATIVES, (thread, after)).fetchall())
        return {id: native for id, native in found}

    async def message(self, id: str) -> Stored | None:
        row = await self._call(lambda db: db.execute(queries.MESSAGE, (id,)).fetchone())
        return None if row is None else rows.stored_from_row(row)

    async def messages(self, thread: str, first: int, last: int) -> list[Stored]:
        found = await self._call(
            lambda db: db.execute(queries.MESSAGES, (thread, first, last)).fetchall()
        )
        return [rows.stored_from_row(r) for r in found]

    async def summary(
        self, thread: str, level: int, index: int, *, agent: str = ""
    ) -> Summary | None:
        row = await self._call(
            lambda db: db.execute(queries.SUMMARY, (thread, agent, level, index)).fetchone()
        )
        return None if row is None else rows.summary_from_row(row)

    async def summaries(self, thread: str | None = None) -> list[Summary]:
        where, args = ("WHERE thread = ?", (thread,)) if thread is not None else ("", ())
        sql = f"SELECT {SUMMARY_COLUMNS} FROM summary {where} ORDER BY thread, agent, level, idx"
        found = await self._call(lambda db: db.execute(sql, args).fetchall())
        return [rows.summary_from_row(r) for r in found]

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
        update = queries.UPDATE_OUTLINE.format(assignments=assignments)
        args = (*values, before.thread, before.epoch, before.version)
        if not written and not asks:
            # Most messages only join the tail: one statement is its own transaction.
            changed = await self._call(lambda db: db.execute(update, args).rowcount)
            return changed == 1

        language = self.language

        def write(db: sqlite3.Connection) -> None:
            if db.execute(update, args).rowcount != 1:
                raise _Stale
            db.executemany(queries.INSERT_SUMMARY, [rows.summary_row(n) for n in written])
            _index_lines_on(db, before.thread, written, language)
            if asks:
                (n,) = db.execute(queries.NEXT_CALL, (before.thread,)).fetchone()
                db.executemany(
                    rows.INSERT_CALL,
                    [rows.call_row(ask, model, n + k) for k, ask in enumerate(asks)],
                )

        try:
            await self._call(write, write=True)
        except _Stale:
            return False
        return True

    async def erase(self, thread: str) -> bool:
        def delete(db: sqlite3.Connection) -> int:
            tables = ("message", "summary", "outline", "call", "search")
            erased = sum(
                max(db.execute(f"DELETE FROM {table} WHERE thread = ?", (thread,)).rowcount, 0)
                for table in tables
            )
            db.execute("DELETE FROM thread WHERE thread = ?", (thread,))
            return erased

        return await self._call(delete, write=True) > 0

    async def threads(self) -> list[str]:
        sql = "SELECT DISTINCT thread FROM message ORDER BY thread"
        return [r[0] for r in await self._call(lambda db: db.execute(sql).fetchall())]

    async def about(self, thread: str | None = None) -> list[About]:
        where, args = ("WHERE thread = ?", (thread,)) if thread is not None else ("", ())
        async with self._read() as db:
            found = await db.execute_fetchall(
                f"SELECT {THREAD_COLUMNS} FROM thread {where} ORDER BY thread", args
            )
        return [rows.about_from_row(r) for r in found]

    async def describe(
        self, thread: str, *, title: str | None = None, settings: str | None = None
    ) -> None:
        async with self._read() as db:
            await db.execute(rows.DESCRIBE, (thread, title, settings))

    async def behind(self) -> list[str]:
        sql = (
            "SELECT DISTINCT m.thread FROM message m "
            "LEFT JOIN outline o ON o.thread = m.thread "
            "WHERE o.thread IS NULL OR m.seq > o.position ORDER BY m.thread"
        )
        return [r[0] for r in await self._call(lambda db: db.execute(sql).fetchall())]

    async def calls(self, thread: str | None = None) -> list[Ask]:
        where, args = ("WHERE thread = ?", (thread,)) if thread is not None else ("", ())
        sql = f"SELECT {CALL_COLUMNS} FROM call {where} ORDER BY thread, n"
        found = await self._call(lambda db: db.execute(sql, args).fetchall())
        return [rows.ask_from_row(r) for r in found]

    async def nodes(
        self, thread: str, keys: Sequence[tuple[int, int]], *, agent: str = ""
    ) -> list[Summary]:
        if not keys:
            return []
        wanted = json.dumps([list(key) for key in keys])
        found = await self._call(
            lambda db: db.execute(queries.NODES, (wanted, thread, agent)).fetchall()
        )
        by_key = {(node.level, node.index): node for node in map(rows.summary_from_row, found)}
        return [by_key[key] for key in keys if key in by_key]

    async def search(
        self, thread: str, query: str, limit: int, *, agent: str | None = None
    ) -> list[Hit]:
        async with self._read() as db:
            reads = _SearchReads(db=db, thread=thread)
            return await ranking.search(
                reads, thread, query, limit, language=self.language, agent=agent
            )

    @asynccontextmanager
    async def claim(self, thread: str) -> AsyncIterator[bool]:
        """Always granted: one process owns a SQLite file, and it runs a thread in one task."""
        yield True

    async def export_thread(self, thread: str) -> ThreadRecords | None:
        async with self._read() as db:
            await db.execute("BEGIN")  # one snapshot, even with writers in other processes
            try:
                return await _thread_records(db, thread)
            finally:
                await db.execute("COMMIT")

    async def load_records(
        self, batch: Sequence[ThreadRecords], *, replace: bool = False
    ) -> Loaded:
        records.check_batch(batch)
        async with self._write() as db:
            plans = [
                records.plan(
                    await _thread_records(db, incoming.thread),
                    incoming,
                    foreign=await _foreign(db, incoming),
                    replace=replace,
                )
                for incoming in batch
            ]  # every plan first: a contradiction is refused before anything is written
            for plan in plans:
                await _apply(db, plan, self.language)
        return Loaded(
            threads=len(plans),
            written=sum(p.written for p in plans),
            skipped=sum(p.skipped for p in plans),
        )


def _has_data(path: str) -> bool:
    """A file with something in it (SQLite leaves a new file empty until its first write)."""
    try:
        found = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_size > 0


def _absolute(path: str) -> str:
    return os.path.abspath(path)


def _writable(path: str) -> bool:
    """Whether SQLite could write beside the file (its journal): not so on a read-only mount."""
    return os.access(path, os.W_OK) and os.access(os.path.dirname(_absolute(path)), os.W_OK)


def _pending(done: set[str]) -> bool:
    return any(name not in done for name, _ in rows.MIGRATIONS)


async def _connect(database: str, *, uri: bool) -> aiosqlite.Connection:
    connection = aiosqlite.connect(database, isolation_level=None, uri=uri)
    try:
        return await connection
    except BaseException:
        # A failed connect stops aiosqlite's thread without waiting for it: were the event loop
        # closed first, the thread would die with a traceback ("Event loop is closed").
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(connection._thread.join)
        raise


async def _roll_back(db: aiosqlite.Connection) -> None:
    """Roll back what is open. SQLite has already rolled back after some errors (a full disk):
    the error that caused it is the one to report, not the failed ROLLBACK."""
    if not db.in_transaction:
        return
    try:
        await db.execute("ROLLBACK")
    except sqlite3.Error as exc:
        log.warning("rollback failed: %s", exc)


_INSERT_SEARCH = f"INSERT INTO search ({SEARCH_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)"


def _index_lines_on(
    db: sqlite3.Connection, thread: str, nodes: Sequence[Summary], language: str
) -> None:
    """Index lines for search, with the days from their first message's to their own."""
    firsts: dict[int, str] = {}
    wanted = rows.first_indexes(nodes)
    for k in range(0, len(wanted), NODES_AT_ONCE):
        chunk = wanted[k : k + NODES_AT_ONCE]
        found = db.execute(rows.FIRST_AT.format(", ".join("?" * len(chunk))), (thread, *chunk))
        firsts.update((index, at) for index, at in found)
    db.executemany(_INSERT_SEARCH, rows.line_search_rows(nodes, firsts, language))


async def _index_lines(
    db: aiosqlite.Connection, thread: str, nodes: Sequence[Summary], language: str
) -> None:
    """`_index_lines_on`, in a transaction held through aiosqlite."""
    await _on_thread(db, lambda conn: _index_lines_on(conn, thread, nodes, language))


@dataclass(frozen=True, kw_only=True)
class _SearchReads:
    """Search's reads (`ranking.Reads`) of one thread, on the store's one connection (held, so
    nothing is written between them)."""

    db: aiosqlite.Connection
    thread: str

    async def postings(self, agent: str, terms: Sequence[str]) -> list[Any]:
        wanted = (json.dumps(terms), self.thread, agent)
        return list(await self.db.execute_fetchall(queries.SEARCH_POSTINGS, wanted))

    async def places(self, agent: str, indexes: Sequence[int]) -> list[Any]:
        wanted = (json.dumps(indexes), self.thread, agent)
        return list(await self.db.execute_fetchall(queries.SEARCH_PLACES, wanted))

    async def corpora(self, agent: str) -> list[Any]:
        wanted = (self.thread, agent)
        return list(await self.db.execute_fetchall(queries.SEARCH_CORPORA, wanted))

    async def details(self, keys: Sequence[ranking.Key]) -> list[Any]:
        wanted = (json.dumps(keys), self.thread)
        return list(await self.db.execute_fetchall(queries.SEARCH_DETAILS, wanted))


async def _thread_records(db: aiosqlite.Connection, thread: str) -> ThreadRecords | None:
    def select(columns: str, table: str, order: str) -> str:
        return f"SELECT {columns} FROM {table} WHERE thread = ? ORDER BY {order}"

    messages = await db.execute_fetchall(select(MESSAGE_COLUMNS, "message", "seq"), (thread,))
    nodes = await db.execute_fetchall(
        select(SUMMARY_COLUMNS, "summary", "agent, level, idx"), (thread,)
    )
    calls = await db.execute_fetchall(select(CALL_COLUMNS, "call", "n"), (thread,))
    row = await _one(db, f"SELECT {OUTLINE_COLUMNS} FROM outline WHERE thread = ?", thread)
    if row is None and not (messages or nodes or calls):
        return None
    outline = None
    if row is not None:
        tail = await db.execute_fetchall(
            "SELECT id, weight, at, step, seq FROM message "
            "WHERE thread = ? AND seq >= ? AND seq <= ? ORDER BY seq",
            (thread, row[8], row[11]),
        )
        outline = rows.outline_from_row(row, list(tail))
    about = await _one(db, f"SELECT {THREAD_COLUMNS} FROM thread WHERE thread = ?", thread)
    return ThreadRecords(
        thread=thread,
        messages=tuple(rows.stored_from_row(r) for r in messages),
        summaries=tuple(rows.summary_from_row(r) for r in nodes),
        outline=outline,
        calls=tuple(records.call_from_row(r) for r in calls),
        about=None if about is None else rows.about_from_row(about),
    )


async def _foreign(db: aiosqlite.Connection, incoming: ThreadRecords) -> dict[str, str]:
    """The incoming message ids that the store holds in another thread, with that thread."""
    ids = [s.message.id for s in incoming.messages]
    found: dict[str, str] = {}
    for start in range(0, len(ids), 500):  # under SQLite's limit on bound values
        chunk = ids[start : start + 500]
        for id, thread in await db.execute_fetchall(
            f"SELECT id, thread FROM message WHERE thread != ? AND id IN "
            f"({', '.join('?' * len(chunk))})",
            (incoming.thread, *chunk),
        ):
            found[id] = thread
    return found


async def _apply(db: aiosqlite.Connection, plan: records.Plan, language: str) -> None:
    if plan.about is not None:
        await db.execute(rows.DESCRIBE, (plan.thread, plan.about.title, plan.about.settings))
    if plan.clear:
        await db.execute("DELETE FROM summary WHERE thread = ?", (plan.thread,))
        await db.execute("DELETE FROM search WHERE thread = ? AND line", (plan.thread,))
    await db.executemany(
        rows.insert("message", MESSAGE_COLUMNS),
        [rows.loaded_message_row(s) for s in plan.messages],
    )
    await db.executemany(
        rows.insert("summary", SUMMARY_COLUMNS),
        [rows.summary_row(node) for node in plan.summaries],
    )
    await db.executemany(_INSERT_SEARCH, rows.stored_search_rows(plan.messages, language))
    await _index_lines(db, plan.thread, plan.summaries, language)
    await db.executemany(rows.INSERT_CALL, [rows.call_row(c.ask, c.model, c.n) for c in plan.calls])
    if plan.write == "create":
        row = rows.outline_row(plan.outline) if plan.outline else rows.new_outline_row(plan.thread)
        await db.execute(rows.insert("outline", OUTLINE_COLUMNS), row)
    elif plan.write == "update":
        assert plan.outline is not None
        assignments, values = rows.outline_update(plan.outline, lines_changed=True)
        await db.execute(
            f"UPDATE outline SET {assignments}, version = version + 1 WHERE thread = ?",
            (*values, plan.thread),
        )


def _transaction(work: Callable[[sqlite3.Connection], T], db: sqlite3.Connection) -> T:
    """`work` in one write transaction, on the connection's thread."""
    db.execute("BEGIN IMMEDIATE")
    try:
        done = work(db)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return done


async def _on_thread(db: aiosqlite.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """`work(connection)` run by aiosqlite's thread, which owns the connection: one hop."""
    # aiosqlite runs every call this way; its method for it is private and untyped.
    done: T = await db._execute(work, db._conn)  # type: ignore[no-untyped-call]
    return done


async def _one(db: aiosqlite.Connection, sql: str, *args: Any) -> Any:
    found = await db.execute_fetchall(sql, args)
    return next(iter(found), None)
