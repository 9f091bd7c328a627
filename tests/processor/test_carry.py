"""Carrying a history to another store: export, load, and nothing generated is paid for again."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from history import ConflictError, History, HistorySettings, InputError, NotFoundError
from history.carry import export, load, read_records
from history.rebuilding import rebuild
from history.store import Store, open_store

from ..chats import SMALL, Fickle, ingest, long_chat, trace, without_epoch
from ..conftest import message

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
FICKLE = HistorySettings(summarizer="fickle", **SMALL)


@asynccontextmanager
async def opened(path: Path | str) -> AsyncIterator[Store]:
    store = open_store(path)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def exported(store: Store, thread: str | None = None) -> str:
    out = io.StringIO()
    await export(store, out, thread)
    return out.getvalue()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with two long threads written by a model whose answers change every run."""
    path = tmp_path_factory.mktemp("written") / "source.sqlite"
    chat = long_chat(260) + long_chat(120, thread="u", seed=5)
    anyio.run(lambda: ingest(chat, FICKLE, store=str(path), model=Fickle(1)))
    return path


@pytest.fixture
def source(written: Path, tmp_path: Path) -> Path:
    """A copy of the written store, for one test."""
    return Path(shutil.copy(written, tmp_path / "source.sqlite"))


async def test_export_load_and_rebuild_elsewhere_give_the_same_trace_with_no_model_call(
    source: Path, database: str
) -> None:
    async with opened(source) as store:
        text, expected, calls = await exported(store), await trace(store), await store.calls()
    async with opened(database) as other:
        loaded = await load(other, text.splitlines())
        assert (loaded.threads, loaded.skipped) == (2, 0)
        assert loaded.written == len(text.splitlines()) - 1  # all but the header
        assert await trace(other) == expected
        assert await other.calls() == calls

        model = Fickle(2)  # were it asked, its answers would differ
        for thread in ("t", "u"):
            done = await rebuild(other, thread, FICKLE, model=model)
            assert done.model_calls == 0 and done.asks > 20
        assert model.requests == 0
        assert await trace(other) == expected
        assert await other.calls() == calls


async def test_a_round_trip_is_lossless_record_for_record(source: Path, database: str) -> None:
    async with opened(source) as store:
        text = await exported(store, "t")
        original = await store.export_thread("t")
    async with opened(database) as other:
        await load(other, text.splitlines())
        copy = await other.export_thread("t")
        assert without_epoch(copy) == without_epoch(original)
        assert await exported(other, "t") == text
        assert await other.threads() == ["t"]


async def test_loading_twice_writes_nothing_the_second_time(source: Path, database: str) -> None:
    async with opened(source) as store:
        text = await exported(store)
    async with opened(database) as other:
        first = await load(other, text.splitlines())
        state = await trace(other)
        second = await load(other, text.splitlines())
        assert (second.written, second.skipped) == (0, first.written)
        assert await trace(other) == state


async def test_a_load_catches_up_a_store_that_holds_an_older_export(
    tmp_path: Path, database: str
) -> None:
    chat = long_chat(200)
    path = tmp_path / "grow.sqlite"
    await ingest(chat[:120], FICKLE, store=str(path), model=Fickle(1))
    async with opened(path) as store:
        older = await exported(store)
    await ingest(chat[120:], FICKLE, store=str(path), model=Fickle(3))
    async with opened(path) as store:
        newer, expected = await exported(store), await trace(store)
    async with opened(database) as other:
        await load(other, older.splitlines())
        done = await load(other, newer.splitlines())
        assert done.skipped > 0 and done.written > 0
        assert await trace(other) == expected
        assert (await load(other, older.splitlines())).written == 0  # an older outline is kept
        assert await trace(other) == expected


async def test_a_load_that_contradicts_the_store_is_refused_before_anything_is_written(
    source: Path, database: str
) -> None:
    async with opened(source) as store:
        text = await exported(store)
        node = next(s for s in await store.summaries("u") if s.level == 2)
    lines = [json.loads(line) for line in text.splitlines()]
    changed = [
        {**r, "text": "another line", "bytes": 12}
        if r["kind"] == "summary" and (r["thread"], r["level"], r["index"]) == ("u", 2, node.index)
        else r
        for r in lines
    ]
    async with opened(database) as other:
        await load(other, [json.dumps(r) for r in lines if r.get("thread") == "u"])
        before = await trace(other)
        with pytest.raises(
            ConflictError, match=rf"node 'u:2:{node.index}' is stored with other text"
        ):
            await load(other, [json.dumps(r) for r in changed])
        assert await trace(other) == before
        assert await other.threads() == ["u"]  # thread t, earlier in the file, was not written


async def test_a_message_stored_with_other_content_or_place_is_refused(
    source: Path, database: str
) -> None:
    async with opened(source) as store:
        text = await exported(store, "t")
    async with opened(database) as other:
        await other.add(message(0, "something else entirely", thread="t"), 9)
        with pytest.raises(ConflictError, match="message 't-0' is stored with other content"):
            await load(other, text.splitlines())
        assert len(await other.messages_after("t", -1, 1_000)) == 1
        await other.erase("t")
        await other.add(replace(message(0, "hi", thread="t"), id="x-0"), 9)
        with pytest.raises(ConflictError, match="'t-0' would take seq 0 of thread 't', which"):
            await load(other, text.splitlines())


async def test_a_bad_line_is_refused_naming_its_place() -> None:
    good = json.dumps({"kind": "chat-history", "format": 1})
    with pytest.raises(InputError, match=r"^dump.jsonl:2: not a chat-outline record \(.*'mystery'"):
        read_records([good, '{"kind": "mystery"}'], source="dump.jsonl")
    with pytest.raises(InputError, match=r"^dump.jsonl:1: .*JSON"):
        read_records(["{not json"], source="dump.jsonl")
    summary = {
        "kind": "summary",
        "thread": "t",
        "level": 0,
        "index": 0,
        "text": "héllo",
        "bytes": 5,
        "message": "m",
        "at": "2026-11-01T09:00:00+00:00",
    }
    with pytest.raises(InputError, match=r"^x:1: summary bytes 5 is not the size of its text"):
        read_records([json.dumps(summary)], source="x")
    with pytest.raises(InputError, match=r"format 5 is not one of \(1, 2, 3, 4\)"):
        read_records([json.dumps({"kind": "chat-history", "format": 5})])


async def test_exporting_a_thread_that_is_not_stored_is_refused(tmp_path: Path) -> None:
    async with opened(tmp_path / "empty.sqlite") as store:
        with pytest.raises(NotFoundError, match="'ghost'"):
            await exported(store, "ghost")
        assert await exported(store) == '{"kind":"chat-outline","format":4}\n'


async def test_a_messages_provider_form_is_carried_with_it(tmp_path: Path, database: str) -> None:
    # An agent's reasoning items and ids, which its view sends while the message is whole.
    native = json.dumps([{"parts": [{"part_kind": "thinking", "content": "café"}]}])
    chat = [message(0, "What is due?"), message(1, "The invoice.", author="north", to="Ana")]
    async with History(HistorySettings(summarizer="echo"), store=tmp_path / "a.sqlite") as history:
        await history.message_created(chat[0])
        await history.message_created(chat[1], native=native)
        with pytest.raises(InputError, match="native holds a NUL"):
            await history.message_created(message(2, "x", author="north"), native="a\x00b")
        await history.wait()
        text = await exported(history.store)
    assert [json.loads(line).get("native") for line in text.splitlines()[2:4]] == [None, native]
    async with opened(database) as other:
        await load(other, text.splitlines())
        assert await other.natives("t", -1) == {"t-1": native}
        assert await exported(other) == text
    bad = text.replace(json.dumps(native)[1:-1], "a\\u0000b")
    with pytest.raises(InputError, match=r"^<input>:4: native holds a NUL"):
        read_records(bad.splitlines())
