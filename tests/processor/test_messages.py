"""Storing a message: bad input is refused with a typed error naming the field, nothing written."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from history import (
    ClosedError,
    ConflictError,
    File,
    History,
    HistorySettings,
    InputError,
    Message,
)
from history.processors.weight import weight

from ..conftest import START, Opener, message

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"id": ""}, "id"),
        ({"thread": ""}, "thread"),
        ({"id": 7}, "id"),
        ({"text": None}, "text"),
        ({"author": b"Ana"}, "author"),
        ({"text": "bad \ud800 surrogate"}, "text"),
        ({"to": "\udfff"}, "to"),
        ({"at": datetime(2026, 1, 1)}, "at"),
        ({"at": "2026-01-01T00:00:00+00:00"}, "at"),
        ({"step": "yes"}, "step"),
        ({"files": [File(name="a.png")]}, "files"),
    ],
)
def test_a_bad_message_is_refused_naming_the_field(changes: dict[str, Any], field: str) -> None:
    fields: dict[str, Any] = {"id": "m", "thread": "t", "author": "Ana", "text": "hi", "at": START}
    with pytest.raises(InputError) as refused:
        Message(**{**fields, **changes})
    assert refused.value.field == field
    assert field in str(refused.value)


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"name": "a", "size": -1}, "files.size"),
        ({"name": "a", "size": True}, "files.size"),
        ({"name": "a", "size": 1.5}, "files.size"),
        ({"name": 3}, "files.name"),
        ({"name": "a", "mime": 3}, "files.mime"),
        ("a.png", "files"),
    ],
)
def test_a_bad_file_is_refused_naming_the_field(value: object, field: str) -> None:
    with pytest.raises(InputError) as refused:
        File.from_json(value)
    assert refused.value.field == field


def test_json_messages_take_null_and_missing_as_empty() -> None:
    m = Message.from_json(
        {
            "id": "1",
            "thread": "t",
            "author": "",
            "text": "",
            "at": "2026-11-01T10:00:00+01:00",
            "to": None,
            "step": None,
            "files": None,
        }
    )
    assert (m.to, m.step, m.files, m.author) == ("", False, (), "")
    assert m.at == START + timedelta(minutes=0)
    with pytest.raises(InputError, match="author is missing"):
        Message.from_json({"id": "1", "thread": "t", "text": "", "at": "2026-11-01T10:00:00Z"})
    with pytest.raises(InputError, match="at must be ISO 8601 with an offset"):
        Message.from_json({"id": "1", "thread": "t", "author": "", "text": "", "at": "2026-11-01"})


def test_a_messages_json_form_reads_back_as_the_message() -> None:
    pdf = File(name="plan.pdf", mime="application/pdf", size=10, pages=2)
    full = message(3, "the plan", step=True, files=(pdf,))
    assert Message.from_json(full.to_json()) == full
    bare = message(4, "ok", to="")
    assert set(bare.to_json()) == {"id", "thread", "author", "text", "at"}  # no empty fields
    assert Message.from_json(bare.to_json()) == bare


def test_files_weigh_by_what_they_are() -> None:
    files = (
        File(name="a.png", mime="IMAGE/PNG; q=1"),  # 765
        File(name="b.txt", mime="text/plain", size=10),  # 3
        File(name="c.json", mime="application/vnd.api+json", size=8),  # 2
        File(name="d.pdf", mime="application/pdf", size=100_001),  # 2 pages: 3000
        File(name="e.bin", mime="application/zip", size=5),  # 1000
        File(name="f"),  # 1000
    )
    bare = message(0, "<|endoftext|>")
    # "<|endoftext|>" counts as the 7 tokens of its text, not as one special token.
    assert weight(bare, "cl100k_base") == 10 + 4
    with_files = message(0, "<|endoftext|>", files=files)
    assert (
        weight(with_files, "cl100k_base") == weight(bare, "cl100k_base") + 765 + 3 + 2 + 3000 + 2000
    )


async def test_redelivery_changes_nothing_and_other_content_is_refused(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database) as run:
        first = message(0, "hello")
        assert await run.history.message_created(first) is not None
        same_instant = Message(
            id=first.id,
            thread="t",
            author="Ana",
            to="north",
            text="hello",
            at=first.at.astimezone(timezone(timedelta(hours=-5))),
        )
        assert await run.history.message_created(same_instant) is None
        with pytest.raises(ConflictError, match="'t-0'"):
            await run.history.message_created(message(0, "hello, edited"))
        await run.history.wait()
        stored = await run.history.store.message("t-0")
        assert stored is not None and stored.message.text == "hello" and stored.seq == 0
        outline = await run.history.outline("t")
        assert outline is not None
        assert [t.id for t in outline.tail] == ["t-0"]


@pytest.mark.slow
async def test_concurrent_deliveries_get_contiguous_seqs_in_arrival_order(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database) as run:
        async with anyio.create_task_group() as group:
            for k in range(40):
                group.start_soon(run.history.message_created, message(k, f"m{k}", step=k % 3 == 0))
        await run.history.wait()
        stored = [await run.history.store.message(f"t-{k}") for k in range(40)]
    assert sorted(s.seq for s in stored if s) == list(range(40))
    shared = sorted((s.seq, s.index) for s in stored if s and not s.message.step)
    assert [index for _, index in shared] == list(range(len(shared)))


async def test_the_plugin_refuses_use_outside_its_block(tmp_path: Path) -> None:
    history = History(HistorySettings(summarizer="echo"), store=tmp_path / "h.sqlite")
    with pytest.raises(ClosedError, match="async with"):
        await history.message_created(message(0, "hi"))
    async with history:
        await history.message_created(message(0, "hi"))
    with pytest.raises(ClosedError):
        await history.message_created(message(1, "hi"))
    with pytest.raises(ClosedError, match="once"):
        async with history:
            pass


async def test_a_database_that_is_not_ours_is_refused(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (id INTEGER)")
    from history import StoreError

    with pytest.raises(StoreError, match="not a chat-outline database"):
        async with History(HistorySettings(summarizer="echo"), store=path):
            pass


async def test_the_plugin_refuses_what_is_not_a_message_or_a_thread(open_history: Opener) -> None:
    async with open_history() as run:
        with pytest.raises(InputError, match="takes a Message"):
            await run.history.message_created({"id": "1"})  # type: ignore[arg-type]
        with pytest.raises(InputError, match="thread"):
            await run.history.thread_deleted("")


async def test_an_error_in_the_block_comes_out_as_it_was_raised(tmp_path: Path) -> None:
    with pytest.raises(ConflictError):
        async with History(HistorySettings(summarizer="echo"), store=tmp_path / "h.sqlite") as h:
            await h.message_created(message(0, "hi"))
            await h.message_created(message(0, "other"))


async def test_only_the_threads_worked_on_last_stay_in_memory(
    open_history: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    from history import _lane as lane

    monkeypatch.setattr(lane, "WARM_THREADS", 3)
    async with open_history(tail=(5, 10), kept=1) as run:
        for k in range(8):
            await run.send(message(0, "hello there", thread=f"t{k}"))
        await run.send(message(1, "again", thread="t2"))
        warm = [held.thread for held in run.history._lanes]
        outline = await run.history.outline("t2")
    assert warm == ["t6", "t7", "t2"]
    assert outline is not None and [t.id for t in outline.tail] == ["t2-1"]
