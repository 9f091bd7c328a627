"""Renames: an author's display name, and the lines that read it (docs/generations.md)."""

from __future__ import annotations

import re

import pytest

from history import InputError, prompt_text, search, view, zoom
from history._generations import current_nodes
from history._names import display, named, whole_word, whole_words
from history.lines import line_of

from ..conftest import Opener, Settings, exchange, message

pytestmark = pytest.mark.anyio

LONG = "We weighed the venue, the budget and the date; we want the hall by the river " * 2
SETTINGS: Settings = {"summarizer": "echo", "line": 96, "tail": (30, 60), "kept": 2}


def texts(k: int) -> list[str]:
    return [LONG if n % 3 == 0 else f"short note {n}" for n in range(k)]


def test_a_name_is_replaced_only_where_it_stands_as_a_whole_word() -> None:
    text = "user asked (user) users user_1 superuser the user. Benutzer usér user"
    assert whole_word(text, "user", "Ana") == (
        "Ana asked (Ana) users user_1 superuser the Ana. Benutzer usér Ana"
    )
    assert whole_word("é user", "user", "Ana") == "é Ana"
    assert whole_word("éuser", "user", "Ana") == "éuser"  # é is a word character
    assert whole_words("Ana Lima and Ana", {"Ana": "X", "Ana Lima": "Y"}) == "Y and X"


@pytest.mark.slow
async def test_a_rename_rewrites_every_line_without_a_model_call(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database, **SETTINGS) as run:
        await run.send(*exchange(texts(24)))
        store = run.history.store
        calls = len(await store.calls("t"))
        before = await store.summaries("t")
        rewritten = await run.history.rename("Ana", "Ann")
        after = await current_nodes(store, "t", await store.summaries("t"))
        messages = {s.message.id: s.message for s in await store.messages("t", 0, 100)}
        generations = await store.generations("t")
        opened = await zoom(run.history, "t", "0+1")
        hits = await search(run.history, "t", "hall river")
        assert len(await store.calls("t")) == calls  # no model call
    names = {"Ana": "Ann"}
    assert rewritten == len(generations) > 0
    assert {g.generation for g in generations} == {1}
    assert any(not n.level and n.text != line_of(messages[n.message or ""]) for n in before)
    for old, new in zip(before, after, strict=True):
        if new.level == 0 and old.text == line_of(messages[new.message or ""]):
            assert new.text == line_of(named(messages[new.message or ""], names))
        assert not re.search(r"(?<!\w)Ana(?!\w)", new.text), new.text
    assert all(m.author in ("Ana", "north") for m in messages.values())  # messages unchanged
    assert opened.text.startswith("0+1|Ann → north, ")
    assert hits and all("Ana" not in re.findall(r"\w+", h.text) for h in hits)


@pytest.mark.slow
async def test_a_rename_is_refused_with_nothing_changed(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database, **SETTINGS) as run:
        await run.send(*exchange(texts(8)), message(99, "hi", thread="u", author="Bo", to=""))
        for author, name, thread in [
            ("Ana", "", None),
            ("Ana", "  ", None),
            ("Ana", "A\nB", None),
            ("Zed", "Zoe", None),
            ("Bo", "Bob", "t"),  # Bo never wrote in t
            ("Ana", "north", None),  # north is another author
            ("Ana", "Bo", None),
        ]:
            with pytest.raises(InputError):
                await run.history.rename(author, name, thread=thread)
        await run.history.rename("Bo", "Bob")
        with pytest.raises(InputError, match="'Bob'"):
            await run.history.rename("Ana", "Bob")
        assert await run.history.store.generations("t") == []
        assert [n.name for n in await run.history.store.names()] == ["Bob"]


async def test_a_thread_name_beats_the_store_wide_one(open_history: Opener) -> None:
    async with open_history(**SETTINGS) as run:
        await run.send(*exchange(texts(8)), *exchange(texts(8), thread="u"))
        await run.history.rename("Ana", "Ann")
        await run.history.rename("Ana", "Anita", thread="u")
        await run.history.rename("Ana", "Annie")  # u keeps its own
        names = await run.history.store.names()
        t = await zoom(run.history, "t", "0+1")
        u = await zoom(run.history, "u", "0+1")
    assert display(names, "t") == {"Ana": "Annie"} and display(names, "u") == {"Ana": "Anita"}
    assert t.text.startswith("0+1|Annie → north") and u.text.startswith("0+1|Anita → north")


async def test_lines_written_after_a_rename_read_the_name(open_history: Opener) -> None:
    async with open_history(**SETTINGS) as run:
        await run.send(*exchange(texts(6)))
        await run.history.rename("Ana", "Ann")
        await run.send(*exchange(texts(20), start=12))
        store = run.history.store
        nodes = await current_nodes(store, "t", await store.summaries("t"))
        first = await store.summaries("t")
    assert len(first) > 20
    assert any("Ana" in n.text for n in first)  # generation 0 is the SPEC's, with the ids
    assert all(not re.search(r"(?<!\w)Ana(?!\w)", n.text) for n in nodes)


async def test_the_prompt_before_the_tail_takes_a_rename_at_the_next_cut(
    open_history: Opener,
) -> None:
    async with open_history(**SETTINGS) as run:
        await run.send(*exchange(texts(10)))
        before = prompt_text(await view(run.history, "t", agent="north"))
        await run.history.rename("Ana", "Ann")
        between = prompt_text(await view(run.history, "t", agent="north"))
        outline = await run.history.outline("t")
        assert outline is not None
        boundary = outline.boundary
        n = 20
        while (outline := await run.history.outline("t")) and outline.boundary == boundary:
            await run.send(message(n, "ok", author="north", to="Ana"))
            n += 1
        after = prompt_text(await view(run.history, "t", agent="north"))
    head = before.split("[user]")[0]
    assert "Ana → north" in head
    assert between.split("[user]")[0] == head  # unchanged between cuts
    assert "Ann → north" in between.split("[user]", 1)[1]  # the tail reads the name at once
    assert "Ana → north" not in after.split("[user]")[0] and "Ann → north" in after


async def test_now_shows_a_rename_at_once(open_history: Opener) -> None:
    async with open_history(**SETTINGS) as run:
        await run.send(*exchange(texts(10)))
        await run.history.rename("Ana", "Ann", now=True)
        head = prompt_text(await view(run.history, "t", agent="north")).split("[user]")[0]
    assert "Ann → north" in head and "Ana → north" not in head


@pytest.mark.slow
async def test_a_rename_of_many_lines_asks_the_model_nothing(open_history: Opener) -> None:
    from benchmarks.rename import Counting, messages

    counting = Counting()
    settings: Settings = {"summarizer": "echo", "line": 128, "tail": (20, 40), "kept": 1}
    async with open_history(model=counting, **settings) as run:
        await run.send(*messages(502))
        asked = counting.calls
        rewritten = await run.history.rename("user", "Ana")
        store = run.history.store
        nodes = await current_nodes(store, "t", await store.summaries("t"))
    assert asked > 100 and counting.calls == asked  # the rename asked nothing
    assert rewritten == len(nodes) > 900  # every line names the person, asked or not
    assert all(not re.search(r"(?<!\w)user(?!\w)", n.text) for n in nodes)
