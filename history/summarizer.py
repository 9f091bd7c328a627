"""The summarizer: the protocol, the asking loop (tries, too long, cut), and the built-in models.

A line is written by `write`: it sends the task, reads the answer, and when the answer is too
long or empty asks again in the same conversation; after `tries` asks without a fitting answer
it cuts the shortest one. The model behind it is a `Summarizer`: `echo` and `scripted` answer
offline, and any other name is a pydantic-ai model.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from .contract import Ask, Outcome, Reply, Task
from .errors import ConfigurationError, SummarizerError
from .lines import cut, label, normalize, prefix, size
from .settings import INSTRUCTIONS as INSTRUCTIONS  # the text is a setting's default

if TYPE_CHECKING:  # pydantic-ai is imported by the model summarizer only, when it is made
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings

EMPTY_NOTE = "Empty: write the line for the same <input>."
OFFLINE = ("echo", "scripted")


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
