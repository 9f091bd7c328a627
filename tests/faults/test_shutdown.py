"""Leaving a History is bounded, whatever the summarizer or the store does, and loses nothing;
a summarizer cannot hold the plugin past its timeout, nor raise into the app's block."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from history import History, HistorySettings, Scripted
from history.contract import Reply, Task
from history.errors import ConfigurationError, StoreError
from history.store.sqlite import SQLiteStore

from ..conftest import message

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SETTINGS = HistorySettings(summarizer="scripted", tail=(20, 40), outline=(60, 120), kept=1, line=64)


def backlog(count: int, *, thread: str = "t") -> list[Any]:
    return [
        message(k, f"message {k} of {thread}: " + "word " * 8, thread=thread) for k in range(count)
    ]


class Dead:
    name = "scripted"

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        raise ConnectionError("down")


class Hanging:
    """Never answers; with `swallow`, it catches its cancellation and goes on (with awaits)
    until `stop` is set."""

    name = "scripted"

    def __init__(self, *, swallow: bool = False, only: str | None = None) -> None:
        self.swallow, self.only = swallow, only
        self.stop = False

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        if self.only is not None and not task.thread.startswith(self.only):
            return await Scripted().reply(task, prompts, answers)
        while not self.stop:
            try:
                await anyio.sleep(0.01)
            except BaseException:
                if not self.swallow:
                    raise
        raise RuntimeError("stopped")


class Slow:
    """Answers like `scripted`, each after `seconds`."""

    name = "scripted"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        await anyio.sleep(self.seconds)
        return await Scripted().reply(task, prompts, answers)


async def tree(path: Path) -> tuple[object, ...]:
    async with History(SETTINGS, store=path) as history:
        await history.wait()
        outline = await history.outline("t")
        nodes = await history.store.summaries("t")
    assert outline is not None
    return (
        outline.position,
        outline.boundary,
        outline.lines,
        sorted((n.level, n.index, n.text, n.fallback) for n in nodes),
    )


def test_close_timeout_is_checked() -> None:
    for bad in (0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ConfigurationError, match=rf"close_timeout .*{bad!r}"):
            History(SETTINGS, store=":memory:", close_timeout=bad)


@pytest.mark.parametrize(
    "model", [Dead(), Hanging(), Hanging(swallow=True)], ids=["dead", "hanging", "swallowing"]
)
async def test_leaving_with_a_backlog_returns_within_close_timeout(
    tmp_path: Path, model: Dead | Hanging
) -> None:
    path = tmp_path / "h.sqlite"
    history = History(SETTINGS, store=path, model=model, close_timeout=1.0)
    async with history:
        for m in backlog(80):
            await history.message_created(m)
        started = anyio.current_time()
    took = anyio.current_time() - started
    if isinstance(model, Hanging):
        model.stop = True
    assert took < 1.0 + 2, f"leaving took {took:.1f}s"
    # Nothing lost: the next open (with a summarizer that answers) catches up to the tree an
    # uninterrupted run builds.
    assert await tree(path) == await uninterrupted(tmp_path)


async def test_a_block_cancelled_as_it_ends_leaves_at_once_and_loses_nothing(
    tmp_path: Path,
) -> None:
    """The block ends normally but its scope was cancelled (a server's lifespan stopped): the
    wait for work in flight is cut short, the cancellation goes on out, the scopes stay whole."""
    path = tmp_path / "h.sqlite"
    hanging = Hanging()
    with anyio.CancelScope() as outer:
        async with History(SETTINGS, store=path, model=hanging, close_timeout=30.0) as history:
            for m in backlog(80):
                await history.message_created(m)
            started = anyio.current_time()
            outer.cancel()  # no checkpoint before the block ends: the exit is what is cancelled
    hanging.stop = True
    assert outer.cancelled_caught
    assert anyio.current_time() - started < 2
    assert await tree(path) == await uninterrupted(tmp_path)


async def uninterrupted(tmp_path: Path, count: int = 80) -> tuple[object, ...]:
    """The tree of `count` messages processed by a summarizer that answers, never stopped."""
    path = tmp_path / "whole.sqlite"
    async with History(SETTINGS, store=path) as history:
        for m in backlog(count):
            await history.message_created(m)
    return await tree(path)


async def test_work_cut_off_at_close_is_redone_to_the_same_tree(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    history = History(SETTINGS, store=path, model=Slow(0.02), close_timeout=0.5)
    async with history:
        for m in backlog(80):
            await history.message_created(m)
        started = anyio.current_time()
    assert anyio.current_time() - started < 0.5 + 2
    outline = await partial(path)
    assert 0 <= outline < 79  # cut off part way: the rest was left pending
    assert await tree(path) == await uninterrupted(tmp_path)


async def partial(path: Path) -> int:
    async with History(SETTINGS, store=path, process=False) as history:
        outline = await history.outline("t")
    return -1 if outline is None else outline.position


class FullDisk(SQLiteStore):
    """A store whose commits hang (`hang`) or fail (a full disk) once `full` is set."""

    full = False
    hang = True

    async def commit(self, *args: Any, **kwargs: Any) -> bool:
        if self.full:
            if self.hang:
                await anyio.sleep_forever()
            raise StoreError("database or disk is full")
        return await super().commit(*args, **kwargs)


@pytest.mark.parametrize("hang", [True, False], ids=["commit hangs", "commit fails"])
async def test_leaving_while_the_disk_is_full_is_bounded(tmp_path: Path, hang: bool) -> None:
    store = FullDisk(str(tmp_path / "h.sqlite"))
    store.hang = hang
    history = History(SETTINGS, store=store, close_timeout=1.0)
    async with history:
        for m in backlog(10):
            await history.message_created(m)
        await history.wait()
        store.full = True
        for m in backlog(30)[10:]:
            await history.message_created(m)
        started = anyio.current_time()
    assert anyio.current_time() - started < 1.0 + 2
    assert await tree(tmp_path / "h.sqlite") == await uninterrupted(tmp_path, 30)


async def test_a_summarizer_that_swallows_its_cancellation_is_abandoned_and_holds_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Ten threads whose summarizer never ends, even when cancelled, on a limiter of two: a
    healthy thread is still processed, their asks abandoned at their timeout (counted, logged)."""
    hung = Hanging(swallow=True, only="hung")
    history = History(
        SETTINGS,
        store=tmp_path / "h.sqlite",
        model=hung,
        concurrency=2,
        timeout=0.3,
        close_timeout=1.0,
    )
    try:
        async with history:
            for k in range(10):
                for m in backlog(6, thread=f"hung{k}"):
                    await history.message_created(m)
            await anyio.sleep(0.1)  # the hung asks hold the limiter
            started = anyio.current_time()
            with anyio.fail_after(10):
                for m in backlog(6, thread="well"):
                    await history.message_created(m)
                await history.settled("well", 5)
            took = anyio.current_time() - started
    finally:
        hung.stop = True
    assert took < 3, f"the healthy thread waited {took:.1f}s"
    assert history.counters.abandoned >= 2
    abandoned = [r for r in caplog.records if "ignoring its cancellation" in r.getMessage()]
    assert len(abandoned) == history.counters.abandoned
    assert "word" not in caplog.text


@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit, GeneratorExit])
async def test_a_base_exception_a_summarizer_raises_stays_in_its_batch(
    tmp_path: Path, raised: type[BaseException]
) -> None:
    class Raising:
        name = "scripted"
        calls = 0

        async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
            Raising.calls += 1
            if Raising.calls == 1:
                raise raised()
            return await Scripted().reply(task, prompts, answers)

    async with History(SETTINGS, store=tmp_path / "h.sqlite", model=Raising(), pause=0.0) as h:
        for m in backlog(12):
            await h.message_created(m)
        await h.wait()
        outline = await h.outline("t")
    assert outline is not None and outline.position == 11
    assert h.counters.failures == 1 and h.counters.fallbacks == 0
    assert await tree(tmp_path / "h.sqlite") == await uninterrupted(tmp_path, 12)
