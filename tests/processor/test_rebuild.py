"""Rebuilding a thread from its messages replays its pinned calls, and refuses to pay silently."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Unpack

import anyio
import pytest

from history import HistorySettings, NotFoundError, Summarizer, UnpinnedError
from history.rebuilding import rebuild
from history.store import Store, open_store

from ..chats import SMALL, Fickle, ingest, long_chat, trace
from ..conftest import Options
from ..stores import run_sql

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@asynccontextmanager
async def opened(path: Path | str) -> AsyncIterator[Store]:
    store = open_store(path)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def settings(summarizer: str, **changes: Unpack[Options]) -> HistorySettings:
    options: Options = {**SMALL, **changes}
    return HistorySettings(summarizer=summarizer, **options)


@pytest.mark.parametrize("summarizer", ["echo", "scripted", "fickle"])
async def test_a_rebuild_with_unchanged_settings_is_byte_identical(
    tmp_path: Path, summarizer: str
) -> None:
    path = tmp_path / "h.sqlite"
    model: Summarizer | None = Fickle(1) if summarizer == "fickle" else None
    asks = await ingest(long_chat(320), settings(summarizer), store=str(path), model=model)
    assert len(asks) > 100
    async with opened(path) as store:
        before, calls = await trace(store), await store.calls()
        again = Fickle(2) if summarizer == "fickle" else None  # other answers, were it asked
        done = await rebuild(store, "t", settings(summarizer), model=again)
        assert await trace(store) == before
        assert await store.calls() == calls
    assert (done.model_calls, done.asks, done.written) == (0, len(asks), True)
    assert done.replayed == sum(len(a.answers) + (a.outcome == "fallback") for a in asks)
    if isinstance(again, Fickle):
        assert again.requests == 0
        assert {a.outcome for a in asks} == {"fit", "cut", "fallback"}  # every kind was replayed


async def test_a_changed_outline_budget_rebuilds_from_pins_alone(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    await ingest(long_chat(300), settings("fickle"), store=str(path), model=Fickle(1))
    wider = settings("fickle", outline=(900, 2_000))
    async with opened(path) as store:
        before = await trace(store)
        done = await rebuild(store, "t", wider, model=Fickle(2))
        after = await trace(store)
    assert done.model_calls == 0
    assert after != before

    # The same as processing the messages with the wider outline from the start.
    fresh = tmp_path / "fresh.sqlite"
    await ingest(long_chat(300), wider, store=str(fresh), model=Fickle(1))
    async with opened(fresh) as store:
        assert await trace(store) == after


async def test_a_rebuild_that_needs_the_model_is_refused_naming_the_count(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    await ingest(long_chat(300), settings("scripted", tail=(20_000, 60_000)), store=str(path))
    smaller = settings("scripted")  # more messages leave the tail: lines never asked for
    async with opened(path) as store:
        before = await trace(store)
        counted = await rebuild(store, "t", smaller, dry_run=True)
        assert counted.model_calls > 0 and not counted.written
        assert await trace(store) == before
        with pytest.raises(UnpinnedError, match=rf"would make {counted.model_calls} model calls"):
            await rebuild(store, "t", smaller)
        assert await trace(store) == before  # nothing changed

        done = await rebuild(store, "t", smaller, allow_model_calls=True)
        assert done.model_calls == counted.model_calls  # offline models are counted exactly
        assert await trace(store) != before
        assert (await rebuild(store, "t", smaller)).model_calls == 0  # now pinned too


async def test_a_longer_line_is_pinned_nowhere_and_the_refusal_says_so(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    await ingest(long_chat(120), settings("fickle"), store=str(path), model=Fickle(1))
    async with opened(path) as store:
        with pytest.raises(UnpinnedError) as refused:
            await rebuild(store, "t", settings("fickle", line=200), model=Fickle(2))
        with pytest.raises(UnpinnedError, match="made by another model"):
            await rebuild(store, "t", settings("echo"))
    assert refused.value.calls > 0
    assert f"would make {refused.value.calls} model calls" in str(refused.value)


async def test_a_rebuild_of_a_thread_that_is_not_stored_is_refused(tmp_path: Path) -> None:
    async with opened(tmp_path / "h.sqlite") as store:
        with pytest.raises(NotFoundError, match="'nope'"):
            await rebuild(store, "nope", settings("echo"))


async def test_a_rebuild_gives_the_same_trace_on_every_store(database: str, tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    await ingest(long_chat(200), settings("fickle"), store=str(path), model=Fickle(1))
    wider = settings("fickle", outline=(900, 2_000))
    async with opened(path) as store:
        exported = await store.export_thread("t")
        assert exported is not None
        done = await rebuild(store, "t", wider, model=Fickle(2))
        expected, calls = await trace(store), await store.calls()
    async with opened(database) as store:
        await store.load_records([exported])
        again = await rebuild(store, "t", wider, model=Fickle(2))
        assert (await trace(store), await store.calls()) == (expected, calls)
    assert again.model_calls == done.model_calls == 0
    assert (again.asks, again.replayed, again.summaries) == (
        done.asks,
        done.replayed,
        done.summaries,
    )


async def test_search_finds_the_rebuilt_lines_once(database: str) -> None:
    await ingest(long_chat(120), settings("scripted"), store=database)
    async with opened(database) as store:
        before = {n.text for n in await store.summaries("t")}
        await rebuild(store, "t", settings("scripted", line=300), allow_model_calls=True)
        nodes = [n for n in await store.summaries("t") if not n.agent]
        assert {n.text for n in nodes} != before
        hits = await store.search("t", nodes[-1].text, 400)
    found = await anyio.to_thread.run_sync(
        run_sql, database, "SELECT count(*) FROM search WHERE message IS NULL AND agent = ''"
    )
    assert found == [(len(nodes),)]
    assert any(h.level == nodes[-1].level and h.index == nodes[-1].index for h in hits)


async def test_a_rebuild_that_would_drop_lines_is_refused_unless_forced(tmp_path: Path) -> None:
    from history.errors import RebuildRefused

    path = tmp_path / "h.sqlite"
    await ingest(long_chat(120), settings("scripted"), store=str(path))
    async with opened(path) as store:
        before = await trace(store)
        wider = settings("scripted", tail=(50_000, 100_000))  # nothing would ever leave it
        with pytest.raises(RebuildRefused, match=r"would leave \d+ of its \d+ summarized"):
            await rebuild(store, "t", wider)
        assert await trace(store) == before
        done = await rebuild(store, "t", wider, force=True)
        assert done.outline.boundary == 0 and await store.summaries("t") == []
