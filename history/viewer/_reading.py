"""What the viewer's pages show, read from a store: no HTTP here, so each piece is tested alone.

A thread's page reads a bounded part of its tree whatever the thread's length: the top nodes
(the largest merged lines, one a level at most), the outline's lines, and the chains down to
the nodes opened or found by a search, each with the two children of every node on its way.
The rest of the tree loads a node's children at a time (`opened`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..agent.lookup import Zoom, zoom
from ..cli._report import Figures, figures
from ..contract import Hit, Message, Outline, Stored, Summary
from ..errors import NotFoundError
from ..plugin import Reading
from ..store import Store

Key = tuple[int, int]
"""A node's (level, index)."""
STEPS = 64
"""The most tool steps shown after a message opened."""


@dataclass(frozen=True, kw_only=True)
class Box:
    """A node drawn in the tree: a box as wide as the messages it stands for."""

    node: Summary
    outline: bool
    """Whether the outline holds it: agents are sent its text in place of its messages."""
    hit: bool = False
    """Whether the search found it."""

    @property
    def first(self) -> int:
        return self.node.index << self.node.level

    @property
    def count(self) -> int:
        return 1 << self.node.level


@dataclass(frozen=True, kw_only=True)
class Drawn:
    """The part of a thread's tree a page draws."""

    span: int
    """The messages the tree stands for (the outline's boundary): the drawing's width."""
    top: int
    """The highest level drawn."""
    boxes: tuple[Box, ...]
    """Highest level first, then oldest first."""
    outline: tuple[Box, ...]
    """The outline's lines, oldest first."""


@dataclass(frozen=True, kw_only=True)
class Page:
    """A thread's page, read in a bounded number of queries whatever the thread's length."""

    figures: Figures
    outline: Outline
    whole: tuple[Stored, ...]
    """The tail, then any pending message: what an agent is sent whole."""
    drawn: Drawn
    hits: tuple[Hit, ...]
    steps: dict[str, tuple[Summary, ...]]
    """Each agent's step outline: the lines only that agent is sent for its steps that left."""


def tops(boundary: int) -> list[Key]:
    """The top nodes of a tree over `boundary` lines, oldest first: one per bit of it."""
    keys, first = [], 0
    for level in range(boundary.bit_length() - 1, -1, -1):
        if boundary >> level & 1:
            keys.append((level, first >> level))
            first += 1 << level
    return keys


def chain(key: Key, boundary: int) -> list[Key]:
    """The nodes drawn to show `key`: from its top down, the two children of each node on the
    way, and its own two children."""
    level, index = key
    first = index << level
    top = next(t for t in tops(boundary) if t[1] << t[0] <= first < (t[1] + 1) << t[0])
    keys = [top]
    for above in range(top[0], max(level - 1, 0), -1):
        parent = first >> above
        keys += [(above - 1, 2 * parent), (above - 1, 2 * parent + 1)]
    return keys


async def read_page(
    history: Reading,
    thread: str,
    *,
    opened: Sequence[Key] = (),
    query: str = "",
) -> Page:
    """A thread's page: its figures, the tree around what is opened and found, the tail."""
    from ..agent.lookup import search

    store = history.store
    snapshot = await store.snapshot(thread)
    if snapshot is None:
        raise NotFoundError(f"no thread {thread!r} in {store.url!r}")
    outline = snapshot.outline
    hits = tuple(await search(history, thread, query)) if query.strip() else ()
    boundary = outline.boundary
    found = {(h.level, h.index) for h in hits if not h.agent and h.index << h.level < boundary}
    shown = {(level, index) for level, index, _, _ in outline.lines}
    wanted = dict.fromkeys(tops(boundary))
    for key in [*opened, *sorted(found)]:
        if key[1] >= 0 and (key[1] + 1) << key[0] <= boundary:
            wanted.update(dict.fromkeys(chain(key, boundary)))
    nodes = {(n.level, n.index): n for n in await store.nodes(thread, [*wanted, *shown])}
    boxes = sorted(
        (Box(node=n, outline=k in shown, hit=k in found) for k, n in nodes.items() if k in wanted),
        key=lambda b: (-b.node.level, b.node.index),
    )
    lines = tuple(
        Box(node=nodes[(level, index)], outline=True, hit=(level, index) in found)
        for level, index, _, _ in outline.lines
        if (level, index) in nodes
    )
    return Page(
        figures=figures(snapshot),
        outline=outline,
        whole=snapshot.tail,
        drawn=Drawn(
            span=boundary, top=max(boundary.bit_length() - 1, 0), boxes=tuple(boxes), outline=lines
        ),
        hits=hits,
        steps=await _steps(store, outline),
    )


async def _steps(store: Store, outline: Outline) -> dict[str, tuple[Summary, ...]]:
    steps = {}
    for agent, o in sorted(outline.steps.items()):
        keys = [(level, index) for level, index, _, _ in o.lines]
        steps[agent] = tuple(await store.nodes(outline.thread, keys, agent=agent))
    return steps


async def opened(history: Reading, thread: str, name: str, *, agent: str = "") -> Zoom:
    """A line opened as `zoom` opens it: its two children, or its message whole."""
    return await zoom(history, thread, name, agent=agent or None, page=1, page_bytes=2**62)


async def steps_after(store: Store, message: Message) -> tuple[Stored, ...]:
    """The tool steps stored right after a shared message (up to `STEPS`): the calls and
    results its reply was made with."""
    stored = await store.message(message.id)
    if stored is None or message.step:
        return ()
    after = await store.messages(message.thread, stored.seq + 1, stored.seq + STEPS)
    return tuple(itertools.takewhile(lambda s: s.message.step, after))


def keys_of(names: Iterable[str]) -> list[Key]:
    """The nodes the labels name (`"0+8"`); labels that name no node are left out."""
    keys = []
    for name in names:
        first, _, count = name.partition("+")
        if first.isdigit() and count.isdigit():
            n, c = int(first), int(count)
            if c and not c & (c - 1) and not n % c:
                keys.append((c.bit_length() - 1, n // c))
    return keys
