"""A store near the size of what it holds: the benchmark's size section, small, and the
compact forms behind it (recorded calls packed, their model key kept once; old rows still read).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchmarks import size
from benchmarks.config import QUICK
from benchmarks.corpora import synthetic_corpus
from benchmarks.report import Results, render
from history import History, HistorySettings
from history.store import Store, open_store
from history.store import _rows as rows

from ..conftest import exchange
from ..stores import run_sql

pytestmark = pytest.mark.anyio


async def sql(database: str, statement: str) -> list[tuple[Any, ...]]:
    """`run_sql` off the event loop (PostgreSQL's runs a loop of its own)."""
    return await anyio.to_thread.run_sync(run_sql, database, statement)


async def test_the_size_section_gives_each_table_per_byte_of_input(tmp_path: Path) -> None:
    corpus = synthetic_corpus(160)

    found = await size.measure([corpus], tmp_path)

    (one,) = found
    tables = dict(one.tables)
    assert one.jsonl == (tmp_path / "synthetic.jsonl").stat().st_size
    assert one.store == (tmp_path / "synthetic-size.sqlite").stat().st_size
    assert {"message", "summary", "call", "search", "search_term"} <= set(tables)
    assert sum(tables.values()) <= one.store  # dbstat's pages, the file's free ones left out
    text = render(
        Results(config=QUICK, command="x", corpora=[corpus], skipped={}, runs=[], sizes=found)
    )
    assert "## Store size" in text and f"| synthetic | sqlite | {corpus.messages:,} |" in text
    assert size.target(found).met is (one.ratio <= size.LIMIT)


@pytest.mark.slow
async def test_recorded_calls_are_a_fraction_of_their_prompts_and_read_back_whole(
    database: str,
) -> None:
    texts = [f"Message {k}: " + "the plan for the launch moves to Friday, " * 12 for k in range(40)]
    async with History(HistorySettings(summarizer="echo", tail=(100, 200)), store=database) as h:
        for m in exchange(texts):
            await h.message_created(m)
        await h.wait()
        calls = await h.store.calls("t")
    whole = sum(len(json.dumps([a.prompts, a.answers, a.line]).encode()) for a in calls)
    (stored,) = await sql(
        database,
        "SELECT sum(length(packed)), sum(length(prompts) + length(answers) + length(model)), "
        "count(*) FROM call",
    )
    assert calls and all(a.prompts and a.line for a in calls)
    assert stored[2] == len(calls)
    assert stored[0] < whole / 4 and stored[1] == 0
    assert await sql(database, "SELECT count(*) FROM call_model") == [(1,)]


async def test_calls_recorded_before_they_were_packed_still_read(database: str) -> None:
    store: Store = open_store(database)
    await store.open()
    try:
        columns = rows.CALL_COLUMNS
        values = (
            "'t', 'old-key', 0, 'echo\nNone\nwords', 1, 2, '[\"a prompt\"]', '[\"an answer\"]', "
            "'a line', 'ok', 10, 3, ''"
        )
        await sql(database, f"INSERT INTO call ({columns}) VALUES ({values})")
        (ask,) = await store.calls("t")
        records = await store.export_thread("t")
    finally:
        await store.close()
    assert (ask.prompts, ask.answers, ask.line, ask.level, ask.index) == (
        ("a prompt",),
        ("an answer",),
        "a line",
        1,
        2,
    )
    assert records is not None and records.calls[0].model == "echo\nNone\nwords"
