"""A summarizer that fails never loses a message, never half-writes a batch, never stalls."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from history import Echo, Message, Scripted
from history._trace import snapshot
from history.contract import Reply, Task
from history.summarizer import Summarizer

from ..conftest import Opener, PluginOptions, Settings, message

pytestmark = pytest.mark.anyio


class Flaky:
    """Answers like `inner`, but each request first fails (raises or hangs) a few times."""

    def __init__(self, inner: Summarizer, *, seed: int, most: int = 3) -> None:
        self.name = inner.name
        self.inner = inner
        self.random = random.Random(seed)
        self.most = most
        self.failures: Counter[tuple[str, ...]] = Counter()
        self.answered: Counter[tuple[str, ...]] = Counter()

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        key = tuple(prompts)
        if self.failures[key] < self.most and self.random.random() < 0.5:
            self.failures[key] += 1
            if self.random.random() < 0.5:
                await anyio.sleep(10)  # past the timeout
            raise RuntimeError("the provider is down")
        self.answered[key] += 1
        return await self.inner.reply(task, prompts, answers)


def conversation(n: int, *, thread: str = "t") -> list[Message]:
    texts = [f"{k}: " + ("details " * (k % 7) * 12 or "ok") for k in range(n)]
    return [
        message(k, text, thread=thread, author="Ana" if k % 2 else "north", step=k % 9 == 8)
        for k, text in enumerate(texts)
    ]


async def run_trace(
    open_history: Opener, model: Summarizer, messages: list[Message]
) -> dict[str, Any]:
    plugin: PluginOptions = {"timeout": 0.02, "pause": 0.0}
    settings: Settings = {"line": 96, "tail": (60, 120), "outline": (300, 600), "kept": 2}
    async with open_history(model=model, plugin=plugin, **settings) as run:
        for m in messages:
            await run.history.message_created(m)
            await run.history.wait()
        return await snapshot(run.history, run.asks)


@pytest.mark.slow
@pytest.mark.parametrize("inner", [Echo, Scripted], ids=["echo", "scripted"])
async def test_failure_timing_does_not_change_the_trace(
    open_history: Opener, tmp_path: Path, inner: type[Summarizer]
) -> None:
    messages = conversation(60)
    steady = await run_trace(open_history, inner(), messages)
    flaky = Flaky(inner(), seed=7)
    shaky = await run_trace(
        lambda **kw: open_history(**kw, store=tmp_path / "shaky.sqlite"), flaky, messages
    )
    assert sum(flaky.failures.values()) > 10  # it really failed, raising and hanging
    assert shaky == steady
    assert max(flaky.answered.values()) == 1  # an answer received is never asked again
    assert steady["asks"] and any(o["lines"] for o in steady["outlines"])


class Broken:
    name = "broken"

    def __init__(self) -> None:
        self.calls = 0

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.calls += 1
        raise RuntimeError("always down")


async def test_an_ask_that_keeps_failing_falls_back_to_a_cut(open_history: Opener) -> None:
    broken = Broken()
    long = "word " * 200
    async with open_history(model=broken, tail=(1, 2), kept=1) as run:
        await run.send(message(0, long), message(1, "ok"), message(2, "later"))
        outline = await run.history.outline("t")
        assert outline is not None
        nodes = await run.history.store.summaries()
        counters = run.history.counters
    # Message 0's line is asked 5 times, then cut; the merge of it with message 1's line fails
    # once more, which opens the breaker: it falls back at once (SPEC section 5, version 3).
    assert broken.calls == 6 and counters.failures == 6 and counters.fallbacks == 2
    assert outline.position == 2 and outline.boundary == 2  # the thread was not stalled
    expected = ("Ana → north: " + long.strip()).encode()[:509].decode().rstrip() + "…"
    assert nodes[0].text == expected
    assert [(a.level, a.outcome, a.answers) for a in run.asks] == [
        (0, "fallback", ()),
        (1, "fallback", ()),
    ]


class OnceDown:
    """Fails the first request for message 2's line once, then answers like `scripted`."""

    name = "scripted"

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.down = True

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.calls[prompts[0]] += 1
        if task.index == 2 and self.down:
            self.down = False
            raise RuntimeError("blip")
        return await Scripted().reply(task, prompts, answers)


@pytest.mark.slow
async def test_a_failed_batch_commits_nothing_and_is_retried_when_asked(
    open_history: Opener,
) -> None:
    model = OnceDown()
    long = "word " * 200
    plugin: PluginOptions = {"pause": 3600.0, "max_pause": 3600.0}
    async with open_history(model=model, plugin=plugin, tail=(1, 2), kept=1) as run:
        # Messages 0..2 leave in one batch when message 3 arrives.
        for k in range(3):
            await run.send(message(k, long))
        await run.history.message_created(message(3, long))
        with anyio.move_on_after(0.3):
            await run.history.wait()
        outline = await run.history.outline("t")
        assert outline is not None
        assert outline.position == 2  # message 3's batch failed: nothing of it committed
        assert {(s.level, s.index) for s in await run.history.store.summaries()} == {
            (0, 0),
            (0, 1),
            (1, 0),
        }
        run.history.retry("t")
        with anyio.fail_after(5):
            await run.history.wait()
        outline = await run.history.outline("t")
        assert outline is not None
    assert outline.position == 3 and outline.boundary == 3
    assert all(count == 1 for prompt, count in model.calls.items() if "message 2" not in prompt)


async def test_a_replay_that_refuses_the_model_leaves_the_thread_waiting(
    open_history: Opener,
) -> None:
    from history import Replay

    refusing = Replay(None, [], name="scripted", refuse_misses=True)
    long = "word " * 200
    async with open_history(model=refusing, tail=(1, 2), kept=1) as run:
        with anyio.fail_after(5):
            await run.send(message(0, long), message(1, "ok"))
        outline = await run.history.outline("t")
        assert outline is not None
        counters = run.history.counters
    assert outline.position == 0  # message 1's batch needed the model: nothing of it committed
    assert counters.refused == 1 and counters.fallbacks == 0 and counters.asks == 0


@pytest.mark.parametrize(
    "plugin",
    [{"concurrency": 0}, {"concurrency": True}, {"timeout": 0}, {"pause": 5, "max_pause": 1}],
)
def test_plugin_limits_that_cannot_work_are_refused(plugin: PluginOptions) -> None:
    from history import ConfigurationError, History, HistorySettings

    with pytest.raises(ConfigurationError):
        History(HistorySettings(summarizer="echo"), store=":memory:", **plugin)


async def test_a_failed_open_closes_the_store(tmp_path: Path) -> None:
    from history import History, HistorySettings, StoreError
    from history.store.sqlite import SQLiteStore

    class Failing(SQLiteStore):
        async def behind(self) -> list[str]:
            raise StoreError("the disk is gone")

    store = Failing(str(tmp_path / "h.sqlite"))
    with pytest.raises(StoreError, match="disk is gone"):
        async with History(HistorySettings(summarizer="echo"), store=store):
            pass
    assert store._sql.closed


class FailsOnceWhenLet:
    """Scripted, but its first request waits until let go, then fails."""

    name = "scripted"

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.let_go = anyio.Event()
        self.failed = False

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        if not self.failed:
            self.asked.set()
            await self.let_go.wait()
            self.failed = True
            raise RuntimeError("down for a moment")
        return await Scripted().reply(task, prompts, answers)


async def test_a_retry_asked_while_the_batch_runs_is_not_lost(tmp_path: Path) -> None:
    """`retry()` while a thread's batch is still in flight (so not yet asleep to be woken):
    the batch that then fails is tried again at once, not after its pause of a minute."""
    from history import History, HistorySettings

    model = FailsOnceWhenLet()
    settings = HistorySettings(summarizer="scripted", tail=(25, 50), line=64)
    async with History(settings, store=tmp_path / "h.sqlite", model=model, pause=60.0) as h:
        for n in range(8):
            await h.message_created(message(n, f"point {n}: " + "the estimate moved " * 4))
        with anyio.fail_after(10):
            await model.asked.wait()
        h.retry()
        model.let_go.set()
        with anyio.fail_after(10):
            await h.wait()
    assert model.failed
