"""The fold: the most overdue pair merges first, the oldest among equals (SPEC 5.3)."""

from __future__ import annotations

from collections import deque
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from history.contract import Entry, Outline, Summary
from history.processors.compact import fold
from history.processors.summarize import Nodes

from ..conftest import START

pytestmark = pytest.mark.anyio


def outline(lines: list[tuple[int, int]], boundary: int, *, line_bytes: int = 100) -> Outline:
    entries: list[Entry] = [
        Entry(level, index, line_bytes, START + timedelta(minutes=(index + 1) * 2**level - 1))
        for level, index in lines
    ]
    return Outline(
        thread="t",
        epoch="e",
        version=0,
        lines=entries,
        bytes=len(entries) * (line_bytes + 1),
        boundary=boundary,
        since=None,
        cut_at=None,
        gone=None,
        tail=deque(),
        tokens=0,
        draining=False,
        position=0,
    )


def node(key: tuple[int, int], size: int) -> Summary:
    level, index = key
    return Summary(
        thread="t", level=level, index=index, text="x" * size, bytes=size, message=None, at=START
    )


def tree(*built: tuple[int, int], line_bytes: int = 100) -> Nodes:
    known = {key: node(key, line_bytes) for key in built}

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


def spec_fold(o: Outline, built: dict[tuple[int, int], int], low: int, high: int) -> None:
    """SPEC 5.3 as written: each step weighs every pair again and merges the most overdue."""
    if not (o.bytes > high or o.draining):
        return
    o.draining = True
    while o.bytes > low:
        best: tuple[float, int] | None = None
        for pos in range(len(o.lines) - 1):
            (level, index, _, _), (right, after, _, _) = o.lines[pos], o.lines[pos + 1]
            if index % 2 or (right, after) != (level, index + 1):
                continue
            due = (o.boundary - ((index + 2) * 2**level - 1)) / 2**level
            if (level + 1, index // 2) in built and (best is None or due > best[0]):
                best = (due, pos)
        if best is None:
            return
        (level, index, left_bytes, left_at), (_, _, right_bytes, right_at) = o.lines[
            best[1] : best[1] + 2
        ]
        size = built[level + 1, index // 2]
        o.lines[best[1] : best[1] + 2] = [
            Entry(level + 1, index // 2, size, max(left_at, right_at))
        ]
        o.bytes += size + 1 - (left_bytes + 1) - (right_bytes + 1)
    o.draining = False


@st.composite
def outlines(draw: st.DrawFn) -> tuple[Outline, dict[tuple[int, int], int], int, int]:
    """Lines over consecutive spans of a tree, some of their ancestors built, and bounds."""
    boundary = draw(st.integers(1, 200))
    start = draw(st.integers(0, boundary - 1))
    lines: list[tuple[int, int]] = []
    while start < boundary:
        fits = [lv for lv in range(8) if start % 2**lv == 0 and start + 2**lv <= boundary]
        level = draw(st.sampled_from(fits))
        lines.append((level, start // 2**level))
        start += 2**level
    o = outline(lines, boundary)
    sizes = draw(st.lists(st.integers(1, 150), min_size=len(lines), max_size=len(lines)))
    o.lines = [
        Entry(lv, ix, size, at) for (lv, ix, _, at), size in zip(o.lines, sizes, strict=True)
    ]
    o.bytes = sum(size + 1 for size in sizes)
    nodes = {(lv, ix) for lv in range(1, 9) for ix in range(boundary // 2**lv + 1)}
    built = draw(st.dictionaries(st.sampled_from(sorted(nodes)), st.integers(1, 150)))
    low = draw(st.integers(0, o.bytes))
    return o, built, low, draw(st.integers(low, o.bytes + 10))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(outlines())
async def test_the_fold_merges_as_the_spec_weighs_every_pair_each_step(
    case: tuple[Outline, dict[tuple[int, int], int], int, int],
) -> None:
    o, built, low, high = case
    expected = o.copy()
    spec_fold(expected, built, low, high)
    known = {key: node(key, size) for key, size in built.items()}

    async def read(agent: str, level: int, index: int) -> Summary | None:
        return known.get((level, index))

    await fold(o, Nodes("t", read), (low, high))
    assert (o.lines, o.bytes, o.draining) == (expected.lines, expected.bytes, expected.draining)
