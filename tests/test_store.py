"""The store contract: one suite, run on SQLite and on PostgreSQL (see `stores.py`)."""

from __future__ import annotations

from datetime import timedelta, timezone

import anyio
import pytest

from history import ClosedError, ConflictError, File, Message, StoreError, Summary
from history.store import Store, open_store
from history.summarizer import Ask

from .conftest import START, message
from .stores import run_sql

pytestmark = pytest.mark.anyio


def leaf(thread: str, index: int, text: str, message_id: str) -> Summary:
    return Summary(
        thread=thread, level=0, index=index, text=text, bytes=len(text.encode()),
        message=message_id, at=START,
    )  # fmt: skip


def ask(thread: str, index: int, line: str) -> Ask:
    return Ask(
        thread=thread, level=0, index=index, prompts=(f"task {index}", "again"),
        answers=("far too long", line), line=line, input_tokens=7, output_tokens=3,
        outcome="fit",
    )  # fmt: skip


async def test_messages_get_the_threads_next_seq_and_shared_index(store: Store) -> None:
    sent = [
        message(0, "hello", files=(File(name="a.png", mime="image/png", size=10),)),
        message(1, "tool call", step=True),
        message(2, "é ✓ 😀"),
        message(0, "other thread", thread="u"),
    ]
    added = [await store.add(m, 10 + k) for k, m in enumerate(sent)]
    assert [(s.seq, s.index, s.weight) for s in added if s] == [
        (0, 0, 10), (1, None, 11), (2, 1, 12), (0, 0, 13),
    ]  # fmt: skip
    pending = await store.pending("t", -1, 10)
    assert [p.message for p in pending] == sent[:3]
    assert [p.seq for p in await store.pending("t", 0, 1)] == [1]
    assert [p.seq for p in await store.messages("t", 1, 2)] == [1, 2]
    assert await store.message("t-2") == added[2]
    assert await store.message("nope") is None


async def test_a_redelivery_is_ignored_and_a_changed_message_is_refused(store: Store) -> None:
    first = message(0, "hello")
    await store.add(first, 5)
    elsewhere = timezone(timedelta(hours=2))
    same_instant = Message(
        id=first.id, thread="t", author="Ana", to="north", text="hello",
        at=first.at.astimezone(elsewhere),
    )  # fmt: skip
    assert await store.add(same_instant, 5) is None
    with pytest.raises(ConflictError) as caught:
        await store.add(message(0, "changed"), 5)
    assert caught.value.field == "id"
    assert "'t-0'" in str(caught.value)
    kept = await store.message("t-0")
    assert kept is not None and kept.message == first
    assert [p.seq for p in await store.pending("t", -1, 10)] == [0]


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
    after.lines = [(0, 0, 9, START)]
    written, asks = [leaf("t", 0, "Ana: line", "t-0")], [ask("t", 0, "S0"), ask("t", 1, "S1")]

    assert await store.commit(before, after, written, asks, "model", lines_changed=True)
    after.version = 1
    assert await store.outline("t") == after
    assert await store.summaries("t") == written
    assert await store.summary("t", 0, 0) == written[0]
    assert await store.summary("t", 0, 1) is None
    assert await store.calls("t") == asks

    # The same batch again, from the outline it started from, is refused and writes nothing.
    redo = [leaf("t", 1, "other", "t-0")]
    assert not await store.commit(before, after, redo, [ask("t", 2, "S2")], "m", lines_changed=True)
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
    assert await store.commit(before, after, [leaf("t", 0, "x", "t-0")], [ask("t", 0, "x")], "m",
                              lines_changed=False)  # fmt: skip
    stale = await store.outline("t")
    assert stale is not None

    assert await store.erase("t")
    assert await store.outline("t") is None
    assert await store.pending("t", -1, 10) == []
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
    assert not await store.commit(stale, late, [], [], "m", lines_changed=False)
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
        assert await store.commit(before, after, nodes, [], "m", lines_changed=False)
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
    stored = await store.pending("t", -1, 100)
    assert [s.seq for s in stored] == list(range(40))
    shared = [s.index for s in stored if not s.message.step]
    assert shared == list(range(len(shared)))
    assert all(s.index is None for s in stored if s.message.step)


async def test_reopening_keeps_what_was_stored(store: Store, database: str) -> None:
    await store.add(message(0, "hello"), 5)
    await store.close()
    with pytest.raises(ClosedError):
        await store.outline("t")
    again = open_store(database)
    await again.open()
    try:
        assert [s.message.text for s in await again.pending("t", -1, 10)] == ["hello"]
    finally:
        await again.close()


async def test_a_database_that_is_not_ours_is_refused(database: str, anyio_backend: str) -> None:
    await anyio.to_thread.run_sync(run_sql, database, "CREATE TABLE customers (id INTEGER)")
    foreign = open_store(database)
    with pytest.raises(StoreError, match="not a chat-history database"):
        await foreign.open()


async def test_a_claim_is_granted_and_released(store: Store) -> None:
    async with store.claim("t") as granted:
        assert granted
    async with store.claim("t") as granted:
        assert granted
