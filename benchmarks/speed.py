"""Speed of the plugin itself, with an offline summarizer (no model latency).

- Throughput: messages per second through `message_created` plus processing, against raw
  inserts of the same rows into SQLite (same schema and pragmas, one transaction per row, as
  each message is committed before `message_created` returns), in the same run.
- View assembly: the time to build an agent's prompt for threads of growing length. The threads
  are filled with the real processor (`processors.compact`) in memory and written in bulk, which
  is much faster than committing every message; on the smallest thread the result is checked
  against the plugin's own.
- Peak memory (tracemalloc: Python allocations, not SQLite's own cache).
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import statistics
import time
import tracemalloc
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from history.contract import Message, Outline, Stored, Summary
from history.plugin import History
from history.processors.compact import compact
from history.processors.summarize import Nodes
from history.processors.weight import weight
from history.settings import HistorySettings
from history.store import rows
from history.store.sqlite import SQLiteStore
from history.summarizer import Scripted, Task, write
from history.trace import snapshot

from .cache import Meter
from .view import chat_history_prompt

PRAGMAS = ("journal_mode = WAL", "synchronous = NORMAL")
RAW_REPEATS = 3


@dataclass(frozen=True, kw_only=True)
class Throughput:
    messages: int
    threads: int
    plugin: float
    """Messages per second through `message_created` and processing."""
    raw: float
    """Rows per second inserted into SQLite, one transaction each."""
    raw_batched: float
    """Rows per second inserted in one transaction (for scale only)."""

    @property
    def ratio(self) -> float:
        return self.plugin / self.raw


@dataclass(frozen=True, kw_only=True)
class ViewTime:
    messages: int
    seconds: float
    """The median time to build the prompt once."""
    tokens: int
    """How large the prompt is."""
    lines: int
    """How many lines its outline has (each is one read)."""


def settings() -> HistorySettings:
    """The defaults, with the offline `scripted` summarizer."""
    return HistorySettings(summarizer="scripted")


def spread(messages: Sequence[Message], threads: int) -> list[Message]:
    """The messages dealt round-robin over `threads` threads, each with its own ids."""
    if threads == 1:
        return list(messages)
    return [
        replace(m, id=f"{m.id}@{k % threads}", thread=f"{m.thread}@{k % threads}")
        for k, m in enumerate(messages)
    ]


async def plugin_rate(messages: Sequence[Message], path: Path) -> float:
    """Messages per second: every message handed over, then until all are processed."""
    async with History(settings(), store=path) as history:
        started = time.perf_counter()
        for m in messages:
            await history.message_created(m)
        await history.wait()
        return len(messages) / (time.perf_counter() - started)


def raw_rates(messages: Sequence[Message], path: Path) -> tuple[float, float]:
    """Rows per second into SQLite: one transaction per row, and all rows in one (each the
    median of `RAW_REPEATS` fresh files, since a single file's rate varies with the disk)."""
    encoding = settings().encoding
    seqs: dict[str, int] = {}
    prepared = []
    for m in messages:
        seq = seqs[m.thread] = seqs.get(m.thread, -1) + 1
        stored = Stored(
            message=m, seq=seq, index=None if m.step else seq, weight=weight(m, encoding)
        )
        prepared.append(rows.loaded_message_row(stored))
    insert = f"INSERT INTO message ({rows.MESSAGE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
    rates: dict[bool, list[float]] = {False: [], True: []}
    for repeat, batched in itertools.product(range(RAW_REPEATS), (False, True)):
        target = path.with_suffix(f".{'batched' if batched else 'rows'}-{repeat}.sqlite")
        db = sqlite3.connect(target, isolation_level=None)
        for pragma in PRAGMAS:
            db.execute(f"PRAGMA {pragma}")
        for statement in rows.statements("message.sql"):
            db.execute(statement)
        started = time.perf_counter()
        if batched:
            db.execute("BEGIN IMMEDIATE")
            db.executemany(insert, prepared)
            db.execute("COMMIT")
        else:
            for row in prepared:
                db.execute("BEGIN IMMEDIATE")
                db.execute(insert, row)
                db.execute("COMMIT")
        rates[batched].append(len(prepared) / (time.perf_counter() - started))
        db.close()
    return statistics.median(rates[False]), statistics.median(rates[True])


async def throughput(messages: Sequence[Message], folder: Path, *, threads: int) -> Throughput:
    dealt = spread(messages, threads)
    plugin = await plugin_rate(dealt, folder / f"plugin-{threads}.sqlite")
    raw, batched = raw_rates(dealt, folder / f"raw-{threads}.sqlite")
    return Throughput(
        messages=len(dealt), threads=threads, plugin=plugin, raw=raw, raw_batched=batched
    )


async def fill(messages: Sequence[Message], path: Path) -> None:
    """Store one thread as the plugin would have, processed with the real processor in memory
    and written in bulk (no summarizer calls recorded)."""
    config = settings()
    thread = messages[0].thread
    store = SQLiteStore(str(path))
    await store.open()  # the schema
    await store.close()
    nodes_by_key: dict[tuple[int, int], Summary] = {}
    by_id: dict[str, Stored] = {}
    state = Outline(
        thread=thread, epoch="", version=0, lines=[], bytes=0, boundary=0, since=None,
        cut_at=None, gone=None, tail=deque(), tokens=0, draining=False, position=-1,
    )  # fmt: skip
    model = Scripted()

    async def read_node(level: int, index: int) -> Summary | None:
        return nodes_by_key.get((level, index))

    async def read_message(id: str) -> Stored | None:
        return by_id.get(id)

    async def write_line(task: Task) -> str:
        ask = await write(task, model.reply, limit=config.line, tries=config.tries)
        return ask.line

    index = 0
    for seq, m in enumerate(messages):
        stored = Stored(
            message=m, seq=seq, index=None if m.step else index, weight=weight(m, config.encoding)
        )
        index += not m.step
        by_id[m.id] = stored
        nodes = Nodes(thread, read_node)
        await compact(state, stored, nodes, write_line, read_message, config)
        nodes_by_key.update(((n.level, n.index), n) for n in nodes.written)

    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    db.executemany(
        f"INSERT INTO message ({rows.MESSAGE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [rows.loaded_message_row(s) for s in by_id.values()],
    )
    db.executemany(
        f"INSERT INTO summary ({rows.SUMMARY_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
        [rows.summary_row(n) for n in nodes_by_key.values()],
    )
    db.execute(
        f"INSERT INTO outline ({rows.OUTLINE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        rows.new_outline_row(thread),
    )
    assignments, values = rows.outline_update(state, lines_changed=True)
    db.execute(f"UPDATE outline SET {assignments} WHERE thread = ?", (*values, thread))
    db.execute("COMMIT")
    db.close()


async def fill_matches_plugin(messages: Sequence[Message], folder: Path) -> bool:
    """Whether `fill` leaves the same tree and outline as the plugin does."""
    filled, processed = folder / "check-fill.sqlite", folder / "check-plugin.sqlite"
    await fill(messages, filled)
    async with History(settings(), store=processed) as history:
        for m in messages:
            await history.message_created(m)
        await history.wait()
        expected = await snapshot(history, [])
    async with History(settings(), store=filled) as history:
        return await snapshot(history, []) == expected


async def view_times(
    messages: Sequence[Message], sizes: Sequence[int], folder: Path, *, repeats: int
) -> list[ViewTime]:
    """The median time to build a thread's prompt from the store (nothing memoized), for a
    thread of each size. The sizes take turns, so that whatever else the machine is doing
    slows them alike."""
    async with contextlib.AsyncExitStack() as stack:
        opened = []
        for size in sizes:
            path = folder / f"view-{size}.sqlite"
            await fill(messages[:size], path)
            history = await stack.enter_async_context(History(settings(), store=path))
            await chat_history_prompt(history, messages[0].thread)  # warm the connection
            opened.append(history)
        times: list[list[float]] = [[] for _ in sizes]
        for _ in range(repeats):
            for history, spent in zip(opened, times, strict=True):
                started = time.perf_counter()
                await chat_history_prompt(history, messages[0].thread)
                spent.append(time.perf_counter() - started)
        views = []
        for size, history, spent in zip(sizes, opened, times, strict=True):
            prompt = await chat_history_prompt(history, messages[0].thread)
            outline = await history.outline(messages[0].thread)
            views.append(
                ViewTime(
                    messages=size,
                    seconds=statistics.median(spent),
                    tokens=Meter().measure(prompt, 0).tokens,
                    lines=len(outline.lines) if outline else 0,
                )
            )
    return views


async def peak_memory(messages: Sequence[Message], path: Path) -> float:
    """Peak Python memory (MiB) while the plugin takes and processes `messages`."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        async with History(settings(), store=path) as history:
            for m in messages:
                await history.message_created(m)
            await history.wait()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
