"""Erase wins: a batch in flight for an erased thread commits nothing, even into a new thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from history import Scripted
from history.summarizer import Reply, Task

from .conftest import message

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
    open_history: Any, database: str, reuse_id: bool
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
