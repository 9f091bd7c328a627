"""No statement run per message, view, zoom or search scans its thread, on either database.

Each statement of `planned.PLANNED` is planned by the database itself (`EXPLAIN
QUERY PLAN` on SQLite, `EXPLAIN` on PostgreSQL): a scan of a collection fails, and so does a
lookup by the thread alone where a key is due. SQLite does not show whether it reads a max()
from the end of an index or walks the thread for it, so the statements that take the next
number are also counted in SQLite's own steps, in a short thread and in a long one.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from history.contract import Message
from history.store import _rows as rows
from history.store import open_store
from history.store._queries import QUERIES

from ..stores import postgres_schema
from .planned import PLANNED, Planned

COLLECTIONS = ("message", "summary", "outline", "call", "search", "search_term")
AT = datetime(2026, 1, 2, tzinfo=UTC)


def _sqlite(path: Path) -> str:
    async def create() -> None:
        store = open_store(path)
        await store.open()
        await store.close()

    import anyio

    anyio.run(create)
    return str(path)


def _sqlite_problems(name: str, planned: Planned, plan: list[str]) -> list[str]:
    problems = []
    for detail in plan:
        # The keys asked for, and a subquery's rows (its own plan is on lines of its own), are
        # not collections.
        if detail.startswith("SCAN ") and not re.match(
            r"SCAN (\w+ VIRTUAL TABLE|\(subquery-\d+\))", detail
        ):
            problems.append(f"{name}: {detail}")
        if "TEMP B-TREE" in detail and not planned.sorts:
            problems.append(f"{name}: {detail}")
    if planned.key:
        wanted = [f"{column}" for column in planned.key]
        if not any(
            all(re.search(rf"\b{column}[=<>]", detail) for column in wanted) for detail in plan
        ):
            problems.append(f"{name}: no lookup by {', '.join(wanted)} in {plan}")
    return problems


def test_no_statement_scans_a_thread_on_sqlite(tmp_path: Path) -> None:
    url = _sqlite(tmp_path / "plans.sqlite")
    problems = []
    with closing(sqlite3.connect(url)) as db:
        for name, planned in PLANNED.items():
            plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {planned.sql}", planned.args)]
            problems += _sqlite_problems(name, planned, plan)
    assert problems == []


def test_the_plan_check_catches_a_scan_and_a_lookup_by_thread_alone(tmp_path: Path) -> None:
    url = _sqlite(tmp_path / "plans.sqlite")
    by_text = Planned(sql="SELECT * FROM message WHERE text = ?", args=("x",))
    by_thread = Planned(
        sql="SELECT * FROM summary WHERE thread = ? AND level + 0 = ? AND idx + 0 = ?",
        args=("t", 0, 1),
        key=("thread", "level", "idx"),
    )
    with closing(sqlite3.connect(url)) as db:
        for planned in (by_text, by_thread):
            plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {planned.sql}", planned.args)]
            assert _sqlite_problems("probe", planned, plan) != []


def _steps(db: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> int:
    """SQLite's virtual-machine steps for one statement, undone afterwards."""
    counted = 0

    def count() -> int:
        nonlocal counted
        counted += 1
        return 0

    db.execute("BEGIN")
    db.set_progress_handler(count, 1)
    try:
        db.execute(sql, args).fetchall()
    finally:
        db.set_progress_handler(None, 1)
        db.execute("ROLLBACK")
    return counted


@pytest.fixture
def long_and_short(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A store with a thread of 20 messages (`short`) and one of 5,000 (`long`), and calls."""
    url = _sqlite(tmp_path / "steps.sqlite")
    with closing(sqlite3.connect(url, isolation_level=None)) as db:
        db.execute("BEGIN")
        for thread, count in (("short", 20), ("long", 5_000)):
            db.executemany(
                rows.insert("message", rows.MESSAGE_COLUMNS),
                [
                    (
                        f"{thread}-{k}",
                        thread,
                        k,
                        None if k % 3 == 2 else k - k // 3,
                        "a",
                        "",
                        "x",
                        "2026-01-01T00:00:00+00:00",
                        k % 3 == 2,
                        "[]",
                        1,
                        k // 3 if k % 3 == 2 else None,
                    )
                    for k in range(count)
                ],
            )
            db.executemany(
                rows.insert("call", rows.CALL_COLUMNS),
                [
                    (thread, f"key-{k}", k, "m", 0, k, "[]", "[]", "x", "ok", 1, 1, "")
                    for k in range(count)
                ],
            )
        db.execute("COMMIT")
        yield db


@pytest.mark.parametrize("step", [False, True])
def test_storing_a_message_costs_the_same_in_a_long_thread(
    long_and_short: sqlite3.Connection, step: bool
) -> None:
    def insert(thread: str) -> int:
        new = Message(id=f"new-{thread}", thread=thread, author="a", text="x", at=AT, step=step)
        statement = QUERIES["insert_message"].sqlite
        return _steps(
            long_and_short, statement.text, statement.args(rows.message_params(new, 1, None))
        )

    assert insert("long") == insert("short")


def test_the_next_call_number_costs_the_same_in_a_long_thread(
    long_and_short: sqlite3.Connection,
) -> None:
    short, long = (
        _steps(long_and_short, QUERIES["next_call"].sqlite.text, (t,)) for t in ("short", "long")
    )
    assert long == short


def test_the_step_count_sees_a_thread_walked(long_and_short: sqlite3.Connection) -> None:
    # Both maxima in one SELECT: SQLite walks the thread for them.
    both = "SELECT max(seq) + 1, max(idx) + 1 FROM message WHERE thread = ?"
    short, long = (_steps(long_and_short, both, (t,)) for t in ("short", "long"))
    assert long > 10 * short


def _postgres_nodes(plan: Any) -> Iterator[dict[str, Any]]:
    if isinstance(plan, dict):
        yield plan
        for child in plan.get("Plans", []):
            yield from _postgres_nodes(child)


def _postgres_problems(name: str, planned: Planned, plan: dict[str, Any]) -> list[str]:
    problems = []
    nodes = list(_postgres_nodes(plan))
    for node in nodes:
        relation = node.get("Relation Name")
        if node["Node Type"] == "Seq Scan" and relation in COLLECTIONS:
            problems.append(f"{name}: a sequential scan of {relation}")
    key = planned.postgresql_key or planned.key
    if key:
        conditions = [node["Index Cond"] for node in nodes if "Index Cond" in node]
        if not any(
            all(re.search(rf"\b{column}\b", condition) for column in key)
            for condition in conditions
        ):
            problems.append(f"{name}: no index lookup by {', '.join(key)} ({conditions})")
    return problems


def test_no_statement_scans_a_thread_on_postgresql() -> None:
    import anyio
    import asyncpg

    async def explain(url: str) -> list[str]:
        store = open_store(url)
        await store.open()  # the schema
        await store.close()
        db = await asyncpg.connect(url)
        problems: list[str] = []
        try:
            # Empty tables are read most cheaply whole: ask what the indexes allow.
            await db.execute("SET enable_seqscan = off")
            for name, planned in PLANNED.items():
                sql = planned.postgresql or planned.sql
                args = planned.postgresql_args or planned.args
                plan = await db.fetchrow(f"EXPLAIN (FORMAT JSON) {sql}", *args)
                assert plan is not None  # EXPLAIN always answers with one row
                (text,) = plan
                problems += _postgres_problems(name, planned, json.loads(text)[0]["Plan"])
        finally:
            await db.close()
        return problems

    with postgres_schema() as url:
        assert anyio.run(explain, url) == []


@pytest.mark.slow
def test_counting_a_terms_postings_reads_no_more_than_its_cap(tmp_path: Path) -> None:
    # Search counts a stem's postings for its rarity up to a cap: a stem that 2,000 rows hold
    # costs what one that 200 do (the cap is 100 here), and one that 50 do less. Past the cap,
    # the key of the posting after it comes with the count (`level * 2**32 + idx`).
    url = _sqlite(tmp_path / "counted.sqlite")
    with closing(sqlite3.connect(url, isolation_level=None)) as db:
        for word, (term, count) in enumerate(
            (("few", 50), ("cap", 100), ("some", 200), ("many", 2_000)), start=1
        ):
            db.execute(
                "INSERT INTO search_word (id, thread, agent, stem) VALUES (?, 't', '', ?)",
                (word, term),
            )
            db.executemany(
                "INSERT INTO search_term (word, line, level, idx, n) VALUES (?, 1, ?, ?, 1)",
                [(word, k // 50, k % 50) for k in range(count)],  # 50 lines a level
            )
        statement = QUERIES["search_frequencies"].sqlite

        def counted(term: str) -> tuple[int, list[Any]]:
            args = statement.args({"thread": "t", "agent": "", "terms": f'["{term}"]', "cap": 100})
            return _steps(db, statement.text, args), sorted(db.execute(statement.text, args))

        (few, few_rows), (_, cap_rows), (some, _), (many, many_rows) = (
            counted(t) for t in ("few", "cap", "some", "many")
        )
    assert many == some > few
    assert few_rows == [("few", 0, 0, None), ("few", 1, 50, None)]
    assert cap_rows == [("cap", 0, 0, None), ("cap", 1, 100, None)]  # exactly the cap
    assert many_rows[1] == ("many", 1, 101, 2 * 2**32)  # the 101st: level 2, index 0
