"""Workers sharing one store (a PostgreSQL schema, or a SQLite file on one machine): real
processes, compared with a single in-process run."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path

import anyio
import pytest

from history import Counters, Echo, History, Reply, Task
from history._worker import serve

from ..stores import postgres_schema
from ..workers import (
    SETTINGS,
    behind,
    conversations,
    position,
    ready,
    shared_trace,
    single_run,
    spawn,
    stop,
    wait_until,
    worker,
    write_jsonl,
)

pytestmark = pytest.mark.slow

THREADS = (
    "alpha",
    "Alpha",
    "beta",
    "B",
    "émile",
    "zeta",
    "😀 room",
    "a b",
    "ß",
    "Ω",
    "m1",
    "m10",
    "m2",
    "_x",
    "ÿ",
    "ann",
)


@pytest.fixture(params=["postgresql", "sqlite"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A PostgreSQL schema, or a SQLite file on this machine made by the app (its schema
    written, no thread in it yet): a worker takes no path that holds no store."""
    if request.param == "sqlite":
        path = tmp_path / "shared.sqlite"
        anyio.run(made, str(path))
        yield str(path)
        return
    with postgres_schema() as url:
        yield url


async def made(path: str) -> None:
    async with History(SETTINGS, store=path, process=False):
        pass


def store_in(url: str, path: Path, log: Path) -> None:
    storer = spawn("-m", "tests.workers", "store", url, str(path), log=log)
    storer.wait(timeout=120)
    assert storer.returncode == 0, log.read_text()


def test_four_workers_process_every_thread_once_as_a_single_run_would(
    shared: str, tmp_path: Path
) -> None:
    messages = conversations(THREADS, 24)
    parts = [write_jsonl(tmp_path / f"part{k}.jsonl", messages[k::3]) for k in range(3)]
    logs = [tmp_path / f"worker{k}.log" for k in range(4)]
    # The workers start together on a store with no thread yet (on PostgreSQL, an empty
    # database: they race to create the tables). Each takes two threads at a time, so the
    # threads spread over the workers.
    workers = [worker(shared, log, "--threads", "2") for log in logs]
    try:
        for process, log in zip(workers, logs, strict=True):
            ready(process, log)
        storers = [
            spawn(
                "-m", "tests.workers", "store", shared, str(part), log=tmp_path / f"{part.stem}.log"
            )
            for part in parts
        ]
        for storer, part in zip(storers, parts, strict=True):
            storer.wait(timeout=120)
            assert storer.returncode == 0, (tmp_path / f"{part.stem}.log").read_text()
        wait_until(lambda: not behind(shared))
        counters = [stop(process, log) for process, log in zip(workers, logs, strict=True)]
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
                process.wait()

    reference = single_run(shared)
    assert [o["thread"] for o in reference["outlines"]] == sorted(THREADS)
    assert sum(len(o["lines"]) > 0 for o in reference["outlines"]) == len(THREADS)
    assert max(s["level"] for s in reference["summaries"]) >= 2 and reference["asks"]
    assert shared_trace(shared) == reference
    # Every message was committed by exactly one worker, and every ask once.
    assert sum(c["processed"] for c in counters) == len(messages)
    assert sum(c["asks"] for c in counters) == len(reference["asks"])
    assert all(c["processed"] > 0 for c in counters), counters


def test_a_worker_killed_mid_batch_leaves_its_threads_to_another(
    shared: str, tmp_path: Path
) -> None:
    threads = ("k1", "k2")
    messages = conversations(threads, 30, seed=11)
    store_in(shared, write_jsonl(tmp_path / "all.jsonl", messages), tmp_path / "store.log")
    slow_log, fast_log = tmp_path / "slow.log", tmp_path / "fast.log"
    slow = spawn("-m", "tests.workers", "slow", shared, log=slow_log)
    try:
        wait_until(lambda: min(position(shared, t) for t in threads) >= 4)
        slow.kill()
        slow.wait(timeout=30)
    finally:
        if slow.poll() is None:
            slow.kill()
            slow.wait()
    left = {t: position(shared, t) for t in threads}
    assert all(4 <= p < 29 for p in left.values()), (left, slow_log.read_text())
    assert behind(shared) == list(threads)

    fast = worker(shared, fast_log)
    try:
        ready(fast, fast_log)
        wait_until(lambda: not behind(shared))
        counters = stop(fast, fast_log)
    finally:
        if fast.poll() is None:
            fast.kill()
            fast.wait()
    assert counters["processed"] == sum(29 - p for p in left.values())
    assert shared_trace(shared) == single_run(shared)


class Held:
    """Echo whose replies wait until they are released."""

    name = "echo"

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.released = anyio.Event()
        self.held: set[str] = set()
        """The threads whose replies are held now."""

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.asked.set()
        self.held.add(task.thread)
        await self.released.wait()
        self.held.discard(task.thread)
        return await Echo().reply(task, prompts, answers)


async def stop_serving(
    database: str, *, signals: int, grace: float, release: bool
) -> tuple[Counters, int]:
    """Serve a stored thread, signal while a reply is held; the counters and the position."""
    async with History(SETTINGS, store=database, process=False) as storing:
        for m in conversations(("t",), 12):
            await storing.message_created(m)
    model = Held()
    history = History(SETTINGS, store=database, model=model, process=False)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(partial(serve, history, poll=0.01, grace=grace))
            await model.asked.wait()
            for _ in range(signals):
                os.kill(os.getpid(), signal.SIGTERM)
            if release:
                await anyio.sleep(0.1)
                model.released.set()
    async with History(SETTINGS, store=database, process=False) as after:
        outline = await after.outline("t")
    assert outline is not None
    return history.counters, outline.position


@pytest.mark.anyio
async def test_a_stopped_worker_finishes_its_batches_first(database: str) -> None:
    counters, position = await stop_serving(database, signals=1, grace=10, release=True)
    assert (counters.processed, position) == (12, 11)


@pytest.mark.anyio
@pytest.mark.parametrize(("signals", "grace"), [(2, 10.0), (1, 0.1)], ids=["twice", "grace"])
async def test_a_second_signal_or_the_end_of_the_grace_stops_a_worker_at_once(
    database: str, signals: int, grace: float
) -> None:
    counters, position = await stop_serving(database, signals=signals, grace=grace, release=False)
    # What was committed before the held reply stays; the batch that waited committed nothing.
    assert 0 < counters.processed == position + 1 < 12


@pytest.mark.anyio
async def test_a_worker_works_on_no_more_threads_at_once_than_it_may(database: str) -> None:
    async with History(SETTINGS, store=database, process=False) as storing:
        for m in conversations(("a", "b", "c", "d", "e"), 12):
            await storing.message_created(m)
    model = Held()
    history = History(SETTINGS, store=database, model=model, process=False)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(partial(serve, history, poll=0.01, threads=2))
            await model.asked.wait()
            await anyio.sleep(0.3)  # thirty looks for work, with three threads left behind
            held = set(model.held)
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
    assert len(held) == 2
