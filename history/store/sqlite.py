"""The embedded default: SQLite through aiosqlite (WAL, explicit `BEGIN IMMEDIATE` transactions).

One connection writes for the process, on aiosqlite's thread. A transaction body runs there
whole, in one hop (not one per statement), under one lock, so a task never reads another task's
uncommitted writes: this dialect's statements run synchronously and never suspend, so the body's
coroutine completes in a single step. Reads (`read` and `snapshot` bodies) run on a second
connection with a thread and a lock of its own, from the last commit (WAL lets a reader read
beside the writer): a view never waits for a lane's write transaction, nor for the writes queued
before it. A SQLite file has one writer at a time (`BEGIN IMMEDIATE`), which is the thread lock
and the migrations' lock; several processes may share a file, and claim its threads as on
PostgreSQL (`_claims.py`). Driver errors become StoreError here and nowhere else.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import stat
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from functools import partial
from typing import Any, TypeVar
from urllib.parse import quote

import aiosqlite
import anyio

from ..errors import ClosedError, StoreError
from . import _writes as writes
from ._adapter import Body, Mode
from ._claims import LEASE
from ._migrations import MIGRATIONS
from ._queries import QUERIES, Dialect
from ._rows import Params, Row
from ._sql import SQLStore

log = logging.getLogger(__name__)

WRITING = ("journal_mode = WAL", "synchronous = NORMAL", "wal_autocheckpoint = 10000")
"""How a writing connection is set. The log is copied into the file once it holds 10,000 pages
(40 MiB), not SQLite's 1,000: a page that many commits change (a common word's postings) is
copied once for all of them, so a commit costs about the same at a thread's 50,000th message
as at its 1,000th (with 1,000, a commit's share of the copying grew by 60% over 50,000)."""
T = TypeVar("T")

_BEGIN: dict[Mode, str | None] = {
    "auto": None,
    "read": None,
    "snapshot": "BEGIN",
    "write": "BEGIN IMMEDIATE",
}
_READS: tuple[Mode, ...] = ("read", "snapshot")
"""The bodies the reading connection runs."""


class _NoCalls(logging.Filter):
    """Drops the `aiosqlite` logger's DEBUG records: they print each call it runs with its
    arguments (a message's text, its lines) and each error it returns. Its other records stay."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG


_NO_CALLS = _NoCalls()


class SQLiteStore(SQLStore):
    """The collections in one SQLite file (or `:memory:`).

    A file that exists is first opened read-only and recognised by its `migration` table:
    another application's database is refused exactly as it was found (not switched to WAL).
    """

    def __init__(
        self,
        path: str,
        *,
        create: bool = True,
        read_only: bool = False,
        language: str | None = None,
        lease: float = LEASE,
    ) -> None:
        """Args:
        path: the file, or `:memory:`.
        create: make the store (the file and its collections) where there is none; False
            refuses a missing or empty file instead.
        read_only: only read (implies not `create`): a store of ours whose migrations are all
            applied is read through a read-only connection, so a read-only mount serves too.
        language: the language search stems in (`history._languages`); see `SQLStore`.
        lease: seconds a claim on a thread lasts unless renewed; see `SQLStore`.
        """
        database = SQLite(path, create=create, read_only=read_only)
        super().__init__(database, language=language, lease=lease)


class SQLite:
    """One SQLite file through aiosqlite: the `adapter.Database` of SQLite."""

    dialect: Dialect = "sqlite"
    shared = False

    def __init__(self, path: str, *, create: bool, read_only: bool) -> None:
        self.url = path
        # Resolved once (links, `..`): the read-only look and the connection that writes open
        # one file, whatever a link or a directory named in the path does meanwhile.
        self._file = path if path == ":memory:" else os.path.realpath(path)
        self.read_only = read_only
        self._create = create and not read_only
        self._db: aiosqlite.Connection | None = None
        self._lock = anyio.Lock()
        self._reader: aiosqlite.Connection | None = None
        """Reads beside the writer (none in memory, where a second connection is another
        database, nor when only reading)."""
        self._reading = anyio.Lock()

    async def connect(self, recognise: Callable[[], Awaitable[set[str]]]) -> bool:
        logging.getLogger("aiosqlite").addFilter(_NO_CALLS)  # no message text in a log (once)
        memory = self.url == ":memory:"
        found = not memory and _has_data(self._file)
        if not (memory or found) and _is_directory(self._file):
            raise StoreError(f"{self.url!r} is a directory: name a SQLite file in it, or a URL")
        if not (memory or found or self._create):
            raise StoreError(f"no chat-outline store at {self.url!r} (no file, or an empty one)")
        if found:
            await self._connect(read_only=True)
            done = await recognise()
            if not done and not self._create and not await self._has_tables():
                raise StoreError(f"no chat-outline store at {self.url!r} (the database is empty)")
            if self.read_only and all(name in done for name, _ in MIGRATIONS):
                return False
            await self.close()
        await self._connect(read_only=False)
        if not memory:
            self._reader = await self._open_reader()
        return True

    async def _open_reader(self) -> aiosqlite.Connection:
        try:
            reader = await _connect(self.url, uri=False)
            for pragma in ("busy_timeout = 30000", "query_only = ON"):
                await reader.execute(f"PRAGMA {pragma}")
        except sqlite3.Error as exc:
            await self.close()
            raise StoreError(f"cannot open the SQLite store {self.url!r}: {exc}") from exc
        return reader

    async def _has_tables(self) -> bool:
        return bool(await self.run(lambda tx: tx.fetch("tables")))

    async def _connect(self, *, read_only: bool) -> None:
        """Connect; read-only: on a read-only mount, the file is read as immutable."""
        uri = f"file:{quote(self._file)}?mode=ro" if read_only else self._file
        pragmas = ["busy_timeout = 30000"]
        if not read_only:
            pragmas += WRITING
        try:
            self._db = await _connect(uri, uri=read_only)
            for pragma in pragmas:
                await self._db.execute(f"PRAGMA {pragma}")
            if read_only:
                await self._db.execute("SELECT count(*) FROM sqlite_master")
        except sqlite3.Error as exc:
            await self.close()
            if _writable(self._file) or not _has_data(self._file):
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

    async def close(self) -> None:
        if self._reader is not None:
            reader, self._reader = self._reader, None
            await reader.close()
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    @property
    def closed(self) -> bool:
        return self._db is None

    async def run(self, body: Body[T], *, mode: Mode = "auto") -> T:
        reader = self._reader if mode in _READS else None
        async with self._reading if reader is not None else self._lock:
            db = reader or self._db
            if db is None or self._db is None:
                raise ClosedError(f"the store {self.url!r} is closed")
            try:
                # aiosqlite runs every call this way; its method for it is private and untyped.
                done: T = await db._execute(  # type: ignore[no-untyped-call]
                    partial(_drive, body, _BEGIN[mode]), db._conn
                )
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.url!r}: {exc}") from exc
            return done

    async def store_message(self, message: Params, outline: Params) -> Row | None:
        body = partial(writes.store_message, message=message, outline=outline)
        return await self.run(body, mode="write")


class _Transaction:
    """Statements on the connection's own thread, run synchronously (see `_drive`)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def fetch(self, name: str, /, **params: Any) -> Sequence[Row]:
        return self._db.execute(*_bound(name, params)).fetchall()

    async def one(self, name: str, /, **params: Any) -> Row | None:
        found: Row | None = self._db.execute(*_bound(name, params)).fetchone()
        return found

    async def execute(self, name: str, /, **params: Any) -> int:
        return max(self._db.execute(*_bound(name, params)).rowcount, 0)

    async def executemany(self, name: str, many: Sequence[Params], /) -> None:
        statement = QUERIES[name].sqlite
        self._db.executemany(statement.text, [_args(statement.args(p)) for p in many])

    async def script(self, sql: str, /) -> None:
        self._db.execute(sql)

    async def lock_thread(self, thread: str) -> None:
        """Nothing to do: `BEGIN IMMEDIATE` already holds every writer off."""

    async def lock_migrations(self) -> None:
        """Nothing to do: `BEGIN IMMEDIATE` already holds every writer off."""

    async def few_rows(self) -> None:
        """Nothing to do: SQLite compiles nothing."""


def _bound(name: str, params: Params) -> tuple[str, tuple[Any, ...]]:
    statement = QUERIES[name].sqlite
    return statement.text, _args(statement.args(params))


def _args(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A list goes to SQLite as JSON, which the statement reads with json_each."""
    return tuple(json.dumps(v) if isinstance(v, list) else v for v in values)


def _drive(body: Body[T], begin: str | None, db: sqlite3.Connection) -> T:
    """Run `body` whole on the connection's thread, in a transaction when `begin` says so."""
    db.row_factory = sqlite3.Row
    if begin is not None:
        db.execute(begin)
    try:
        done = _complete(body(_Transaction(db)))
        if begin is not None:
            db.execute("COMMIT")
    except BaseException:
        if begin is not None:
            _roll_back(db)
        raise
    return done


def _complete(work: Coroutine[Any, Any, T]) -> T:
    """The coroutine's result, run in one step: its statements never suspend it."""
    try:
        work.send(None)
    except StopIteration as finished:
        done: T = finished.value
        return done
    work.close()
    raise RuntimeError("a SQLite transaction body waited for something other than its statements")


def _roll_back(db: sqlite3.Connection) -> None:
    """Roll back what is open. SQLite has already rolled back after some errors (a full disk):
    the error that caused it is the one to report, not the failed ROLLBACK."""
    if not db.in_transaction:
        return
    try:
        db.execute("ROLLBACK")
    except sqlite3.Error as exc:
        log.warning("rollback failed: %s", exc)


def _is_directory(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def _has_data(path: str) -> bool:
    """A file with something in it (SQLite leaves a new file empty until its first write)."""
    try:
        found = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_size > 0


def _writable(path: str) -> bool:
    """Whether SQLite could write beside the file (its journal): not so on a read-only mount."""
    return os.access(path, os.W_OK) and os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


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
