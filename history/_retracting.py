"""Taking back a thread's newest messages while they are whole in its tail (`History.retract`).

A message that only joined the tail changed nothing but the tail: its weight, the position, and
the tail's start time. So the outline from before it is the one after it with the message taken
out of the tail, provided its processing did nothing else: no line stands for it (it never left
the tail), no cut or fold was committed with it (the thread's moves say), and the cut condition
never held at it (that sets the cut gap's floor, even when the kept messages stop the cut). What
cannot be taken back exactly is refused, and nothing is changed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from datetime import datetime

from .contract import Outline, Stored
from .errors import InputError, RetractRefused, StoreError
from .settings import HistorySettings
from .store import Store

MOST = 10_000
"""The most messages taken back at once."""
TRIES = 64
"""How often the thread is read again when its processing moved meanwhile."""


async def retract(store: Store, thread: str, after: int, settings: HistorySettings) -> list[Stored]:
    """Take back the messages of `thread` after seq `after` (`-1`: all of them), processed with
    `settings`: those taken back, none when it has none after `after`.

    Serialized with the thread's processing as a commit is: the store deletes them only over
    the outline read (its version) with the newest message read, else they are read again.
    """
    if not isinstance(thread, str) or not thread:
        raise InputError(f"thread must be a non-empty string, got {thread!r}", field="thread")
    if isinstance(after, bool) or not isinstance(after, int) or after < -1:
        raise InputError(f"after must be a message's seq (-1 for all), got {after!r}")
    for _ in range(TRIES):
        outline = await store.outline(thread)
        gone = await store.messages_after(thread, after, MOST + 1)
        if outline is None or not gone:
            return []
        if len(gone) > MOST:
            raise InputError(
                f"at most {MOST:,} messages are taken back at once; thread {thread!r} has more "
                f"after seq {after!r}"
            )
        moves = await store.moves(thread) if gone[0].seq <= outline.position else []
        moved = max((move.seq for move in moves), default=None)
        if await store.retract(
            outline, rewound(outline, gone, moved=moved, settings=settings), gone
        ):
            return gone
    raise StoreError(f"thread {thread!r} kept changing: nothing was taken back")


def rewound(
    outline: Outline, gone: Sequence[Stored], *, moved: int | None, settings: HistorySettings
) -> Outline:
    """The outline as it was before the thread's newest messages `gone` (in seq order, the
    last the thread's newest) were processed; RetractRefused when that cannot be told.

    Args:
        outline: the thread's committed outline.
        gone: the messages taken back; those past `outline.position` were not processed.
        moved: the seq of the message of the thread's last move (a commit that cut or folded),
            None when it has none.
        settings: the settings the thread is processed with (the tail's bounds, the cold cut).
    """
    processed = [s for s in gone if s.seq <= outline.position]
    before = outline.copy()
    if not processed:
        return before
    first = processed[0]
    if first.seq < outline.tail_start:
        raise RetractRefused(
            f"message {first.message.id!r} has left the tail of thread {outline.thread!r}: "
            "a line stands for it"
        )
    if moved is not None and moved >= first.seq:
        raise RetractRefused(
            f"the outline of thread {outline.thread!r} was cut or folded at seq {moved} "
            f"(message {first.message.id!r} or after it)"
        )
    kept = deque(item for item in outline.tail if item.seq < first.seq)
    tokens = kept_tokens = sum(item.weight for item in kept)
    previous = kept[-1].at if kept else None
    for stored in processed:
        tokens += stored.weight
        if _tried(tokens, stored.message.at, previous, outline.floor, settings):
            raise RetractRefused(
                f"a cut was tried at message {stored.message.id!r} of thread "
                f"{outline.thread!r} (its tail was over the cut's threshold)"
            )
        previous = stored.message.at
    before.tail = kept
    before.tokens = kept_tokens
    before.position = first.seq - 1
    before.since = kept[0].at if kept else None
    return before


def _tried(
    tokens: int, at: datetime, previous: datetime | None, floor: int, settings: HistorySettings
) -> bool:
    """Whether the cut condition may have held once a message brought the tail to `tokens`.

    It held if it holds with the current floor; and where it may have held with an older one,
    the floor is the tokens of the last message it held at, which it would then equal.
    """
    low, high = settings.tail
    cold = (
        settings.cold is not None
        and previous is not None
        and (at - previous).total_seconds() > settings.cold
    )
    threshold = max(high, floor + high - low) if settings.cut_gap else high
    held = tokens > threshold or (tokens > low and cold)
    possible = tokens > high or (tokens > low and cold)
    return held or (possible and tokens == floor)
