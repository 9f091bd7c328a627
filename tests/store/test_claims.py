"""Claims on threads across processes, the same on a SQLite file and a PostgreSQL schema: one
process at a time processes a thread, and a process that stops or dies lets its threads go once
its lease lapses. Some tests run real processes (`tests/leasing.py`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from history import History
from history.errors import StoreError
from history.store import Store
from history.store._claims import ClaimLapsedError, Claims
from history.store._sql import SQLStore

from ..conftest import message
from ..leasing import leased
from ..stores import run_sql
from ..workers import (
    SETTINGS,
    behind,
    conversations,
    position,
    shared_trace,
    single_run,
    spawn,
    wait_until,
    write_jsonl,
)

pytestmark = pytest.mark.slow

THREADS = ("alpha", "beta", "γ", "d d", "e", "f", "g")
"""Seven, so that each process stores messages of every thread."""


@asynccontextmanager
async def opened(url: str, lease: float) -> AsyncIterator[Store]:
    store = leased(url, lease)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


@pytest.mark.anyio
async def test_a_thread_is_claimed_by_one_store_at_a_time_and_renewed_while_held(
    database: str,
) -> None:
    async with opened(database, 0.3) as one, opened(database, 0.3) as other:
        async with one.claim("t") as first:
            assert first and not first.others
            await anyio.sleep(1.0)  # three leases: renewed meanwhile
            async with other.claim("t") as refused:
                assert not refused
        # Given up, and found wanted: another asked for the thread meanwhile.
        assert first.others
        async with other.claim("t") as taken:
            assert taken and taken.others  # another held it since: read it afresh
        async with one.claim("t") as again:
            assert again.others
        async with one.claim("t") as mine:
            assert mine and not mine.others
        async with one.claim("u") as held:
            await one.close()  # a store that closes gives its leases up
            async with other.claim("u") as after:
                assert held and after


@pytest.mark.anyio
async def test_a_lapsed_claim_is_taken_over_and_its_holder_commits_nothing(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stopped(self: Claims, thread: str) -> None:
        await anyio.sleep_forever()  # a process stopped (SIGSTOP) renews nothing

    async with opened(database, 0.3) as one, opened(database, 0.3) as other:
        await one.add(message(0, "hello"), 5)
        before = await one.outline("t")
        assert before is not None
        after = before.copy()
        after.position = 0
        monkeypatch.setattr(Claims, "_renewing", stopped)
        async with one.claim("t") as first:
            assert first
            async with other.claim("t") as refused:
                assert not refused
            await anyio.sleep(0.5)
            async with other.claim("t") as taken:
                assert taken
                with pytest.raises(ClaimLapsedError, match=r"'t'.*another took the thread over"):
                    await one.commit(before, after, [], [], "m", lines_changed=False, processed=[])
        assert await other.outline("t") == before  # nothing written


def _replies(process: subprocess.Popen[str], log: Path) -> int:
    out, _ = process.communicate(timeout=180)
    assert process.returncode == 0, log.read_text()
    replies: int = json.loads(out.strip().splitlines()[-1])["replies"]
    return replies


def test_three_processes_ingesting_into_one_store_ask_for_each_line_once(
    database: str, tmp_path: Path
) -> None:
    messages = conversations(THREADS, 30, seed=7)
    parts = [write_jsonl(tmp_path / f"part{k}.jsonl", messages[k::3]) for k in range(3)]
    logs = [tmp_path / f"ingest{k}.log" for k in range(3)]
    gate = tmp_path / "gate"
    gate.mkdir()
    processes = [
        spawn("-m", "tests.leasing", "ingest", database, str(part), "30", str(gate), log=log)
        for part, log in zip(parts, logs, strict=True)
    ]
    try:
        wait_until(lambda: len(list(gate.iterdir())) == 3 or any(p.poll() for p in processes))
        (gate / "go").touch()  # all three open: they store at the same time
        replies = [_replies(p, log) for p, log in zip(processes, logs, strict=True)]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert behind(database) == []
    reference = single_run(database)
    assert shared_trace(database) == reference
    calls = run_sql(database, "SELECT count(*) FROM call")
    # Every line was asked for once, by one of the processes, and recorded once: a reply for
    # each prompt of each conversation.
    assert calls == [(len(reference["asks"]),)] and len(reference["asks"]) > 50
    assert sum(replies) == sum(len(ask["prompts"]) for ask in reference["asks"])


def test_a_stopped_worker_s_threads_are_taken_over_once_its_lease_lapses(
    database: str, tmp_path: Path
) -> None:
    threads = ("k1", "k2")
    messages = conversations(threads, 30, seed=11)
    source = write_jsonl(tmp_path / "all.jsonl", messages)
    storing = spawn("-m", "tests.workers", "store", database, str(source), log=tmp_path / "s.log")
    assert storing.wait(timeout=120) == 0, (tmp_path / "s.log").read_text()
    stopped_log, taker_log = tmp_path / "stopped.log", tmp_path / "taker.log"
    stopped = spawn("-m", "tests.leasing", "slow", database, "1", log=stopped_log)
    taker: subprocess.Popen[str] | None = None
    try:
        wait_until(lambda: min(position(database, t) for t in threads) >= 4)
        stopped.send_signal(signal.SIGSTOP)
        left = {t: position(database, t) for t in threads}
        assert all(p < 29 for p in left.values()), stopped_log.read_text()
        taker = spawn("-m", "tests.leasing", "slow", database, "1", log=taker_log)
        wait_until(lambda: not behind(database))
        # The stopped worker wakes up holding an ask it may no longer commit.
        stopped.send_signal(signal.SIGCONT)
        wait_until(lambda: "claim lapsed" in stopped_log.read_text(), timeout=30)
        stopped.send_signal(signal.SIGTERM)
        taker.send_signal(signal.SIGTERM)
        taken = _replies(taker, taker_log)
        _replies(stopped, stopped_log)
    finally:
        for process in (stopped, taker):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
                process.wait()
    assert taken > 0
    assert shared_trace(database) == single_run(database)


@pytest.mark.anyio
async def test_a_thread_held_by_a_stopped_process_is_processed_once_its_claim_lapses(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stopped(self: Claims, thread: str) -> None:
        await anyio.sleep_forever()

    monkeypatch.setattr(Claims, "_renewing", stopped)
    async with opened(database, 0.4) as holder, opened(database, 0.4) as store:
        history = History(SETTINGS, store=store)
        async with holder.claim("t") as held, history:
            assert held
            stored = await history.message_created(message(0, "hello"))
            assert stored is not None
            await history.wait()  # refused: the holder is to process it
            assert (await store.outline("t")).position == -1  # type: ignore[union-attr]
            with anyio.fail_after(10):
                await history.settled("t", 0)  # looked at again once the claim lapsed


@pytest.mark.anyio
async def test_the_claims_of_a_process_that_died_on_this_host_are_taken_at_once(
    database: str,
) -> None:
    async with await anyio.open_process(["true"]) as gone:
        await gone.wait()  # its process id is no longer running
    async with opened(database, 30) as store:
        for owner, granted in (
            (f"{socket.gethostname()}/{gone.pid}/x", True),
            (f"elsewhere/{gone.pid}/x", False),
            (f"{socket.gethostname()}/{os.getpid()}/x", False),
        ):
            await anyio.to_thread.run_sync(run_sql, database, "DELETE FROM lease")
            await anyio.to_thread.run_sync(
                run_sql, database, f"INSERT INTO lease VALUES ('t', '{owner}', 1e12, 0)"
            )
            async with store.claim("t") as claim:
                assert bool(claim) is granted


@pytest.mark.anyio
async def test_a_store_closes_when_giving_up_its_claims_fails(
    database: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = leased(database, 30)
    assert isinstance(store, SQLStore)
    await store.open()

    async def broken(*args: object, **kwargs: object) -> None:
        raise StoreError("the disk is full")

    async with store.claim("t") as claim:
        assert claim
        monkeypatch.setattr(store._sql, "run", broken)
        await store.close()  # the leases lapse by themselves
    assert store._sql.closed
    assert "giving up the claims failed (the disk is full)" in caplog.text


@pytest.mark.anyio
async def test_a_claim_cancelled_once_its_lease_is_taken_gives_the_lease_up(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A History leaving cancels a claim whose take may have committed already (the driver's
    answer not yet back): the lease is given up, not left to stop the next open for a lease."""
    async with opened(database, 30) as one, opened(database, 30) as other:
        assert isinstance(one, SQLStore)
        run = one._sql.run
        taken = anyio.Event()

        async def answer_lost(*args: Any, **kwargs: Any) -> Any:
            await run(*args, **kwargs)
            taken.set()
            monkeypatch.undo()  # the give-up goes through
            await anyio.sleep_forever()

        monkeypatch.setattr(one._sql, "run", answer_lost)
        with anyio.move_on_after(5) as scope:
            async with anyio.create_task_group() as group:

                async def claiming() -> None:
                    async with one.claim("t"):
                        pytest.fail("a cancelled claim runs no block")

                group.start_soon(claiming)
                await taken.wait()
                group.cancel_scope.cancel()
        assert not scope.cancelled_caught
        async with other.claim("t") as claim:
            assert claim  # at once: not after a 30 s lease
