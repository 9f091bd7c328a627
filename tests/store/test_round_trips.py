"""Fewer round trips per message: what a thread's worker needs is not read back or written twice.

A message stored here is handed to its thread's processing instead of being read back; a run of
messages that only join the tail is committed once, with the run's last message (or the first
that writes lines), and gives the very same history as committing each on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from history import History, HistorySettings
from history import _lane as lane
from history._trace import snapshot
from history.contract import Ask, Message, Outline, Stored, Summary
from history.errors import StoreError
from history.store import Store
from history.store._changes import Change
from history.store.sqlite import SQLiteStore

from ..conftest import exchange, message
from ..stores import run_sql

pytestmark = pytest.mark.anyio

SETTINGS = HistorySettings(summarizer="scripted", tail=(40, 80), outline=(300, 600), kept=1)


class Counting(SQLiteStore):
    """A SQLite store that counts what the plugin asks of it, and fails commits on demand."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.pending_rows = 0
        self.pending_reads = 0
        self.reads = 0
        self.node_reads = 0
        """Nodes read one at a time."""
        self.nodes_reads = 0
        """Reads of several nodes at once."""
        self.commits: list[int] = []
        """The position each commit moved its outline to."""
        self.fail_lines = False
        """Fail every commit that writes lines."""
        self.fail_once = False
        """Fail the next commit."""
        self.committed = anyio.Event()

    async def messages_after(self, thread: str, after: int, limit: int) -> list[Stored]:
        found = await super().messages_after(thread, after, limit)
        self.pending_reads += 1
        self.pending_rows += len(found)
        return found

    async def summary(
        self, thread: str, level: int, index: int, *, agent: str = ""
    ) -> Summary | None:
        self.node_reads += 1
        return await super().summary(thread, level, index, agent=agent)

    async def nodes(
        self, thread: str, keys: Sequence[tuple[int, int]], *, agent: str = ""
    ) -> list[Summary]:
        self.nodes_reads += 1
        return await super().nodes(thread, keys, agent=agent)

    async def message(self, id: str) -> Stored | None:
        self.reads += 1
        return await super().message(id)

    async def commit(
        self,
        before: Outline,
        after: Outline,
        written: Sequence[Summary],
        asks: Sequence[Ask],
        model: str,
        *,
        lines_changed: bool,
        processed: Sequence[Stored],
        change: Change | None = None,
    ) -> bool:
        if (self.fail_lines and written) or self.fail_once:
            self.fail_once = False
            raise StoreError("the disk is full")
        self.commits.append(after.position)
        done = await super().commit(
            before,
            after,
            written,
            asks,
            model,
            lines_changed=lines_changed,
            processed=processed,
            change=change,
        )
        # After the commit: reads no longer queue behind a write, so one made on this signal
        # before it landed would see the store as it was.
        self.committed.set()
        return done


MESSAGES = exchange([f"point {k}: the estimate moved to {k * 7} hours" for k in range(12)])


async def _one_at_a_time(path: Path, settings: HistorySettings = SETTINGS) -> dict[str, Any]:
    async with History(settings, store=path, pause=0.0) as history:
        for m in MESSAGES:
            await history.message_created(m)
            await history.wait()
        return await snapshot(history, [])


async def _stored_then_processed(store: Counting) -> dict[str, Any]:
    async with History(SETTINGS, store=Counting(store.url), process=False) as history:
        for m in MESSAGES:
            await history.message_created(m)
    async with History(SETTINGS, store=store, pause=0.0) as history:  # catches up on opening
        await history.wait()
        return await snapshot(history, [])


async def test_a_thread_that_caught_up_reads_nothing_back(tmp_path: Path) -> None:
    store = Counting(str(tmp_path / "h.sqlite"))
    async with History(SETTINGS, store=store, pause=0.0) as history:
        for m in MESSAGES:
            await history.message_created(m)
            await history.wait()
        outline = await history.outline("t")
    assert outline is not None and outline.position == len(MESSAGES) - 1 and outline.lines
    # Every message stored was handed over: none is read back, nor looked for.
    assert (store.pending_reads, store.pending_rows, store.reads) == (0, 0, 0)


QUIET = HistorySettings(summarizer="scripted", tail=(4_000, 8_000))
"""Budgets the messages never fill: each only joins the tail."""


async def test_messages_handed_over_one_by_one_are_committed_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lane, "TOGETHER", 5)
    monkeypatch.setattr(lane, "LINGER", 60.0)  # however slow the machine, until `wait`
    store = Counting(str(tmp_path / "h.sqlite"))
    async with History(QUIET, store=store, pause=0.0) as history:
        for m in MESSAGES:
            await history.message_created(m)
        await history.wait()
        expected = await _one_at_a_time(tmp_path / "one.sqlite", settings=QUIET)
        assert await snapshot(history, []) == expected
        assert await estimates(store) == estimates_in(MESSAGES)
    # Five at most, and what waits when the app waits.
    assert store.commits == [*range(4, len(MESSAGES) - 1, 5), len(MESSAGES) - 1]


@pytest.mark.slow
async def test_a_quiet_thread_commits_what_waits_after_a_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lane, "LINGER", 0.5)
    store = Counting(str(tmp_path / "h.sqlite"))
    async with History(QUIET, store=store, pause=0.0) as history:
        for m in MESSAGES[:3]:
            await history.message_created(m)
        with anyio.fail_after(10):
            await store.committed.wait()  # nobody waits for it
        assert store.commits == [2]
        assert await estimates(store) == estimates_in(MESSAGES[:3])


async def test_closing_commits_what_waits_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lane, "LINGER", 3_600.0)
    store = Counting(str(tmp_path / "h.sqlite"))
    with anyio.fail_after(30):
        async with History(QUIET, store=store, pause=0.0) as history:
            for m in MESSAGES:
                await history.message_created(m)
    assert store.commits == [len(MESSAGES) - 1]
    reopened = SQLiteStore(store.url)
    await reopened.open()
    try:
        outline = await reopened.outline("t")
        assert outline is not None and outline.position == len(MESSAGES) - 1
        assert await estimates(reopened) == estimates_in(MESSAGES)
    finally:
        await reopened.close()


async def test_a_thread_whose_messages_another_process_stored_commits_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lane, "LINGER", 3_600.0)
    store = Counting(str(tmp_path / "h.sqlite"))
    async with History(QUIET, store=Counting(store.url), process=False) as history:
        for m in MESSAGES:
            await history.message_created(m)
    async with History(QUIET, store=store, pause=0.0):  # catches up on opening, as a worker
        with anyio.fail_after(10):
            await store.committed.wait()  # no message of its would come to wake it
    assert store.commits == [len(MESSAGES) - 1]


async def test_a_failed_commit_of_what_waits_processes_it_again(tmp_path: Path) -> None:
    store = Counting(str(tmp_path / "h.sqlite"))
    async with History(QUIET, store=store, pause=0.0) as history:
        for m in MESSAGES:
            await history.message_created(m)
        store.fail_once = True
        await history.wait()
        expected = await _one_at_a_time(tmp_path / "one.sqlite", settings=QUIET)
        assert await snapshot(history, []) == expected
    # Read back from the store after the failure, and committed once.
    assert store.commits == [len(MESSAGES) - 1]
    assert store.pending_rows == len(MESSAGES)
    rows = run_sql(store.url, "SELECT count(*) FROM search WHERE message IS NOT NULL")
    assert rows == [(len(MESSAGES),)]


async def test_messages_that_only_join_the_tail_are_committed_together(tmp_path: Path) -> None:
    quiet = HistorySettings(summarizer="scripted", tail=(4_000, 8_000))
    store = Counting(str(tmp_path / "h.sqlite"))
    async with History(quiet, store=Counting(store.url), process=False) as history:
        for m in MESSAGES:
            await history.message_created(m)
    async with History(quiet, store=store, pause=0.0) as history:
        await history.wait()
        outline = await history.outline("t")
    assert outline is not None and outline.position == len(MESSAGES) - 1
    assert store.commits == [len(MESSAGES) - 1]


async def test_a_run_commits_where_lines_are_written_and_matches_one_at_a_time(
    tmp_path: Path,
) -> None:
    expected = await _one_at_a_time(tmp_path / "one.sqlite")
    store = Counting(str(tmp_path / "run.sqlite"))
    assert await _stored_then_processed(store) == expected
    assert expected["summaries"] and 1 < len(store.commits) < len(MESSAGES)
    assert store.commits[-1] == len(MESSAGES) - 1


async def test_a_failed_commit_keeps_the_messages_that_waited_for_it(tmp_path: Path) -> None:
    expected = await _one_at_a_time(tmp_path / "one.sqlite")
    store = Counting(str(tmp_path / "run.sqlite"))
    async with History(SETTINGS, store=Counting(store.url), process=False) as history:
        for m in MESSAGES:
            await history.message_created(m)
    store.fail_lines = True
    async with History(SETTINGS, store=store, pause=60.0) as history:
        with anyio.fail_after(10):
            await store.committed.wait()
        outline = await history.outline("t")
        # The messages before the first that writes lines are committed, as they were done.
        assert outline is not None and outline.position == store.commits[0] > 0
        assert not outline.lines
        # They are indexed for search with that commit, and nothing after them is.
        assert await estimates(store) == estimates_in(MESSAGES[: outline.position + 1])
        store.fail_lines = False
        history.retry()
        await history.wait()
        assert await snapshot(history, []) == expected
        assert await estimates(store) == estimates_in(MESSAGES)
    rows = run_sql(store.url, "SELECT count(*) FROM search WHERE message IS NOT NULL")
    assert rows == [(len(MESSAGES),)]  # each once


async def estimates(store: Store) -> set[str | None]:
    """The messages search finds for the word "estimate" (not those found beside them)."""
    return {h.message for h in await store.search("t", "estimate", 50) if h.terms}


def estimates_in(messages: Sequence[Message]) -> set[str | None]:
    return {m.id for m in messages if "estimate" in m.text}


async def test_a_fold_reads_the_parents_it_weighs_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lane, "NODE_CACHE", 2)  # nodes read from the store, not remembered
    store = Counting(str(tmp_path / "h.sqlite"))
    many = exchange([f"point {k}: the estimate moved to {k * 7} hours" for k in range(60)])
    async with History(SETTINGS, store=store, pause=0.0) as history:
        for m in many:
            await history.message_created(m)
            await history.wait()
        outline = await history.outline("t")
    assert outline is not None and any(level > 0 for level, _, _, _ in outline.lines)
    # Each step of a fold reads the parents of the pairs it weighs in one read (11 here), not
    # one read a pair (103 reads of one node here without, against 57 with).
    assert 0 < store.nodes_reads < 20 and store.node_reads + store.nodes_reads < 80


@pytest.mark.slow
async def test_the_log_is_copied_into_the_file_at_ten_thousand_pages(tmp_path: Path) -> None:
    # SQLite's default copies it at 1,000 pages (4 MiB): a page that many commits change
    # (a common word's postings) was copied once every few commits instead of once for all.
    path = tmp_path / "h.sqlite"
    async with History(QUIET, store=path, process=False) as history:
        for k in range(100):
            await history.message_created(message(k, f"part {k} " + "word " * 12_000))
        logged = path.with_name(f"{path.name}-wal").stat().st_size
    assert 5 * 2**20 < logged < 10_000 * 4096
