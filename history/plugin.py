"""`History`: the plugin a chat app opens. Store each message, then process each thread in order.

    async with History(HistorySettings(summarizer="echo"), store="chat.sqlite") as history:
        await history.message_created(message)   # returns once the message is committed
        await history.wait()                      # until everything handed over is processed

Each thread is processed by one task at a time, in `seq` order; different threads at the same
time. Summarizer calls are bounded by a capacity limiter and a timeout, and are never made with a
transaction open. A batch that fails commits nothing and is retried after a pause, which doubles
with each failure of the same request and starts over with the next one; what a summarizer or
an `on_ask` listener raises stays in its thread's batch, and never ends the app's block.
"""

from __future__ import annotations

import logging
import random
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

import anyio
from anyio.abc import TaskGroup

from .asking import Asker, Counters, describe
from .batch import process_one
from .contract import Ask, Message, Outline, Stored, Summary
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
from .processors.summarize import Nodes, boundaries
from .processors.weight import encoding, weight
from .settings import HistorySettings, recorded
from .store import Store, default_store, open_store
from .summarizer import Summarizer, summarizer_for

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from typing_extensions import TypeIs

log = logging.getLogger(__name__)

BATCH = 256
NODE_CACHE = 256
"""Nodes a thread keeps in memory (left siblings, lines before a message); past it, the older
half is dropped."""
WARM_THREADS = 256
"""Threads whose outline, recent nodes and tail messages stay in memory between messages."""
LARGE_TEXT = 100_000
"""Texts longer than this are weighed on a worker thread, so the event loop keeps serving."""

AskListener = Callable[[Ask], None]


class _Stale(Exception):
    """The thread's outline changed under a batch (another writer, or an erase)."""


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
                store (`chat-outline worker`), which call `catch_up`.
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
            model = summarizer_for(model or settings.summarizer, settings=settings.model_settings)
        self.summarizer: Summarizer = model
        self.model_key = model_key(model.name, settings.model_settings)
        if store is None:
            store = default_store()
        if isinstance(store, str | Path):
            store = open_store(store, search_language=settings.search_language)
        self.store: Store = store
        self.counters = Counters()
        self._pause, self._max_pause = pause, max_pause
        self._asker = Asker(model, self.counters, concurrency=concurrency, timeout=timeout)
        self._listeners: list[AskListener] = [on_ask] if on_ask else []
        self._group: TaskGroup | None = None
        self._closed = False
        self._processing = process
        self._running: set[str] = set()
        self._dirty: set[str] = set()
        self._idle = anyio.Event()
        self._idle.set()
        self._wake: dict[str, anyio.Event] = {}
        self._states: dict[str, Outline] = {}
        # What a thread's worker already read: committed nodes, and the tail's messages.
        self._nodes: dict[str, dict[tuple[str, int, int], Summary | None]] = {}
        self._recent: dict[str, dict[str, Stored]] = {}
        self._handed: dict[str, dict[int, Stored]] = {}
        """Rows stored here and not yet processed, by seq: processing takes them from here
        instead of reading them back."""
        self._erased: dict[str, int] = {}
        """How often each thread was erased here: a worker's reads from before one are stale."""

    async def __aenter__(self) -> Self:
        if self._closed or self._group is not None:
            raise ClosedError("a History can be opened once; make a new one")
        await self.store.open()
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        try:
            if self._processing:
                await self.catch_up()
        except BaseException as exc:
            await self.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        """On a clean exit, finish processing what was handed over; on an error, stop at once."""
        assert self._group is not None
        if kind is not None:
            self._group.cancel_scope.cancel()
        try:
            return await self._group.__aexit__(kind, exc, tb)
        except BaseExceptionGroup as group:
            if exc is not None and list(group.exceptions) == [exc]:
                return False  # the block's own error, as it was raised, not in a group
            raise
        finally:
            self._closed = True
            with anyio.CancelScope(shield=True):  # closed even when the exit is a cancellation
                await self.store.close()

    # The app's events.

    async def message_created(
        self, message: Message, *, native: str | None = None
    ) -> Stored | None:
        """Store a message, then process its thread in the background.

        `native` is what the agent that wrote the message needs to continue from it, as its
        provider sent it (pydantic-ai's serialized message, with reasoning, signatures and
        ids): its view sends that in place of the text while the message is in the tail. The
        text alone is what the thread weighs, summarizes and shows everyone else.

        Returns once the message is committed: the stored row, or None for a redelivery of a
        message already stored as is. Raises InputError (before writing anything) for a bad
        message and ConflictError for a known id with other content.
        """
        group = self._open()
        if not isinstance(message, Message):
            raise InputError(f"message_created takes a Message, got {message!r}")
        if native is not None and not isinstance(native, str):
            raise InputError(f"native must be a string or None, got {native!r}", field="native")
        if message.step and not message.author:
            raise InputError(
                f"author must name the agent a step belongs to, got {message.author!r}",
                field="author",
            )
        if len(message.text) > LARGE_TEXT:
            cost = await anyio.to_thread.run_sync(weight, message, self.settings.encoding)
        else:
            cost = weight(message, self.settings.encoding)
        erased = self._erased.get(message.thread, 0)
        stored = await self.store.add(message, cost, native=native)
        if stored is not None and self._processing:
            handed = self._handed.setdefault(message.thread, {})
            if len(handed) < BATCH and self._erased.get(message.thread, 0) == erased:
                handed[stored.seq] = stored
            self._schedule(message.thread, group)
        return stored

    async def thread_deleted(self, thread: str) -> bool:
        """Erase a thread: its messages, lines, outline and calls. True when it held anything.

        A batch of the thread still in flight commits nothing afterwards: its outline row is
        gone (or belongs to a new thread of the same id, with another epoch), so its version
        check fails.
        """
        self._open()
        if not isinstance(thread, str) or not thread:
            raise InputError(f"thread must be a non-empty string, got {thread!r}", field="thread")
        erased = await self.store.erase(thread)
        self._erased[thread] = self._erased.get(thread, 0) + 1
        self._forget(thread)
        return erased

    async def wait(self) -> None:
        """Wait until every message handed over so far is processed (with `process`), and
        every thread `catch_up` took."""
        self._open()
        while self._running:
            await self._idle.wait()

    async def catch_up(self, *, limit: int | None = None) -> int:
        """Process the threads with stored messages not yet processed; how many are behind.

        Opening does this once for every thread (with `process`); a worker that shares the
        store with other processes calls it as it polls, with a `limit` on the threads it works
        on at once (those already running count), taken in random order so that the workers
        spread over the threads. A thread another process holds is left to it.
        """
        group = self._open()
        behind = await self.store.behind()
        chosen = [thread for thread in behind if thread not in self._running]
        if limit is not None:
            random.shuffle(chosen)
            del chosen[max(limit - len(self._running), 0) :]
        for thread in chosen:
            self._schedule(thread, group)
        return len(behind)

    def retry(self, thread: str | None = None) -> None:
        """Try failed threads again now instead of after their pause (all threads by default)."""
        for name, event in list(self._wake.items()):
            if thread is None or name == thread:
                event.set()

    def subscribe(self, listener: AskListener) -> None:
        """Call `listener` with every summarizer conversation once its batch is committed."""
        self._listeners.append(listener)

    async def outline(self, thread: str) -> Outline | None:
        """The thread's committed outline and tail; None for a thread with no messages."""
        self._open()
        return await self.store.outline(thread)

    async def usage(
        self, thread: str | None = None, *, input_price: float = 0.0, output_price: float = 0.0
    ) -> Usage:
        """The summarizer's recorded calls and tokens per thread, and their cost.

        Prices are per million input and output tokens; see `history.metering`.
        """
        self._open()
        return await usage(self.store, thread, input_price=input_price, output_price=output_price)

    # Processing.

    def _open(self) -> TaskGroup:
        if self._group is None or self._closed:
            raise ClosedError("History is not open: use it inside `async with History(...)`")
        return self._group

    def _schedule(self, thread: str, group: TaskGroup | None = None) -> None:
        if thread in self._running:
            self._dirty.add(thread)
            return
        if not self._running:
            self._idle = anyio.Event()
        self._running.add(thread)
        (group or self._open()).start_soon(self._work, thread, name=f"history:{thread}")

    def _forget(self, thread: str, *, answers: bool = True) -> None:
        """Drop what this process holds of a thread; its answers too unless told to keep them
        (a batch gone stale under another writer is redone with the answers it received)."""
        self._states.pop(thread, None)
        self._nodes.pop(thread, None)
        self._recent.pop(thread, None)
        self._handed.pop(thread, None)
        if answers:
            self._asker.settle(thread)

    async def _work(self, thread: str) -> None:
        failures = 0
        try:
            while True:
                self._dirty.discard(thread)
                try:
                    await self._catch_up(thread)
                except UnpinnedError as exc:
                    # Asking again cannot help: the thread waits until the app allows calls.
                    log.error("thread %r: %s", thread, exc, extra={"chat_thread": thread})
                    self.counters.refused += 1
                    return
                except StoreGoneError as exc:
                    # Nor can it when the store was dropped: the thread waits for a restore.
                    log.error("thread %r: %s", thread, exc, extra={"chat_thread": thread})
                    return
                except (SummarizerError, StoreError) as exc:
                    if isinstance(exc, ClosedError):
                        raise
                    # A summarizer's retries are bounded per request: the pause starts over
                    # after an answer or a fallback, so a dead model costs each line the same.
                    if isinstance(exc, SummarizerError):
                        failures = self._asker.failures(thread)
                    else:
                        failures += 1
                    pause = min(self._pause * 2 ** min(failures - 1, 64), self._max_pause)
                    log.warning(
                        "thread %r: batch failed (%s); retrying in %.1fs",
                        thread, exc, pause, extra={"chat_thread": thread},
                    )  # fmt: skip
                    wake = self._wake[thread] = anyio.Event()
                    with anyio.move_on_after(pause):
                        await wake.wait()
                    self._dirty.add(thread)
                    continue
                failures = 0
                if thread not in self._dirty:
                    return
        finally:
            self._wake.pop(thread, None)
            self._running.discard(thread)
            self._keep_warm(thread)
            if not self._running:
                self._idle.set()

    def _keep_warm(self, thread: str) -> None:
        """Keep what the threads worked on last in memory, and forget the rest: a store with
        many threads must not grow the process for months."""
        if thread in self._states:
            self._states[thread] = self._states.pop(thread)  # the newest, last
        for idle in list(self._states)[: max(0, len(self._states) - WARM_THREADS)]:
            if idle not in self._running:
                self._forget(idle)

    async def _catch_up(self, thread: str) -> None:
        while True:
            async with self.store.claim(thread) as granted:
                if not granted:  # another process holds it, and looks again when it lets go
                    return
                if self.store.shared:
                    await self._refresh(thread)
                await self._catch_up_claimed(thread)
            if not self.store.shared:
                return
            # Another process that stored a message while we held the claim was refused it.
            state = self._states.get(thread)
            if state is None or not await self.store.pending(thread, state.position, 1):
                return

    async def _refresh(self, thread: str) -> None:
        """Start a claim from the committed outline: another process may have moved it since.

        What this process read of the thread stays only if nobody else committed (or erased
        and reused the id) in between.
        """
        known = self._states.get(thread)
        state = await self.store.outline(thread)
        if (
            state is None
            or known is None
            or (state.epoch, state.version) != (known.epoch, known.version)
        ):
            self._nodes.pop(thread, None)
            self._recent.pop(thread, None)
            self._handed.pop(thread, None)
        if state is None:
            self._states.pop(thread, None)
        else:
            self._states[thread] = state

    async def _catch_up_claimed(self, thread: str) -> None:
        while True:
            erased = self._erased.get(thread, 0)
            state = self._states.get(thread) or await self.store.outline(thread)
            if state is None:
                return
            handed = self._take_handed(thread, state.position)
            batch = handed
            if not batch:
                batch = await self.store.pending(thread, state.position, BATCH)
            if self._erased.get(thread, 0) != erased:
                continue  # erased while we read: start again from what is stored now
            if not batch:
                self._states[thread] = state
                return
            if state.position < 0:  # its first processing: the settings it is built with
                await self.store.describe(thread, settings=recorded(self.settings))
            recent = self._recent.setdefault(thread, {})
            unsaved = False
            for k, stored in enumerate(batch):
                recent[stored.message.id] = stored
                try:
                    # Only the batch's last message must commit: those before it that only
                    # join the tail are committed with a later one.
                    done = await self._process(state, stored, defer=k + 1 < len(batch))
                except _Stale:
                    self._forget(thread, answers=False)
                    break
                except BaseException:
                    if unsaved:  # cancelled or failed: what waited for this commit is kept
                        with anyio.CancelScope(shield=True):
                            await self._save(state)
                    raise
                unsaved = done.version == state.version
                state = self._states[thread] = done
                if len(recent) > len(state.tail):
                    whole = {item.id for item in state.tail}
                    self._recent[thread] = recent = {
                        id: s for id, s in recent.items() if id in whole
                    }
            else:  # the whole batch is done
                if self.store.shared and (handed or len(batch) < BATCH):
                    return  # `_catch_up` looks for more once it has let the claim go

    def _take_handed(self, thread: str, position: int) -> list[Stored]:
        """The rows handed over here that come next after `position`, in a run with no gap."""
        handed = self._handed.get(thread)
        if not handed:
            return []
        run: list[Stored] = []
        while (stored := handed.pop(position + 1 + len(run), None)) is not None:
            run.append(stored)
        for seq in [seq for seq in handed if seq <= position + len(run)]:
            del handed[seq]  # processed already (read from the store after a gap)
        return run

    async def _save(self, state: Outline) -> None:
        """Commit the messages that joined the tail waiting for a later message's commit, when
        that message failed; if this fails too, they are processed again from the store."""
        try:
            saved = await self.store.commit(
                state, state, [], [], self.model_key, lines_changed=False
            )
        except StoreError:
            saved = False
        if saved:
            state.version += 1
        else:
            self._forget(state.thread, answers=False)

    async def _process(self, state: Outline, stored: Stored, *, defer: bool) -> Outline:
        """Process one message with what this process keeps of its thread in memory; with
        `defer`, a message that only joins the tail is left for a later commit."""
        thread = state.thread
        known = self._nodes.setdefault(thread, {})
        if len(known) > NODE_CACHE:
            # The newest half stays: the left siblings the next merges read, recently read.
            for key in list(known)[: len(known) - NODE_CACHE // 2]:
                del known[key]
        nodes = Nodes(
            thread,
            lambda agent, level, index: self.store.summary(thread, level, index, agent=agent),
            boundaries=boundaries(state),
            known=known,
            read_many=lambda agent, keys: self.store.nodes(thread, keys, agent=agent),
        )
        recent = self._recent.get(thread, {})

        async def read(id: str) -> Stored | None:
            return recent.get(id) or await self.store.message(id)

        done = await process_one(
            self.store, state, stored, nodes=nodes, read=read, ask=self._asker.ask,
            settings=self.settings, model_key=self.model_key, defer=defer,
        )  # fmt: skip
        if done is None:
            raise _Stale
        work, asks = done
        self._asker.settle(thread)
        self.counters.processed += 1
        for ask in asks:
            self.counters.asks += 1
            self.counters.input_tokens += ask.input_tokens
            self.counters.output_tokens += ask.output_tokens
            self._tell(ask)
        return work

    def _tell(self, ask: Ask) -> None:
        """Hand a committed conversation to the listeners; one that raises is logged, counted
        and passed over (the batch is committed: the plugin goes on)."""
        for listener in self._listeners:
            try:
                listener(ask)
            except Exception as exc:
                self.counters.listener_errors += 1
                log.error(
                    "thread %r: an on_ask listener raised %s for node (%d, %d)",
                    ask.thread, describe(exc), ask.level, ask.index,
                    extra={"chat_thread": ask.thread},
                )  # fmt: skip


def _is_model(model: object) -> TypeIs[Model]:
    """A pydantic-ai model given as the summarizer. Whoever made one imported pydantic-ai, so
    a process that never did (the command line, a worker) is spared importing it."""
    models = sys.modules.get("pydantic_ai.models")
    return models is not None and isinstance(model, models.Model)
