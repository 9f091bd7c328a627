"""What a write transaction writes besides its own statements, shared by the store's methods:
a commit's move and calls, and a thread's records read for an export and written by a load.

A move is one row per commit that changed a thread's lines (`collections/move.sql`), so the
viewer can draw the thread's tail and outline over time without replaying it: between two
moves the outline stays as it is and the tail only grows by the messages' weights, so a move
and the weights after it give the tail at every message.

The pure part of a load, `records.plan`, decides; these read and write what it needs, over any
dialect's `Transaction`. A load holds each thread's lock (the one `add` and `erase` take) and its
outline row (the one a commit updates), so nothing of the thread changes between what is planned
and what is written. A load indexes for search the summaries it writes and the messages its
outline has processed, as a commit indexes the lines it writes and the messages it processes
(`search.indexing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..contract import Outline
from . import _records as records
from . import _rows as rows
from ._adapter import Transaction
from ._kept import generation_from_row, name_from_row
from ._records import ThreadRecords
from ._rows import Params, Row
from ._search.indexing import index, index_lines, post
from ._search.rows import stored_search_rows


async def store_message(tx: Transaction, message: Params, outline: Params) -> Row | None:
    """Store a message under its thread's lock, with its thread's next seq and indexes, and make
    the thread's outline row (`outline`) with its first: its row's seq, idx and sidx, or None
    for a known id. (PostgreSQL's `store_message` function does the same in one statement.)"""
    await tx.lock_thread(message["thread"])
    placed = await tx.one("insert_message", **message)
    if placed is not None and placed["seq"] == 0:
        await tx.execute("new_outline", **outline)
    return placed


async def insert_calls(tx: Transaction, calls: Sequence[Params]) -> None:
    """Row calls (`rows.call_row`), their model keys kept once."""
    if not calls:
        return
    models = {c["model_key"]: c for c in calls}
    await tx.executemany("insert_call_model", list(models.values()))
    await tx.executemany("insert_call", calls)


@dataclass(frozen=True, kw_only=True)
class Move:
    """A commit that changed a thread's lines, and the outline and tail it left."""

    seq: int
    """The message whose processing made it."""
    cut: bool
    """Messages left the tail (the outline grew at its end)."""
    folded: bool
    """Lines of the outline merged into their parents (its earlier bytes changed)."""
    from_boundary: int
    """The outline's boundary before it: 0 when the thread was recorded from its start."""
    boundary: int
    lines: int
    bytes: int
    """The outline's size after it."""
    tail_start: int
    """The seq of the tail's oldest message after it."""
    tokens: int
    """The tail's weight after it."""


def move_row(before: Outline, after: Outline) -> Params:
    """The row of a commit from `before` to `after` that changed the lines."""
    added = after.boundary - before.boundary
    return {
        "thread": after.thread,
        "seq": after.position,
        "cut": after.tail_start != before.tail_start,
        "folded": len(after.lines) < len(before.lines) + added,
        "from_boundary": before.boundary,
        "boundary": after.boundary,
        "lines": len(after.lines),
        "bytes": after.bytes,
        "tail_start": after.tail_start,
        "tokens": after.tokens,
    }


def move_from_row(row: Row) -> Move:
    return Move(
        seq=row["seq"],
        cut=bool(row["cut"]),
        folded=bool(row["folded"]),
        from_boundary=row["from_boundary"],
        boundary=row["boundary"],
        lines=row["lines"],
        bytes=row["bytes"],
        tail_start=row["tail_start"],
        tokens=row["tokens"],
    )


async def thread_records(tx: Transaction, thread: str, *, lock: bool) -> ThreadRecords | None:
    """Everything stored for the thread; None when nothing is.

    Args:
        lock: hold the outline row until the transaction ends (a load). It is locked first, so
            a commit in flight is waited for and every later read sees what it wrote.
    """
    if lock:
        await tx.fetch("lock_outline", thread=thread)
    messages = await tx.fetch("thread_messages", thread=thread)
    natives = await tx.fetch("natives", thread=thread, after=-1)
    nodes = await tx.fetch("summaries", thread=thread)
    calls = await tx.fetch("calls", thread=thread)
    row = await tx.one("outline", thread=thread)
    if row is None and not (messages or nodes or calls):
        return None
    about = await tx.one("about", thread=thread)
    generations = await tx.fetch("generations", thread=thread)
    names = await tx.fetch("thread_names", thread=thread)
    shown = await tx.one("generation_shown", thread=thread)
    return ThreadRecords(
        thread=thread,
        messages=tuple(rows.stored_from_row(r) for r in messages),
        summaries=tuple(rows.summary_from_row(r) for r in nodes),
        outline=None if row is None else rows.outline_from_row(row),
        calls=tuple(records.call_from_row(r) for r in calls),
        about=None if about is None else rows.about_from_row(about),
        natives={r["id"]: r["native"] for r in natives},
        generations=tuple(
            sorted(map(generation_from_row, generations), key=lambda g: (*g.key, g.generation))
        ),
        names=tuple(sorted(map(name_from_row, names), key=lambda n: (n.thread, n.author))),
        shown=(0, 0) if shown is None else (shown["made"], shown["shown"]),
    )


async def foreign(tx: Transaction, incoming: ThreadRecords) -> dict[str, str]:
    """The incoming message ids that the store holds in another thread, with that thread."""
    ids = [s.message.id for s in incoming.messages]
    if not ids:
        return {}
    found = await tx.fetch("foreign_ids", thread=incoming.thread, ids=ids)
    return {r["id"]: r["thread"] for r in found}


async def apply(tx: Transaction, plan: records.Plan, language: str) -> None:
    """Write what the plan says, in the caller's transaction."""
    if plan.about is not None:
        about = plan.about
        await tx.execute("describe", thread=plan.thread, title=about.title, settings=about.settings)
        if about.space is not None:
            await tx.execute("set_space", thread=plan.thread, space=about.space)
    if plan.clear:
        await tx.execute("erase_summaries", thread=plan.thread)
        await tx.execute("erase_moves", thread=plan.thread)  # drawn from the old lines
        await tx.execute("clear_line_terms", thread=plan.thread)
        await tx.execute("clear_lines", thread=plan.thread)
    await tx.executemany(
        "insert_loaded_message",
        [rows.loaded_message_row(s, plan.natives.get(s.message.id)) for s in plan.messages],
    )
    await index(tx, stored_search_rows(plan.indexed, language))
    await tx.executemany("insert_summary", [rows.summary_row(node) for node in plan.summaries])
    await index_lines(tx, plan.thread, plan.summaries, language)
    await post(tx, plan.thread)
    await insert_calls(tx, [rows.call_row(c.ask, c.model, c.n) for c in plan.calls])
    if plan.write == "create":
        row = rows.outline_row(plan.outline) if plan.outline else rows.new_outline_row(plan.thread)
        await tx.execute("new_outline", **row)
    elif plan.write == "update":
        assert plan.outline is not None
        await tx.execute("replace_outline", **rows.outline_row(plan.outline))
