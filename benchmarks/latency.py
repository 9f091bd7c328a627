"""Latency under a slow summarizer: one that sleeps on every call, as a remote model would.

- How long a cut takes: from handing over the message whose arrival cuts the tail until its
  processing is committed, on one thread.
- Throughput over many threads at once: a thread asks one line at a time, so one thread makes
  at most `1 / delay` calls a second; more threads make more calls at once, up to the plugin's
  concurrency limit.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import anyio

from history.contract import Ask, Message, Reply, Task
from history.plugin import History
from history.settings import HistorySettings

from .corpora import START
from .synthetic import paragraph

CONCURRENCY = 8
"""The plugin's default limit on summarizer calls in flight."""


class Sleepy:
    """A summarizer that takes `delay` seconds to answer with a short line."""

    name = "sleepy"

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        await anyio.sleep(self.delay)
        return Reply(text=f"line {task.level}:{task.index}")


@dataclass(frozen=True, kw_only=True)
class Cuts:
    delay: float
    count: int
    asks: float
    """Mean summarizer calls per cut."""
    median: float
    """Seconds from handing over the message to its cut being committed."""
    longest: float


@dataclass(frozen=True, kw_only=True)
class Load:
    threads: int
    messages: int
    asks: int
    seconds: float

    @property
    def asks_per_second(self) -> float:
        return self.asks / self.seconds

    def bound(self, delay: float) -> float:
        """The most calls a second the concurrency limit allows."""
        return min(self.threads, CONCURRENCY) / delay


def settings() -> HistorySettings:
    """A small tail, so that messages leave it often; every message is over a line."""
    return HistorySettings(summarizer="echo", tail=(300, 600), kept=2)


def messages(thread: str, count: int) -> list[Message]:
    import random

    rng = random.Random(thread)
    return [
        Message(
            id=f"{thread}-{k}",
            thread=thread,
            author="Ana" if k % 2 else "assistant",
            text=paragraph(rng, 8, 10),
            at=START + timedelta(minutes=k),
        )
        for k in range(count)
    ]


async def cuts(count: int, folder: Path, *, delay: float) -> Cuts:
    asks: list[Ask] = []
    durations, per_cut = [], []
    history = History(
        settings(), store=folder / "cuts.sqlite", model=Sleepy(delay), on_ask=asks.append
    )
    async with history:
        for m in messages("cuts", count):
            before = len(asks)
            started = time.perf_counter()
            await history.message_created(m)
            await history.wait()
            if len(asks) > before:
                durations.append(time.perf_counter() - started)
                per_cut.append(len(asks) - before)
    return Cuts(
        delay=delay,
        count=len(durations),
        asks=statistics.mean(per_cut) if per_cut else 0.0,
        median=statistics.median(durations) if durations else 0.0,
        longest=max(durations, default=0.0),
    )


async def load(threads: int, per_thread: int, folder: Path, *, delay: float) -> Load:
    asks: list[Ask] = []
    history = History(
        settings(),
        store=folder / f"load-{threads}.sqlite",
        model=Sleepy(delay),
        on_ask=asks.append,
        concurrency=CONCURRENCY,
    )
    batches = [messages(f"load{t}", per_thread) for t in range(threads)]
    async with history:
        started = time.perf_counter()
        for k in range(per_thread):
            for batch in batches:
                await history.message_created(batch[k])
        await history.wait()
        seconds = time.perf_counter() - started
    return Load(threads=threads, messages=threads * per_thread, asks=len(asks), seconds=seconds)
