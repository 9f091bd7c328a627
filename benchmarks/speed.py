"""Speed of the plugin itself, with an offline summarizer (no model latency).

- Throughput: messages per second through `message_created` plus processing, against raw
  inserts of the same rows into the plugin's own schema (its search table and trigger, its
  indexes) by the same driver, one autocommit INSERT a row (each message is committed before
  `message_created` returns): aiosqlite on SQLite, asyncpg on PostgreSQL. The plugin and the
  raw inserts take turns, each on a fresh database, and the medians are compared.
- View assembly: the time `view()` takes to build an agent's prompt for threads of growing
  length. The threads are filled with the real processor (`processors.compact`) in memory and
  written in bulk, which is much faster than committing every message; on the smallest thread
  the result is checked against the plugin's own.
- Peak memory (tracemalloc: Python allocations, not SQLite's own cache).
"""

from __future__ import annotations

import contextlib
import sqlite3
import statistics
import time
import tracemalloc
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import aiosqlite

from history import prompt_text, view
from history._languages import DEFAULT_LANGUAGE
from history._trace import snapshot
from history.contract import Ask, Message, Outline, Stored, Summary, Task
from history.plugin import History
from history.processors.compact import compact
from history.processors.summarize import Nodes
from history.processors.weight import weight
from history.settings import HistorySettings
from history.store import _rows as rows
from history.store import open_store
from history.store._queries import QUERIES, Dialect
from history.store._search import indexing
from history.store._search.rows import stored_search_rows
from history.store.sqlite import WRITING, SQLiteStore
from history.summarizer import Scripted, write

from .cache import count

PRAGMAS = WRITING
"""The SQLite store's own."""
RAW_REPEATS = 3
AGENT = "assistant"
"""Whose view is timed: the synthetic conversation's agent."""


@dataclass(frozen=True, kw_only=True)
class Throughput:
    messages: int
    threads: int
    plugin: float
    """Messages per second through `message_created` and processing."""
    raw: float
    """Messages per second stored into the same schema by the same driver as the plugin leaves
    them (the message row and its search row, an autocommit INSERT each; postings as the store
    writes them)."""
    raw_messages: float
    """Message rows alone per second, one autocommit INSERT each."""
    raw_batched: float
    """Messages per second with every row in one transaction (for scale only)."""
    store: Literal["sqlite", "postgresql"] = "sqlite"

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


async def plugin_rate(messages: Sequence[Message], where: str | Path) -> float:
    """Messages per second: every message handed over, then until all are processed."""
    async with History(settings(), store=where) as history:
        started = time.perf_counter()
        for m in messages:
            await history.message_created(m)
        await history.wait()
        return len(messages) / (time.perf_counter() - started)


Indexed = tuple[tuple[Any, ...], tuple[Any, ...]]
"""A message's search row and its pending row, as parameters."""


@dataclass(frozen=True)
class Rows:
    """What the plugin writes for each message, as a raw writer would insert it: the message
    row, and its search row with its words waiting beside it (None for a step the index leaves
    out)."""

    threads: list[str]
    messages: list[tuple[Any, ...]]
    indexed: list[Indexed | None]
    due: list[str | None]
    """The thread whose postings are written after each message: once they are due
    (`indexing.due`), as the store writes them."""

    def part(self, start: int, stop: int) -> Rows:
        return Rows(
            threads=self.threads[start:stop],
            messages=self.messages[start:stop],
            indexed=self.indexed[start:stop],
            due=self.due[start:stop],
        )

    def writes(self) -> Iterator[tuple[tuple[Any, ...], Indexed | None, str | None]]:
        """Each message's row, its search and pending rows, and the thread whose postings are
        due."""
        return zip(self.messages, self.indexed, self.due, strict=True)

    def index_rows(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """Every search row, and every pending row."""
        found = [r for r in self.indexed if r is not None]
        return [r[0] for r in found], [r[1] for r in found]


def placed(messages: Sequence[Message], dialect: Dialect = "sqlite") -> Rows:
    """The rows the plugin stores for `messages`, in `dialect`'s order of parameters: each
    message at its seq, index and weight, and its search row stemmed as the store stems it."""
    config = settings()
    insert_message = QUERIES["insert_loaded_message"][dialect]
    insert_search = QUERIES["insert_search"][dialect]
    insert_pending = QUERIES["insert_search_pending"][dialect]
    seqs: dict[str, int] = {}
    indexes: dict[str, int] = {}
    steps: dict[tuple[str, str], int] = {}
    out = Rows(threads=[], messages=[], indexed=[], due=[])
    waiting: dict[str, tuple[int, int]] = {}  # each thread's messages and terms waiting
    for m in messages:
        seq = seqs[m.thread] = seqs.get(m.thread, -1) + 1
        index = step_index = None
        if m.step:
            step_index = steps[m.thread, m.author] = steps.get((m.thread, m.author), -1) + 1
        else:
            index = indexes[m.thread] = indexes.get(m.thread, -1) + 1
        stored = Stored(
            message=m,
            seq=seq,
            index=index,
            weight=weight(m, config.encoding),
            step_index=step_index,
        )
        out.threads.append(m.thread)
        out.messages.append(insert_message.args(rows.loaded_message_row(stored)))
        found = stored_search_rows([stored], DEFAULT_LANGUAGE)
        out.indexed.append(
            (insert_search.args(found[0]), insert_pending.args(found[0])) if found else None
        )
        count, held = waiting.get(m.thread, (0, 0))
        waiting[m.thread] = (count + bool(found), held + (found[0]["length"] if found else 0))
        posts = indexing.due(seq + 1, *waiting[m.thread])
        out.due.append(m.thread if posts else None)
        if posts:
            waiting[m.thread] = (0, 0)
    return out


def _sql(dialect: Dialect, *names: str) -> list[str]:
    """The store's own statements, by name."""
    return [QUERIES[name][dialect].text for name in names]


_RAW = (
    "insert_loaded_message",
    "insert_search",
    "insert_search_pending",
    "post_words",
    "post_search",
    "unpend",
)
"""What a raw writer runs: a message, its search row and its waiting words, a thread's terms,
postings, and the words it no longer keeps."""


async def _schema(where: str) -> None:
    """The plugin's schema, on a fresh database."""
    store = open_store(where)
    await store.open()
    await store.close()


async def raw_rate(prepared: Rows, path: Path) -> float:
    """Messages per second stored by aiosqlite into the schema as the plugin leaves them: its
    row and its search row, one autocommit INSERT each, and a thread's postings written (by the
    store's own statements, in a transaction) once they are due, as the store writes them."""
    await _schema(str(path))
    insert, index, wait, number, post, unpend = _sql("sqlite", *_RAW)
    async with aiosqlite.connect(path, isolation_level=None) as db:
        for pragma in PRAGMAS:
            await db.execute(f"PRAGMA {pragma}")
        started = time.perf_counter()
        for row, indexed, due in prepared.writes():
            await db.execute(insert, row)
            if indexed is not None:
                await db.execute(index, indexed[0])
                await db.execute(wait, indexed[1])
            if due is not None:
                await db.execute("BEGIN IMMEDIATE")
                for statement in (number, post, unpend):
                    await db.execute(statement, (due,))
                await db.execute("COMMIT")
        return len(prepared.messages) / (time.perf_counter() - started)


async def message_rate(prepared: Rows, path: Path) -> float:
    """Message rows alone per second, one autocommit INSERT each: the least a store can do."""
    await _schema(str(path))
    [insert] = _sql("sqlite", "insert_loaded_message")
    async with aiosqlite.connect(path, isolation_level=None) as db:
        for pragma in PRAGMAS:
            await db.execute(f"PRAGMA {pragma}")
        started = time.perf_counter()
        for row in prepared.messages:
            await db.execute(insert, row)
        return len(prepared.messages) / (time.perf_counter() - started)


async def batched_rate(prepared: Rows, path: Path) -> float:
    """Messages per second with every row in one transaction and the postings written once at
    the end (for scale)."""
    await _schema(str(path))
    insert, index, wait, number, post, unpend = _sql("sqlite", *_RAW)
    db = sqlite3.connect(path, isolation_level=None)
    for pragma in PRAGMAS:
        db.execute(f"PRAGMA {pragma}")
    started = time.perf_counter()
    db.execute("BEGIN IMMEDIATE")
    db.executemany(insert, prepared.messages)
    searched, waiting = prepared.index_rows()
    db.executemany(index, searched)
    db.executemany(wait, waiting)
    for thread in set(prepared.threads):
        for statement in (number, post, unpend):
            db.execute(statement, (thread,))
    db.execute("COMMIT")
    rate = len(prepared.messages) / (time.perf_counter() - started)
    db.close()
    return rate


async def throughput(messages: Sequence[Message], folder: Path, *, threads: int) -> Throughput:
    """The plugin and raw inserts on SQLite, taking turns on fresh files (medians)."""
    dealt = spread(messages, threads)
    prepared = placed(dealt)
    plugin, raw, alone = [], [], []
    for k in range(RAW_REPEATS):
        plugin.append(await plugin_rate(dealt, folder / f"plugin-{threads}-{k}.sqlite"))
        raw.append(await raw_rate(prepared, folder / f"raw-{threads}-{k}.sqlite"))
        alone.append(await message_rate(prepared, folder / f"alone-{threads}-{k}.sqlite"))
    return Throughput(
        messages=len(dealt),
        threads=threads,
        plugin=statistics.median(plugin),
        raw=statistics.median(raw),
        raw_messages=statistics.median(alone),
        raw_batched=await batched_rate(prepared, folder / f"batched-{threads}.sqlite"),
    )


@contextlib.asynccontextmanager
async def postgres_schema(server: str) -> AsyncIterator[str]:
    """A URL whose `search_path` is a new schema of `server`, dropped afterwards."""
    import asyncpg

    name = f"bench_{uuid.uuid4().hex[:12]}"
    db = await asyncpg.connect(server)
    try:
        await db.execute(f"CREATE SCHEMA {name}")
        try:
            yield f"{server}{'&' if '?' in server else '?'}search_path={name}"
        finally:
            await db.execute(f"DROP SCHEMA {name} CASCADE")
    finally:
        await db.close()


async def postgres_raw_rate(prepared: Rows, url: str) -> tuple[float, float, float]:
    """Messages per second stored by asyncpg into the schema as `raw_rate` does on SQLite;
    message rows alone, one autocommit INSERT each; and every row in one
    transaction, the postings written at the end. Each on a third of the messages."""
    import asyncpg

    await _schema(url)
    insert, index, wait, number, post, unpend = _sql("postgresql", *_RAW)
    third = len(prepared.messages) // 3
    parts = [prepared.part(k * third, (k + 1) * third) for k in range(3)]
    db = await asyncpg.connect(url)
    try:
        started = time.perf_counter()
        for row, indexed, due in parts[0].writes():
            await db.execute(insert, *row)
            if indexed is not None:
                await db.execute(index, *indexed[0])
                await db.execute(wait, *indexed[1])
            if due is not None:
                async with db.transaction():
                    for statement in (number, post, unpend):
                        await db.execute(statement, due)
        stored = third / (time.perf_counter() - started)
        started = time.perf_counter()
        for row in parts[1].messages:
            await db.execute(insert, *row)
        alone = third / (time.perf_counter() - started)
        started = time.perf_counter()
        async with db.transaction():
            await db.executemany(insert, parts[2].messages)
            searched, waiting = parts[2].index_rows()
            await db.executemany(index, searched)
            await db.executemany(wait, waiting)
            for thread in set(parts[2].threads):
                for statement in (number, post, unpend):
                    await db.execute(statement, thread)
        return stored, alone, third / (time.perf_counter() - started)
    finally:
        await db.close()


async def postgres_throughput(
    messages: Sequence[Message], server: str, *, threads: int
) -> Throughput:
    """The plugin and raw inserts on PostgreSQL, taking turns on fresh schemas (medians)."""
    dealt = spread(messages, threads)
    prepared = placed(dealt, "postgresql")
    plugin, raw, alone, batched = [], [], [], []
    for _ in range(RAW_REPEATS):
        async with postgres_schema(server) as url:
            plugin.append(await plugin_rate(dealt, url))
        async with postgres_schema(server) as url:
            one, messages_only, many = await postgres_raw_rate(prepared, url)
            raw.append(one)
            alone.append(messages_only)
            batched.append(many)
    return Throughput(
        messages=len(dealt),
        threads=threads,
        plugin=statistics.median(plugin),
        raw=statistics.median(raw),
        raw_messages=statistics.median(alone),
        raw_batched=statistics.median(batched),
        store="postgresql",
    )


async def fill(messages: Sequence[Message], path: Path) -> None:
    """Store one thread as the plugin would have, processed with the real processor in memory
    and written in bulk (no summarizer calls recorded)."""
    config = settings()
    thread = messages[0].thread
    store = SQLiteStore(str(path))
    await store.open()  # the schema
    await store.close()
    nodes_by_key: dict[tuple[str, int, int], Summary] = {}
    by_id: dict[str, Stored] = {}
    state = Outline(
        thread=thread,
        epoch="",
        version=0,
        lines=[],
        bytes=0,
        boundary=0,
        since=None,
        cut_at=None,
        gone=None,
        tail=deque(),
        tokens=0,
        draining=False,
        position=-1,
    )
    model = Scripted()

    async def read_node(agent: str, level: int, index: int) -> Summary | None:
        return nodes_by_key.get((agent, level, index))

    async def read_message(id: str) -> Stored | None:
        return by_id.get(id)

    async def write_line(task: Task) -> Ask:
        return await write(task, model.reply, limit=config.line, tries=config.tries)

    index = 0
    steps: dict[str, int] = {}
    for seq, m in enumerate(messages):
        stored = Stored(
            message=m,
            seq=seq,
            index=None if m.step else index,
            weight=weight(m, config.encoding),
            step_index=steps.get(m.author, 0) if m.step else None,
        )
        index += not m.step
        if m.step:
            steps[m.author] = steps.get(m.author, 0) + 1
        by_id[m.id] = stored
        nodes = Nodes(thread, read_node)
        await compact(state, stored, nodes, write_line, read_message, config)
        nodes_by_key.update(((n.agent, n.level, n.index), n) for n in nodes.written)

    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    written = {
        "insert_loaded_message": [rows.loaded_message_row(s) for s in by_id.values()],
        "insert_summary": [rows.summary_row(n) for n in nodes_by_key.values()],
        "new_outline": [rows.new_outline_row(thread)],
        "replace_outline": [{**rows.outline_update(state, lines_changed=True), "thread": thread}],
    }
    for name, params in written.items():
        statement = QUERIES[name].sqlite
        db.executemany(statement.text, [statement.args(p) for p in params])
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
        thread = messages[0].thread
        for size in sizes:
            path = folder / f"view-{size}.sqlite"
            await fill(messages[:size], path)
            history = await stack.enter_async_context(History(settings(), store=path))
            await view(history, thread, agent=AGENT)  # warm the connection
            opened.append(history)
        times: list[list[float]] = [[] for _ in sizes]
        for _ in range(repeats):
            for history, spent in zip(opened, times, strict=True):
                started = time.perf_counter()
                await view(history, thread, agent=AGENT)
                spent.append(time.perf_counter() - started)
        views = []
        for size, history, spent in zip(sizes, opened, times, strict=True):
            prompt = prompt_text(await view(history, thread, agent=AGENT))
            outline = await history.outline(thread)
            views.append(
                ViewTime(
                    messages=size,
                    seconds=statistics.median(spent),
                    tokens=count(prompt),
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
