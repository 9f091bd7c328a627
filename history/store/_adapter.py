"""What the SQL store asks of a database: the seam between `sql.SQLStore` and a dialect.

A dialect (`sqlite.py`, `postgres.py`) connects and closes, runs a transaction body, and
translates its driver's errors; the store's methods are written once, as bodies
over a `Transaction`. Those two files are the only places where SQLite and PostgreSQL differ.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, Protocol, TypeVar

from ._queries import Dialect
from ._rows import Params, Row

T = TypeVar("T")

Mode = Literal["auto", "read", "snapshot", "write"]
"""How a body runs: `auto`, each statement on its own (a read, or one write); `read`, as `auto`
for a body that only reads, which a dialect may run beside the writers (SQLite: on a connection
of its own, never queued behind a write transaction); `snapshot`, its reads in one consistent
snapshot (beside the writers too); `write`, in one write transaction, rolled back on any
error."""


class Transaction(Protocol):
    """Statements by their name in `queries.sql`, with named parameters."""

    async def fetch(self, name: str, /, **params: Any) -> Sequence[Row]: ...

    async def one(self, name: str, /, **params: Any) -> Row | None: ...

    async def execute(self, name: str, /, **params: Any) -> int:
        """Run a statement; how many rows it changed."""
        ...

    async def executemany(self, name: str, many: Sequence[Params], /) -> None: ...

    async def script(self, sql: str, /) -> None:
        """A statement of a collection file (a migration step), as it is."""
        ...

    async def lock_thread(self, thread: str) -> None:
        """Hold the thread's writers (its next seq, an erase, a load) off until this commits."""
        ...

    async def lock_migrations(self) -> None:
        """Hold other processes' migrations off until this commits."""
        ...

    async def few_rows(self) -> None:
        """The statements to come read few rows each (a search): plan them so, until this
        transaction ends."""
        ...


Body = Callable[[Transaction], Coroutine[Any, Any, T]]
"""A transaction's work. It awaits only its transaction, so SQLite runs it in one go."""


class Database(Protocol):
    """A connection (or pool) to one database, in one dialect."""

    dialect: Dialect
    url: str
    """Where it is, for messages (a URL without its password)."""
    shared: bool
    read_only: bool

    async def connect(self, recognise: Callable[[], Awaitable[set[str]]]) -> bool:
        """Connect. `recognise` reads the applied migrations (refusing a database that is not
        a store, or a newer one); False: a read-only store is open as it is, with nothing to
        migrate."""
        ...

    async def close(self) -> None: ...

    async def store_message(self, message: Params, outline: Params) -> Row | None:
        """Store a message as `writes.store_message` does, in one call: its row's seq, idx and
        sidx, or None for a known id."""
        ...

    @property
    def closed(self) -> bool:
        """Whether it holds no connection: never opened, closed, or a failed open undone."""
        ...

    async def run(self, body: Body[T], *, mode: Mode = "auto") -> T:
        """Run `body` as `mode` says: ClosedError when closed, StoreError for driver errors."""
        ...
