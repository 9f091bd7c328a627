"""The processor for `thread.deleted`: a thread's messages, lines, outline and calls go together."""

from __future__ import annotations

from history.store import Store


async def erase(store: Store, thread: str) -> bool:
    """Erase the thread in one transaction; True when it held anything.

    A batch of the thread that is still in flight commits nothing afterwards: its outline row is
    gone (or belongs to a new thread of the same id, with another epoch), so its version check
    fails.
    """
    return await store.erase(thread)
