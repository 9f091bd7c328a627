"""One read of a thread: `Store.snapshot` gives what a view, a zoom and a report are built from
in one transaction, and `view()` reads the store once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from history import History, HistorySettings, prompt_text, view
from history._generated import Generation
from history.store import open_store
from history.store.sqlite import SQLiteStore

from ..conftest import Opener, message

pytestmark = pytest.mark.anyio

NATIVE = '[{"kind": "response", "parts": []}]'


async def _fill(where: str | Path) -> None:
    """A thread with lines, a step outline of north's, a tail with a native form, a title, and
    one message stored after its last commit."""
    settings = HistorySettings(summarizer="scripted", tail=(25, 50), steps=(20, 40))
    async with History(settings, store=where, pause=0.0) as history:
        for k in range(14):
            await history.message_created(message(3 * k, f"point {k}: the estimate is {k * 7}h"))
            looked = f"looked up the estimate of point {k}: {k * 7} hours"
            await history.message_created(message(3 * k + 1, looked, author="north", step=True))
            await history.message_created(message(3 * k + 2, "ok", author="north", to="Ana"))
        await history.message_created(message(42, "north says hi", author="north"), native=NATIVE)
        await history.wait()
        await history.store.describe("t", title="Planning")
    async with History(settings, store=where, process=False) as history:
        await history.message_created(message(43, "a late one"))


@pytest.mark.slow
async def test_a_snapshot_is_the_outline_its_nodes_the_tail_its_forms_and_title(
    database: str,
) -> None:
    await _fill(database)
    store = open_store(database)
    await store.open()
    try:
        assert await store.snapshot("nowhere") is None
        snap = await store.snapshot("t", agent="north")
        assert snap is not None
        outline = await store.outline("t")
        assert outline is not None and snap.outline == outline
        assert outline.lines and "north" in outline.steps
        shared = [(e.level, e.index) for e in outline.lines]
        assert list(snap.nodes) == await store.nodes("t", shared)
        own = [(e.level, e.index) for e in outline.steps["north"].lines]
        assert own and list(snap.steps) == await store.nodes("t", own, agent="north")
        # The tail, then the message not processed yet.
        after = outline.tail_start - 1
        assert list(snap.tail) == await store.messages_after("t", after, 1_000)
        assert snap.tail[-1].message.text == "a late one" and len(snap.tail) > len(outline.tail)
        assert snap.natives == await store.natives("t", after) == {"t-42": NATIVE}
        assert snap.about is not None and snap.about.title == "Planning"
        # Nobody's view reads no step nodes; the whole tree for a report.
        assert (await store.snapshot("t")).steps == ()  # type: ignore[union-attr]
        tree = await store.snapshot("t", tree=True)
        every = await store.summaries("t")
        assert tree is not None and len(every) > len(snap.nodes) + len(snap.steps)
        assert [*tree.nodes, *tree.steps] == [n for n in every if not n.agent] + [
            n for n in every if n.agent
        ]
        # For an outline the thread had earlier: its tail and nodes, not the committed ones'.
        earlier = await store.snapshot("t", outline=outline, agent="north")
        assert earlier == snap
    finally:
        await store.close()


@pytest.mark.slow
async def test_a_snapshot_carries_the_names_and_the_generations_its_nodes_show(
    database: str,
) -> None:
    await _fill(database)
    # A History that only stores: it renames, and leaves the thread's processing (and the
    # settings it was built with) alone.
    settings = HistorySettings(summarizer="scripted")
    async with History(settings, store=database, process=False) as history:
        await history.rename("Ana", "Ann", now=True)  # taken by the outline at once
        await history.rename("north", "Nora")  # taken at the next cut or fold
        store = history.store
        snap = await store.snapshot("t", agent="north")
        tree = await store.snapshot("t", tree=True)
        made, shown = await store.shown("t")
        every = await store.generations("t")
        names = await store.names("t")
    assert snap is not None and tree is not None and 0 < shown < made
    assert list(snap.names) == list(tree.names) == names != []
    assert (snap.made, snap.shown) == (tree.made, tree.shown) == (made, shown)
    # Of each node shown, its newest generation by change `shown`: Ana's rename, not north's.
    newest: dict[tuple[str, int, int], Generation] = {}
    for g in every:
        if g.made <= shown:
            newest[g.key] = g
    keys = {(n.agent, n.level, n.index) for n in (*snap.nodes, *snap.steps)}
    assert sorted(snap.generations, key=lambda g: g.key) == [
        newest[k] for k in sorted(keys) if k in newest
    ]
    assert snap.generations and all(g.made <= shown for g in snap.generations)
    assert list(tree.generations) == every  # a whole tree's: every one


class Counting(SQLiteStore):
    """A SQLite store that counts its transactions and their statements."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.runs = 0
        self.statements = 0

    async def open(self) -> None:
        await super().open()
        run = self._sql.run

        async def counted(body: Any, **options: Any) -> Any:
            self.runs += 1

            async def counting(tx: Any) -> Any:
                fetch, one = tx.fetch, tx.one

                async def counted_fetch(name: str, **params: Any) -> Any:
                    self.statements += 1
                    return await fetch(name, **params)

                async def counted_one(name: str, **params: Any) -> Any:
                    self.statements += 1
                    return await one(name, **params)

                tx.fetch, tx.one = counted_fetch, counted_one
                try:
                    return await body(tx)
                finally:
                    tx.fetch, tx.one = fetch, one

            return await run(counting, **options)

        self._sql.run = counted  # type: ignore[method-assign]


async def test_a_view_reads_the_store_once(open_history: Opener, tmp_path: Path) -> None:
    await _fill(tmp_path / "h.sqlite")
    store = Counting(str(tmp_path / "h.sqlite"))
    async with open_history(store=store, plugin={"process": False}) as run:
        store.runs = store.statements = 0
        sent = await view(run.history, "t", agent="north")
        # One transaction: the outline, its nodes, north's step nodes, the tail, the title, the
        # display names and the change numbers (no generation to read: no change yet).
        assert sent and (store.runs, store.statements) == (1, 7)


async def test_a_view_after_renames_reads_the_store_once(
    open_history: Opener, tmp_path: Path
) -> None:
    await _fill(tmp_path / "h.sqlite")
    store = Counting(str(tmp_path / "h.sqlite"))
    async with open_history(store=store, plugin={"process": False}) as run:
        # Ana's lines are rewritten, but the outline takes them only at its next cut or fold;
        # north's are taken at once (`now`), with Ana's before them.
        await run.history.rename("Ana", "Ann")
        before = prompt_text(await view(run.history, "t", agent="north"))
        await run.history.rename("north", "Nora", now=True)
        store.runs = store.statements = 0
        sent = await view(run.history, "t", agent="north")
        # The same transaction reads the shown generations of the shared and the step nodes.
        assert (store.runs, store.statements) == (1, 9)
    text = prompt_text(sent)
    assert "0+1|Ana → north: point 0" in before and "Ann → north: a late one" in before
    assert "0+1|Ann → Nora: point 0" in text and "Ann → Nora: a late one" in text
    assert "s0+8|Nora → Nora: looked up the estimate of point 0" in text  # a step line's
    assert "Ana" not in text and "north" not in text
