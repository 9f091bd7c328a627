"""A thread over time: at each message, the tail's tokens and the outline's bytes as processing
left them, and where the prompt's start moved (each cut and fold), from the store's moves
(`Store.moves`) and the messages' weights between them."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NotFoundError
from ..store import Store
from ..store._writes import Move

WIDTH = 1000
"""The chart's width in its own units (it is drawn as wide as the page)."""
HEIGHT = 260
POINTS = 800
"""At most this many columns are drawn; each holds the highest and lowest of its messages."""


@dataclass(frozen=True, kw_only=True)
class Point:
    """The thread once a message was processed."""

    seq: int
    tokens: int
    """The tail's weight: what an agent is sent whole."""
    bytes: int
    """The outline's size: what it is sent in place of the older messages."""


@dataclass(frozen=True, kw_only=True)
class Timeline:
    points: tuple[Point, ...]
    """One per processed message, from the first recorded."""
    moves: tuple[Move, ...]
    recorded: bool
    """False when the thread's early cuts were made before the store recorded moves: the
    points start at the first move recorded (or are none)."""


async def timeline(store: Store, thread: str) -> Timeline:
    """Each processed message's tail and outline, read in two queries."""
    outline = await store.outline(thread)
    if outline is None:
        raise NotFoundError(f"no thread {thread!r} in {store.url!r}")
    moves = await store.moves(thread)
    moved = outline.tail_start > 0 or outline.boundary > 0
    recorded = moves[0].from_boundary == 0 if moves else not moved
    if not recorded and not moves:
        return Timeline(points=(), moves=(), recorded=False)
    first = -1 if recorded else moves[0].seq
    points, tokens, size, k = [], 0, 0, 0
    for seq, weight in await store.weights(thread, outline.position):
        tokens += weight
        if k < len(moves) and moves[k].seq == seq:
            tokens, size, k = moves[k].tokens, moves[k].bytes, k + 1
        if seq >= first:
            points.append(Point(seq=seq, tokens=tokens, bytes=size))
    return Timeline(points=tuple(points), moves=tuple(moves), recorded=recorded)


@dataclass(frozen=True, kw_only=True)
class Chart:
    """A timeline drawn: SVG polylines and marks in a WIDTH x HEIGHT box."""

    tokens: str
    """The tail's polyline (`points`), scaled to `most_tokens`."""
    bytes: str
    """The outline's, scaled to `most_bytes`."""
    most_tokens: int
    most_bytes: int
    cuts: tuple[float, ...]
    """x of each cut."""
    folds: tuple[float, ...]
    first: int
    last: int


def chart(line: Timeline) -> Chart | None:
    """The timeline as a chart; None when it has no point."""
    if not line.points:
        return None
    first, last = line.points[0].seq, line.points[-1].seq
    span = max(last - first, 1)
    most_tokens = max(p.tokens for p in line.points) or 1
    most_bytes = max(p.bytes for p in line.points) or 1

    def x(seq: int) -> float:
        return round(WIDTH * (seq - first) / span, 2)

    def polyline(value: str, most: int) -> str:
        columns: dict[int, list[int]] = {}
        for p in line.points:
            columns.setdefault(round(POINTS * (p.seq - first) / span), []).append(getattr(p, value))
        drawn = []
        for column, values in sorted(columns.items()):
            at = round(WIDTH * column / POINTS, 2)
            for v in dict.fromkeys((values[0], max(values), min(values), values[-1])):
                drawn.append(f"{at},{round(HEIGHT - HEIGHT * v / most, 2)}")
        return " ".join(drawn)

    shown = [m for m in line.moves if m.seq >= first]
    return Chart(
        tokens=polyline("tokens", most_tokens),
        bytes=polyline("bytes", most_bytes),
        most_tokens=most_tokens,
        most_bytes=most_bytes,
        cuts=tuple(x(m.seq) for m in shown if m.cut),
        folds=tuple(x(m.seq) for m in shown if m.folded),
        first=first,
        last=last,
    )
