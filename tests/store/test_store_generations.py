"""The store's part in names and generations (docs/generations.md), on every store."""

from __future__ import annotations

import pytest

from history._generated import Generation, Name
from history.store import Store
from history.store import _changes as changes
from history.store._records import ThreadRecords

from ..conftest import message
from .test_store import ask, leaf

pytestmark = pytest.mark.anyio


def later(text: str, generation: int = 1) -> Generation:
    return Generation(
        thread="t",
        agent="",
        level=0,
        index=0,
        generation=generation,
        text=text,
        bytes=len(text.encode()),
        form="line",
    )


async def _processed(store: Store) -> None:
    stored = await store.add(message(0, "hello"), 5)
    await store.add(message(1, "hi", thread="u", author="Bo"), 5)
    before = await store.outline("t")
    assert stored is not None and before is not None
    after = before.copy()
    after.position = 0
    assert await store.commit(
        before,
        after,
        [leaf("t", 0, "Ana: hello", "t-0")],
        [ask("t", 0, "x")],
        "m",
        lines_changed=False,
        processed=[stored],
    )


async def test_names_authors_and_a_change_on_every_store(store: Store) -> None:
    await _processed(store)
    assert await store.authors("t") == {"Ana", "north"}
    assert await store.authors() == {"Ana", "north", "Bo"}
    assert await store.author_threads("Ana") == ["t"]
    outline = await store.outline("t")
    assert outline is not None
    change = changes.Change(
        generations=[later("Ann: hello")], names=[Name(thread="", author="Ana", name="Ann")]
    )
    assert await store.change(outline, change)
    assert not await store.change(outline, change)  # its version moved: nothing written twice
    assert await store.generations("t") == [
        later("Ann: hello") if False else Generation(**{**later("Ann: hello").__dict__, "made": 1})
    ]
    assert await store.shown("t") == (1, 0)  # taken at the next cut or fold
    assert await store.names() == [Name(thread="", author="Ana", name="Ann")]
    assert await store.names("u") == [Name(thread="", author="Ana", name="Ann")]


async def test_a_revision_is_read_and_written_in_one_transaction(store: Store) -> None:
    await _processed(store)
    seen: list[ThreadRecords] = []

    def make(records: ThreadRecords) -> changes.Change:
        seen.append(records)
        return changes.Change(generations=[later("Ann: hello")], now=True)

    assert await store.revise("t", make)
    assert [n.text for n in seen[0].summaries] == ["Ana: hello"]
    assert [s.message.id for s in seen[0].messages] == ["t-0"]
    assert await store.shown("t") == (1, 1)
    assert not await store.revise("nothing", make)


async def test_an_erase_takes_the_threads_generations_and_names(store: Store) -> None:
    await _processed(store)
    outline = await store.outline("t")
    assert outline is not None
    names = [Name(thread="t", author="Ana", name="Ann"), Name(thread="", author="Bo", name="B")]
    assert await store.change(outline, changes.Change(generations=[later("x")], names=names))
    assert await store.erase("t")
    assert await store.generations("t") == [] and await store.shown("t") == (0, 0)
    assert await store.names() == [Name(thread="", author="Bo", name="B")]  # store-wide stays
