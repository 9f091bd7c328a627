"""Search stays exact as a line is indexed again and a message is taken back, on every store: a
row's postings go with it, found by the stems of the text it was made from (a posted row keeps
no words), so nothing stale is found and nothing collides with what is indexed next."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import anyio
import pytest

from history.agent.lookup import search
from history.contract import Reply, Task
from history.store import open_store
from history.store._search import indexing

from ..conftest import Opener, exchange, message
from ..stores import run_sql

pytestmark = pytest.mark.anyio

SETTINGS = {"summarizer": "echo", "line": 96, "tail": (30, 60), "kept": 2}
LONG = "We weighed the venue, the budget and the date for the launch by the river " * 2


class Words:
    """Answers `{word} {level} {index}`."""

    name = "words"

    def __init__(self, word: str) -> None:
        self.word = word

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        return Reply(
            text=f"{self.word} {task.level} {task.index}", input_tokens=10, output_tokens=2
        )


@pytest.fixture
def posted_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every commit writes its postings: the rows taken back or indexed again are posted."""
    monkeypatch.setattr(indexing, "POSTED_TOGETHER", 1)


def counted(database: str) -> str:
    """How a row of `search_term` counts its postings: one a row on SQLite, packed 64 to a row
    on PostgreSQL."""
    return "cardinality(t.idxs)" if database.startswith("postgresql://") else "1"


def postings(database: str, stem: str) -> int:
    """How many postings the store holds of `stem`."""
    found = run_sql(
        database,
        f"SELECT coalesce(sum({counted(database)}), 0) FROM search_term AS t "
        f"JOIN search_word AS w ON w.id = t.word WHERE w.stem = '{stem}'",
    )
    return int(found[0][0])


def index(database: str) -> tuple[int, list[tuple[object, ...]]]:
    """All the postings and the corpus counts."""
    every = f"SELECT coalesce(sum({counted(database)}), 0) FROM search_term AS t"
    total = int(run_sql(database, every)[0][0])
    corpus = run_sql(
        database, "SELECT thread, agent, line, count, terms FROM search_corpus ORDER BY 1, 2, 3"
    )
    return total, [tuple(r) for r in corpus]


async def made_again(database: str) -> tuple[int, list[tuple[object, ...]]]:
    """`index` once the store has made its index again from what it holds."""
    await anyio.to_thread.run_sync(run_sql, database, "DELETE FROM search_language")
    store = open_store(database)
    await store.open()  # the language forgotten: the index is made again
    await store.close()
    return await anyio.to_thread.run_sync(index, database)


@pytest.mark.slow
@pytest.mark.usefixtures("posted_at_once")
async def test_lines_asked_again_keep_only_their_new_words(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database, **SETTINGS) as run:  # type: ignore[arg-type]
        await run.send(*exchange([LONG if n % 3 == 0 else f"short note {n}" for n in range(40)]))
        assert await anyio.to_thread.run_sync(postings, database, "weigh") > 0
        await run.history.reconsolidate("t", "0+16", summarizer=Words("zeppelin"), depth=2)
        assert await run.history.store.search("t", "zeppelin", 5) != []
        await run.history.reconsolidate("t", "0+16", summarizer=Words("lantern"), depth=2)
        assert await run.history.store.search("t", "zeppelin", 5) == []
        hits = await run.history.store.search("t", "lantern", 5)
        assert hits and all(h.message is None for h in hits)  # lines
    assert await anyio.to_thread.run_sync(postings, database, "zeppelin") == 0


@pytest.mark.slow
@pytest.mark.usefixtures("posted_at_once")
async def test_a_renamed_author_is_found_by_the_new_name_only(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database, **SETTINGS) as run:  # type: ignore[arg-type]
        await run.send(*exchange([LONG if n % 3 == 0 else f"short note {n}" for n in range(40)]))
        assert await run.history.rename("Ana", "Zed") > 0
        assert await run.history.rename("Ana", "Quinn") > 0
        await run.history.reconsolidate("t", "0+16", summarizer=Words("zeppelin"), depth=2)
        assert await search(run.history, "t", "Zed") == []
        found = await search(run.history, "t", "Quinn")
        assert found and all("Quinn" in h.text for h in found)
    assert await anyio.to_thread.run_sync(postings, database, "zed") == 0


@pytest.mark.slow
@pytest.mark.usefixtures("posted_at_once")
async def test_a_message_taken_back_leaves_no_postings(open_history: Opener, database: str) -> None:
    chat = exchange([f"point {k} " * 6 for k in range(2)])
    asked = message(4, "what about the zeppelin hangar")
    async with open_history(store=database, summarizer="scripted", tail=(200, 400)) as run:
        await run.send(*chat, asked)
        assert await anyio.to_thread.run_sync(postings, database, "zeppelin") == 1
        assert [s.message.id for s in await run.history.retract("t", after=3)] == ["t-4"]
        assert await run.history.store.search("t", "zeppelin", 5) == []
        await run.send(replace(asked, id="t-5", text="the harbour lantern instead"))
        assert await run.history.store.search("t", "zeppelin", 5) == []
        found = await run.history.store.search("t", "harbour", 5)
        assert [h.message for h in found if h.terms] == ["t-5"]  # and its neighbours
        assert await run.history.store.search("t", "hangar", 5) == []
    assert await anyio.to_thread.run_sync(postings, database, "zeppelin") == 0
    before = await anyio.to_thread.run_sync(index, database)
    assert before == await made_again(database)  # exactly what its messages give
