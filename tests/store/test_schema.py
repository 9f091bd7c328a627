"""The current schema (`collections/schema.sql`, and its PostgreSQL variant) makes exactly what
the migration steps make, on both databases: a new database is made from it, and one an older
version wrote gets the steps it lacks; both must end the same."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

from history.store import _migrations as migrations
from history.store import open_store

from ..stores import postgres_sql, store_url

Catalog = dict[str, Any]


def _sql_text(sql: str | None) -> str | None:
    return None if sql is None else re.sub(r"\s+", " ", sql).strip()


def sqlite_catalog(path: str) -> Catalog:
    """Every table (its columns, kind, keys and indexes), index, trigger and view, by name, and
    the rows each table holds but `migration`."""
    with closing(sqlite3.connect(path)) as db:
        found: Catalog = {}
        for kind, name, table, sql in db.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
        ):
            entry: dict[str, Any] = {"type": kind, "table": table}
            if kind == "table":
                entry["columns"] = db.execute(f"PRAGMA table_xinfo('{name}')").fetchall()
                entry["list"] = db.execute(f"PRAGMA table_list('{name}')").fetchall()
                entry["keys"] = db.execute(f"PRAGMA foreign_key_list('{name}')").fetchall()
                entry["indexes"] = db.execute(f"PRAGMA index_list('{name}')").fetchall()
                if name != "migration":
                    entry["rows"] = db.execute(f'SELECT * FROM "{name}"').fetchall()
            elif kind == "index":
                entry["columns"] = db.execute(f"PRAGMA index_xinfo('{name}')").fetchall()
                entry["sql"] = _sql_text(sql)
            else:
                entry["sql"] = _sql_text(sql)
            found[name] = entry
        return found


def postgres_catalog(url: str) -> Catalog:
    """Every relation (its kind and columns, in order), constraint, index, function, trigger and
    sequence of the URL's schema, with its name written `S`, and the rows of each table but
    `migration`."""
    schema = parse_qs(urlsplit(url).query)["search_path"][0]

    def read(sql: str) -> list[tuple[Any, ...]]:
        rows = postgres_sql(url, sql.replace("{s}", f"'{schema}'"))
        return sorted(
            tuple(str(v).replace(f"{schema}.", "S.") if isinstance(v, str) else v for v in r)
            for r in rows
        )

    columns = read(
        "SELECT table_name, ordinal_position, column_name, data_type, is_nullable, "
        "column_default, is_identity, identity_generation FROM information_schema.columns "
        "WHERE table_schema = {s}"
    )
    tables = {t for t, *_ in columns}
    found: Catalog = {
        # Positions in order, not by number: a dropped column leaves a gap in attnum.
        "columns": {t: [c[2:] for c in columns if c[0] == t] for t in tables},
        "relations": read(
            "SELECT relname, relkind, relpersistence FROM pg_class "
            "WHERE relnamespace = {s}::regnamespace"
        ),
        "constraints": read(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) "
            "FROM pg_constraint WHERE connamespace = {s}::regnamespace"
        ),
        "indexes": read("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = {s}"),
        "functions": read(
            "SELECT proname, pg_get_functiondef(oid) FROM pg_proc "
            "WHERE pronamespace = {s}::regnamespace"
        ),
        "triggers": read(
            "SELECT tgname, pg_get_triggerdef(t.oid) FROM pg_trigger AS t "
            "JOIN pg_class AS c ON c.oid = t.tgrelid "
            "WHERE c.relnamespace = {s}::regnamespace AND NOT t.tgisinternal"
        ),
        "sequences": read(
            "SELECT sequencename, data_type::text, start_value, increment_by, cache_size "
            "FROM pg_sequences WHERE schemaname = {s}"
        ),
    }
    found["rows"] = {t: read(f'SELECT * FROM "{t}"') for t in sorted(tables) if t != "migration"}
    return found


def _by_steps(kind: str, url: str) -> None:
    """Apply the first step as an older version would have, so opening applies the others
    one at a time."""
    name, filename = migrations.MIGRATIONS[0]
    first = migrations.statements(filename, dialect="sqlite" if kind == "sqlite" else "postgresql")
    record = f"INSERT INTO migration VALUES ('{name}', '2026-01-01T00:00:00+00:00')"
    if kind == "sqlite":
        with closing(sqlite3.connect(url)) as db, db:
            for statement in [migrations.MIGRATION_TABLE, *first, record]:
                db.execute(statement)
    else:
        postgres_sql(url, migrations.MIGRATION_TABLE, *first, record)


async def _opened(url: str) -> None:
    store = open_store(url)
    await store.open()
    await store.close()


CATALOGS: dict[str, Callable[[str], Catalog]] = {
    "sqlite": sqlite_catalog,
    "postgresql": postgres_catalog,
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(CATALOGS))
def test_a_new_store_made_from_the_schema_is_what_the_steps_make(kind: str, tmp_path: Path) -> None:
    with store_url(kind, tmp_path) as by_steps, store_url(kind, tmp_path) as by_schema:
        _by_steps(kind, by_steps)
        anyio.run(_opened, by_steps)
        anyio.run(_opened, by_schema)
        stepped, made = CATALOGS[kind](by_steps), CATALOGS[kind](by_schema)
        assert _applied(kind, by_schema) == [name for name, _ in migrations.MIGRATIONS]
    assert made == stepped
    # Not equal by being empty: both hold every collection.
    text = repr(made)
    for table in ("message", "outline", "summary", "search_pending", "lease", "generation"):
        assert f"'{table}'" in text


def _applied(kind: str, url: str) -> list[str]:
    sql = "SELECT name FROM migration ORDER BY name"
    if kind == "sqlite":
        with closing(sqlite3.connect(url)) as db:
            return [r[0] for r in db.execute(sql)]
    return [r[0] for r in postgres_sql(url, sql)]


def test_the_catalog_tells_a_schema_from_another(tmp_path: Path) -> None:
    """The comparison above can fail: a column's default or type, an index, a table's kind."""
    base = "CREATE TABLE t (a TEXT PRIMARY KEY, b INTEGER NOT NULL DEFAULT 0)"
    others = [
        "CREATE TABLE t (a TEXT PRIMARY KEY, b INTEGER NOT NULL DEFAULT 1)",
        "CREATE TABLE t (a TEXT PRIMARY KEY, b INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID",
        f"{base}; CREATE INDEX t_b ON t (b)",
        "CREATE TABLE t (a TEXT PRIMARY KEY, b BIGINT NOT NULL DEFAULT 0)",
        f"{base}; INSERT INTO t VALUES ('x', 1)",
    ]

    def catalog(n: int, script: str) -> Catalog:
        path = str(tmp_path / f"{n}.sqlite")
        with closing(sqlite3.connect(path)) as db:
            db.executescript(script)
        return sqlite_catalog(path)

    first = catalog(0, base)
    assert catalog(1, base) == first
    for n, other in enumerate(others, start=2):
        assert catalog(n, other) != first, other
