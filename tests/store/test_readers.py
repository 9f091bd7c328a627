"""Readers never wait on writers (SQLite): a view, a zoom and a search are read from the last
commit on a connection of their own while a lane's write transaction is held."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from history import History, HistorySettings, search, view, zoom
from history.store._adapter import Transaction
from history.store.sqlite import SQLiteStore

from ..conftest import exchange

pytestmark = pytest.mark.anyio


def block(seconds: float) -> None:
    """Hold the calling thread (the writer's, inside its transaction)."""
    time.sleep(seconds)


HELD = 1.0
"""Seconds the write transaction is held."""


@pytest.mark.slow
async def test_reads_are_served_while_a_write_transaction_is_held(tmp_path: Path) -> None:
    path = str(tmp_path / "readers.sqlite")
    settings = HistorySettings(summarizer="echo", tail=(100, 200))
    async with History(settings, store=path) as history:
        for m in exchange([f"the venue for day {k} is booked" for k in range(12)]):
            await history.message_created(m)
        await history.wait()
        store = history.store
        assert isinstance(store, SQLiteStore)
        expected = await view(history, "t")

        async def hold(tx: Transaction) -> None:
            await tx.execute("describe", thread="t", title="held", settings=None)
            held_at.append(time.perf_counter())
            block(HELD)  # the writer's thread holds its transaction open

        held_at: list[float] = []
        took: list[float] = []
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: store._sql.run(hold, mode="write"))
            await anyio.sleep(0.2)
            assert held_at  # the write transaction is open
            started = time.perf_counter()
            seen = await view(history, "t")
            await zoom(history, "t", "0+1")
            found = await search(history, "t", "venue")
            took.append(time.perf_counter() - started)
        assert seen == expected and found
        assert took[0] < HELD / 2
        assert (await store.about("t"))[0].title == "held"  # the write went through after
