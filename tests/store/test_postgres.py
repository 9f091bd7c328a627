"""What only the PostgreSQL store does: claims across processes, its URL, concurrent startup."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from history import History, HistorySettings, StoreError
from history import _lane as lane
from history._lane import Lane, Lanes
from history._trace import simulate, snapshot
from history.contract import Ask
from history.store import open_store
from history.store._migrations import MIGRATIONS
from history.store._search.reads import SearchReads
from history.store.postgres import PostgresStore
from history.store.sqlite import SQLiteStore

from ..conftest import message
from ..stores import postgres_schema, postgres_server, postgres_sql
from ..workers import SETTINGS
from .test_store import processed

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "launch.jsonl"


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_schema() as fresh:
        yield fresh


async def test_a_postgresql_url_opens_the_postgresql_store(url: str) -> None:
    assert isinstance(open_store(url), PostgresStore)
    assert isinstance(open_store(url.replace("postgresql://", "postgres://", 1)), PostgresStore)


async def test_a_claimed_thread_is_refused_to_every_other_claim_until_released(url: str) -> None:
    one, other = open_store(url), open_store(url)
    await one.open()
    await other.open()
    try:
        async with one.claim("t") as first:
            async with one.claim("t") as again, other.claim("t") as elsewhere:
                assert (bool(first), bool(again), bool(elsewhere)) == (True, False, False)
            async with other.claim("u") as different:
                assert different
        async with other.claim("t") as after:
            assert after
        async with one.claim("t") as held:
            assert held
            await one.close()  # a process that goes away lets its claims go with it
            async with other.claim("t") as taken:
                assert taken
    finally:
        await one.close()
        await other.close()


async def test_stores_opening_together_on_an_empty_database_migrate_it_once(url: str) -> None:
    stores = [open_store(url) for _ in range(5)]
    try:
        async with anyio.create_task_group() as group:
            for store in stores:
                group.start_soon(store.open)
    finally:
        for store in stores:
            await store.close()
    names = await anyio.to_thread.run_sync(postgres_sql, url, "SELECT name FROM migration")
    assert sorted(r[0] for r in names) == sorted(name for name, _ in MIGRATIONS)


async def test_an_unreachable_server_is_a_store_error_that_hides_the_password() -> None:
    store = open_store("postgresql://ana:s3cret@127.0.0.1:1/chat")
    with pytest.raises(StoreError) as caught:
        await store.open()
    assert "postgresql://ana:***@127.0.0.1:1/chat" in str(caught.value)
    assert "s3cret" not in str(caught.value)


async def test_a_search_path_naming_no_schema_is_refused() -> None:
    server = postgres_server()
    store = open_store(f"{server}{'&' if '?' in server else '?'}search_path=no_such_schema")
    with pytest.raises(StoreError, match="names no schema"):
        await store.open()


async def test_simulate_on_postgresql_gives_the_sqlite_trace(url: str) -> None:
    lines = EXAMPLE.read_bytes().split(b"\n")
    at = "2026-11-02T10:00:00Z"
    lines += [
        b'{"event": "thread.deleted", "thread": "t"}',
        f'{{"id": "n0", "thread": "t", "author": "Bo", "text": "again", "at": "{at}"}}'.encode(),
        f'{{"id": "u0", "thread": "U", "author": "Bo", "text": "other", "at": "{at}"}}'.encode(),
    ]
    settings = HistorySettings(summarizer="echo", line=64, tail=(40, 80), outline=(200, 400))
    on_sqlite = await simulate(lines, settings)
    on_postgresql = await simulate(lines, settings, store=url)
    assert on_postgresql == on_sqlite
    assert [o["thread"] for o in on_sqlite["outlines"]] == ["U", "t"]
    assert len(on_sqlite["asks"]) > 0


async def test_a_thread_erased_and_refilled_by_another_process_is_read_afresh(url: str) -> None:
    old = [message(k, f"the old plan, part {k}, " * 3) for k in range(10)]
    new = [message(k, f"a new plan, step {k}, " * 3, author="Bo") for k in range(10)]
    later = [message(k, f"and then {k}, " * 4) for k in range(10, 14)]
    mine: list[Ask] = []
    async with History(SETTINGS, store=url) as one:
        for m in old:
            await one.message_created(m)
        await one.wait()
        one.subscribe(mine.append)
        asked = one.counters.requests
        async with History(SETTINGS, store=url) as other:
            await other.thread_deleted("t")
            for m in new:
                await other.message_created(m)
            await other.wait()
        for m in later:
            await one.message_created(m)
        await one.wait()
        got = await snapshot(one, await one.store.calls())
    # Nothing was asked on the strength of what the other process had replaced.
    assert one.counters.requests - asked == sum(len(a.prompts) for a in mine) > 0
    asks: list[Ask] = []
    async with History(SETTINGS, store=":memory:", on_ask=asks.append) as single:
        for m in new + later:
            await single.message_created(m)
        await single.wait()
        expected = await snapshot(single, asks)
    assert got == expected
    assert "old plan" not in json.dumps(got)


async def test_the_search_index_is_written_through_so_a_search_reads_no_pending_list(
    url: str,
) -> None:
    store = open_store(url)
    await store.open()
    try:
        for k in range(3):
            await processed(store, message(k, f"the venue {k}"))
        hits = await store.search("t", "venue", 10)
    finally:
        await store.close()
    # A B-tree is written in the statement that writes its row; only a GIN index (with
    # fastupdate) keeps a pending list that every search would read through until a vacuum.
    methods = (
        "SELECT DISTINCT a.amname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_am a ON a.oid = c.relam JOIN pg_class t ON t.oid = i.indrelid "
        "JOIN pg_namespace n ON n.oid = t.relnamespace "
        "WHERE t.relname IN ('search', 'search_term') AND n.nspname = current_schema()"
    )
    found = await anyio.to_thread.run_sync(postgres_sql, url, methods)
    assert [r[0] for r in found] == ["btree"]
    assert [h.label for h in hits] == ["1+1", "2+1", "0+1"]  # the middle one: both neighbours


async def test_a_message_another_process_stores_while_a_thread_waits_is_processed_after(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The thread's last message only joined its tail: its process holds the claim while it
    # waits a moment for more, so another process's message for it is left to it, not lost.
    monkeypatch.setattr(lane, "LINGER", 0.5)
    waiting, done = anyio.Event(), anyio.Event()
    linger = Lanes.linger

    async def told(self: Lanes, held: Lane) -> None:
        waiting.set()
        await linger(self, held)

    class Committing(PostgresStore):
        async def commit(self, *args: Any, **kwargs: Any) -> bool:
            saved = await super().commit(*args, **kwargs)
            if args[1].position == 1:
                done.set()
            return saved

    monkeypatch.setattr(Lanes, "linger", told)
    quiet = HistorySettings(summarizer="echo", tail=(4_000, 8_000))
    async with (
        History(quiet, store=Committing(url)) as one,
        History(quiet, store=url) as other,
    ):
        await one.message_created(message(0, "the first point"))
        with anyio.fail_after(10):
            await waiting.wait()  # it waits, holding the claim
        await other.message_created(message(1, "the second point"))
        await other.wait()  # refused the claim: it leaves the thread to the first
        committed = await other.outline("t")
        assert committed is not None and committed.position == -1
        with anyio.fail_after(10):
            await done.wait()  # nobody waits on the first: it looks once it lets go
        outline = await one.outline("t")
    assert outline is not None and [item.id for item in outline.tail] == ["t-0", "t-1"]


async def test_a_search_is_planned_without_workers_or_compiling(url: str) -> None:
    # A term's postings are one thread's, which the table's statistics cannot know: on a large
    # store a misjudged plan started parallel workers (50 ms a statement) or compiled itself.
    [found] = await anyio.to_thread.run_sync(postgres_sql, url, "SHOW server_version_num")
    version = int(found["server_version_num"])
    forced = "debug_parallel_query" if version >= 160000 else "force_parallel_mode"
    store = open_store(f"{url}&{forced}=on&jit_above_cost=0")  # workers and JIT for any plan
    assert isinstance(store, PostgresStore)
    await store.open()
    try:
        await processed(store, message(0, "the invoice is paid"))
        # A count of a term's postings, as search made before it counted them up to a cap: a
        # plan the server would run in parallel (search's own statements limit each lookup).
        explain = (
            "EXPLAIN (ANALYZE, FORMAT JSON) SELECT t.word, t.line, count(*) FROM search_term AS t"
            " WHERE t.word = ANY($1::bigint[]) GROUP BY t.word, t.line"
        )

        async def plan(tx: Any, *, few: bool) -> str:
            if few:
                await tx.few_rows()
            word = await tx._db.fetchval("SELECT id FROM search_word WHERE stem = 'invoic'")
            return str(await tx._db.fetchval(explain, [word]))

        eager_plan = await store._sql.run(lambda tx: plan(tx, few=False), mode="snapshot")
        assert "Gather" in eager_plan and '"JIT"' in eager_plan  # what the settings ask for
        searched = await store._sql.run(lambda tx: plan(tx, few=True), mode="snapshot")
        assert "Gather" not in searched and '"JIT"' not in searched
        assert [h.message for h in await store.search("t", "invoices", 5)] == ["t-0"]
    finally:
        await store.close()


async def test_connections_wait_for_locks_and_idle_in_transactions_for_a_bounded_time(
    url: str,
) -> None:
    shown = (
        "SELECT current_setting('lock_timeout'), "
        "current_setting('idle_in_transaction_session_timeout')"
    )
    for where, expected in ((url, ("10s", "30s")), (f"{url}&lock_timeout=2s", ("2s", "30s"))):
        store = PostgresStore(where)
        await store.open()
        try:
            pool = store._sql._pool  # type: ignore[attr-defined]
            async with pool.acquire() as db:
                assert tuple(await db.fetchrow(shown)) == expected
        finally:
            await store.close()


async def test_a_terms_postings_are_packed_64_to_a_row_and_found_as_on_sqlite(
    url: str, tmp_path: Path
) -> None:
    # A row a posting cost about 137 bytes on PostgreSQL; a row holds a bucket of 64 now. What
    # a search finds is what SQLite, a row a posting, finds.
    stores = [PostgresStore(url), SQLiteStore(str(tmp_path / "same.sqlite"))]
    chat = [message(k, f"the venue {k}" if k % 3 else f"plan {k} by the venue") for k in range(150)]
    try:
        for store in stores:
            await store.open()
            for m in chat:
                await processed(store, m)
        packed = await anyio.to_thread.run_sync(
            postgres_sql,
            url,
            "SELECT t.bucket, t.idxs FROM search_term AS t JOIN search_word AS w "
            "ON w.id = t.word WHERE w.stem = 'plan' AND NOT t.line ORDER BY t.bucket",
        )
        planned = [(k // 64, k % 64) for k in range(0, 128, 3)]  # 128 posted, 22 waiting
        assert [(r["bucket"], o) for r in packed for o in r["idxs"]] == planned
        for words, limit in (("venue", 5), ("plan", 50), ("plan venue 149", 20), ("plan 7", 3)):
            postgresql, sqlite = [await store.search("t", words, limit) for store in stores]
            assert postgresql == sqlite and postgresql

        async def bounded(tx: Any) -> list[list[Any]]:
            """The reads that stop at a cap, at caps that end inside a packed row."""
            reads = SearchReads(tx=tx, thread="t")
            return [
                sorted(await reads.frequencies("", ["plan", "venu", "by"], cap=cap))
                for cap in (7, 63, 64, 65, 99)
            ] + [
                await reads.newest("", "venu", line=False, cap=70),
                await reads.together("", ["plan", "venu"], cap=30, limit=5),
            ]

        read = [await s._sql.run(bounded, mode="snapshot") for s in stores]
        assert read[0] == read[1]
        assert [n for _, _, n, _ in read[0][0]] == [8, 0, 8, 0, 8, 0]  # 7 + 1 of each
    finally:
        for store in stores:
            await store.close()


async def test_a_store_with_a_row_a_posting_is_packed_as_it_opens(url: str) -> None:
    # Step 0090 packs the postings a store wrote before it, and a search finds the same.
    store = open_store(url)
    await store.open()
    try:
        for k in range(150):
            await processed(store, message(k, f"the venue {k}" if k % 3 else f"plan {k} by it"))
        before = [await store.search("t", words, 20) for words in ("venue", "plan 7", "by")]
    finally:
        await store.close()
    packed = "SELECT word, line, level, bucket, idxs, ns FROM search_term ORDER BY 1, 2, 3, 4"
    written = await anyio.to_thread.run_sync(postgres_sql, url, packed)
    for statement in (  # as the store was before the step: a row a posting
        "CREATE TABLE unpacked AS SELECT word, line, level, bucket * 64 + o AS idx, n "
        "FROM search_term, unnest(idxs, ns) AS p (o, n)",
        "DROP TABLE search_term",
        "CREATE TABLE search_term (word BIGINT NOT NULL, line BOOLEAN NOT NULL, "
        "level INTEGER NOT NULL, idx BIGINT NOT NULL, n INTEGER NOT NULL, "
        "PRIMARY KEY (word, line, level, idx) INCLUDE (n))",
        "INSERT INTO search_term SELECT * FROM unpacked",
        "DROP TABLE unpacked",
        "DELETE FROM migration WHERE name = '0090_search_packed'",
    ):
        await anyio.to_thread.run_sync(postgres_sql, url, statement)
    store = open_store(url)
    await store.open()  # the step, applied
    try:
        after = [await store.search("t", words, 20) for words in ("venue", "plan 7", "by")]
    finally:
        await store.close()
    assert after == before and all(after)
    assert await anyio.to_thread.run_sync(postgres_sql, url, packed) == written
