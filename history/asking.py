"""How the plugin asks its summarizer: bounded, timed out, remembered, and never stalled.

Each request goes through one capacity limiter (summarizer calls in flight across all threads)
and a timeout. An answer received is remembered until its thread's batch commits, so a batch
that failed later and is redone never pays for it twice; the same request failing five times
gives up (`Exhausted`), and the line falls back to a cut of its input.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from .errors import SummarizerError, UnpinnedError
from .summarizer import Exhausted, Reply, Summarizer, Task

log = logging.getLogger(__name__)

FAILED_ASKS_BEFORE_FALLBACK = 5


@dataclass(kw_only=True)
class Counters:
    """What the plugin did since it was opened: for logs, metrics and tests."""

    processed: int = 0
    asks: int = 0
    """Lines written by the summarizer (one conversation each)."""
    requests: int = 0
    """Requests sent to the summarizer (several per ask when an answer is too long)."""
    failures: int = 0
    """Summarizer requests that raised or timed out."""
    fallbacks: int = 0
    """Asks that kept failing and fell back to a cut of their input."""
    input_tokens: int = 0
    output_tokens: int = 0
    refused: int = 0
    """Threads left unprocessed because a replay refused to call the model."""


class Asker:
    """Sends a thread's requests to the summarizer, remembering answers until `settle`."""

    def __init__(
        self, summarizer: Summarizer, counters: Counters, *, concurrency: int, timeout: float
    ) -> None:
        self.summarizer = summarizer
        self._counters = counters
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._timeout = timeout
        self._answers: dict[str, dict[tuple[str, ...], Reply | None]] = {}
        self._failed: dict[str, dict[tuple[str, ...], int]] = {}

    def settle(self, thread: str) -> None:
        """The thread's batch committed (or the thread is gone): forget its answers."""
        self._answers.pop(thread, None)
        self._failed.pop(thread, None)

    async def ask(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        """One request: answered from memory when the batch made it before."""
        memory = self._answers.setdefault(task.thread, {})
        key = tuple(prompts)
        if key in memory:
            known = memory[key]
            if known is None:
                raise Exhausted(f"thread {task.thread!r}: the ask kept failing")
            return known
        try:
            async with self._limiter:
                self._counters.requests += 1
                with anyio.fail_after(self._timeout):
                    reply = await self.summarizer.reply(task, prompts, answers)
        except (Exhausted, UnpinnedError):
            raise  # a replayed ask that kept failing (the same cut), or a refused miss (never cut)
        except Exception as exc:
            self._counters.failures += 1
            failed = self._failed.setdefault(task.thread, {})
            failed[key] = failed.get(key, 0) + 1
            if failed[key] >= FAILED_ASKS_BEFORE_FALLBACK:
                memory[key] = None
                self._counters.fallbacks += 1
                log.error(
                    "thread %r: the ask for node (%d, %d) failed %d times; its line is cut",
                    *(task.thread, task.level, task.index, failed[key]),
                    extra={"chat_thread": task.thread},
                )
                raise Exhausted(f"thread {task.thread!r}: the ask kept failing") from exc
            raise SummarizerError(f"summarizer {self.summarizer.name!r} failed: {exc!r}") from exc
        memory[key] = reply
        return reply
