"""One rule for a thread's settings, in the library and the worker as in `ingest`.

A thread's settings (the summarizer's name, the budgets, the encoding, the instructions) are
recorded when it is first processed. A `History` that processes checks a thread's record before
it first processes the thread or stores a message of it (the threads behind on opening, or at a
worker's look; a message handed over): a thread recorded with other settings is refused at
once, with a ConfigurationError that names the thread and the difference, and nothing is stored
or processed. The app opens `History` with the thread's settings, or adopts its own for those
threads (`adopt_settings=True`, `worker --adopt-settings`): an adopted thread is recorded with
the new settings and goes on with them, its earlier lines staying as they were made
(`chat-outline rebuild` makes them again), as `ingest --rebuild` does before its rebuild.

Threads processed before settings were recorded have none, and take anyone's. The language
search stems in is the store's, not a thread's: a store opened in another one is indexed again.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from .errors import ConfigurationError
from .settings import HistorySettings, differences, listed, recorded
from .store import Store

log = logging.getLogger(__name__)

STORE_WIDE = ("search_language",)
"""Recorded settings that are the store's, not how a thread is processed."""


class Recorded:
    """The threads' recorded settings, checked once per thread against a History's own."""

    def __init__(self, settings: HistorySettings, *, adopt: bool) -> None:
        self._settings, self._adopt = settings, adopt
        self._checked: set[str] = set()

    async def check(self, store: Store, threads: Collection[str]) -> None:
        """Refuse (or, with `adopt`, record anew) those of `threads` recorded otherwise."""
        unchecked = set(threads) - self._checked
        if not unchecked:
            return
        found = await store.about(next(iter(unchecked)) if len(unchecked) == 1 else None)
        changed = {
            about.thread: differ
            for about in found
            if about.thread in unchecked and about.settings
            if (differ := self._differences(about.settings))
        }
        if changed and not self._adopt:
            thread, differ = min(changed.items())
            more = len(changed) - 1
            others = f" (and {more} more thread{'s' if more > 1 else ''})" if more else ""
            raise ConfigurationError(
                f"thread {thread!r} was built with {_side(differ, 0)}, not {_side(differ, 1)}"
                f"{others}: its new messages would be summarized otherwise than its old ones. "
                "Open History with the thread's settings, or pass adopt_settings=True (worker "
                "--adopt-settings) to go on with these; nothing was stored or processed"
            )
        for thread, differ in sorted(changed.items()):
            await store.describe(thread, settings=recorded(self._settings))
            log.info(
                "thread %r: adopting %s (it was built with %s)",
                thread,
                _side(differ, 1),
                _side(differ, 0),
                extra={"chat_thread": thread},
            )
        self._checked |= unchecked

    def _differences(self, record: str) -> dict[str, tuple[object, object]]:
        found = differences(record, self._settings)
        return {name: pair for name, pair in found.items() if name not in STORE_WIDE}


def _side(differ: dict[str, tuple[object, object]], side: int) -> str:
    return listed({name: pair[side] for name, pair in differ.items()})
