"""`History`: the plugin a chat app opens. Store each message, then process each thread in order.

    async with History(HistorySettings(summarizer="echo"), store="chat.sqlite") as history:
        await history.message_created(message)   # returns once the message is committed
        await history.wait()                      # until everything handed over is processed

Each thread is processed by one task at a time, in `seq` order; different threads at the same
time. Messages that only join a thread's tail are committed together (`history._lane`).
Summarizer calls are bounded by a capacity limiter and a timeout, and are never made with a
transaction open. A batch that fails commits nothing and is retried after a pause, which doubles
with each failure of the same request and starts over with the next one; what a summarizer or
an `on_ask` listener raises stays in its thread's batch, and never ends the app's block.

`ReadOnly` is a store and the settings to read it with, and nothing else: what `view`, `zoom`
and `search` read through in place of a `History`, with no summarizer and nothing processed
(the command line's read commands and the viewer read through one).
"""

from __future__ import annotations

import logging
import random
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self, Unpack

import anyio
from anyio.abc import TaskGroup

from ._adopting import Recorded
from ._again import Again
from ._checks import (
    argument_text,
    optional_argument_text,
    optional_text,
    space_name,
    whole,
    wrong,
)
from ._lane import STORE_CLOSE, AskListener, Lane, Lanes, Lookouts, Runner
from ._renaming import rename
from ._retracting import retract
from ._spaces import unplaced_in
from .breaker import OPEN_AFTER, Health, WhenDown
from .contract import Message, Outline, Stored
from .errors import (
    ClosedError,
    ConfigurationError,
    InputError,
    StoreError,
    StoreGoneError,
    SummarizerError,
    UnpinnedError,
)
from .metering import Usage, usage
from .pins import model_key
from .processors.weight import encoding, weight
from .reconsolidating import Options, Resummary, reconsolidate
from .settings import HistorySettings
from .store import Store, default_store, open_store
from .summarizer import (
    Asker,
    Counters,
    Deferred,
    Down,
    Summarizer,
    checked_summarizer,
    summarizer_for,
    summarizer_key,
)

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from typing_extensions import TypeIs

log = logging.getLogger(__name__)

LARGE_TEXT = 100_000
"""Texts longer than this are weighed on a worker thread, so the event loop keeps serving."""


class History:
    """The chat history plugin for one store. Use it as an async context manager."""

    def __init__(
        self,
        settings: HistorySettings,
        *,
        store: str | Path | Store | None = None,
        model: Model | Summarizer | None = None,
        concurrency: int = 8,
        timeout: float = 60.0,
        pause: float = 1.0,
        max_pause: float = 60.0,
        on_ask: AskListener | None = None,
        process: bool = True,
        close_timeout: float = 10.0,
        max_failures: int = OPEN_AFTER,
        when_down: WhenDown = "fall back",
        adopt_settings: bool = False,
    ) -> None:
        """Check the settings and resolve the summarizer; nothing is opened or called yet.

        Args:
            settings: the budgets and the summarizer's name.
            store: a SQLite path, a `postgresql://` URL, or a Store; by default
                `chat-outline.sqlite` (or `chat-history.sqlite`, the former default, when only
                it exists).
            model: a summarizer to use instead of the one `settings` names (a pydantic-ai
                `Model` such as `FunctionModel`, or any `Summarizer`).
            concurrency: summarizer calls in flight at once, across all threads.
            timeout: seconds one summarizer request may take.
            pause: seconds before a failed thread is tried again; doubles with each failure
                of the same request (after five, its line falls back to a cut of its input,
                and the next request starts from `pause` again).
            max_pause: the longest pause.
            on_ask: called with every finished summarizer conversation, once its batch is
                committed: the `Ask` carries its thread and the input and output tokens the
                provider reported (zero for answers replayed from pins), so an app can meter
                or bill it per thread, space or user. A listener that raises is logged and
                counted (`counters.listener_errors`); the plugin goes on.
            process: process the threads of the messages handed over here, and catch up on
                opening; False only stores, and leaves the processing to workers that share the
                store (`chat-outline worker`), which call `catch_up`: the model `settings` names
                is resolved (its key read) only then, so a History that only stores needs none.
            close_timeout: seconds leaving the block waits for work in flight, then cancels it.
            max_failures, when_down: failures in a row that open the summarizer's breaker, and
                "fall back" (lines cut at once) or "stop" while open (`history.breaker`).
            adopt_settings: threads recorded with other settings go on with these (recorded
                anew) instead of being refused at once (`history._adopting`).
        """
        self.settings = settings
        encoding(settings.encoding)  # refuse an unknown tokenizer at startup
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigurationError(
                f"concurrency must be a whole number >= 1, got {concurrency!r}"
            )
        if not timeout > 0 or not 0 <= pause <= max_pause:
            raise ConfigurationError(
                f"timeout must be > 0 and 0 <= pause <= max_pause, got {timeout!r}, "
                f"{pause!r}, {max_pause!r}"
            )
        if model is None or _is_model(model):
            model = summarizer_for(
                model or settings.summarizer,
                settings=settings.model_settings,
                instructions=settings.instructions,
                deferred=not process,
            )
        self.summarizer: Summarizer = checked_summarizer(model)
        self.model_key = model_key(
            model.name, settings.model_settings, settings.instructions, summarizer_key(model)
        )
        if store is None:
            store = default_store()
        if isinstance(store, str | Path):
            store = open_store(store, search_language=settings.search_language)
        self.store: Store = store
        self.counters = Counters()
        self._pause, self._max_pause = pause, max_pause
        self._asker = Asker(
            model,
            self.counters,
            concurrency=concurrency,
            timeout=timeout,
            max_failures=max_failures,
            when_down=when_down,
        )
        self._listeners: list[AskListener] = [on_ask] if on_ask else []
        self._runner = Runner(
            store,
            settings,
            self._asker,
            model_key=self.model_key,
            counters=self.counters,
            listeners=self._listeners,
        )
        self._lanes = Lanes(close_timeout=close_timeout)
        self._stack: AsyncExitStack | None = None
        self._group: TaskGroup | None = None
        self._closed = False
        self._processing = process
        self._refused: set[str] = set()
        """Threads whose processing a replay refused, until they are processed."""
        self._recorded = Recorded(settings, adopt=adopt_settings)
        self._lookouts = Lookouts()
        self._again = Again(
            store,
            settings,
            self.summarizer,
            self._asker.breaker,
            self.counters,
            leaving=self._lookouts.leaving,
            close_timeout=close_timeout,
        )

    async def __aenter__(self) -> Self:
        if self._closed or self._stack is not None:
            raise ClosedError("a History can be opened once; make a new one")
        await self.store.open()
        self._stack = AsyncExitStack()
        self._stack.push_async_callback(self._close_store)
        try:
            self._group = await self._stack.enter_async_context(anyio.create_task_group())
            if self._processing:
                self._again.maybe(await self.store.behind())  # fallbacks from an earlier run
                await self.catch_up()
        except BaseException as exc:
            await self.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        """On a clean exit, finish what was handed over (`close_timeout`); on an error, stop."""
        assert self._stack is not None
        self._lookouts.leaving.set()
        if kind is None:
            self._lanes.hasten()  # what waits is committed before the block ends
        stopped: BaseException | None = None
        if self._group is not None:
            try:
                settled = kind is None and await self._lanes.settle()
            except BaseException as cancelled:  # the block's scope, cancelled while it waits
                stopped, settled = cancelled, False
                kind, exc, tb = type(cancelled), cancelled, cancelled.__traceback__
            if not settled:
                self._group.cancel_scope.cancel()  # what it did not commit stays pending
        try:
            suppressed = await self._stack.__aexit__(kind, exc, tb)
        except BaseExceptionGroup as group:
            if exc is not None and list(group.exceptions) == [exc]:
                suppressed = False  # the block's own error, as it was raised, not in a group
            else:
                raise
        finally:
            self._closed = True
        if stopped is not None and not suppressed:
            raise stopped
        return suppressed

    async def _close_store(self) -> None:
        # Even when the exit is a cancellation; bounded, for a store that hangs (a full disk).
        with anyio.move_on_after(STORE_CLOSE, shield=True):
            await self.store.close()

    # The app's events.

    async def message_created(
        self, message: Message, *, native: str | None = None, space: str | None = None
    ) -> Stored | None:
        """Store a message, then process its thread in the background.

        `native` is what the agent that wrote the message needs to continue from it, as its
        provider sent it (pydantic-ai's serialized message, with reasoning, signatures and
        ids): its view sends that in place of the text while the message is in the tail. The
        text alone is what the thread weighs, summarizes and shows everyone else.

        `space` puts the thread in a space (metering groups its calls by it) when it has none
        yet; a thread already in another space is refused with SpaceConflict, before anything
        is written (`set_space` moves a thread).

        Returns once the message is committed: the stored row, or None for a redelivery of a
        message already stored as is. Raises InputError (before writing anything) for a bad
        message and ConflictError for a known id with other content.
        """
        group = self._open()
        if not isinstance(message, Message):
            raise InputError(f"message_created takes a Message, got {message!r}")
        native = optional_text("native", native)
        unplaced = space is not None and await unplaced_in(self.store, message.thread, space)
        if message.step and not message.author:
            raise InputError(
                f"author must name the agent a step belongs to, got {message.author!r}",
                field="author",
            )
        if len(message.text) > LARGE_TEXT:
            cost = await anyio.to_thread.run_sync(weight, message, self.settings.encoding)
        else:
            cost = weight(message, self.settings.encoding)
        if not self._processing:
            stored = await self.store.add(message, cost, native=native)
            if unplaced:
                await self.store.describe(message.thread, space=space)
            return stored
        await self._recorded.check(self.store, [message.thread])
        lane = self._lanes.get(message.thread)
        generation = lane.generation
        stored = await self.store.add(message, cost, native=native)
        if unplaced:
            await self.store.describe(message.thread, space=space)
        if stored is not None:
            if await self._erased_elsewhere(lane, stored):
                self._lanes.erased(message.thread)
            elif self._lanes.holds(lane) and lane.generation == generation:
                lane.hand(stored)  # not erased meanwhile: processing need not read it back
            self._schedule(message.thread, group)
        return stored

    async def _erased_elsewhere(self, lane: Lane, stored: Stored) -> bool:
        """Whether another process erased (or loaded over) the thread since the lane last saw
        its outline: a new message at or below the position the lane processed can only be a
        new thread's, under another epoch. Without this, on SQLite (where the lane keeps its
        outline between runs) the new thread's messages would be taken as processed already."""
        known = lane.outline
        if known is None or stored.seq > known.position:
            return False
        now = await self.store.outline(lane.thread)
        return now is None or now.epoch != known.epoch

    async def thread_deleted(self, thread: str) -> bool:
        """Erase a thread: its messages, lines, outline and calls. True when it held anything.

        A batch of the thread still in flight commits nothing afterwards: its outline row is
        gone (or belongs to a new thread of the same id, with another epoch), so its version
        check fails.
        """
        self._open()
        argument_text("thread", thread)
        erased = await self.store.erase(thread)
        self._lanes.erased(thread)
        return erased

    async def wait(self) -> None:
        """Wait until every message handed over so far is processed (with `process`), and
        every thread `catch_up` took."""
        self._open()
        with self._lanes.hastened():
            while self._lanes.busy:
                await self._lanes.idle.wait()

    async def settled(self, thread: str, seq: int) -> None:
        """Wait until `thread` is processed up to its message `seq` (by this process or a
        worker that shares the store); bound it with `anyio.move_on_after`. The thread's wait
        for more messages ends at once, so what it processed is committed."""
        self._open()
        argument_text("thread", thread)
        whole("seq", seq, low=-1)
        pause = 0.01
        while (outline := await self.store.outline(thread)) is not None and outline.position < seq:
            if self._lanes.running(thread):
                self._lanes.get(thread).hasten()
            await anyio.sleep(pause)
            pause = min(pause * 2, 0.2)

    async def catch_up(self, *, limit: int | None = None) -> int:
        """Process the threads with stored messages not yet processed; how many are behind.

        Opening does this once for every thread (with `process`); a worker that shares the
        store with other processes calls it as it polls, with a `limit` on the threads it works
        on at once (those already running count), taken in random order so that the workers
        spread over the threads. A thread another process holds is left to it.
        """
        group = self._open()
        if limit is not None:
            whole("limit", limit, low=1)
        if isinstance(self.summarizer, Deferred):
            self.summarizer.resolve()  # a worker without its key stops here, before any thread
        behind = await self.store.behind()
        await self._recorded.check(self.store, behind)
        chosen = [thread for thread in behind if not self._lanes.running(thread)]
        if limit is not None:
            random.shuffle(chosen)
            del chosen[max(limit - self._lanes.busy, 0) :]
        for thread in chosen:
            self._schedule(thread, group)
        return len(behind)

    def retry(self, thread: str | None = None) -> None:
        """Try failed threads again now instead of after their pause (all threads by default)."""
        optional_argument_text("thread", thread)
        for lane in self._lanes:
            if thread in (None, lane.thread):
                # A lane still running when asked (its batch not failed yet) is not asleep to
                # be woken: it skips its next pause instead.
                lane.hurried = lane.running
                if lane.wake is not None:
                    lane.wake.set()

    def health(self) -> Health:
        """How the summarizer is doing (its breaker, the lines that fell back)."""
        return self._asker.breaker.health(fallbacks=self.counters.fallbacks)

    def subscribe(self, listener: AskListener) -> None:
        """Call `listener` with every summarizer conversation once its batch is committed."""
        self._listeners.append(listener)

    async def outline(self, thread: str) -> Outline | None:
        """The thread's committed outline and tail; None for a thread with no messages."""
        self._open()
        argument_text("thread", thread)
        return await self.store.outline(thread)

    async def messages(self, thread: str, *, after: int = -1, limit: int = 100) -> list[Stored]:
        """The thread's stored messages (steps too, processed or not) in order, at most `limit`
        from the one after `seq` `after`: the next page is after the last one's `seq`."""
        self._open()
        argument_text("thread", thread)
        whole("limit", limit, low=1, high=10_000)
        whole("after", after, low=-1)
        return await self.store.messages_after(thread, after, limit)

    async def retract(self, thread: str, *, after: int) -> list[Stored]:
        """Take back the thread's messages after seq `after` while they are whole in its tail
        (`history._retracting`): those taken back. RetractRefused, changing nothing, once a line
        stands for one of them; a batch in flight commits nothing and is done without them."""
        self._open()
        gone = await retract(self.store, thread, after, self.settings)
        if gone:
            self._lanes.erased(thread)  # what this process read or holds of it is stale
            if self._processing:  # what it processed and had not committed, again
                self._schedule(thread)
        return gone

    async def usage(
        self, thread: str | None = None, *, input_price: float = 0.0, output_price: float = 0.0
    ) -> Usage:
        """The summarizer's recorded calls and tokens per thread, and their cost.

        Prices are per million input and output tokens; see `history.metering`.
        """
        self._open()
        optional_argument_text("thread", thread)
        return await usage(self.store, thread, input_price=input_price, output_price=output_price)

    async def set_space(self, thread: str, space: str) -> None:
        """Put `thread` in `space` (replacing the one it was in): its calls are metered there
        from now on, the ones recorded before too (`usage` groups by a thread's space)."""
        self._open()
        argument_text("thread", thread)
        await self.store.describe(thread, space=space_name(space))
        self._runner.moved(thread)

    async def rename(
        self, author: str, name: str, *, thread: str | None = None, now: bool = False
    ) -> int:
        """Show `author` as `name`, store-wide or in `thread`: every line, header and search hit
        reads it; the number of lines rewritten, with no model call (docs/generations.md)."""
        self._open()
        return await rename(self.store, author, name, thread=thread, now=now)

    async def reconsolidate(
        self, thread: str, label: str | None = None, **options: Unpack[Options]
    ) -> Resummary:
        """Ask a summarizer for lines of `thread` again (the node `label`, else every line its
        outline shows), written as their next generation (docs/generations.md, section 4)."""
        self._open()
        return await reconsolidate(self.store, self.settings, thread, label, **options)

    # Processing.

    def _open(self) -> TaskGroup:
        if self._group is None or self._closed:
            raise ClosedError("History is not open: use it inside `async with History(...)`")
        return self._group

    def _schedule(self, thread: str, group: TaskGroup | None = None) -> None:
        lane = self._lanes.get(thread)
        if lane.running:
            lane.came()
            return
        self._lanes.start(lane)
        (group or self._open()).start_soon(self._work, lane, name=f"history:{thread}")

    async def _work(self, lane: Lane) -> None:
        thread, failures = lane.thread, 0
        try:
            while True:
                lane.looking()
                try:
                    if not await self._runner.catch_up(lane, self._lanes.linger):
                        self._lookouts.watch(thread, self._open(), self.store.lease, self._schedule)
                except UnpinnedError as exc:
                    # Asking again cannot help: the thread waits until the app allows calls.
                    log.error("thread %r: %s", thread, exc, extra={"chat_thread": thread})
                    if thread not in self._refused:  # a thread, however often it is tried
                        self._refused.add(thread)
                        self.counters.refused += 1
                    return
                except Down:
                    return  # when_down="stop": the thread waits, pending, for the next open
                except StoreGoneError as exc:
                    # Nor can it when the store was dropped: the thread waits for a restore.
                    log.error("thread %r: %s", thread, exc, extra={"chat_thread": thread})
                    return
                except (SummarizerError, StoreError) as exc:
                    # A summarizer's retries are bounded per request: the pause starts over
                    # after an answer or a fallback, so a dead model costs each line the same.
                    if isinstance(exc, SummarizerError):
                        failures = lane.memory.latest
                    else:
                        failures += 1
                    pause = min(self._pause * 2 ** min(failures - 1, 64), self._max_pause)
                    log.warning(
                        "thread %r: batch failed (%s); retrying in %.1fs",
                        thread,
                        exc,
                        pause,
                        extra={"chat_thread": thread},
                    )
                    wake = lane.wake = anyio.Event()
                    with anyio.move_on_after(0 if lane.hurried else pause):
                        await wake.wait()
                    lane.hurried = False
                    continue  # the loop looks again
                failures = 0
                self._refused.discard(thread)
                if lane.fallbacks:
                    lane.fallbacks = False
                    self._again.wrote(thread)
                self._again.start(self._open())  # once the summarizer answers again
                if not lane.dirty:
                    return
        finally:
            lane.hurried = False
            self._lanes.stop(lane)


@dataclass(frozen=True, eq=False)
class ReadOnly:
    """A store and the settings its threads are read with: what `view`, `zoom` and `search`
    need, without a `History` (no summarizer is made, nothing is processed or written).

        async with ReadOnly.opened("chat.sqlite") as reader:
            messages = await view(reader, "t")
    """

    store: Store
    settings: HistorySettings = field(default_factory=lambda: HistorySettings(summarizer="echo"))
    """Only what reading uses (the tokenizer, the outline's bounds): the summarizer named is
    never made."""

    @classmethod
    @asynccontextmanager
    async def opened(
        cls, store: Store | str | Path, settings: HistorySettings | None = None
    ) -> AsyncIterator[ReadOnly]:
        """The store at a path or URL, opened read only (a `Store` as it is given), closed on
        leaving."""
        if settings is not None and not isinstance(settings, HistorySettings):
            wrong("settings", settings, "a HistorySettings")
        if isinstance(store, str | Path):
            store = open_store(store, create=False, read_only=True)
        elif not callable(getattr(store, "snapshot", None)):
            wrong("store", store, "a path, a URL or a Store")
        await store.open()
        try:
            yield cls(store) if settings is None else cls(store, settings)
        finally:
            await store.close()


Reading = History | ReadOnly
"""What the readers (`view`, `zoom`, `search`) take: a `History`, or a `ReadOnly` store."""


def _is_model(model: object) -> TypeIs[Model]:
    """A pydantic-ai model given as the summarizer. Whoever made one imported pydantic-ai, so
    a process that never did (the command line, a worker) is spared importing it."""
    models = sys.modules.get("pydantic_ai.models")
    return models is not None and isinstance(model, models.Model)
