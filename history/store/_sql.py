"""The store, written once over a dialect (`sqlite.py`, `postgres.py`).

Each method is a transaction body over the dialect's `Transaction`, run in one go: on SQLite in
one hop to the connection's thread, on PostgreSQL on one pooled connection. The statements are
`collections/queries.sql`'s, by name; rows are read by column name (`rows`). Storing a message,
done for every one, is the dialect's (`Database.store_message`): on PostgreSQL one call of a
function that does what `writes.store_message` does, one round trip instead of four.

What several processes sharing a database need is the dialect's: a thread's `seq` is taken
under the thread's lock (`Transaction.lock_thread`, which an erase and a load take too), a
commit checks the outline's epoch and version (the UPDATE locks the row, so two commits of one
thread are serialized and the second finds the version moved), and a claim keeps two processes
from processing one thread.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any

import anyio

from .._generated import Generation, Name
from .._languages import DEFAULT_LANGUAGE, check_language
from ..contract import (
    About,
    Ask,
    Entry,
    Hit,
    Message,
    Outline,
    Snapshot,
    Stored,
    Summary,
    Tally,
)
from ..errors import StoreError
from . import _changes as changes
from . import _migrations as migrations
from . import _records as records
from . import _rows as rows
from ._adapter import Database, Transaction
from ._claims import LEASE, Claim, Claims
from ._records import Loaded, ThreadRecords
from ._rows import Row
from ._search import ranking
from ._search.indexing import index, index_lines, index_thread, post
from ._search.reads import SearchReads
from ._search.rows import stored_search_rows, unposted_row
from ._writes import Move, apply, foreign, insert_calls, move_from_row, move_row, thread_records

log = logging.getLogger(__name__)

_ERASED = (
    "erase_outline",
    "erase_messages",
    "erase_summaries",
    "erase_calls",
    "erase_search_terms",
    "erase_search_words",
    "erase_search",
    "erase_moves",
    "erase_generations",
    "erase_generation_shown",
    "erase_names",
)
"""What an erase deletes and counts, the outline first (see `queries.sql`)."""


_Read = tuple[
    Row | None,
    Sequence[Row],
    Sequence[Row],
    Sequence[Row],
    Row | None,
    list[Name],
    tuple[int, int],
    list[Generation],
]
"""What a snapshot's transaction reads: the outline's row (None when it was given), then the
rows of its tail, of its nodes and of the agent's step nodes, and of its title and settings;
then the thread's display names, its `(made, shown)` and its nodes' generations."""


class _Stale(Exception):
    """The outline changed under a batch: roll back, and tell the caller to redo."""


class SQLStore:
    """The collections in a SQL database; `SQLiteStore` and `PostgresStore` pick the dialect."""

    def __init__(
        self, database: Database, *, language: str | None = None, lease: float = LEASE
    ) -> None:
        """Args:
        database: the dialect's connection.
        lease: seconds a claim on a thread lasts unless renewed (`_claims.py`).
        language: the language search stems in (`history._languages`; `simple` stems nothing);
            None for the one the database was indexed in (English for a new one). A read-only
            store searches in the database's.
        """
        self._sql = database
        self._language = None if language is None else check_language(language)
        self.language = language or DEFAULT_LANGUAGE
        self.url = database.url
        self.shared = database.shared
        self._claims = Claims(database, lease=lease)
        self.lease = self._claims.lease

    async def open(self) -> None:
        try:
            if not await self._sql.connect(partial(migrations.applied, self._sql)):
                found = await self._sql.run(lambda tx: tx.fetch("search_language"))
                self.language = next((r["language"] for r in found), DEFAULT_LANGUAGE)
                return
            await migrations.migrate(self._sql)
            await self._sql.run(self._index, mode="write")
        except BaseException:
            # A half-open store would keep its connections (and SQLite's thread) alive.
            with anyio.CancelScope(shield=True):
                await self.close()
            raise

    async def close(self) -> None:
        try:
            if not self._sql.closed:
                await self._claims.close()
        finally:
            await self._sql.close()

    async def _index(self, tx: Transaction) -> None:
        """Index every thread for search again when the index is missing or in another
        language (a store written by an older version, or opened with another language)."""
        await tx.lock_migrations()
        recorded = [r["language"] for r in await tx.fetch("search_language")]
        self.language = self._language or next(iter(recorded), DEFAULT_LANGUAGE)
        if recorded == [self.language]:
            return
        log.info("indexing %r for search in %s", self.url, self.language)
        for name in ("clear_search_terms", "clear_search_words", "clear_search"):
            await tx.execute(name)
        await tx.execute("clear_search_language")
        for found in await tx.fetch("indexed_threads"):
            await index_thread(tx, found["thread"], self.language)
        await tx.execute("record_search_language", language=self.language)

    async def add(
        self, message: Message, weight: int, *, native: str | None = None
    ) -> Stored | None:
        # Under the thread's lock, two processes storing its messages at once take its next seq
        # in turn. It is indexed for search by the commit that processes it.
        placed = await self._sql.store_message(
            rows.message_params(message, weight, native), rows.new_outline_row(message.thread)
        )
        if placed is not None:
            return Stored(
                message=message,
                seq=placed["seq"],
                index=placed["idx"],
                weight=weight,
                step_index=placed["sidx"],
            )
        # ON CONFLICT waited for any other writer of the id: its row is committed now.
        found = await self._sql.run(lambda tx: tx.one("message", id=message.id))
        if found is None:
            raise StoreError(f"message id {message.id!r} conflicted, then vanished")
        rows.check_redelivery(message, rows.stored_from_row(found))
        return None

    async def outline(self, thread: str) -> Outline | None:
        # Read beside the writers; only a row lost to a crash is made, as a write.
        row = await self._sql.run(lambda tx: tx.one("outline", thread=thread), mode="read")
        if row is not None:
            return rows.outline_from_row(row)
        read_only = self._sql.read_only

        async def read(tx: Transaction) -> Outline | None:
            row = await tx.one("outline", thread=thread)
            if row is None:
                if await tx.one("any_message", thread=thread) is None:
                    return None
                new = rows.new_outline_row(thread)
                if read_only:  # a crash came between the two: it is made as it is read
                    return rows.outline_from_row({**new, "tail": "[]"})
                await tx.execute("new_outline", **new)
                row = await tx.one("outline", thread=thread)
                assert row is not None
            return rows.outline_from_row(row)

        return await self._sql.run(read)

    async def snapshot(
        self,
        thread: str,
        *,
        agent: str | None = None,
        tree: bool = False,
        outline: Outline | None = None,
    ) -> Snapshot | None:
        # The rows become data after the transaction, outside SQLite's thread: Python's work
        # there holds the interpreter's lock, and is preempted on a busy machine.
        async def read(tx: Transaction) -> _Read | None:
            row: Row | None = None
            if outline is not None:
                own = outline.steps.get(agent) if agent else None
                first, keys = outline.tail_start, _keys(outline.lines)
                step_keys = [] if own is None else _keys(own.lines)
            else:
                row = await tx.one("outline", thread=thread)
                if row is None:
                    if await tx.one("any_message", thread=thread) is None:
                        return None
                    # A crash came between a first message and its outline: read it as made.
                    row = {**rows.new_outline_row(thread), "tail": "[]"}
                first, keys = row["tail_start"], _keys(json.loads(row["lines"]))
                own_json = json.loads(row["steps"]).get(agent) if agent else None
                step_keys = [] if own_json is None else _keys(own_json["lines"])
            tail = await tx.fetch("tail", thread=thread, first=first)
            about = await tx.one("about", thread=thread)
            names = await changes.read_names(tx, thread)
            made, shown = await changes.shown(tx, thread)
            later: list[Generation] = []
            if tree:
                nodes = await tx.fetch("summaries", thread=thread)
                if made:
                    later = await changes.read_generations(tx, thread)
                return row, tail, nodes, (), about, names, (made, shown), later
            nodes = await _node_rows(tx, thread, keys, agent="")
            steps = await _node_rows(tx, thread, step_keys, agent=agent or "")
            if made:  # what the outline shows: the newest generations made by change `shown`
                later = await changes.read_generations(tx, thread, keys, upto=shown)
                later += await changes.read_generations(
                    tx, thread, step_keys, agent=agent or "", upto=shown
                )
            return row, tail, nodes, steps, about, names, (made, shown), later

        done = await self._sql.run(read, mode="snapshot")
        if done is None:
            return None
        row, tail, node_rows, step_rows, about, names, (made, shown), later = done
        found = outline if row is None else rows.outline_from_row(row)
        assert found is not None  # no row is read only when the outline is given
        nodes = [rows.summary_from_row(r) for r in node_rows]
        steps = [rows.summary_from_row(r) for r in step_rows]
        if tree:
            nodes, steps = [n for n in nodes if not n.agent], [n for n in nodes if n.agent]
        else:
            own = found.steps.get(agent) if agent else None
            nodes = _in_order(nodes, _keys(found.lines))
            steps = [] if own is None else _in_order(steps, _keys(own.lines))
        return Snapshot(
            outline=found,
            nodes=tuple(nodes),
            steps=tuple(steps),
            tail=tuple(rows.stored_from_row(r) for r in tail),
            natives={r["id"]: r["native"] for r in tail if r["native"] is not None},
            about=None if about is None else rows.about_from_row(about),
            names=tuple(names),
            made=made,
            shown=shown,
            generations=tuple(later),
        )

    async def messages_after(self, thread: str, after: int, limit: int) -> list[Stored]:
        found = await self._sql.run(
            lambda tx: tx.fetch("messages_after", thread=thread, after=after, limit=limit),
            mode="read",
        )
        return [rows.stored_from_row(r) for r in found]

    async def natives(self, thread: str, after: int) -> dict[str, str]:
        found = await self._sql.run(
            lambda tx: tx.fetch("natives", thread=thread, after=after), mode="read"
        )
        return {r["id"]: r["native"] for r in found}

    async def message(self, id: str) -> Stored | None:
        row = await self._sql.run(lambda tx: tx.one("message", id=id), mode="read")
        return None if row is None else rows.stored_from_row(row)

    async def messages(self, thread: str, first: int, last: int) -> list[Stored]:
        found = await self._sql.run(
            lambda tx: tx.fetch("messages", thread=thread, first=first, last=last), mode="read"
        )
        return [rows.stored_from_row(r) for r in found]

    async def summary(
        self, thread: str, level: int, index: int, *, agent: str = ""
    ) -> Summary | None:
        row = await self._sql.run(
            lambda tx: tx.one("summary", thread=thread, agent=agent, level=level, index=index),
            mode="read",
        )
        return None if row is None else rows.summary_from_row(row)

    async def summaries(self, thread: str | None = None) -> list[Summary]:
        found = await self._sql.run(
            lambda tx: (
                tx.fetch("all_summaries")
                if thread is None
                else tx.fetch("summaries", thread=thread)
            )
        )
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
        processed: Sequence[Stored],
        change: changes.Change | None = None,
    ) -> bool:
        update = {
            **rows.outline_update(after, lines_changed=lines_changed),
            "thread": before.thread,
            "epoch": before.epoch,
            "version": before.version,
        }
        language = self.language
        searched = stored_search_rows(processed, language)  # stemmed before it begins

        async def write(tx: Transaction) -> None:
            await self._claims.check(tx, before.thread)
            if await tx.execute("update_outline", **update) != 1:
                raise _Stale
            if lines_changed:
                await tx.execute("insert_move", **move_row(before, after))
            await index(tx, searched)
            await tx.executemany("insert_summary", [rows.summary_row(n) for n in written])
            await index_lines(tx, before.thread, written, language)
            await post(tx, before.thread, length=after.position + 1)
            if change is not None:  # the name generations of the nodes it writes
                await changes.write_generations(tx, before.thread, change.generations, now=False)
                await changes.reindex(tx, before.thread, change.current, language)
            if lines_changed:  # a cut or a fold: the outline takes the changes made since
                await tx.execute("show_generations", thread=before.thread)
            if asks:
                found = await tx.one("next_call", thread=before.thread)
                first = 0 if found is None else found["n"]
                await insert_calls(
                    tx, [rows.call_row(ask, model, first + k) for k, ask in enumerate(asks)]
                )

        try:
            await self._sql.run(write, mode="write")
        except _Stale:
            return False
        return True

    async def erase(self, thread: str) -> bool:
        async def delete(tx: Transaction) -> int:
            await tx.lock_thread(thread)
            erased = 0
            for name in _ERASED:
                erased += await tx.execute(name, thread=thread)
            await tx.execute("erase_about", thread=thread)
            return erased

        return await self._sql.run(delete, mode="write") > 0

    async def retract(self, before: Outline, after: Outline, gone: Sequence[Stored]) -> bool:
        thread, first = before.thread, gone[0].seq
        update = {
            **rows.outline_update(after, lines_changed=False),
            "thread": thread,
            "epoch": before.epoch,
            "version": before.version,
        }
        keys = [
            {"thread": thread, "agent": s.message.author if s.message.step else "", "idx": idx}
            for s in gone
            if (idx := s.step_index if s.message.step else s.index) is not None
        ]
        # Their postings, by the stems their rows were made of (a posted row keeps no words).
        postings = [unposted_row(r) for r in stored_search_rows(gone, self.language)]

        async def delete(tx: Transaction) -> None:
            await tx.lock_thread(thread)  # no message is stored meanwhile
            newest = await tx.one("newest_seq", thread=thread)
            if newest is None or newest["seq"] != gone[-1].seq:
                raise _Stale
            if await tx.execute("update_outline", **update) != 1:
                raise _Stale
            await tx.executemany("unpost", postings)
            await tx.executemany("retract_search", keys)
            await tx.execute("retract_messages", thread=thread, first=first)
            if first == 0:  # nothing is left of the thread
                await tx.execute("erase_outline", thread=thread)

        try:
            await self._sql.run(delete, mode="write")
        except _Stale:
            return False
        return True

    async def threads(self) -> list[str]:
        return [r["thread"] for r in await self._sql.run(lambda tx: tx.fetch("threads"))]

    async def about(self, thread: str | None = None) -> list[About]:
        found = await self._sql.run(
            lambda tx: tx.fetch("all_about") if thread is None else tx.fetch("about", thread=thread)
        )
        return [rows.about_from_row(r) for r in found]

    async def describe(
        self,
        thread: str,
        *,
        title: str | None = None,
        settings: str | None = None,
        space: str | None = None,
    ) -> None:
        async def write(tx: Transaction) -> None:
            await tx.execute("describe", thread=thread, title=title, settings=settings)
            if space is not None:
                await tx.execute("set_space", thread=thread, space=space)

        await self._sql.run(write, mode="write")

    async def behind(self) -> list[str]:
        return [r["thread"] for r in await self._sql.run(lambda tx: tx.fetch("behind"))]

    async def calls(self, thread: str | None = None) -> list[Ask]:
        found = await self._sql.run(
            lambda tx: tx.fetch("all_calls") if thread is None else tx.fetch("calls", thread=thread)
        )
        return [rows.ask_from_row(r) for r in found]

    async def tallies(self, thread: str | None = None) -> tuple[list[Tally], dict[str, int]]:
        scope, every = ({}, "all_") if thread is None else ({"thread": thread}, "")

        async def read(tx: Transaction) -> tuple[list[Tally], dict[str, int]]:
            counted = ("calls", "input_tokens", "output_tokens")
            calls = [
                Tally(r["thread"], r["model"], *(int(r[k]) for k in counted))
                for r in await tx.fetch(every + "tally", **scope)
            ]
            return calls, await _fallback_lines(tx, thread)

        return await self._sql.run(read, mode="snapshot")

    async def fallbacks(self, thread: str | None = None) -> dict[str, int]:
        return await self._sql.run(partial(_fallback_lines, thread=thread), mode="snapshot")

    async def moves(self, thread: str) -> list[Move]:
        found = await self._sql.run(lambda tx: tx.fetch("moves", thread=thread))
        return [move_from_row(r) for r in found]

    async def weights(self, thread: str, last: int) -> list[tuple[int, int]]:
        found = await self._sql.run(
            lambda tx: tx.fetch("weights", thread=thread, last=last), mode="read"
        )
        return [(r["seq"], r["weight"]) for r in found]

    async def nodes(
        self, thread: str, keys: Sequence[tuple[int, int]], *, agent: str = ""
    ) -> list[Summary]:
        if not keys:
            return []
        found = await self._sql.run(
            lambda tx: _node_rows(tx, thread, keys, agent=agent), mode="read"
        )
        return _in_order([rows.summary_from_row(r) for r in found], keys)

    async def search(
        self, thread: str, query: str, limit: int, *, agent: str | None = None
    ) -> list[Hit]:
        language = self.language

        async def read(tx: Transaction) -> list[Hit]:
            await tx.few_rows()
            reads = SearchReads(tx=tx, thread=thread)
            return await ranking.search(reads, query, limit, language=language, agent=agent)

        return await self._sql.run(read, mode="snapshot")

    async def export_thread(self, thread: str) -> ThreadRecords | None:
        return await self._sql.run(
            lambda tx: thread_records(tx, thread, lock=False), mode="snapshot"
        )

    async def load_records(
        self, batch: Sequence[ThreadRecords], *, replace: bool = False
    ) -> Loaded:
        records.check_batch(batch)
        language = self.language

        async def load(tx: Transaction) -> list[records.Plan]:
            # In one order, so that two loads sharing threads cannot deadlock.
            for thread in sorted(r.thread for r in batch):
                await tx.lock_thread(thread)
            plans = [
                records.plan(
                    await thread_records(tx, incoming.thread, lock=True),
                    incoming,
                    foreign=await foreign(tx, incoming),
                    replace=replace,
                )
                for incoming in batch
            ]  # every plan first: a contradiction is refused before anything is written
            for plan, incoming in zip(plans, batch, strict=True):
                await apply(tx, plan, language)
                await changes.carry_in(tx, incoming, language, clear=plan.clear)
            return plans

        plans = await self._sql.run(load, mode="write")
        return Loaded(
            threads=len(plans),
            written=sum(p.written for p in plans),
            skipped=sum(p.skipped for p in plans),
        )

    async def names(self, thread: str | None = None) -> list[Name]:
        return await self._sql.run(lambda tx: changes.read_names(tx, thread), mode="read")

    async def authors(self, thread: str | None = None) -> set[str]:
        return await self._sql.run(lambda tx: changes.read_authors(tx, thread), mode="read")

    async def author_threads(self, author: str) -> list[str]:
        return await self._sql.run(lambda tx: changes.read_author_threads(tx, author), mode="read")

    async def generations(
        self, thread: str, keys: Sequence[tuple[int, int]] | None = None, **of: Any
    ) -> list[Generation]:
        return await self._sql.run(
            lambda tx: changes.read_generations(tx, thread, keys, **of), mode="read"
        )

    async def shown(self, thread: str) -> tuple[int, int]:
        return await self._sql.run(lambda tx: changes.shown(tx, thread), mode="read")

    async def change(self, before: Outline, change: changes.Change) -> bool:
        language = self.language
        try:
            await self._sql.run(
                lambda tx: changes.write_change(tx, before, change, language), mode="write"
            )
        except changes.Stale:
            return False
        return True

    async def revise(
        self, thread: str, make: Callable[[ThreadRecords], changes.Change | None]
    ) -> bool:
        body = partial(changes.revise, thread=thread, make=make, language=self.language)
        return await self._sql.run(body, mode="write")

    def claim(self, thread: str) -> AbstractAsyncContextManager[Claim]:
        return self._claims.claim(thread)


async def _node_rows(
    tx: Transaction, thread: str, keys: Sequence[tuple[int, int]], *, agent: str
) -> Sequence[Row]:
    """The rows of the nodes of one tree at `(level, index)` keys that exist, in any order."""
    if not keys:
        return ()
    return await tx.fetch("nodes", thread=thread, agent=agent, **rows.node_keys(keys))


def _in_order(nodes: Sequence[Summary], keys: Sequence[tuple[int, int]]) -> list[Summary]:
    """The nodes of one tree at `keys`, in the order of `keys` (those that exist)."""
    by_key = {(node.level, node.index): node for node in nodes}
    return [by_key[key] for key in keys if key in by_key]


async def _fallback_lines(tx: Transaction, thread: str | None) -> dict[str, int]:
    """Each thread's lines (or one thread's) that read as a fallback, those that have some."""
    if thread is None:
        found = await tx.fetch("all_fallback_lines")
    else:
        found = await tx.fetch("fallback_lines", thread=thread)
    return {r["thread"]: int(r["lines"]) for r in found}


def _keys(lines: Sequence[Entry] | Sequence[list[Any]]) -> list[tuple[int, int]]:
    """The `(level, index)` of outline lines, as entries or as the JSON the row keeps."""
    return [(line[0], line[1]) for line in lines]
