"""A cold turn: the cold cut (`HistorySettings.cold`) lands on the request it was made for.

A turn is cold when the message that starts it came more than `cold` seconds after the one
before it: the provider's cache of the prompt is gone, so the next request is written to the
cache whole anyway, and the processor cuts the tail then (SPEC section 5, step 2). For that cut
to cost nothing, the view of that very request must hold it: a cold turn waits for its thread's
processing, at most `COLD_WAIT` seconds, before its view is built. A cut that misses the wait is
held: until the next cold turn (or a later cut, which moves the prompt's start anyway) every
view of the thread is built from the outline of before it, so the cut does not break the warm
cache of the requests that follow.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from weakref import WeakKeyDictionary

import anyio

from ..contract import Outline, Snapshot
from ..errors import ConfigurationError
from ..plugin import History, Reading

log = logging.getLogger(__name__)

COLD_WAIT = 10.0
"""Seconds a cold turn waits for its thread's processing by default: the summarizer's calls of
the cold cut (one line a message that leaves; a cheap model answers one in a second or two). A
cut that misses the wait commits in the background and is held (see the module docstring); the
tail sent meanwhile is longer by what the cut took out."""


@dataclass(frozen=True, kw_only=True)
class _Hold:
    """A thread's outline as sent before a cold cut that missed its wait."""

    outline: Outline
    cold: datetime
    """The `at` of the cold message: the held cut's `cut_at`."""


_HELD: WeakKeyDictionary[Reading, dict[str, _Hold]] = WeakKeyDictionary()
"""The holds of each History, by thread: shared by every ThreadHistory on it."""


def check_wait(wait: object) -> float:
    """`wait` as seconds to wait, 0 or more; ConfigurationError otherwise."""
    if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0 <= wait < float("inf"):
        raise ConfigurationError(f"cold_wait must be 0 or more seconds, got {wait!r}")
    return float(wait)


async def snapshot_for(
    history: Reading, thread: str, *, agent: str | None, turn: bool, wait: float
) -> Snapshot | None:
    """What a view of `thread` for `agent` is built from: the thread as committed, after a cold
    `turn`'s wait of at most `wait` seconds, or with the outline held since a cold cut that
    missed its wait."""
    holds = _HELD.setdefault(history, {})
    snapshot = await history.store.snapshot(thread, agent=agent)
    if snapshot is None:
        return None
    current = snapshot.outline
    cold = history.settings.cold
    if turn and cold is not None and isinstance(history, History):  # a ReadOnly processes none
        tail = snapshot.tail
        if len(tail) > 1 and (tail[-1].message.at - tail[-2].message.at).total_seconds() > cold:
            holds.pop(thread, None)  # what was held lands now
            with anyio.move_on_after(wait) as waited:
                await history.settled(thread, tail[-1].seq)
            if not waited.cancelled_caught:
                return await history.store.snapshot(thread, agent=agent)
            log.info(
                "thread %r: a cold turn's processing took over %.1fs; its cut is held for the "
                "next cold turn",
                thread,
                wait,
                extra={"chat_thread": thread},
            )
            holds[thread] = _Hold(outline=current, cold=tail[-1].message.at)
            return snapshot
    held = holds.get(thread)
    if held is None:
        return snapshot
    if current.cut_at in (held.outline.cut_at, held.cold):
        # No cut since but the held one: the prompt's start stays.
        return await history.store.snapshot(thread, agent=agent, outline=held.outline)
    del holds[thread]  # a later cut moved the prompt's start anyway
    return snapshot
