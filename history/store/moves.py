"""Where a thread's prompt moved: one row per commit that changed its lines (`collections/
move.sql`), so the viewer can draw the thread's tail and outline over time without replaying it.

Between two moves the outline stays as it is and the tail only grows by the messages' weights,
so a move and the weights after it give the tail at every message.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..contract import Outline
from .rows import Params, Row


@dataclass(frozen=True, kw_only=True)
class Move:
    """A commit that changed a thread's lines, and the outline and tail it left."""

    seq: int
    """The message whose processing made it."""
    cut: bool
    """Messages left the tail (the outline grew at its end)."""
    folded: bool
    """Lines of the outline merged into their parents (its earlier bytes changed)."""
    from_boundary: int
    """The outline's boundary before it: 0 when the thread was recorded from its start."""
    boundary: int
    lines: int
    bytes: int
    """The outline's size after it."""
    tail_start: int
    """The seq of the tail's oldest message after it."""
    tokens: int
    """The tail's weight after it."""


def move_row(before: Outline, after: Outline) -> Params:
    """The row of a commit from `before` to `after` that changed the lines."""
    added = after.boundary - before.boundary
    return {
        "thread": after.thread, "seq": after.position, "cut": after.tail_start != before.tail_start,
        "folded": len(after.lines) < len(before.lines) + added,
        "from_boundary": before.boundary, "boundary": after.boundary, "lines": len(after.lines),
        "bytes": after.bytes, "tail_start": after.tail_start, "tokens": after.tokens,
    }  # fmt: skip


def move_from_row(row: Row) -> Move:
    return Move(
        seq=row["seq"], cut=bool(row["cut"]), folded=bool(row["folded"]),
        from_boundary=row["from_boundary"], boundary=row["boundary"], lines=row["lines"],
        bytes=row["bytes"], tail_start=row["tail_start"], tokens=row["tokens"],
    )  # fmt: skip
