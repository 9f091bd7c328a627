"""How the plugin asks its summarizer: bounded, timed out, checked, remembered, never stalled.

Each request goes through one capacity limiter (summarizer calls in flight across all threads)
and a timeout, and its answer is checked (`request`): whatever the model raised or returned
that a store cannot hold is a failed request, never a crash. An answer received is remembered
until its thread's batch commits, so a batch that failed later and is redone never pays for it
twice; the same request failing five times gives up (`Exhausted`), and the line falls back to a
cut of its input.

Failures are told apart (`permanent`): one that waiting will not mend (a refused key, an unknown
model, a refused request, a missing key) opens the breaker at once; the others (timeouts, 429,
5xx, connection errors, anything else) back off, and a run of them across threads opens it too
(`history.breaker`). While it is open, the lines a cut needs fall back at once.

A summarizer's reply runs in a task of its own (`_detached`), so that its timeout holds even
when it catches its cancellation and goes on: it is then abandoned (counted, logged), and its
slot in the limiter is given back. Whatever it raises is its request's failure: even a
`KeyboardInterrupt`, `SystemExit` or `GeneratorExit` of its own is kept in its thread's batch
as a failed request (transient), never raised into the app's block. A real interrupt of the
app is not one of these: it comes as a cancellation of the app's task.

Errors are logged by their type and HTTP status only: a provider's error body may echo the
request (message text) or the API key.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel

from .breaker import OPEN_AFTER, Breaker, WhenDown
from .contract import Reply, Task
from .errors import ConfigurationError, SummarizerError, UnpinnedError
from .summarizer import AskFn, Down, Exhausted, Refused, Summarizer, summarizer_key

log = logging.getLogger(__name__)

FAILED_ASKS_BEFORE_FALLBACK = 5
PERMANENT_STATUS = frozenset({400, 401, 403, 404, 422})
"""HTTP statuses that waiting will not mend: a refused request, key or permission, no model."""
ABANDON_AFTER = 0.1
"""Seconds a reply cancelled at its timeout may take to end before it is abandoned."""
_DETACHED: set[asyncio.Task[None]] = set()
"""Replies cancelled and not yet ended: held so that they are not collected while running."""


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
    """Lines that fell back to a cut of their input: their ask kept failing, or the summarizer
    was down (its breaker open)."""
    input_tokens: int = 0
    output_tokens: int = 0
    refused: int = 0
    """Threads left unprocessed because a replay refused to call the model (each once, however
    often it is tried, until it is processed again)."""
    listener_errors: int = 0
    """Calls of an `on_ask` listener that raised (logged; the plugin went on)."""
    abandoned: int = 0
    """Summarizer replies that went on after their timeout cancelled them (left running)."""
    reasked: int = 0
    """Generations written by asking fallback lines again on their own once the summarizer
    answered (the fallback nodes and the parents above them; `history.again`)."""
    reask_failures: int = 0
    """Those re-summaries that failed (logged; asked again after a later answer)."""


def describe(error: BaseException) -> str:
    """An error as a log or a message may show it: its type, and its HTTP status if it has one.

    Never its text: a provider's error body may echo the request or the API key.
    """
    status = getattr(error, "status_code", None)
    kind = type(error).__name__
    return f"{kind} (status {status})" if isinstance(status, int) else kind


def permanent(error: BaseException) -> bool:
    """Whether waiting will not mend `error`: a refused key or permission, a model that does
    not exist, a refused request (HTTP 400, 401, 403, 404, 422, or pydantic-ai's category for
    them), a missing key (pydantic-ai's UserError), a model that cannot be made."""
    if isinstance(error, ConfigurationError):
        return True  # a deferred model resolved without its key or package
    exceptions = sys.modules.get("pydantic_ai.exceptions")
    if exceptions is not None and isinstance(
        error, exceptions.UserError | exceptions.ModelRequestRejectedError
    ):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and status in PERMANENT_STATUS


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
    abandoned: Callable[[], object] = lambda: None,
) -> Reply:
    """Send one request, give it `seconds` to answer, and check its answer.

    A reply still running after `seconds` is cancelled, and abandoned (`abandoned` is called)
    when it does not end at once.

    Raises:
        Exhausted, UnpinnedError: as a replay raised them (a recorded failure, a refused miss).
        Refused: the summarizer raised an error that waiting will not mend (`permanent`).
        SummarizerError: the summarizer raised anything else (even a BaseException such as a
            CancelledError or KeyboardInterrupt of its own), timed out, or answered what
            `checked` refuses.
    """
    name = summarizer.name
    try:
        reply = await _detached(
            lambda: summarizer.reply(task, prompts, answers), seconds, abandoned
        )
    except (Exhausted, UnpinnedError):
        raise
    except TimeoutError as exc:
        raise SummarizerError(f"summarizer {name!r} took longer than {seconds}s") from exc
    except Exception as exc:
        kind = Refused if permanent(exc) else SummarizerError
        what = describe(exc.error if isinstance(exc, _Raised) else exc)
        raise kind(f"summarizer {name!r} raised {what}") from exc
    return checked(reply, name)


class Persistent:
    """A summarizer asked again after a transient failure, up to `max_failures` failures in a
    row, each try given `timeout` seconds, with a pause that doubles from 1 s (at most 8 s):
    for a one-shot command such as a rebuild, which has no breaker. An error that waiting will
    not mend is raised at once. Its name and key are the summarizer's: its calls are recorded
    as that summarizer's."""

    def __init__(self, summarizer: Summarizer, *, max_failures: int, timeout: float) -> None:
        self.name = summarizer.name
        self.key = summarizer_key(summarizer)
        self._summarizer, self._max_failures, self._timeout = summarizer, max_failures, timeout

    @property
    def longest(self) -> float:
        """The longest a reply may take, every try and pause included."""
        return self._max_failures * (self._timeout + 8.0)

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        failures = 0
        while True:
            try:
                with anyio.fail_after(self._timeout):
                    return await self._summarizer.reply(task, prompts, answers)
            except Exception as exc:
                failures += 1
                if permanent(exc) or failures >= self._max_failures:
                    raise
                pause = min(2.0 ** (failures - 1), 8.0)
                log.warning(
                    "summarizer %r failed (%s); asking again in %.0fs (%d of %d failures)",
                    self.name, describe(exc), pause, failures, self._max_failures,
                    extra={"chat_thread": task.thread},
                )  # fmt: skip
                await anyio.sleep(pause)


class _Raised(Exception):
    """A BaseException a reply raised of its own (cancellation, KeyboardInterrupt...), carried
    to its caller as an ordinary failure."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(describe(error))
        self.error = error


async def _detached(
    reply: Callable[[], Awaitable[Reply]], seconds: float, abandoned: Callable[[], object]
) -> Reply:
    """`reply()` run in a task of its own, given `seconds`; TimeoutError after them.

    This steps outside anyio's structured concurrency on purpose: a task in a task group is
    waited for, so a reply that catches its cancellation and goes on would hold its caller (and
    the History's close) for ever. Here the caller stops waiting once the reply is cancelled;
    a reply that does not end then is left running, held in `_DETACHED` until it ends. Outside
    asyncio (trio cancels at every await, so a reply cannot swallow it), it runs in place.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        with anyio.fail_after(seconds):
            return await _kept(reply)
    outcome: list[Reply | BaseException] = []
    ended = anyio.Event()

    async def run() -> None:
        try:
            outcome.append(await _kept(reply))
        except BaseException as exc:  # handed to the caller, never to the event loop
            outcome.append(exc)
        finally:
            ended.set()

    task = loop.create_task(run())
    try:
        with anyio.move_on_after(seconds):
            await ended.wait()
    finally:
        if not ended.is_set():
            task.cancel()
            _DETACHED.add(task)
            task.add_done_callback(_DETACHED.discard)
    if not ended.is_set():
        with anyio.move_on_after(ABANDON_AFTER):
            await ended.wait()
        if not ended.is_set():
            abandoned()
        raise TimeoutError
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


async def _kept(reply: Callable[[], Awaitable[Reply]]) -> Reply:
    """`reply()`, with a BaseException of its own (not this task's cancellation) as `_Raised`."""
    try:
        return await reply()
    except Exception:
        raise
    except BaseException as exc:
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            # Raises again when this task is really being cancelled; a summarizer that raised
            # a cancellation of its own has failed, and must not end the app's block.
            await anyio.lowlevel.checkpoint_if_cancelled()
        raise _Raised(exc) from None


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
    """Sends the threads' requests to the summarizer, one limiter, timeout and breaker for all."""

    def __init__(
        self,
        summarizer: Summarizer,
        counters: Counters,
        *,
        concurrency: int,
        timeout: float,
        max_failures: int = OPEN_AFTER,
        when_down: WhenDown = "fall back",
    ) -> None:
        """`max_failures` in a row open the breaker; `when_down`: see `WhenDown`."""
        if isinstance(max_failures, bool) or not isinstance(max_failures, int) or max_failures < 1:
            raise ConfigurationError(
                f"max_failures must be a whole number >= 1, got {max_failures!r}"
            )
        if when_down not in ("fall back", "stop"):
            raise ConfigurationError(f'when_down must be "fall back" or "stop", got {when_down!r}')
        self.summarizer = summarizer
        # A command that stops when it is down must not pass for well after a later answer.
        self.breaker = Breaker(open_after=max_failures, probe=when_down == "fall back")
        self._counters = counters
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._timeout = timeout
        self._stop_when_down = when_down == "stop"

    def asking(self, memory: Memory) -> AskFn:
        """How a thread asks: each request answered from its `memory` when it made it before."""

        async def ask(task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
            return await self.ask(task, prompts, answers, memory=memory)

        return ask

    async def ask(
        self, task: Task, prompts: Sequence[str], answers: Sequence[str], *, memory: Memory
    ) -> Reply:
        """One request: answered from `memory` when the batch made it before; while the
        summarizer is down (the breaker open), not sent: its line falls back at once."""
        key = tuple(prompts)
        if key in memory.answers:
            known = memory.answers[key]
            if known is None:
                raise Exhausted(f"thread {task.thread!r}: the ask kept failing")
            return known
        breaker = self.breaker
        if not breaker.admit():
            raise self._fall_back(task, memory, key)
        try:
            async with self._limiter:
                self._counters.requests += 1
                reply = await request(
                    self.summarizer, task, prompts, answers, seconds=self._timeout,
                    abandoned=lambda: self._abandoned(task),
                )  # fmt: skip
        except (Exhausted, UnpinnedError):
            breaker.released()
            raise  # a replayed ask that kept failing (the same cut), or a refused miss (never cut)
        except SummarizerError as exc:
            self._counters.failures += 1
            breaker.failed(describe(exc.__cause__ or exc), permanent=isinstance(exc, Refused))
            failed = memory.failed
            failed[key] = memory.latest = failed.get(key, 0) + 1
            if breaker.down or failed[key] >= FAILED_ASKS_BEFORE_FALLBACK:
                raise self._fall_back(task, memory, key, exc) from exc
            raise
        except BaseException:
            breaker.released()  # cancelled: a probe that got no answer
            raise
        breaker.answered()
        memory.answers[key] = reply
        return reply

    def _fall_back(
        self, task: Task, memory: Memory, key: tuple[str, ...], error: SummarizerError | None = None
    ) -> SummarizerError:
        """What an ask that cannot be answered now raises: Exhausted (its line is the cut of its
        input), or Down when the History stops rather than fall back."""
        down = self.breaker.down
        if down and self._stop_when_down:
            return Down(f"summarizer {self.summarizer.name!r} is down; the thread waits")
        memory.answers[key] = None
        self._counters.fallbacks += 1
        if not down:
            log.error(
                "thread %r: the ask for node (%d, %d) failed %d times (last: %s); its line is cut",
                *(task.thread, task.level, task.index, memory.failed[key], error),
                extra={"chat_thread": task.thread},
            )
        return Exhausted(f"thread {task.thread!r}: the ask kept failing")

    def _abandoned(self, task: Task) -> None:
        self._counters.abandoned += 1
        log.error(
            "thread %r: the summarizer went on after its %.1fs timeout for node (%d, %d), "
            "ignoring its cancellation; it is left running",
            task.thread, self._timeout, task.level, task.index,
            extra={"chat_thread": task.thread},
        )  # fmt: skip
