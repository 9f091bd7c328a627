"""Erase wins: a batch in flight for an erased thread commits nothing, even into a new thread."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from history import Scripted
from history.contract import Reply, Task

from ..conftest import Opener, message

pytestmark = pytest.mark.anyio


class Gate:
    """Scripted, but each request waits until the gate opens."""

    name = "scripted"

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.open = anyio.Event()

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.asked.set()
        await self.open.wait()
        return await Scripted().reply(task, prompts, answers)


@pytest.mark.parametrize("reuse_id", [False, True], ids=["erased", "erased-then-reused"])
async def test_an_erase_that_races_a_batch_wins(
    open_history: Opener, database: str, reuse_id: bool
) -> None:
    gate = Gate()
    long = "secret plan " * 60
    async with open_history(model=gate, tail=(1, 2), kept=1, store=database) as run:
        for k in range(3):
            await run.history.message_created(message(k, long))
        with anyio.fail_after(5):
            await gate.asked.wait()  # a batch of thread t is asking the model now
        assert await run.history.thread_deleted("t")
        if reuse_id:
            await run.history.message_created(message(0, "a new start", thread="t"))
        gate.open.set()
        with anyio.fail_after(5):
            await run.history.wait()
        summaries = await run.history.store.summaries()
        outline = await run.history.outline("t")
        calls = await run.history.store.calls()
    assert summaries == [] and calls == [] and run.asks == []
    if reuse_id:
        assert outline is not None and [t.id for t in outline.tail] == ["t-0"]
        assert outline.boundary == 0 and outline.lines == []
    else:
        assert outline is None


async def test_an_erase_while_the_worker_reads_its_pending_messages_wins(tmp_path: Path) -> None:
    from history import History, HistorySettings, Stored
    from history.store.sqlite import SQLiteStore

    class Slow(SQLiteStore):
        hold: anyio.Event | None = None
        reading = anyio.Event()

        async def messages_after(self, thread: str, after: int, limit: int) -> list[Stored]:
            if self.hold is not None:
                self.reading.set()
                await self.hold.wait()
            return await super().messages_after(thread, after, limit)

    store = Slow(str(tmp_path / "h.sqlite"))
    async with History(HistorySettings(summarizer="echo"), store=store) as history:
        for k in range(3):
            await history.message_created(message(k, f"old {k}"))
        await history.wait()
        store.hold = anyio.Event()
        # Stored past the plugin, so that processing the next message reads it from the store.
        await store.add(message(3, "old 3"), 3)
        await history.message_created(message(4, "old 4"))
        with anyio.fail_after(5):
            await store.reading.wait()  # the worker is reading what is pending
        await history.thread_deleted("t")
        await history.message_created(message(0, "a new start"))
        hold, store.hold = store.hold, None
        hold.set()
        with anyio.fail_after(5):
            await history.wait()
        outline = await history.outline("t")
    assert outline is not None and [t.id for t in outline.tail] == ["t-0"]
    assert outline.position == 0
