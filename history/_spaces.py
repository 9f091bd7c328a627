"""Spaces: the string an app puts a thread in (a workspace, a customer, a team), that metering
groups the summarizer's calls by.

A thread is in at most one space at a time, recorded with its title and settings (`About`). The
first message that names a space places a thread that is in none; a message naming another
space than the recorded one is refused (`SpaceConflict`), since its calls would be billed to
the wrong space without a word; `History.set_space` moves a thread on purpose.
"""

from __future__ import annotations

from ._checks import space_name
from .errors import SpaceConflict
from .store import Store


async def space_of(store: Store, thread: str) -> str | None:
    """The space `thread` is in; None when it is in none."""
    about = await store.about(thread)
    return about[0].space if about else None


async def unplaced_in(store: Store, thread: str, space: str) -> bool:
    """Whether `thread` is in no space yet, so a message naming `space` places it; raises
    SpaceConflict (writing nothing) when it is in another."""
    space = space_name(space)
    recorded = await space_of(store, thread)
    if recorded is not None and recorded != space:
        raise SpaceConflict(
            f"thread {thread!r} is in space {recorded!r}, the message names {space!r}: "
            "move the thread with set_space first",
            field="space",
        )
    return recorded is None
