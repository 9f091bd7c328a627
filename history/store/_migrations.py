"""The store's migrations: the named steps that build its collections, and applying them.

A step is a collection file (`collections/NAME.sql`, with `NAME.postgresql.sql` beside it
where PostgreSQL needs other text), applied once and recorded in the `migration` table. A
database opened with steps missing gets each in its own transaction, under the migrations'
lock, so processes opening one database at once apply each step once. A database with no step
applied is made from `collections/schema.sql` instead (its dialect's variant), the current
schema in one file, in one transaction that records every step: `tests/store/test_schema.py`
checks that it makes what the steps make, on both databases.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from ..errors import StoreError
from ._adapter import Body, Database, Transaction
from ._queries import COLLECTIONS, QUERIES, Dialect

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("0001_message", "message.sql"),
    ("0002_summary", "summary.sql"),
    ("0003_outline", "outline.sql"),
    ("0004_call", "call.sql"),
    ("0005_search", "search.sql"),
    ("0006_steps", "steps.sql"),
    ("0010_native", "native.sql"),
    ("0011_thread", "thread.sql"),
    ("0012_search2", "search2.sql"),
    ("0013_search_gin", "search_gin.sql"),
    ("0014_indexes", "indexes.sql"),
    ("0015_search_terms", "search_terms.sql"),
    ("0016_search_posted", "search_posted.sql"),
    ("0017_search_keys", "search_keys.sql"),
    ("0018_store_message", "store_message.sql"),
    ("0019_search_corpus", "search_corpus.sql"),
    ("0020_fallback", "fallback.sql"),
    ("0036_move", "move.sql"),
    ("0050_call_packed", "call_packed.sql"),
    ("0051_search_compact", "search_compact.sql"),
    ("0060_lease", "lease.sql"),
    ("0065_space", "space.sql"),
    ("0070_generations", "generations.sql"),
    ("0075_search_pending", "search_pending.sql"),
    ("0080_search_unflagged", "search_unflagged.sql"),
    ("0090_search_packed", "search_packed.sql"),
)
"""Named steps, applied in order, each in its own transaction and recorded in `migration`."""
MIGRATION_TABLE = QUERIES["migration_table"].sqlite.text
SCHEMA = "schema.sql"
"""The current schema: what every step makes, for a database with none applied."""


def statements(filename: str, *, dialect: Dialect = "sqlite") -> list[str]:
    """The SQL statements of one collection file in a dialect, comments dropped.

    Where the dialects differ, a collection has a variant for PostgreSQL next to it
    (`search.postgresql.sql` beside `search.sql`); otherwise both read the one file. A statement
    ends with a `;` at the end of a line, except inside a body: a trigger's BEGIN ... END
    (SQLite) or a function's `$$ ... $$` (PostgreSQL).
    """
    path = COLLECTIONS / filename
    variant = path.with_suffix(f".{dialect}.sql")
    text = (variant if variant.exists() else path).read_text(encoding="utf-8")
    found, current = [], []
    for line in text.splitlines():
        if line.lstrip().startswith("--") or not line.strip():
            continue
        current.append(line)
        if line.rstrip().endswith(";") and not _in_body("\n".join(current)):
            found.append("\n".join(current).rstrip().removesuffix(";"))
            current = []
    if current:
        found.append("\n".join(current))
    return found


def _in_body(statement: str) -> bool:
    """Whether a statement's last `;` so far is inside a trigger's or a function's body."""
    if statement.count("$$") % 2:
        return True
    upper = statement.upper()
    trigger = upper.lstrip().startswith("CREATE TRIGGER") and re.search(r"\bBEGIN\b", upper)
    return bool(trigger) and upper.splitlines()[-1].strip() != "END;"


async def applied(database: Database) -> set[str]:
    """The steps applied; StoreError if the database is not a store, or a newer one's."""

    async def read(tx: Transaction) -> set[str]:
        if not await _tables(tx, database.url):
            return set()
        return {r["name"] for r in await tx.fetch("migrations")}

    done = await database.run(read)
    unknown = done - {name for name, _ in MIGRATIONS}
    if unknown:
        raise StoreError(f"{database.url!r} was written by a newer chat-outline: {sorted(unknown)}")
    return done


async def migrate(database: Database) -> None:
    """Apply the steps not yet recorded: all at once from the schema on a database with none,
    else each in its own transaction. Each is checked and applied under the migrations' lock."""

    async def start(tx: Transaction) -> None:
        await tx.lock_migrations()
        await _tables(tx, database.url)
        await tx.execute("migration_table")

    await database.run(start, mode="write")
    done = await applied(database)
    if not done:
        await database.run(_schema(database.dialect), mode="write")
        done = await applied(database)
    for name, filename in MIGRATIONS:
        if name not in done:
            await database.run(_step(name, filename, database.dialect), mode="write")


async def _tables(tx: Transaction, url: str) -> set[str]:
    """The database's tables; StoreError when they are another application's."""
    tables = {r["name"] for r in await tx.fetch("tables")}
    if tables and "migration" not in tables:
        raise StoreError(f"{url!r} is not a chat-outline database (tables: {sorted(tables)})")
    return tables


def _schema(dialect: Dialect) -> Body[None]:
    """The body making the current schema and recording every step, unless another process
    applied a step meanwhile."""

    async def make(tx: Transaction) -> None:
        await tx.lock_migrations()
        if await tx.fetch("migrations"):
            return
        for statement in statements(SCHEMA, dialect=dialect):
            await tx.script(statement)
        applied = datetime.now(UTC).isoformat()
        await tx.executemany(
            "record_migration", [{"name": name, "applied": applied} for name, _ in MIGRATIONS]
        )

    return make


def _step(name: str, filename: str, dialect: Dialect) -> Body[None]:
    """The body applying one step, unless another process applied it meanwhile."""

    async def step(tx: Transaction) -> None:
        await tx.lock_migrations()
        if await tx.one("migration", name=name) is not None:
            return
        for statement in statements(filename, dialect=dialect):
            await tx.script(statement)
        await tx.execute("record_migration", name=name, applied=datetime.now(UTC).isoformat())

    return step
