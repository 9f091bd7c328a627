"""A ReadOnly store reads as a History does: `view`, `zoom` and `search` through it, with the
same settings, give what they give through the History that wrote the thread, with no
summarizer made and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from history import (
    ConfigurationError,
    HistorySettings,
    InputError,
    ReadOnly,
    StoreError,
    ThreadHistory,
    prompt_text,
    search,
    view,
    zoom,
)

from ..conftest import Opener, Settings, exchange

pytestmark = pytest.mark.anyio

SETTINGS: Settings = {"summarizer": "echo", "tail": (200, 400), "outline": (1000, 2000)}


async def test_view_zoom_and_search_read_a_store_as_its_history_does(
    open_history: Opener, tmp_path: Path
) -> None:
    path = tmp_path / "chat.sqlite"
    texts = [f"The venue {k} holds {k * 10} guests, and the price is {k} EUR." for k in range(60)]
    async with open_history(store=path, **SETTINGS) as run:
        await run.send(*exchange(texts))
        written = prompt_text(await view(run.history, "t", agent="north"))
        opened = (await zoom(run.history, "t", "0+32")).text
        found = await search(run.history, "t", "venue 12 guests")
    before = path.stat().st_mtime_ns
    async with ReadOnly.opened(path, HistorySettings(**SETTINGS)) as reader:
        assert prompt_text(await view(reader, "t", agent="north")) == written
        assert (await zoom(reader, "t", "0+32")).text == opened
        assert await search(reader, "t", "venue 12 guests") == found
    assert written.startswith("[outline]\n") and found
    assert path.stat().st_mtime_ns == before  # read only: nothing written


async def test_a_read_only_store_reads_on_every_database(
    open_history: Opener, database: str
) -> None:
    texts = [f"Ticket {k} is about the {['venue', 'budget', 'menu'][k % 3]}." for k in range(40)]
    async with open_history(store=database, **SETTINGS) as run:
        await run.send(*exchange(texts))
        written = prompt_text(await view(run.history, "t"))
        found = await search(run.history, "t", "ticket 7 budget")
    async with ReadOnly.opened(database, HistorySettings(**SETTINGS)) as reader:
        assert prompt_text(await view(reader, "t")) == written
        assert await search(reader, "t", "ticket 7 budget") == found
    assert found and written.startswith("[outline]\n")


async def test_a_missing_store_is_refused_and_not_made(tmp_path: Path) -> None:
    path = tmp_path / "none.sqlite"
    with pytest.raises(StoreError):
        async with ReadOnly.opened(path):
            pass
    assert not path.exists()


async def test_a_reader_that_is_neither_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="history"):
        await search("chat.sqlite", "t", "venue")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="store"):
        async with ReadOnly.opened(123):  # type: ignore[arg-type]
            pass
    with pytest.raises(InputError, match="settings"):
        async with ReadOnly.opened(tmp_path / "chat.sqlite", {"tail": (1, 2)}):  # type: ignore[arg-type]
            pass
    assert not (tmp_path / "chat.sqlite").exists()


async def test_an_agent_recording_its_run_needs_a_history(open_history: Opener) -> None:
    async with open_history() as run:
        reader = ReadOnly(run.history.store)
        ThreadHistory(reader, "t", record=False)  # reading only: a ReadOnly will do
        with pytest.raises(ConfigurationError, match="record=False"):
            ThreadHistory(reader, "t")
