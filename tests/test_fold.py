"""The fold: the most overdue pair merges first, the oldest among equals (SPEC 5.3)."""

from __future__ import annotations

from collections import deque
from datetime import timedelta

import pytest

from history.contract import Entry, Outline, Summary
from history.processors.compact import fold
from history.processors.summarize import Nodes

from .conftest import START

pytestmark = pytest.mark.anyio


def outline(lines: list[tuple[int, int]], boundary: int, *, line_bytes: int = 100) -> Outline:
    entries: list[Entry] = [
        (level, index, line_bytes, START + timedelta(minutes=(index + 1) * 2**level - 1))
        for level, index in lines
    ]
    return Outline(
        thread="t", epoch="e", version=0, lines=entries, bytes=len(entries) * (line_bytes + 1),
        boundary=boundary, since=None, cut_at=None, gone=None, tail=deque(), tokens=0,
        draining=False, position=0,
    )  # fmt: skip


def tree(*built: tuple[int, int], line_bytes: int = 100) -> Nodes:
    known = {
        key: Summary(
            thread="t",
            level=key[0],
            index=key[1],
            text="x" * line_bytes,
            bytes=line_bytes,
            message=None,
            at=START,
        )
        for key in built
    }

    async def read(agent: str, level: int, index: int) -> Summary | None:
        return known.get((level, index)) if agent == "" else None

    return Nodes("t", read)


async def test_the_spec_example_merges_the_newest_pair_first() -> None:
    # T = 10, lines 0+4, 4+4, 8+1, 9+1: the pair 8+1, 9+1 is due 1 against 0.75.
    o = outline([(2, 0), (2, 1), (0, 8), (0, 9)], boundary=10)
    assert await fold(o, tree((3, 0), (1, 4)), (350, 400))
    assert [(level, index) for level, index, _, _ in o.lines] == [(2, 0), (2, 1), (1, 4)]
    assert o.bytes == 3 * 101 and not o.draining
    assert o.lines[-1][3] == START + timedelta(minutes=9)  # the newest at it covers


async def test_the_fold_goes_on_until_the_outline_is_under_its_minimum() -> None:
    o = outline([(2, 0), (2, 1), (0, 8), (0, 9)], boundary=10)
    assert await fold(o, tree((3, 0), (1, 4)), (250, 400))
    assert [(level, index) for level, index, _, _ in o.lines] == [(3, 0), (1, 4)]
    assert o.bytes == 2 * 101 and not o.draining


async def test_among_equal_dues_the_oldest_pair_merges() -> None:
    # T = 7: the pair 0+2, 2+2 is due (7 - 3) / 2 = 2, the pair 4+1, 5+1 is due 7 - 5 = 2.
    o = outline([(1, 0), (1, 1), (0, 4), (0, 5), (0, 6)], boundary=7)
    assert await fold(o, tree((2, 0), (1, 2)), (450, 500))
    assert [(level, index) for level, index, _, _ in o.lines] == [(2, 0), (0, 4), (0, 5), (0, 6)]


async def test_without_a_built_parent_the_fold_waits_and_keeps_draining() -> None:
    o = outline([(0, 0), (0, 1), (0, 2)], boundary=3)
    assert not await fold(o, tree(), (100, 200))
    assert o.draining and len(o.lines) == 3
    # At the next message the fold goes on, even though the outline is under its maximum.
    assert await fold(o, tree((1, 0)), (100, 10_000))
    assert [(level, index) for level, index, _, _ in o.lines] == [(1, 0), (0, 2)]
    assert o.draining  # 202 bytes, still over 100: no more pairs
