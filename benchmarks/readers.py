"""Readers beside writers: how long `view()` takes, and how late the event loop runs, while
other threads are written and processed, against the same figures with no writer.

A lag monitor is a task that sleeps 1 ms again and again and records how late it wakes: what
another request of the same process (a web backend's) would wait while the lanes process. The
writers are `writers` threads, each sent its messages one after another through
`message_created` (offline `echo` summarizer), while one reader builds the view of a thread
stored before.
"""

from __future__ import annotations

import gc
import logging
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import anyio
import anyio.lowlevel

from history import view
from history.contract import Message
from history.plugin import History
from history.settings import HistorySettings

from .sections import table
from .targets import Target

log = logging.getLogger(__name__)

VIEW_P99 = 0.050
"""The slowest `view()` but one in a hundred, in seconds, while threads are written."""
STALL = 0.020
"""The longest the event loop may run late, in seconds, while lanes process."""
TICK = 0.001


@dataclass(frozen=True, kw_only=True)
class Figures:
    """One phase: the reader's view times and the event loop's lateness."""

    writers: int
    views: int
    median: float
    p99: float
    """Seconds: the view time that 99 in 100 are within."""
    stall: float
    """Seconds: the longest the lag monitor woke late."""
    collection: float = 0.0
    """Seconds: CPython's longest full (generation 2) garbage collection meanwhile, which
    stops every thread of the process."""


@dataclass(frozen=True, kw_only=True)
class Readers:
    budget: int | None
    """The prompt budget the threads were built with (`for_budget`); None: the defaults."""
    alone: Figures
    busy: Figures
    objects: int = 0
    """Objects the garbage collector tracked when the thread was first read (what a full
    collection walks)."""


class Collections:
    """Times CPython's full garbage collections while it is entered (`gc.callbacks`)."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._started = 0.0

    def _seen(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.longest = max(self.longest, time.perf_counter() - self._started)

    def __enter__(self) -> Collections:
        gc.callbacks.append(self._seen)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._seen)


class LagMonitor:
    """Sleeps `TICK` again and again until cancelled; `worst` is the latest it woke."""

    def __init__(self) -> None:
        self.worst = 0.0

    async def run(self) -> None:
        while True:
            started = time.perf_counter()
            await anyio.sleep(TICK)
            self.worst = max(self.worst, time.perf_counter() - started - TICK)


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _thread(messages: Sequence[Message], thread: str) -> list[Message]:
    return [replace(m, id=f"{thread}-{k}", thread=thread) for k, m in enumerate(messages)]


async def _phase(
    history: History, reader: str, writes: Sequence[Sequence[Message]], *, views: int
) -> Figures:
    """Time `views` views of `reader` (or as many as the writers leave time for, at least
    `views`) while `writes` are sent, each list by a task of its own."""
    monitor = LagMonitor()
    times: list[float] = []
    done = anyio.Event()

    async def write(messages: Sequence[Message]) -> None:
        for m in messages:
            await history.message_created(m)

    async def writing() -> None:
        async with anyio.create_task_group() as writers:
            for messages in writes:
                writers.start_soon(write, messages)
        await history.wait()
        done.set()

    with Collections() as collections:
        async with anyio.create_task_group() as group:
            group.start_soon(monitor.run)
            group.start_soon(writing)
            while len(times) < views or not done.is_set():
                started = time.perf_counter()
                await view(history, reader)
                times.append(time.perf_counter() - started)
                if not writes and len(times) >= views:
                    break
                await anyio.lowlevel.checkpoint()
            group.cancel_scope.cancel()
    return Figures(
        writers=len(writes),
        views=len(times),
        median=statistics.median(times),
        p99=percentile(times, 0.99),
        stall=monitor.worst,
        collection=collections.longest,
    )


async def measure(
    messages: Sequence[Message],
    folder: Path,
    *,
    stored: int,
    writers: int,
    per_writer: int,
    views: int,
    budget: int | None = None,
) -> Readers:
    """A thread of `stored` messages is read `views` times alone, then while `writers`
    threads are sent `per_writer` messages each (the first of `messages`, each thread its own
    copies)."""
    settings = HistorySettings(summarizer="echo")
    if budget is not None:
        settings = HistorySettings.for_budget(budget, summarizer="echo")
    path = folder / f"readers-{budget or 'defaults'}.sqlite"
    log.info("readers beside %d writers (budget %s)", writers, budget)
    async with History(settings, store=str(path)) as history:
        for m in _thread(messages[:stored], "read"):
            await history.message_created(m)
        await history.wait()
        objects = len(gc.get_objects())
        alone = await _phase(history, "read", [], views=views)
        writes = [_thread(messages[:per_writer], f"write-{k}") for k in range(writers)]
        busy = await _phase(history, "read", writes, views=views)
    return Readers(budget=budget, alone=alone, busy=busy, objects=objects)


def section(found: Sequence[Readers]) -> list[str]:
    if not found:
        return []
    out = [
        "## Readers beside writers",
        "",
        "`view()` of a stored thread, built again and again, alone and while other threads are "
        "sent messages one after another (each thread by a task of its own, the offline `echo` "
        "summarizer); the stall is how late a task sleeping 1 ms woke at worst (what another "
        "request of the process waits), beside CPython's longest full garbage collection "
        "meanwhile, which stops every thread of the process. One SQLite file.",
        "",
    ]
    header = [
        "budget",
        "writers",
        "views",
        "view median ms",
        "view p99 ms",
        "longest stall ms",
        "longest full GC ms",
    ]
    rows = [
        [
            "defaults" if r.budget is None else f"{r.budget:,}",
            f.writers,
            f.views,
            f"{f.median * 1000:.1f}",
            f"{f.p99 * 1000:.1f}",
            f"{f.stall * 1000:.1f}",
            f"{f.collection * 1000:.1f}",
        ]
        for r in found
        for f in (r.alone, r.busy)
    ]
    return out + table(header, rows)


def target(found: Sequence[Readers]) -> Target:
    busy = [r.busy for r in found]
    longest = max((f.collection for f in busy), default=0.0)
    objects = max((r.objects for r in found), default=0)
    numbers = "; ".join(
        f"{'defaults' if r.budget is None else r.budget}: p99 {r.busy.p99 * 1000:.0f} ms "
        f"(alone {r.alone.p99 * 1000:.0f}), stall {r.busy.stall * 1000:.0f} ms"
        for r in found
    )
    return Target(
        goal=f"view() p99 at most {VIEW_P99 * 1000:.0f} ms while threads write, and the event "
        f"loop never {STALL * 1000:.0f} ms late while lanes process",
        met=all(f.p99 <= VIEW_P99 and f.stall <= STALL for f in busy),
        numbers=numbers,
        why=(
            "the stall is CPython's full garbage collection: a generation-2 pass walks every "
            f"object of the process ({objects:,} here, nearly all made by importing pydantic-ai "
            "and its providers' SDKs) and stops every thread while it runs, "
            f"{longest * 1000:.0f} ms at worst; the plugin cannot shorten it. An app can: "
            "`gc.freeze()` once it has started moves what start-up made out of the collector's "
            "reach"
        ),
    )
