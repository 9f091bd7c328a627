"""How the plugin asks its summarizer: bounded, timed out, checked, remembered, never stalled.

Each request goes through one capacity limiter (summarizer calls in flight across all threads)
and a timeout, and its answer is checked (`request`): whatever the model raised or returned
that a store cannot hold is a failed request, never a crash. An answer received is remembered
until its thread's batch commits, so a batch that failed later and is redone never pays for it
twice; the same request failing five times gives up (`Exhausted`), and the line falls back to a
cut of its input.

Errors are logged by their type and HTTP status only: a provider's error body may echo the
request (message text) or the API key.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import anyio
import anyio.lowlevel

from .contract import Reply, Task
from .errors import SummarizerError, UnpinnedError
from .summarizer import Exhausted, Summarizer

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
    """Summarizer requests that raised, timed out, or answered what cannot be stored."""
    fallbacks: int = 0
    """Asks that kept failing and fell back to a cut of their input."""
    input_tokens: int = 0
    output_tokens: int = 0
    refused: int = 0
    """Threads left unprocessed because a replay refused to call the model."""
    listener_errors: int = 0
    """Calls of an `on_ask` listener that raised (logged; the plugin went on)."""


def describe(error: BaseException) -> str:
    """An error as a log or a message may show it: its type, and its HTTP status if it has one.

    Never its text: a provider's error body may echo the request or the API key.
    """
    status = getattr(error, "status_code", None)
    kind = type(error).__name__
    return f"{kind} (status {status})" if isinstance(status, int) else kind


def checked(reply: object, name: str) -> Reply:
    """A model's reply as the plugin may use it; anything else is a SummarizerError.

    A reply must be a `Reply` with a string text that every store can hold (valid UTF-8, so
    no lone surrogate such as a provider's JSON `"\\ud800"` gives; no NUL, which PostgreSQL
    text cannot hold) and token counts that are whole numbers >= 0.
    """
    if not isinstance(reply, Reply):
        problem = f"a {type(reply).__name__}, not a Reply"
    elif not isinstance(reply.text, str):
        problem = f"a text that is a {type(reply.text).__name__}, not a string"
    elif not all(
        type(tokens) is int and tokens >= 0 for tokens in (reply.input_tokens, reply.output_tokens)
    ):
        problem = "token counts that are not whole numbers >= 0"
    elif "\x00" in reply.text:
        problem = "a text with a NUL character"
    else:
        try:
            reply.text.encode("utf-8")
        except UnicodeEncodeError:
            problem = "a text that is not valid UTF-8 (a lone surrogate)"
        else:
            return reply
    raise SummarizerError(f"summarizer {name!r} answered {problem}")


async def request(
    summarizer: Summarizer,
    task: Task,
    prompts: Sequence[str],
    answers: Sequence[str],
    *,
    seconds: float,
) -> Reply:
    """Send one request, give it `seconds` to answer, and check its answer.

    Raises:
        Exhausted, UnpinnedError: as a replay raised them (a recorded failure, a refused miss).
        SummarizerError: the summarizer raised (even a CancelledError that is no cancellation
            of this task), timed out, or answered what `checked` refuses.
    """
    try:
        with anyio.fail_after(seconds):
            reply = await summarizer.reply(task, prompts, answers)
    except (Exhausted, UnpinnedError):
        raise
    except anyio.get_cancelled_exc_class() as exc:
        # Raises again when this task is really being cancelled; a summarizer that raised a
        # cancellation of its own has failed, and must not end the app's block.
        await anyio.lowlevel.checkpoint_if_cancelled()
        raise SummarizerError(f"summarizer {summarizer.name!r} raised {describe(exc)}") from None
    except TimeoutError as exc:
        raise SummarizerError(
            f"summarizer {summarizer.name!r} took longer than {seconds}s"
        ) from exc
    except Exception as exc:
        raise SummarizerError(f"summarizer {summarizer.name!r} raised {describe(exc)}") from exc
    return checked(reply, summarizer.name)


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
        self._latest: dict[str, int] = {}

    def settle(self, thread: str) -> None:
        """The thread's batch committed (or the thread is gone): forget its answers."""
        self._answers.pop(thread, None)
        self._failed.pop(thread, None)
        self._latest.pop(thread, None)

    def failures(self, thread: str) -> int:
        """How often the thread's request that failed last has failed: its retry's pause grows
        with this, and starts over with the next request (after an answer or a fallback)."""
        return self._latest.get(thread, 1)

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
                reply = await request(
                    self.summarizer, task, prompts, answers, seconds=self._timeout
                )
        except (Exhausted, UnpinnedError):
            raise  # a replayed ask that kept failing (the same cut), or a refused miss (never cut)
        except SummarizerError as exc:
            self._counters.failures += 1
            failed = self._failed.setdefault(task.thread, {})
            failed[key] = self._latest[task.thread] = failed.get(key, 0) + 1
            if failed[key] >= FAILED_ASKS_BEFORE_FALLBACK:
                memory[key] = None
                self._counters.fallbacks += 1
                log.error(
                    "thread %r: the ask for node (%d, %d) failed %d times (last: %s); its line "
                    "is cut",
                    *(task.thread, task.level, task.index, failed[key], exc),
                    extra={"chat_thread": task.thread},
                )
                raise Exhausted(f"thread {task.thread!r}: the ask kept failing") from exc
            raise
        memory[key] = reply
        return reply
