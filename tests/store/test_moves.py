"""A thread over time: each commit that changes its lines is recorded as a move, on both stores
(forgotten by an erase and by a rebuild's swap), and the viewer's timeline gives, at every
message, the tail and outline processing left."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from history.viewer._timeline import chart, timeline

from ..conftest import Opener, exchange

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_each_cut_and_fold_is_a_move_and_the_timeline_is_what_processing_left(
    open_history: Opener, database: str
) -> None:
    texts = [f"message {n} about the launch plan " * (1 + n % 7) for n in range(60)]
    seen = {}
    async with open_history(store=database, tail=(40, 80), outline=(120, 240), kept=1) as run:
        store = run.history.store
        for sent in exchange(texts):
            await run.send(sent)
            o = await store.outline("t")
            assert o is not None
            seen[o.position] = (o.tokens, o.bytes, o.tail_start, len(o.lines))
        moves = await store.moves("t")
        line = await timeline(store, "t")
        assert line.recorded and [p.seq for p in line.points] == sorted(seen)
        assert [(p.tokens, p.bytes) for p in line.points] == [
            v[:2] for _, v in sorted(seen.items())
        ]
        # A move is where the outline's lines changed, and only there.
        changed = [seq for seq in sorted(seen)[1:] if seen[seq][1:] != seen[seq - 1][1:]]
        assert [m.seq for m in moves] == changed
        assert any(m.cut for m in moves) and any(m.folded for m in moves)
        for m in moves:
            assert (m.tokens, m.bytes, m.tail_start, m.lines) == seen[m.seq]
        drawn = chart(line)
        assert drawn is not None and len(drawn.cuts) == sum(m.cut for m in moves)
        assert drawn.most_tokens == max(v[0] for v in seen.values())
        records = await store.export_thread("t")
        assert records is not None
        await store.load_records([records], replace=True)  # as a rebuild swaps its result in
        assert await store.moves("t") == []


async def test_a_thread_cut_before_moves_were_recorded_is_drawn_from_its_first_move(
    open_history: Opener, tmp_path: Path
) -> None:
    db = tmp_path / "old.sqlite"
    async with open_history(store=db, tail=(40, 80), kept=1) as run:
        for sent in exchange([f"message {n} about the launch plan " * 3 for n in range(30)]):
            await run.send(sent)
        moves = await run.history.store.moves("t")
        outline = await run.history.store.outline("t")
    assert outline is not None and len(moves) > 2
    with sqlite3.connect(db) as old:  # as a store migrated after its first cuts holds it
        old.execute("DELETE FROM move WHERE seq < ?", (moves[2].seq,))
    async with open_history(store=db, tail=(40, 80), kept=1) as run:
        line = await timeline(run.history.store, "t")
        assert await run.history.store.erase("t")
        assert await run.history.store.moves("t") == []
    assert not line.recorded and line.points[0].seq == moves[2].seq
    assert line.points[-1].tokens == outline.tokens
    assert line.points[-1].seq == outline.position
