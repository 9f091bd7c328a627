"""Pinned calls: a summarizer that answers from recorded conversations (`Replay`).

Every summarizer conversation is recorded in the `call` collection under a key of its exact
request: the model key (the model's name, its settings, the instructions, the summarizer's
own `key`) and every prompt.
A replay answers from them: a recorded conversation answers turn k of a request whose prompts
are its first k + 1 prompts, in the same thread, so asking again gives the identical line and
costs nothing. Only a miss reaches the model, or is refused.

    calls = [c.ask for c in records.calls if c.model == history.model_key]
    model = Replay(summarizer, calls, refuse_misses=True)

A recorded answer is bounded (`as_recorded`): a broken model answering megabytes, five times an
ask, must not fill the disk. An answer longer than `ANSWER_LINES` times the thread's `line`
bytes keeps its head of that many bytes and a note of how many bytes were dropped. A replay
stands the dropped bytes in (`replayed`: as many `x`), which gives the same line as the whole
answer did, because all that an answer decides is read from its size and its first `line`
bytes: whether it fits (its size), the follow-up prompt when it does not (its size and its
first `line` bytes, `too_long_note`), which answer a cut takes (the smallest) and the cut (its
first `line` bytes). The follow-up prompts are recorded whole, so a replayed conversation
asks its later turns under the same keys. Only a miss after a bounded turn differs: the model
is then shown the head and the stand-in, not the megabytes, as the answer it gave before.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from .contract import Ask, Reply, Task
from .errors import ConfigurationError, UnpinnedError
from .lines import prefix, size
from .settings import INSTRUCTIONS
from .store._records import RecordedCall
from .summarizer import Exhausted, Summarizer, summarizer_key

if TYPE_CHECKING:
    from pydantic_ai.settings import ModelSettings

log = logging.getLogger(__name__)

Request = tuple[str, tuple[str, ...]]
"""A request as a replay looks it up: its thread and its prompts."""


def model_key(
    name: str, settings: ModelSettings | None, instructions: str = INSTRUCTIONS, key: str = ""
) -> str:
    """The model part of every pin, as `History.model_key` holds it: the summarizer's name, its
    model settings, the instructions (`HistorySettings.instructions`) and its own `key`."""
    own = f"\n{key}" if key else ""  # the key of a summarizer with none is as it always was
    return f"{name}\n{settings!r}\n{instructions}{own}"


ANSWER_LINES = 4
"""A recorded answer keeps at most this many times its thread's `line` bytes (and the note)."""
_DROPPED = re.compile(r"\[…(\d+) more bytes not recorded\]\Z")
"""The note that ends a bounded answer: how many bytes of it were dropped."""


def as_recorded(ask: Ask, line: int) -> Ask:
    """`ask` as the store records it: each answer of more than `ANSWER_LINES * line` bytes cut
    to its head, with a note of the bytes dropped (see the module's docstring)."""
    bound = ANSWER_LINES * line
    answers = tuple(_bounded(answer, bound) for answer in ask.answers)
    return ask if answers == ask.answers else replace(ask, answers=answers)


def _bounded(answer: str, bound: int) -> str:
    # An answer that ends as a note would read as bounded: it gets a note of 0 bytes dropped.
    if size(answer) <= bound and _DROPPED.search(answer) is None:
        return answer
    head = prefix(answer, bound)
    return f"{head}[…{size(answer) - size(head)} more bytes not recorded]"


def replayed(answer: str) -> str:
    """A recorded answer as a replay gives it: a bounded one with its dropped bytes stood in,
    so that its size and head are the whole answer's, and recording it again gives the same
    record (the stand-in starts with a character too long for what its head left of the bound:
    the head ends at most 3 bytes short of it)."""
    found = _DROPPED.search(answer)
    if found is None:
        return answer
    dropped = int(found[1])
    first = _STAND_IN[min(dropped, 4)]
    return answer[: found.start()] + first + "x" * (dropped - size(first))


_STAND_IN = {0: "", 1: "x", 2: "é", 3: "€", 4: "𝑥"}
"""The first character standing in for the dropped bytes, by how many there are (4: or more)."""


def pinned(calls: Iterable[RecordedCall], key: str) -> list[Ask]:
    """The conversations among `calls` that were made under the model key `key`."""
    return [call.ask for call in calls if call.model == key]


class Replay:
    """A summarizer that answers from recorded conversations and asks `inner` only on a miss.

    A recorded answer comes back with no tokens (nothing was paid for it again). A recorded
    conversation that kept failing (outcome `fallback`) is asked again when misses may reach the
    model (its answer then replaces the fallback where it is recorded); otherwise it fails again
    the same way, so its line is the same cut. The plugin records a replayed conversation once:
    its key is already stored.

    Attributes:
        hits: requests answered from the recorded conversations.
        misses: requests that had no recorded answer (sent to `inner`, or refused).
    """

    def __init__(
        self,
        inner: Summarizer | None,
        calls: Iterable[Ask],
        *,
        name: str | None = None,
        refuse_misses: bool = False,
        retry_fallbacks: bool | None = None,
    ) -> None:
        """Index the recorded conversations.

        Args:
            inner: the model a miss is sent to; None refuses every miss.
            calls: the recorded conversations of one model key (see `pinned`), oldest first:
                the earliest answer to a request wins.
            name: the model's name, part of the key of what the plugin records (the inner
                model's name by default).
            refuse_misses: raise UnpinnedError on a miss instead of calling `inner`.
            retry_fallbacks: treat a recorded fallback as a miss (asked again, or refused)
                rather than failing again the same way; by default, when misses may reach
                `inner`.
        """
        if name is None:
            if inner is None:
                raise ConfigurationError("a replay without a model needs the model's name")
            name = inner.name
        self.name = name
        self.key = "" if inner is None else summarizer_key(inner)
        self.inner = inner
        self.refuse_misses = refuse_misses or inner is None
        self.retry_fallbacks = (
            not self.refuse_misses if retry_fallbacks is None else retry_fallbacks
        )
        self.hits = 0
        self.misses = 0
        self._answers: dict[Request, str | None] = {}
        for ask in calls:
            self.record(ask)

    def __len__(self) -> int:
        """How many requests it can answer."""
        return len(self._answers)

    def record(self, ask: Ask) -> None:
        """Answer from `ask` too: each turn it answered, and its failure if it kept failing.

        The earliest answer to a request wins, and any answer wins over a failure.
        """
        for turn, answer in enumerate(ask.answers):
            request = (ask.thread, ask.prompts[: turn + 1])
            if self._answers.get(request) is None:
                self._answers[request] = answer
        if ask.outcome == "fallback" and len(ask.prompts) == len(ask.answers) + 1:
            self._answers.setdefault((ask.thread, ask.prompts), None)

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        request = (task.thread, tuple(prompts))
        if request in self._answers and not (
            self.retry_fallbacks and self._answers[request] is None
        ):
            self.hits += 1
            answer = self._answers[request]
            if answer is None:
                raise Exhausted(
                    f"thread {task.thread!r}: the recorded ask for node ({task.level}, "
                    f"{task.index}) kept failing"
                )
            return Reply(text=replayed(answer))
        self.misses += 1
        missing = "a recorded fallback" if request in self._answers else "no recorded answer"
        if self.refuse_misses or self.inner is None:
            raise UnpinnedError(
                f"thread {task.thread!r}: {missing} for node ({task.level}, "
                f"{task.index}), turn {len(prompts)}, and model calls are not allowed"
            )
        log.info(
            "thread %r: %s for node (%d, %d); asking %r",
            task.thread,
            missing,
            task.level,
            task.index,
            self.inner.name,
            extra={"chat_thread": task.thread},
        )
        return await self.inner.reply(task, prompts, answers)
