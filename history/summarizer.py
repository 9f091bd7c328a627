"""Asking for a line: the summarizer's protocol and built-in models, the asking loop (tries,
too long, cut), and how each request is sent (bounded, timed out, checked, remembered, never
stalled).

A line is written by `write`: it sends the task, reads the answer, and when the answer is too
long or empty asks again in the same conversation; after `tries` asks without a fitting answer
it cuts the shortest one. The model behind it is a `Summarizer`: `echo` and `scripted` answer
offline, and any other name is a pydantic-ai model.

The plugin asks through an `Asker`: each request goes through one capacity limiter (summarizer
calls in flight across all threads) and a timeout, and its answer is checked (`request`):
whatever the model raised or returned that a store cannot hold is a failed request, never a
crash. An answer received is remembered until its thread's batch commits (`Memory`), so a
batch that failed later and is redone never pays for it twice; the same request failing five
times gives up (`Exhausted`), and the line falls back to a cut of its input.

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
import inspect
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import anyio
import anyio.lowlevel

from .breaker import OPEN_AFTER, Breaker, WhenDown
from .contract import Ask, Outcome, Reply, Task
from .errors import ConfigurationError, SummarizerError, UnpinnedError
from .lines import cut, label, normalize, prefix, size
from .settings import INSTRUCTIONS as INSTRUCTIONS  # the text is a setting's default

if TYPE_CHECKING:  # pydantic-ai is imported by the model summarizer only, when it is made
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings

log = logging.getLogger(__name__)

EMPTY_NOTE = "Empty: write the line for the same <input>."
OFFLINE = ("echo", "scripted")
FAILED_ASKS_BEFORE_FALLBACK = 5
PERMANENT_STATUS = frozenset({400, 401, 403, 404, 422})
"""HTTP statuses that waiting will not mend: a refused request, key or permission, no model."""
ABANDON_AFTER = 0.1
"""Seconds a reply cancelled at its timeout may take to end before it is abandoned."""
_DETACHED: set[asyncio.Task[None]] = set()
"""Replies cancelled and not yet ended: held so that they are not collected while running."""


class Summarizer(Protocol):
    """What writes lines: answers the last prompt of a conversation.

    It may also have a `key` (a string, `""` when it has none): what else decides its answers,
    such as its own prompt and its model's version. It goes into every recorded call's key with
    the name, so that after it changes a rebuild needs model calls (and is refused without
    leave) instead of replaying answers to another prompt. A `reply` must be `async def`.
    """

    name: str
    """The model's name, part of every recorded call's key."""

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        """Answer `prompts[-1]`, having answered the earlier prompts with `answers`.

        What it raises (any exception, even a CancelledError, KeyboardInterrupt, SystemExit or
        GeneratorExit of its own), or a reply that is not a `Reply` of valid UTF-8 text without
        NUL and whole token counts >= 0, is a failed request: tried again after a pause, and
        after five failures the line is a cut; an error that waiting will not mend (see
        `Refused`) cuts it at once. A reply that outlives its timeout, even one that ignores
        its cancellation, is abandoned.
        """
        ...


class Exhausted(SummarizerError):
    """The same ask failed too often, or the summarizer is down: its line falls back to a cut
    of its input."""


class Refused(SummarizerError):
    """The summarizer failed in a way that waiting will not mend: a key refused (HTTP 401, 403),
    a model that does not exist (404), a request refused (400, 422), a missing key or package."""


class Down(SummarizerError):
    """The summarizer is down (its breaker is open) and the History was told to stop rather
    than fall back (`when_down="stop"`): the thread's messages stay pending."""


AskFn = Callable[[Task, Sequence[str], Sequence[str]], Awaitable[Reply]]


def too_long_note(answer: str, limit: int) -> str:
    """The follow-up that shows a model where the limit falls."""
    return (
        f"Too long: your line is {size(answer)} bytes and the limit is {limit}. Write the whole "
        "line again, dropping the least valuable items, so that it ends before the mark:\n"
        f"{prefix(answer, limit)}|<- LIMIT"
    )


async def write(task: Task, ask: AskFn, *, limit: int, tries: int) -> Ask:
    """Ask for a line of at most `limit` bytes, `tries` times at most, then cut.

    `ask` may raise SummarizerError (the batch is retried later) or Exhausted (the ask kept
    failing: the line is the cut of the input, so one bad ask cannot stall a thread).
    """
    prompts: list[str] = [task.prompt]
    answers: list[str] = []
    used = [0, 0]

    def done(line: str, outcome: Outcome) -> Ask:
        return Ask(
            thread=task.thread,
            level=task.level,
            index=task.index,
            agent=task.agent,
            prompts=tuple(prompts),
            answers=tuple(answers),
            line=line,
            input_tokens=used[0],
            output_tokens=used[1],
            outcome=outcome,
        )

    for attempt in range(tries):
        if attempt:
            last = answers[-1]
            prompts.append(too_long_note(last, limit) if last else EMPTY_NOTE)
        try:
            reply = await ask(task, tuple(prompts), tuple(answers))
        except Exhausted:
            return done(cut(task.input.replace("\n", " "), limit), "fallback")
        used[0] += reply.input_tokens
        used[1] += reply.output_tokens
        answer = normalize(reply.text)
        answers.append(answer)
        if answer and size(answer) <= limit:
            return done(answer, "fit")
    written = [a for a in answers if a]
    if written:
        return done(cut(min(written, key=size), limit), "cut")
    return done(cut(task.input.replace("\n", " "), limit), "cut")


class Echo:
    """Offline: answers every ask with the `<input>` of the task, whitespace joined."""

    name = "echo"

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        return Reply(text=normalize(task.input))


class Scripted:
    """Offline: answers `S{i}` for message `i` and `S{a}+{2n}` for a merge of `a+n` and `b+n`;
    `T{j}` and `T{a}+{2n}` for step `j` and for merges in a step tree."""

    name = "scripted"

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        node = task.index if task.level == 0 else label(task.level, task.index)
        return Reply(text=f"{'T' if task.agent else 'S'}{node}")


class ModelSummarizer:
    """A pydantic-ai model: the instructions (`HistorySettings.instructions`), then the
    conversation so far."""

    def __init__(
        self,
        model: Model | str,
        *,
        settings: ModelSettings | None = None,
        instructions: str = INSTRUCTIONS,
    ) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.models import infer_model

        try:
            resolved = infer_model(model)
        except ImportError as exc:
            raise ConfigurationError(
                f"summarizer {model!r} needs its provider's package ({exc})"
            ) from exc
        except Exception as exc:  # pydantic-ai's UserError: unknown model, missing key
            reason = str(exc).partition(" To try Pydantic AI without an API key")[0]
            raise ConfigurationError(
                f"summarizer {model!r} cannot be used: {reason} (to summarize offline, in tests "
                'and demos: summarizer="echo")'
            ) from exc
        self.model = resolved
        self.name = model if isinstance(model, str) else f"{resolved.system}:{resolved.model_name}"
        self._agent = Agent(resolved, instructions=instructions, model_settings=settings)

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        from pydantic_ai.messages import (
            ModelMessage,
            ModelRequest,
            ModelResponse,
            TextPart,
            UserPromptPart,
        )

        history: list[ModelMessage] = []
        for prompt, answer in zip(prompts, answers, strict=False):
            history.append(ModelRequest(parts=[UserPromptPart(content=prompt)]))
            history.append(ModelResponse(parts=[TextPart(content=answer)]))
        result = await self._agent.run(prompts[-1], message_history=history or None)
        usage = result.usage
        return Reply(
            text=result.output,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
        )


class Deferred:
    """A pydantic-ai model a setting names, resolved when first needed: a History that only
    stores (`process=False`, a web server's) needs no key; a worker's resolves it when it
    starts processing (`History.catch_up`), so a missing key still stops it at once."""

    def __init__(
        self, name: str, *, settings: ModelSettings | None = None, instructions: str = INSTRUCTIONS
    ) -> None:
        self.name = name
        self._settings, self._instructions = settings, instructions
        self._resolved: ModelSummarizer | None = None

    def resolve(self) -> ModelSummarizer:
        """The model; ConfigurationError when its name or key cannot work."""
        if self._resolved is None:
            self._resolved = ModelSummarizer(
                self.name, settings=self._settings, instructions=self._instructions
            )
        return self._resolved

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        return await self.resolve().reply(task, prompts, answers)


def summarizer_for(
    name: str | Model,
    *,
    settings: ModelSettings | None = None,
    instructions: str = INSTRUCTIONS,
    deferred: bool = False,
) -> Summarizer:
    """The summarizer a setting names; a name that cannot work is a ConfigurationError (when
    `deferred`, only once it is first needed: see `Deferred`)."""
    if name == "echo":
        return Echo()
    if name == "scripted":
        return Scripted()
    if deferred and isinstance(name, str):
        return Deferred(name, settings=settings, instructions=instructions)
    return ModelSummarizer(name, settings=settings, instructions=instructions)


def checked_summarizer(model: object) -> Summarizer:
    """`model` if it can write lines (a string `name`, an `async def reply`, a string `key` if
    any); a ConfigurationError saying what to write otherwise."""
    name, key = getattr(model, "name", None), getattr(model, "key", "")
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(
            f"a summarizer needs a `name` (a non-empty string), {model!r} has {name!r}"
        )
    if not isinstance(key, str):
        raise ConfigurationError(f"a summarizer's `key` must be a string, {name!r} has {key!r}")
    if not inspect.iscoroutinefunction(getattr(model, "reply", None)):
        raise ConfigurationError(
            f"summarizer {name!r} has no `async def reply`: write it as `async def reply(self, "
            "task, prompts, answers) -> Reply` (an ordinary `def` cannot be awaited; call a "
            "blocking model through `await anyio.to_thread.run_sync(...)` inside it)"
        )
    return model  # type: ignore[return-value]


def summarizer_key(model: Summarizer) -> str:
    """A summarizer's own key (see `Summarizer`), `""` when it has none."""
    key = getattr(model, "key", "")
    return key if isinstance(key, str) else ""


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
    answered (the fallback nodes and the parents above them; `history._again`)."""
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
                    self.name,
                    describe(exc),
                    pause,
                    failures,
                    self._max_failures,
                    extra={"chat_thread": task.thread},
                )
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
                    self.summarizer,
                    task,
                    prompts,
                    answers,
                    seconds=self._timeout,
                    abandoned=lambda: self._abandoned(task),
                )
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
            task.thread,
            self._timeout,
            task.level,
            task.index,
            extra={"chat_thread": task.thread},
        )
