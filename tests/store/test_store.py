"""The store contract: one suite, run on SQLite and on PostgreSQL (see `stores.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import timedelta, timezone
from pathlib import Path

import anyio
import pytest

from history import ClosedError, ConflictError, File, HistorySettings, Message, StoreError, Summary
from history.contract import Ask, Entry, Hit, Stored
from history.store import Store, open_store
from history.store import _migrations as migrations
from history.store._records import ThreadRecords

from ..chats import SMALL, Fickle, ingest, long_chat, trace, without_epoch
from ..conftest import START, message
from ..stores import run_sql

pytestmark = pytest.mark.anyio


def leaf(thread: str, index: int, text: str, message_id: str) -> Summary:
    return Summary(
        thread=thread,
        level=0,
        index=index,
        text=text,
        bytes=len(text.encode()),
        message=message_id,
        at=START,
    )


def node(thread: str, level: int, index: int, text: str) -> Summary:
    return Summary(
        thread=thread,
        level=level,
        index=index,
        text=text,
        bytes=len(text.encode()),
        message=None,
        at=START + timedelta(minutes=index),
    )


async def write(store: Store, thread: str, nodes: list[Summary]) -> None:
    """Commit nodes into the thread, as a batch of the processor would."""
    before = await store.outline(thread)
    assert before is not None
    after = before.copy()
    after.position = max(before.position, 0)
    assert await store.commit(before, after, nodes, [], "m", lines_changed=False, processed=[])


async def processed(store: Store, message: Message, weight: int = 5) -> Stored:
    """Store a message and commit it as processed (its outline moves past it), which indexes
    it for search."""
    stored = await store.add(message, weight)
    assert stored is not None
    before = await store.outline(message.thread)
    assert before is not None
    after = before.copy()
    after.position = stored.seq
    assert await store.commit(before, after, [], [], "m", lines_changed=False, processed=[stored])
    return stored


@asynccontextmanager
async def opened(where: str) -> AsyncIterator[Store]:
    store = open_store(where)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def ask(thread: str, index: int, line: str) -> Ask:
    return Ask(
        thread=thread,
        level=0,
        index=index,
        prompts=(f"task {index}", "again"),
        answers=("far too long", line),
        line=line,
        input_tokens=7,
        output_tokens=3,
        outcome="fit",
    )


def test_each_dialect_reads_its_own_statements_of_a_collection() -> None:
    sqlite, postgresql = (
        migrations.statements("search.sql", dialect=d) for d in ("sqlite", "postgresql")
    )
    assert [" ".join(s.split()[:3]) for s in sqlite] == [
        "CREATE VIRTUAL TABLE",
        "INSERT INTO search",
        "INSERT INTO search",
        "CREATE TRIGGER search_message",
    ]
    assert [" ".join(s.split()[:3]) for s in postgresql] == [
        "CREATE FUNCTION search_fold(TEXT)",
        "CREATE TABLE search",
        "CREATE INDEX search_words",
        "CREATE INDEX search_thread",
        "CREATE FUNCTION search_line(m",
        "CREATE FUNCTION search_message()",
        "CREATE TRIGGER search_message",
        "INSERT INTO search",
        "INSERT INTO search",
    ]
    # Bodies are whole: a trigger's BEGIN ... END, a function's $$ ... $$.
    assert sqlite[-1].endswith("NEW.thread, 0, NEW.idx, NEW.id, NEW.at;\nEND")
    assert postgresql[5].endswith("RETURN NULL;\nEND\n$$")
    assert migrations.statements("message.sql", dialect="postgresql") == migrations.statements(
        "message.sql"
    )


async def test_messages_get_the_threads_next_seq_and_shared_index(store: Store) -> None:
    sent = [
        message(0, "hello", files=(File(name="a.png", mime="image/png", size=10),)),
        message(1, "tool call", step=True),
        message(2, "é ✓ 😀"),
        message(0, "other thread", thread="u"),
    ]
    added = [await store.add(m, 10 + k) for k, m in enumerate(sent)]
    assert [(s.seq, s.index, s.weight) for s in added if s] == [
        (0, 0, 10),
        (1, None, 11),
        (2, 1, 12),
        (0, 0, 13),
    ]
    pending = await store.messages_after("t", -1, 10)
    assert [p.message for p in pending] == sent[:3]
    assert [p.seq for p in await store.messages_after("t", 0, 1)] == [1]
    assert [p.seq for p in await store.messages("t", 1, 2)] == [1, 2]
    assert await store.message("t-2") == added[2]
    assert await store.message("nope") is None


async def test_a_redelivery_is_ignored_and_a_changed_message_is_refused(store: Store) -> None:
    first = message(0, "hello")
    await store.add(first, 5)
    elsewhere = timezone(timedelta(hours=2))
    same_instant = Message(
        id=first.id,
        thread="t",
        author="Ana",
        to="north",
        text="hello",
        at=first.at.astimezone(elsewhere),
    )
    assert await store.add(same_instant, 5) is None
    with pytest.raises(ConflictError) as caught:
        await store.add(message(0, "changed"), 5)
    assert caught.value.field == "id"
    assert "'t-0'" in str(caught.value)
    kept = await store.message("t-0")
    assert kept is not None and kept.message == first
    assert [p.seq for p in await store.messages_after("t", -1, 10)] == [0]


async def test_an_agents_native_form_is_stored_beside_its_message(store: Store) -> None:
    await store.add(message(0, "hello"), 5)
    await store.add(message(1, "hi", author="north"), 5, native='[{"kind": "response"}]')
    await store.add(message(2, "again"), 5)
    assert await store.natives("t", -1) == {"t-1": '[{"kind": "response"}]'}
    assert await store.natives("t", 1) == {}
    stored = await store.message("t-1")
    assert stored is not None and stored.message.text == "hi" and stored.weight == 5


async def test_a_thread_starts_with_an_empty_outline(store: Store) -> None:
    assert await store.outline("t") is None
    await store.add(message(0, "hello"), 5)
    outline = await store.outline("t")
    assert outline is not None
    assert (outline.version, outline.position, outline.lines, list(outline.tail)) == (0, -1, [], [])
    assert (outline.bytes, outline.boundary, outline.tokens, outline.draining) == (0, 0, 0, False)
    assert (outline.since, outline.cut_at, outline.gone) == (None, None, None)


async def test_a_commit_writes_the_batch_only_over_the_outline_it_started_from(
    store: Store,
) -> None:
    stored = await store.add(message(0, "hello"), 5)
    before = await store.outline("t")
    assert stored is not None and before is not None
    after = before.copy()
    after.tail.append(stored.tail_item())
    after.tokens, after.position, after.since = 5, 0, stored.message.at
    after.lines = [Entry(0, 0, 9, START)]
    written, asks = [leaf("t", 0, "Ana: line", "t-0")], [ask("t", 0, "S0"), ask("t", 1, "S1")]

    assert await store.commit(
        before, after, written, asks, "model", lines_changed=True, processed=[]
    )
    after.version = 1
    assert await store.outline("t") == after
    assert await store.summaries("t") == written
    assert await store.summary("t", 0, 0) == written[0]
    assert await store.summary("t", 0, 1) is None
    assert await store.calls("t") == asks

    # The same batch again, from the outline it started from, is refused and writes nothing.
    redo = [leaf("t", 1, "other", "t-0")]
    assert not await store.commit(
        before, after, redo, [ask("t", 2, "S2")], "m", lines_changed=True, processed=[]
    )
    assert await store.summaries() == written
    assert await store.calls() == asks
    assert await store.behind() == []


async def test_erasing_a_thread_removes_everything_it_held(store: Store) -> None:
    for k in range(3):
        await store.add(message(k, f"m{k}"), 5)
    await store.add(message(0, "kept", thread="u"), 5)
    before = await store.outline("t")
    assert before is not None
    after = before.copy()
    after.position = 0
    assert await store.commit(
        before,
        after,
        [leaf("t", 0, "x", "t-0")],
        [ask("t", 0, "x")],
        "m",
        lines_changed=False,
        processed=[],
    )
    stale = await store.outline("t")
    assert stale is not None

    assert await store.erase("t")
    assert await store.outline("t") is None
    assert await store.messages_after("t", -1, 10) == []
    assert await store.message("t-1") is None
    assert (await store.summaries("t"), await store.calls("t")) == ([], [])
    assert await store.threads() == ["u"]
    assert not await store.erase("t")

    # The same id starts a new thread, and a batch of the old one never lands in it.
    again = await store.add(message(0, "new"), 5)
    assert again is not None and (again.seq, again.index) == (0, 0)
    fresh = await store.outline("t")
    assert fresh is not None and fresh.epoch != stale.epoch
    late = stale.copy()
    late.position = 1
    assert not await store.commit(stale, late, [], [], "m", lines_changed=False, processed=[])
    assert await store.outline("t") == fresh


async def test_threads_and_nodes_sort_in_code_point_order(store: Store) -> None:
    names = ["b", "B", "a", "é", "Z", "ab", "a b", "😀", "ä"]
    for k, name in enumerate(names):
        await store.add(message(k, "hi", thread=name), 5)
    expected = sorted(names)
    assert await store.threads() == expected
    assert await store.behind() == expected
    for name in names:
        before = await store.outline(name)
        assert before is not None
        after = before.copy()
        after.position = 0
        nodes = [leaf(name, 1, "y", "x"), leaf(name, 0, "x", "x")]
        assert await store.commit(before, after, nodes, [], "m", lines_changed=False, processed=[])
    assert [(s.thread, s.index) for s in await store.summaries()] == [
        (name, index) for name in expected for index in (0, 1)
    ]
    assert await store.behind() == []


async def test_two_stores_storing_one_thread_at_once_get_gapless_seqs(
    store: Store, database: str
) -> None:
    other = open_store(database)
    await other.open()
    try:

        async def send(target: Store, first: int) -> None:
            for k in range(first, 40, 2):
                await target.add(message(k, f"m{k}", step=k % 3 == 0), 1)

        async with anyio.create_task_group() as group:
            group.start_soon(send, store, 0)
            group.start_soon(send, other, 1)
    finally:
        await other.close()
    stored = await store.messages_after("t", -1, 100)
    assert [s.seq for s in stored] == list(range(40))
    shared = [s.index for s in stored if not s.message.step]
    assert shared == list(range(len(shared)))
    assert all(s.index is None for s in stored if s.message.step)
    steps = [s.step_index for s in stored if s.message.step]  # one author's
    assert steps == list(range(len(steps)))


async def test_reopening_keeps_what_was_stored(store: Store, database: str) -> None:
    await store.add(message(0, "hello"), 5)
    await store.close()
    with pytest.raises(ClosedError):
        await store.outline("t")
    again = open_store(database)
    await again.open()
    try:
        assert [s.message.text for s in await again.messages_after("t", -1, 10)] == ["hello"]
    finally:
        await again.close()


async def test_a_database_that_is_not_ours_is_refused(database: str, anyio_backend: str) -> None:
    await anyio.to_thread.run_sync(run_sql, database, "CREATE TABLE customers (id INTEGER)")
    foreign = open_store(database)
    with pytest.raises(StoreError, match="not a chat-outline database"):
        await foreign.open()


async def test_a_claim_is_granted_and_released(store: Store) -> None:
    async with store.claim("t") as granted:
        assert granted
    async with store.claim("t") as granted:
        assert granted


async def test_nodes_are_read_by_key_in_the_order_asked(store: Store) -> None:
    await store.add(message(0, "hi"), 5)
    await store.add(message(0, "hi", thread="u"), 5)
    await write(store, "t", [node("t", 0, k, f"line {k}") for k in range(1000)])
    await write(store, "u", [node("u", 0, 0, "other"), node("u", 1, 3, "other")])
    keys = [(0, 999), (1, 3), (0, 5), (2, 0), (0, 0)]
    assert [(n.level, n.index, n.text) for n in await store.nodes("t", keys)] == [
        (0, 999, "line 999"),
        (0, 5, "line 5"),
        (0, 0, "line 0"),
    ]
    every = [(0, k) for k in reversed(range(1000))]  # more keys than one statement takes
    assert await store.nodes("t", every) == list(reversed(await store.summaries("t")))
    assert await store.nodes("t", []) == []


async def test_search_finds_shared_messages_and_lines_by_any_word(store: Store) -> None:
    pdf = File(name="plan.pdf", mime="application/pdf", size=10)
    for m in [
        message(0, "the venue is booked"),
        message(1, "lunch at noon,\nthen the venue", files=(pdf,)),
        message(2, "venue tool call", step=True),
        message(0, "the venue", thread="u"),
    ]:
        await processed(store, m)
    await write(store, "t", [node("t", 1, 0, "Both agree on the venue")])

    hits = await store.search("t", "Venue, PDF?", 10)
    at = START + timedelta(minutes=1)
    assert hits[0] == Hit(
        label="1+1",
        level=0,
        index=1,
        text="Ana → north: lunch at noon, then the venue [plan.pdf]",
        at=at,
        since=at,
        message="t-1",
        terms=("venue", "pdf"),
        score=2.0,
    )
    # The line over both holds no word the messages do not: it is not listed.
    assert [(h.label, h.message, h.terms) for h in hits[1:]] == [("0+1", "t-0", ("venue",))]
    assert len(await store.search("t", "venue", 2)) == 2
    assert await store.search("t", "tool", 10) == []  # steps are not searched
    assert await store.search("t", "?!", 10) == await store.search("t", "venue", 0) == []
    assert [(h.label, h.message) for h in await store.search("u", "venue", 10)] == [("0+1", "u-0")]

    assert await store.erase("t")
    assert await store.search("t", "venue", 10) == []
    assert len(await store.search("u", "venue", 10)) == 1


async def test_search_weighs_rare_words_over_common_ones_then_prefers_the_newest(
    store: Store,
) -> None:
    texts = ["venue", "lunch", "x", "lunch lunch", "y", "lunch lunch", "z", "lunch venue"]
    for k, text in enumerate(texts):
        await processed(store, message(k, text))
    hits = await store.search("t", "the venue lunch", 10)
    # Both words, then the rare one; "the" is left out of the query.
    assert [(h.message, h.terms) for h in hits[:2]] == [
        ("t-7", ("venue", "lunch")),
        ("t-0", ("venue",)),
    ]
    # Two messages that match alike, with windows alike: the newest first.
    found = [h.message for h in hits]
    assert found.index("t-5") == found.index("t-3") - 1
    assert hits[found.index("t-5")].score == hits[found.index("t-3")].score


async def test_search_ignores_case_and_the_accents_of_latin_letters(store: Store) -> None:
    await processed(store, message(0, "Déjà vu à ZÜRICH"))
    await processed(store, message(1, "Ελλάδα, й"))
    assert [h.terms for h in await store.search("t", "deja zurich", 10)] == [("deja", "zurich"), ()]
    assert [h.message for h in await store.search("t", "DÉJÀ", 10)] == ["t-0", "t-1"]
    assert [(h.message, h.terms) for h in await store.search("t", "ελλάδα", 10)] == [
        ("t-1", ("ελλάδα",)),
        ("t-0", ()),
    ]
    assert await store.search("t", "ελλαδα и", 10) == []  # other scripts keep their accents


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store with two threads, lines and calls by a model whose answers change."""
    path = tmp_path_factory.mktemp("written") / "source.sqlite"
    chat = long_chat(160) + long_chat(60, thread="u", seed=5)
    settings = HistorySettings(summarizer="fickle", **SMALL)
    anyio.run(lambda: ingest(chat, settings, store=str(path), model=Fickle(1)))
    return path


def indexed(database: str) -> list[tuple[str, bool, int]]:
    """How many rows the search index holds per thread, for lines and for messages."""
    return [
        (thread, bool(message), count)
        for thread, message, count in run_sql(
            database,
            "SELECT thread, message IS NOT NULL, count(*) FROM search "
            "GROUP BY thread, message IS NOT NULL ORDER BY thread, message IS NOT NULL",
        )
    ]


@pytest.mark.slow
async def test_threads_carried_to_another_store_and_back_are_unchanged(
    store: Store, database: str, written: Path
) -> None:
    async with opened(str(written)) as source:
        exported = [await source.export_thread(thread) for thread in ("t", "u")]
        expected, calls = await trace(source), await source.calls()
    batch = [r for r in exported if r is not None]
    loaded = await store.load_records(batch)
    records = sum(
        len(r.messages) + len(r.summaries) + len(r.calls) + 1 + (r.about is not None) for r in batch
    )
    assert all(r.about is not None and r.about.settings for r in batch)  # titles travel too
    assert (loaded.threads, loaded.written, loaded.skipped) == (2, records, 0)
    assert (await trace(store), await store.calls()) == (expected, calls)
    copies = [await store.export_thread(thread) for thread in ("t", "u")]
    assert [without_epoch(c) for c in copies] == [without_epoch(r) for r in batch]
    # Every line of every tree, every shared message and every step of an agent is indexed.
    said = {
        r.thread: sum(not s.message.step or bool(s.message.author) for s in r.messages)
        for r in batch
    }
    assert await anyio.to_thread.run_sync(indexed, database) == [
        (r.thread, kind, len(r.summaries) if not kind else said[r.thread])
        for r in batch
        for kind in (False, True)
    ]
    again = await store.load_records(batch)
    assert (again.written, again.skipped) == (0, records)

    async with opened(":memory:") as back:
        await back.load_records([c for c in copies if c is not None])
        assert (await trace(back), await back.calls()) == (expected, calls)
        assert [without_epoch(await back.export_thread(t)) for t in ("t", "u")] == [
            without_epoch(r) for r in batch
        ]


async def test_a_load_that_contradicts_the_store_writes_nothing(store: Store) -> None:
    await store.add(message(0, "hello"), 5)
    await write(store, "t", [node("t", 0, 0, "the line")])
    exported = await store.export_thread("t")
    assert exported is not None
    other = message(0, "elsewhere", thread="u")
    changed = replace(exported, summaries=(node("t", 0, 0, "another line"),))
    with pytest.raises(ConflictError, match="node 't:0:0' is stored with other text"):
        await store.load_records(
            [
                ThreadRecords(
                    thread="u", messages=(Stored(message=other, seq=0, index=0, weight=5),)
                ),
                changed,
            ]
        )
    assert await store.threads() == ["t"]  # thread u, first in the batch, was not written
    assert await store.search("u", "elsewhere", 10) == []
