"""Nothing lost, nothing paid twice: names and generations travel with an export, survive a
rebuild without a model call, and a change racing with processing or an erase is serialized
like any commit (docs/generations.md, sections 6 and 7)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from history import History, HistorySettings
from history._generations import current_hits, current_nodes
from history.carry import export, load
from history.rebuilding import rebuild
from history.store import Store, open_store
from history.store import _changes as changes

from ..conftest import Opener, Settings, exchange
from .test_generations import Counting, texts

pytestmark = pytest.mark.anyio

SETTINGS: Settings = {"summarizer": "echo", "line": 96, "tail": (30, 60), "kept": 2}
ANA = re.compile(r"(?<!\w)Ana(?!\w)")


async def _changed(run_history: History) -> None:
    await run_history.rename("Ana", "Ann")
    await run_history.reconsolidate("t", "0+16", summarizer=Counting(), depth=3)


@pytest.mark.slow
async def test_export_and_load_carry_names_and_every_generation(
    open_history: Opener, database: str, tmp_path: object
) -> None:
    async with open_history(**SETTINGS) as run:
        await run.send(*exchange(texts(40)))
        await _changed(run.history)
        source = run.history.store
        out = io.StringIO()
        await export(source, out)
        generations = await source.generations("t")
        names = await source.names()
        shown = await source.shown("t")
        nodes = await current_nodes(source, "t", await source.summaries("t"))
    target: Store = open_store(database)
    await target.open()
    try:
        first = await load(target, out.getvalue().splitlines())
        again = await load(target, out.getvalue().splitlines())
        assert await target.generations("t") == generations
        assert await target.names() == names
        assert await target.shown("t") == shown
        assert await current_nodes(target, "t", await target.summaries("t")) == nodes
        # A hit reads its line as the store shows it now (the index keeps no text).
        hits = await current_hits(target, "t", await target.search("t", "Ann", 50))
    finally:
        await target.close()
    assert first.written > 0 and again.written == 0
    assert any(g.generation == 2 for g in generations) and names
    assert hits and all(not ANA.search(h.text) for h in hits if h.message is None)


@pytest.mark.slow
async def test_a_rebuild_keeps_every_generation_with_no_model_call(open_history: Opener) -> None:
    async with open_history(**SETTINGS) as run:
        await run.send(*exchange(texts(40)))
        await _changed(run.history)
        store = run.history.store
        generations = await store.generations("t")
        before = await current_nodes(store, "t", await store.summaries("t"))
        done = await rebuild(store, "t")
        after = await current_nodes(store, "t", await store.summaries("t"))
        kept = await store.generations("t")
    assert done.model_calls == 0 and done.written
    assert kept == generations and after == before


@pytest.mark.slow
async def test_a_change_made_from_an_outline_that_moved_or_was_erased_writes_nothing(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database, **SETTINGS) as run:
        await run.send(*exchange(texts(20)))
        store = run.history.store
        old = await store.outline("t")
        assert old is not None
        await run.history.rename("Ana", "Ann")  # moves the outline's version
        change = changes.Change(names=(), generations=(), now=True)
        assert not await store.change(old, change)
        moved = await store.outline("t")
        assert moved is not None and moved.version == old.version + 1
        assert await store.erase("t")
        assert not await store.change(moved, change)
        assert await store.generations("t") == [] and await store.shown("t") == (0, 0)


@pytest.mark.slow
async def test_a_rename_racing_with_processing_loses_no_line(
    open_history: Opener, tmp_path: Path
) -> None:
    async with open_history(**SETTINGS) as run:
        messages = exchange(texts(60))
        async with anyio.create_task_group() as group:

            async def send() -> None:
                for m in messages:
                    await run.history.message_created(m)
                    await anyio.lowlevel.checkpoint()

            group.start_soon(send)
            for _ in range(5):
                await anyio.sleep(0.01)
                await run.history.rename("Ana", "Ann" if _ % 2 else "Anna")
        await run.history.wait()
        store = run.history.store
        nodes = await current_nodes(store, "t", await store.summaries("t"))
        outline = await store.outline("t")
    async with History(HistorySettings(**SETTINGS), store=tmp_path / "plain.sqlite") as plain:
        for m in messages:
            await plain.message_created(m)
        await plain.wait()
        expected = await plain.store.outline("t")
    assert outline is not None and expected is not None
    assert (outline.lines, outline.boundary) == (expected.lines, expected.boundary)
    assert all(not ANA.search(n.text) for n in nodes)
