"""A summarizer that is down: its lines fall back, marked as fallbacks, on every store."""

from __future__ import annotations

import io
from collections.abc import Sequence

import pytest

from history import History, HistorySettings
from history.carry import export, load
from history.contract import Reply, Task
from history.store import open_store

from .conftest import message

pytestmark = pytest.mark.anyio


class Broken:
    name = "broken"

    def __init__(self) -> None:
        self.calls = 0

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.calls += 1
        raise RuntimeError("always down")


async def test_fallback_lines_are_marked_and_carried_by_export_and_load(
    database: str,
) -> None:
    settings = HistorySettings(summarizer="scripted", tail=(1, 2), kept=1, line=64)
    long = "word " * 40
    async with History(settings, store=database, model=Broken(), pause=0.0) as history:
        for k, text in enumerate([long, "ok", "fine", "later"]):
            await history.message_created(message(k, text))
            await history.wait()
        nodes = {(n.level, n.index): n.fallback for n in await history.store.summaries()}
        out = io.StringIO()
        await export(history.store, out)
    # Message 0's line fell back; message 1's and 2's are their own text; the merge of 0 and 1
    # is too long to join and falls back too.
    assert nodes == {(0, 0): True, (0, 1): False, (1, 0): True, (0, 2): False}
    assert '"fallback":true' in out.getvalue().replace(" ", "")
    store = open_store(database)
    await store.open()
    try:
        assert await store.erase("t")
        await load(store, out.getvalue().splitlines())
        loaded = {(n.level, n.index): n.fallback for n in await store.summaries()}
    finally:
        await store.close()
    assert loaded == nodes
