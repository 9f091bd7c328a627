"""Readers beside writers, small: the benchmark times `view()` alone and while threads are
written, watches the event loop, and reports both with its target."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import anyio
import pytest

from benchmarks import readers
from benchmarks.corpora import synthetic_corpus

pytestmark = pytest.mark.anyio


def hold(seconds: float) -> None:
    """Keep the event loop's thread busy, as CPU work on it does."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def test_views_are_timed_alone_and_beside_writers_with_the_event_loops_lateness(
    tmp_path: Path,
) -> None:
    messages = synthetic_corpus(60).conversations[0].messages

    found = await readers.measure(
        messages, tmp_path, stored=30, writers=3, per_writer=8, views=5, budget=4_000
    )

    assert (found.alone.writers, found.busy.writers) == (0, 3)
    assert found.alone.views == 5 and found.busy.views >= 5
    for figures in (found.alone, found.busy):
        assert 0 < figures.median <= figures.p99 and figures.stall >= 0
        assert figures.collection >= 0
    text = "\n".join(readers.section([found]))
    assert found.objects > 10_000  # pydantic-ai and the plugin are imported
    assert "longest full GC ms" in text and "| 4,000 | 3 |" in text and "| 4,000 | 0 | 5 |" in text
    target = readers.target([found])
    assert target.met is (found.busy.p99 <= readers.VIEW_P99 and found.busy.stall <= readers.STALL)


async def test_the_lag_monitor_sees_the_event_loop_held() -> None:
    monitor = readers.LagMonitor()
    async with anyio.create_task_group() as group:
        group.start_soon(monitor.run)
        await anyio.sleep(0.01)
        hold(0.05)  # the loop held, as a long CPU step would
        await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    assert monitor.worst >= 0.04


@pytest.mark.slow
def test_full_collections_are_timed_and_the_objects_they_walk_counted() -> None:
    with readers.Collections() as collections:
        kept = [[n] for n in range(200_000)]  # tracked objects for the collection to walk
        gc.collect(2)
    assert collections.longest > 0 and kept
    with readers.Collections() as young:
        gc.collect(0)  # a young collection is not a full one
    assert young.longest == 0
