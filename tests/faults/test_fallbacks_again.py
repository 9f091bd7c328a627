"""Fallback lines asked again on their own once the summarizer answers (`history._again`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from history import History, HistorySettings, Scripted, breaker
from history import _again as again
from history._generations import tree
from history.contract import NodeKey, Reply, Task

from ..conftest import message

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SETTINGS = HistorySettings(summarizer="scripted", tail=(1, 2), kept=1, line=64)


class Returning:
    """Down until `up` is set; then answers like `scripted`, except that a request whose input
    holds `hang` never ends."""

    name = "scripted"

    def __init__(self, hang: str | None = None, *, refuse: str | None = None) -> None:
        self.up = False
        self.hang, self.refuse = hang, refuse
        self.refused = 0
        self.calls = 0
        self.hanging = anyio.Event()

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.calls += 1
        if not self.up:
            raise ConnectionError("down")
        if self.hang is not None and self.hang in task.input:
            self.hanging.set()
            await anyio.sleep_forever()
        if self.refuse is not None and self.refuse in task.input:
            self.refused += 1
            raise ConnectionError("not this one")
        return await Scripted().reply(task, prompts, answers)


async def fallback_threads(history: History, threads: str) -> None:
    """Messages to `threads` while the summarizer is down: their lines fall back."""
    for thread in threads:
        for k in range(4):
            await history.message_created(message(k, f"{thread}x{k} " * 20, thread=thread))
    await history.wait()
    assert history.health().state == "open" and history.counters.fallbacks > 0


async def answer_again(history: History, returning: Returning) -> None:
    """The summarizer answers again: a message to thread `a` sends the probe that closes it."""
    returning.up = True
    await anyio.sleep(0.2)  # past the cool-down
    k = 4
    while history.health().state != "closed":
        await history.message_created(message(k, f"ax{k} " * 20, thread="a"))
        await history.wait()
        k += 1
        await anyio.sleep(0.05)


async def fallbacks(history: History, thread: str) -> list[str]:
    found = await tree(history.store, thread)
    return [f"{k[1]}+{k[2]}" for k in found.nodes if found.current(k).fallback]


async def asked_again(history: History, threads: str) -> None:
    """Wait (10 s at most) until no line of `threads` is a fallback any more."""
    for _ in range(200):
        if not [t for t in threads if await fallbacks(history, t)]:
            return
        await anyio.sleep(0.05)
    raise AssertionError(f"threads {threads!r} still hold fallback lines")


async def test_fallback_lines_are_asked_again_as_a_new_generation_once_it_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(breaker, "FIRST_COOL_DOWN", 0.05)
    returning = Returning()
    async with History(
        SETTINGS, store=tmp_path / "h.sqlite", model=returning, pause=0.01, max_failures=2
    ) as history:
        await fallback_threads(history, "ab")
        before = await fallbacks(history, "b")
        counted_before = await history.store.fallbacks()
        down = returning.calls
        await anyio.sleep(0.3)  # no re-summary, no probe while it is down and nothing is asked
        assert returning.calls == down and history.counters.reasked == 0
        await answer_again(history, returning)
        await asked_again(history, "ab")
        found = await tree(history.store, "b")
        counted_after = await history.store.fallbacks()
    assert before  # thread b had fallback lines, and no message since
    # `threads` and `stats` count them in one read, each line as its newest generation reads.
    assert counted_before["b"] == len(before) and counted_after == {}
    assert down <= 2 + 4  # the failures that opened the breaker, then probes only
    leaf = NodeKey("", 0, 0)
    assert found.text(leaf, 0) is not None and found.text(leaf, 0).fallback  # type: ignore[union-attr]
    again = found.current(leaf)
    assert again.generation >= 1 and again.text == "S0" and not again.fallback
    assert history.counters.reasked >= len(before) and history.counters.reask_failures == 0


async def test_a_thread_without_fallbacks_asks_nothing_extra(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    for opening in range(2):  # the second opening looks at the threads it catches up
        returning = Returning()
        returning.up = True
        async with History(SETTINGS, store=db, model=returning, process=False) as history:
            for k in range(4):
                await history.message_created(message(10 * opening + k, f"x{k} " * 20))
        async with History(SETTINGS, store=db, model=returning) as history:
            for k in range(4, 8):
                await history.message_created(message(10 * opening + k, f"y{k} " * 20))
            await history.wait()
            await anyio.sleep(0.1)
        assert returning.calls == history.counters.requests > 0
        assert history.counters.reasked == history.counters.reask_failures == 0


async def test_fallbacks_from_an_earlier_run_are_asked_again_after_the_first_answer(
    tmp_path: Path,
) -> None:
    db = tmp_path / "h.sqlite"
    returning = Returning()
    async with History(SETTINGS, store=db, model=returning, pause=0.01, max_failures=2) as history:
        await fallback_threads(history, "b")
        for k in range(4, 6):  # stored, not processed: thread b is behind at the next opening
            await history.store.add(message(k, f"bx{k} " * 20, thread="b"), 60)
    returning.up = True
    async with History(SETTINGS, store=db, model=returning) as history:
        with anyio.fail_after(10):
            await history.wait()
        await asked_again(history, "b")
    assert history.counters.reasked > 0


async def test_leaving_while_a_re_summary_hangs_returns_within_close_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(breaker, "FIRST_COOL_DOWN", 0.05)
    returning = Returning(hang="bx")
    async with History(
        SETTINGS,
        store=tmp_path / "h.sqlite",
        model=returning,
        pause=0.01,
        max_failures=2,
        close_timeout=1.0,
    ) as history:
        await fallback_threads(history, "ab")
        await answer_again(history, returning)
        with anyio.fail_after(5):
            await returning.hanging.wait()  # thread b's re-summary is under way, and hangs
        with anyio.fail_after(1):
            await history.wait()  # not waited for
        left = anyio.current_time()
    assert anyio.current_time() - left < 1.0 + 2
    assert history.counters.reask_failures == 0


async def test_a_re_summary_that_fails_is_logged_counted_and_tried_a_few_times_at_most(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(breaker, "FIRST_COOL_DOWN", 0.05)
    returning = Returning(refuse="bx")
    async with History(
        SETTINGS, store=tmp_path / "h.sqlite", model=returning, pause=0.01, max_failures=2
    ) as history:
        await fallback_threads(history, "ab")
        await answer_again(history, returning)
        for k in range(20, 30):  # more answers: each may let thread b try again
            await history.message_created(message(k, f"ax{k} " * 20, thread="a"))
            await history.wait()
            await anyio.sleep(0.05)
        left = await fallbacks(history, "b")
        await asked_again(history, "a")
    assert left and history.counters.reask_failures == again.TRIES == returning.refused
    assert "not this one" not in caplog.text and "bx" not in caplog.text
    assert caplog.text.count("were not asked again (SummarizerError; ") == again.TRIES
