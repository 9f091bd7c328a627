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
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel

from .contract import Reply, Task
from .errors import SummarizerError, UnpinnedError
from .summarizer import AskFn, Exhausted, Summarizer

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
    """Threads left unprocessed because a replay refused to call the model (each once, however
    often it is tried, until it is processed again)."""
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


@dataclass(kw_only=True)
class Memory:
    """A thread's requests since its last commit: the answers received, and the failures.

    Kept until the thread's batch commits (`clear`), so a batch redone after a later failure
    never pays for an answer twice.
    """

    answers: dict[tuple[str, ...], Reply | None] = field(default_factory=dict)
    """By the prompts sent; None for an ask that kept failing (its line is a cut)."""
    failed: dict[tuple[str, ...], int] = field(default_factory=dict)
    """How often each request failed."""
    latest: int = 1
    """How often the request that failed last has failed: the thread's retry pause grows with
    this, and starts over with the next request (after an answer or a fallback)."""

    def clear(self) -> None:
        """The thread's batch committed (or the thread is gone): forget its requests."""
        self.answers.clear()
        self.failed.clear()
        self.latest = 1


class Asker:
    """Sends the threads' requests to the summarizer, one limiter and timeout for all."""

    def __init__(
        self, summarizer: Summarizer, counters: Counters, *, concurrency: int, timeout: float
    ) -> None:
        self.summarizer = summarizer
        self._counters = counters
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._timeout = timeout

    def asking(self, memory: Memory) -> AskFn:
        """How a thread asks: each request answered from its `memory` when it made it before."""

        async def ask(task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
            return await self.ask(task, prompts, answers, memory=memory)

        return ask

    async def ask(
        self, task: Task, prompts: Sequence[str], answers: Sequence[str], *, memory: Memory
    ) -> Reply:
        """One request: answered from `memory` when the batch made it before."""
        key = tuple(prompts)
        if key in memory.answers:
            known = memory.answers[key]
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
            failed = memory.failed
            failed[key] = memory.latest = failed.get(key, 0) + 1
            if failed[key] >= FAILED_ASKS_BEFORE_FALLBACK:
                memory.answers[key] = None
                self._counters.fallbacks += 1
                log.error(
                    "thread %r: the ask for node (%d, %d) failed %d times (last: %s); its line "
                    "is cut",
                    *(task.thread, task.level, task.index, failed[key], exc),
                    extra={"chat_thread": task.thread},
                )
                raise Exhausted(f"thread {task.thread!r}: the ask kept failing") from exc
            raise
        memory.answers[key] = reply
        return reply
