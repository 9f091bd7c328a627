"""A thread's records on PostgreSQL: read for an export, written for a load.

The pure part of a load, `records.plan`, is every store's; only the reads and the writes are
here. A load holds each thread's lock (the one `add` and `erase` take) and its outline row (the
one a commit updates), so nothing of the thread changes between what is planned and what is
written. Loaded shared messages and summaries are indexed for search here, as `add` and a
commit index the ones they write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from ..contract import Summary
from . import records, rows
from .records import ThreadRecords
from .rows import (
    CALL_COLUMNS,
    MESSAGE_COLUMNS,
    OUTLINE_COLUMNS,
    PG,
    SEARCH_COLUMNS,
    SUMMARY_COLUMNS,
    THREAD_COLUMNS,
)

Connection = asyncpg.pool.PoolConnectionProxy


async def thread_records(db: Connection, thread: str, *, lock: bool) -> ThreadRecords | None:
    """Everything stored for the thread; None when nothing is.

    Args:
        lock: hold the outline row until the transaction ends (a load). The outline is read
            first, so a commit in flight is waited for and every later read sees what it wrote.
    """
    row = await db.fetchrow(
        f"SELECT {OUTLINE_COLUMNS} FROM outline WHERE thread = $1{' FOR UPDATE' if lock else ''}",
        thread,
    )

    def select(columns: str, table: str, order: str) -> str:
        return f"SELECT {columns} FROM {table} WHERE thread = $1 ORDER BY {order}"

    messages = await db.fetch(select(MESSAGE_COLUMNS, "message", "seq"), thread)
    nodes = await db.fetch(
        select(SUMMARY_COLUMNS, "summary", 'agent COLLATE "C", level, idx'), thread
    )
    calls = await db.fetch(select(CALL_COLUMNS, "call", "n"), thread)
    if row is None and not (messages or nodes or calls):
        return None
    outline = None
    if row is not None:
        tail = await db.fetch(
            "SELECT id, weight, at, step, seq FROM message "
            "WHERE thread = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq",
            thread, row[8], row[11],
        )  # fmt: skip
        outline = rows.outline_from_row(_values(row), [_values(r) for r in tail])
    about = await db.fetchrow(f"SELECT {THREAD_COLUMNS} FROM thread WHERE thread = $1", thread)
    return ThreadRecords(
        thread=thread,
        messages=tuple(rows.stored_from_row(_values(r)) for r in messages),
        summaries=tuple(rows.summary_from_row(_values(r)) for r in nodes),
        outline=outline,
        calls=tuple(records.call_from_row(_values(r)) for r in calls),
        about=None if about is None else rows.about_from_row(_values(about)),
    )


async def foreign(db: Connection, incoming: ThreadRecords) -> dict[str, str]:
    """The incoming message ids that the store holds in another thread, with that thread."""
    ids = [s.message.id for s in incoming.messages]
    if not ids:
        return {}
    found = await db.fetch(
        "SELECT id, thread FROM message WHERE thread <> $1 AND id = ANY($2::text[])",
        incoming.thread, ids,
    )  # fmt: skip
    return {id: thread for id, thread in found}


INSERT_SEARCH = f"INSERT INTO search ({SEARCH_COLUMNS}) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)"


async def index_lines(db: Connection, thread: str, nodes: Sequence[Summary], language: str) -> None:
    """Index lines for search, with the days from their first message's to their own."""
    if not nodes:
        return
    found = await db.fetch(
        "SELECT idx, at FROM message WHERE thread = $1 AND NOT step AND idx = ANY($2::bigint[])",
        thread, rows.first_indexes(nodes),
    )  # fmt: skip
    firsts = {index: at for index, at in found}
    await db.executemany(INSERT_SEARCH, rows.line_search_rows(nodes, firsts, language))


async def apply(db: Connection, plan: records.Plan, language: str) -> None:
    """Write what the plan says, in the caller's transaction."""
    if plan.about is not None:
        about = plan.about
        await db.execute(rows.numbered(rows.DESCRIBE), plan.thread, about.title, about.settings)
    if plan.clear:
        await db.execute("DELETE FROM summary WHERE thread = $1", plan.thread)
        await db.execute("DELETE FROM search WHERE thread = $1 AND line", plan.thread)
    if plan.messages:
        await db.executemany(
            rows.insert("message", MESSAGE_COLUMNS, dialect=PG),
            [rows.loaded_message_row(s) for s in plan.messages],
        )
        indexed = rows.stored_search_rows(plan.messages, language)
        if indexed:
            await db.executemany(INSERT_SEARCH, indexed)
    if plan.summaries:
        await db.executemany(
            rows.insert("summary", SUMMARY_COLUMNS, dialect=PG),
            [rows.summary_row(node) for node in plan.summaries],
        )
        await index_lines(db, plan.thread, plan.summaries, language)
    if plan.calls:
        await db.executemany(
            rows.numbered(rows.INSERT_CALL),
            [rows.call_row(c.ask, c.model, c.n) for c in plan.calls],
        )
    if plan.write == "create":
        row = rows.outline_row(plan.outline) if plan.outline else rows.new_outline_row(plan.thread)
        await db.execute(
            f"INSERT INTO outline ({OUTLINE_COLUMNS}) "
            f"VALUES ({rows.marks(OUTLINE_COLUMNS, dialect=PG)})",
            *row,
        )
    elif plan.write == "update":
        assert plan.outline is not None
        assignments, values = rows.outline_update(plan.outline, lines_changed=True)
        update = f"UPDATE outline SET {assignments}, version = version + 1 WHERE thread = ?"
        await db.execute(rows.numbered(update), *values, plan.thread)


def _values(record: asyncpg.Record) -> tuple[Any, ...]:
    return tuple(record.values())
