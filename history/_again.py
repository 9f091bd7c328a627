"""Fallback lines asked again on their own (SPEC section 5, version 3).

While the summarizer is down, the lines a cut needs fall back at once, marked as fallbacks.
Once it answers again, the `History` that processes a thread with fallback lines asks them
again through the re-summary of `History.reconsolidate(thread, fallbacks=True)`, with its own
summarizer, written as their next generation (docs/generations.md).

Which threads hold fallbacks is known cheaply: a lane whose commit wrote a fallback line says
so (`Lane.fallbacks`), and the threads caught up on opening may hold some from an earlier run
(`maybe`: their tree is read once, by a dry run that asks nothing, after the first answer). A
thread is asked again once the summarizer answered after its fallbacks were written and the
breaker is closed: one re-summary per thread at a time, `AT_ONCE` at most, in the History's
task group, never waited for by `wait()`, and given at most `close_timeout` once the History
is leaving. A failure is logged and counted (`counters.reask_failures`), never raised: the
thread is asked again after a later answer, `TRIES` times in a row at most.
"""

from __future__ import annotations

import logging

import anyio
from anyio.abc import TaskGroup

from .breaker import Breaker
from .reconsolidating import reconsolidate
from .settings import HistorySettings
from .store import Store
from .summarizer import Counters, Summarizer, describe

log = logging.getLogger(__name__)

AT_ONCE = 2
"""Threads re-summarized at once: the processing of new messages keeps the summarizer's
`concurrency` to itself."""
MAYBE = -1
"""A thread that may hold fallbacks from an earlier run: looked at after the first answer."""
TRIES = 3
"""Re-summaries of a thread that may fail in a row (each after a later answer) before it is
left for `chat-outline reconsolidate --fallbacks`, or for its next commit of fallback lines."""


class Again:
    """The threads with fallback lines not yet asked again, and their re-summaries."""

    def __init__(
        self,
        store: Store,
        settings: HistorySettings,
        summarizer: Summarizer,
        breaker: Breaker,
        counters: Counters,
        *,
        leaving: anyio.Event,
        close_timeout: float,
    ) -> None:
        self._store, self._settings, self._summarizer = store, settings, summarizer
        self._breaker, self._counters = breaker, counters
        self._leaving, self._close_timeout = leaving, close_timeout
        self._waiting: dict[str, int] = {}
        """Threads to ask again, with the breaker's answer count when their fallbacks were
        written: they are asked once it has answered since."""
        self._running: set[str] = set()
        self._failed: dict[str, int] = {}
        """Re-summaries that failed in a row, by thread."""
        self._limiter = anyio.CapacityLimiter(AT_ONCE)

    def wrote(self, thread: str) -> None:
        """A commit of `thread` wrote fallback lines."""
        self._waiting[thread] = self._breaker.answers
        self._failed.pop(thread, None)

    def maybe(self, threads: list[str]) -> None:
        """`threads` may hold fallback lines from an earlier run."""
        for thread in threads:
            self._waiting.setdefault(thread, MAYBE)

    def start(self, group: TaskGroup) -> None:
        """Ask again the threads the summarizer answered since, unless it is down now."""
        if self._breaker.down or self._leaving.is_set():
            return
        answers = self._breaker.answers
        for thread, since in list(self._waiting.items()):
            if answers > max(since, 0) and thread not in self._running:
                del self._waiting[thread]
                self._running.add(thread)
                group.start_soon(self._ask, thread, since == MAYBE, name=f"history:{thread}:again")

    async def _ask(self, thread: str, maybe: bool) -> None:
        """One thread's re-summary, cancelled `close_timeout` after the History starts leaving."""
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._deadline, group.cancel_scope)
                try:
                    async with self._limiter:
                        await self._resummarize(thread, maybe)
                finally:
                    group.cancel_scope.cancel()
        finally:
            self._running.discard(thread)

    async def _deadline(self, scope: anyio.CancelScope) -> None:
        await self._leaving.wait()
        await anyio.sleep(self._close_timeout)
        scope.cancel()

    async def _resummarize(self, thread: str, maybe: bool) -> None:
        try:
            if maybe:  # a thread from an earlier run: is there anything to ask?
                planned = await reconsolidate(
                    self._store,
                    self._settings,
                    thread,
                    fallbacks=True,
                    dry_run=True,
                    summarizer=self._summarizer,
                )
                if not planned.asked:
                    return
            done = await reconsolidate(
                self._store,
                self._settings,
                thread,
                fallbacks=True,
                max_failures=1,
                summarizer=self._summarizer,
            )
        except Exception as exc:
            self._counters.reask_failures += 1
            failed = self._failed[thread] = self._failed.get(thread, 0) + 1
            if failed < TRIES:
                self._waiting.setdefault(thread, self._breaker.answers)  # after a later answer
            else:
                del self._failed[thread]
            log.warning(
                "thread %r: its fallback lines were not asked again (%s; %d of %d tries)",
                thread,
                describe(exc),
                failed,
                TRIES,
                extra={"chat_thread": thread},
            )
            return
        self._failed.pop(thread, None)
        self._counters.reasked += done.rewritten
        log.info(
            "thread %r: %d fallback line(s) asked again, %d generation(s) written",
            thread,
            len(done.asked),
            done.rewritten,
            extra={"chat_thread": thread},
        )
