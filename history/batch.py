"""Processing as a whole: a message's lines first, then one version-checked commit.

The processors move a copy of the outline and ask for lines through a callback; `process_one`
gives them the callback (the summarizer's asking loop) and commits what they did, for the
plugin and for a rebuild alike. A `Runner` brings a thread's lane up to date through it, in
batches, under the thread's claim, and tells the listeners what each commit asked.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

import anyio

from .asking import Asker, Counters, describe
from .contract import Ask, Outline, Stored, Task
from .errors import StoreError
from .generations import named_change
from .lane import BATCH, TOGETHER, Lane
from .names import Display, display
from .pins import as_recorded
from .processing import MessageReader, Vanished
from .processors.compact import compact
from .processors.summarize import Nodes, boundaries
from .settings import HistorySettings, recorded
from .spaces import space_of
from .store import Store
from .summarizer import AskFn, write

log = logging.getLogger(__name__)

FLUSH_ON_STOP = 0.5
"""Seconds a stopped batch may take to commit the messages that waited for it."""

AskListener = Callable[[Ask], None]
Linger = Callable[[Lane], Awaitable[None]]


async def process_one(
    store: Store,
    state: Outline,
    stored: Stored,
    *,
    nodes: Nodes,
    read: MessageReader,
    ask: AskFn,
    settings: HistorySettings,
    model_key: str,
    defer: bool = False,
    waiting: Sequence[Stored] = (),
    names: Display | None = None,
) -> tuple[Outline, list[Ask]] | None:
    """SPEC 5.2: one message's lines first (the model calls, no transaction open), then one
    commit checked against the outline's version. None when the outline changed under it
    (another writer, or an erase): nothing was written, and the caller reloads and redoes it.

    With `defer`, a message that only joined the tail is not committed: the outline it leaves
    (its version unchanged) is committed whole with a later message's, so a run of such
    messages costs one write, and each message's processing is still all or nothing. `waiting`
    are the messages processed since `state` was committed, which this commit also indexes for
    search. `names`: the thread's display names, which the nodes it writes are shown under.
    """
    work = state.copy()
    asks: list[Ask] = []

    async def write_line(task: Task) -> Ask:
        done = await write(task, ask, limit=settings.line, tries=settings.tries)
        asks.append(done)
        return done

    try:
        change = await compact(work, stored, nodes, write_line, read, settings)
    except Vanished:
        return None
    lines_changed = change.cut or change.folded
    if defer and not (lines_changed or nodes.written or asks):
        return work, asks
    named = None
    if names and nodes.written:
        named = await named_change(store, state.thread, nodes.written, names, read)
    if not await store.commit(
        state, work, nodes.written, [as_recorded(a, settings.line) for a in asks], model_key,
        lines_changed=lines_changed, processed=[*waiting, stored], change=named,
    ):  # fmt: skip
        return None
    work.version = state.version + 1
    nodes.settle()
    return work, asks


class _Stale(Exception):
    """The thread's outline changed under a batch (another writer, or an erase)."""


class Runner:
    """Brings a lane up to date: its thread's pending messages, in batches, under its claim.

    Each message is processed by `process_one` with what the lane keeps in memory; the
    committed conversations are handed to the listeners, whose errors are logged and counted,
    never raised here.
    """

    def __init__(
        self,
        store: Store,
        settings: HistorySettings,
        asker: Asker,
        *,
        model_key: str,
        counters: Counters,
        listeners: list[AskListener],
    ) -> None:
        self.store = store
        self.settings = settings
        self.model_key = model_key
        self._asker = asker
        self._counters = counters
        self._listeners = listeners
        self._names: dict[str, Display] = {}
        """Each thread's display names, read at its claim and again when a commit finds it moved
        (a rename moves it)."""
        self._spaces: dict[str, str | None] = {}
        """Each thread's space, for the listeners: read at its claim (`History.set_space`)."""

    def moved(self, thread: str) -> None:
        """The thread was put in another space: the listeners are told so from its next ask."""
        self._spaces.pop(thread, None)

    async def catch_up(self, lane: Lane, linger: Linger) -> bool:
        """Process what is pending for the lane's thread, if this process may claim it: False
        when another process holds the thread (and takes up what is pending, unless it stopped).

        Messages that only join the tail wait for a later commit while the claim is held:
        `linger` waits for the thread's next message (it sets `lane.dirty`); once it comes
        to nothing, they are committed on their own, before the claim is let go.
        """
        while True:
            async with self.store.claim(lane.thread) as claim:
                if not claim:  # another process holds it, and looks again when it lets go
                    return False
                self._names.pop(lane.thread, None)
                self._spaces.pop(lane.thread, None)
                lane.shared |= claim.others
                if self._shared(lane):
                    await self._refresh(lane)
                while True:
                    lane.dirty = False
                    await self._claimed(lane)
                    if lane.waiting and not lane.dirty:
                        await linger(lane)
                    if not lane.dirty:
                        await self.flush(lane)
                        break
            lane.shared |= claim.others
            if not self._shared(lane):
                return True
            # Another process that stored a message while we held the claim was refused it.
            state = lane.outline
            if state is None or not await self.store.pending(lane.thread, state.position, 1):
                return True

    async def _refresh(self, lane: Lane) -> None:
        """Start a claim from the committed outline: another process may have moved it since.

        What this process read of the thread stays only if nobody else committed (or erased
        and reused the id) in between.
        """
        known = lane.outline
        state = await self.store.outline(lane.thread)
        if (
            state is None
            or known is None
            or (state.epoch, state.version) != (known.epoch, known.version)
        ):
            lane.drop_reads()
        lane.outline, lane.waiting = state, []

    async def _claimed(self, lane: Lane) -> None:
        thread = lane.thread
        while True:
            generation = lane.generation
            state = lane.outline or await self.store.outline(thread)
            if state is None:
                return
            handed = lane.take_handed(state.position)
            batch = handed
            if not batch and not self._all_handed(lane, state):
                batch = await self.store.pending(thread, state.position, BATCH)
            if lane.generation != generation:
                continue  # erased while we read: start again from what is stored now
            if not batch:
                lane.outline = state
                return
            if state.position < 0:  # its first processing: the settings it is built with
                await self.store.describe(thread, settings=recorded(self.settings))
            recent = lane.recent
            for stored in batch:
                recent[stored.message.id] = stored
                try:
                    # One that only joins the tail is committed with a later one (TOGETHER).
                    done = await self._process(
                        lane, state, stored, defer=len(lane.waiting) + 1 < TOGETHER,
                        waiting=lane.waiting,
                    )  # fmt: skip
                except _Stale:
                    lane.forget(answers=False)
                    self._names.pop(thread, None)
                    break
                except BaseException:
                    # Cancelled or failed: what waited for this commit is kept, unless the
                    # store hangs (a full disk): then it stays pending, and a close is bounded.
                    with (
                        anyio.move_on_after(FLUSH_ON_STOP, shield=True),
                        contextlib.suppress(StoreError),
                    ):
                        await self.flush(lane)
                    raise
                if done.version == state.version:
                    lane.waiting.append(stored)
                else:
                    lane.waiting = []
                state = lane.outline = done
                if len(recent) > len(state.tail):
                    whole = {item.id for item in state.tail}
                    lane.recent = recent = {id: s for id, s in recent.items() if id in whole}
            else:  # the whole batch is done
                if self._shared(lane) and (handed or len(batch) < BATCH):
                    # `catch_up` waits for what this process hands over, and looks for what
                    # others stored once it has let the claim go.
                    return

    def _shared(self, lane: Lane) -> bool:
        """Other processes may process or store the lane's thread: a shared store, or a SQLite
        file whose claims showed another process at work on it."""
        return self.store.shared or lane.shared

    def _all_handed(self, lane: Lane, state: Outline) -> bool:
        """Nothing can be pending past `state` that was not handed over: no other process
        writes the thread, and the lane's newest row is processed."""
        return not self._shared(lane) and lane.newest is not None and lane.newest <= state.position

    async def flush(self, lane: Lane) -> None:
        """Commit the messages that joined the tail and wait for a later message's commit.

        When the commit fails (StoreError) or finds the outline changed, the lane forgets
        them, and they are processed again from the store (the latter at once: `lane.dirty`).
        """
        state, waiting = lane.outline, lane.waiting
        if state is None or not waiting:
            return
        lane.waiting = []
        try:
            saved = await self.store.commit(
                state, state, [], [], self.model_key, lines_changed=False, processed=waiting
            )
        except BaseException:
            lane.forget(answers=False)
            raise
        if saved:
            state.version += 1
        else:
            lane.forget(answers=False)
            lane.dirty = True

    async def _process(
        self, lane: Lane, state: Outline, stored: Stored, *, defer: bool, waiting: list[Stored]
    ) -> Outline:
        """Process one message with what the lane keeps in memory; with `defer`, a message that
        only joins the tail is left for a later commit (with those `waiting` already)."""
        thread, store = lane.thread, self.store
        nodes = Nodes(
            thread,
            lambda agent, level, index: store.summary(thread, level, index, agent=agent),
            boundaries=boundaries(state),
            known=lane.known_nodes(),
            read_many=lambda agent, keys: store.nodes(thread, keys, agent=agent),
        )
        recent = lane.recent

        async def read(id: str) -> Stored | None:
            return recent.get(id) or await store.message(id)

        if thread not in self._names:
            self._names[thread] = display(await store.names(thread), thread)
        if self._listeners and thread not in self._spaces:  # read before the commit, not after
            self._spaces[thread] = await space_of(store, thread)
        done = await process_one(
            store, state, stored, nodes=nodes, read=read, ask=self._asker.asking(lane.memory),
            settings=self.settings, model_key=self.model_key, defer=defer, waiting=waiting,
            names=self._names[thread],
        )  # fmt: skip
        if done is None:
            raise _Stale
        work, asks = done
        lane.memory.clear()
        self._counters.processed += 1
        lane.fallbacks |= any(ask.outcome == "fallback" for ask in asks)
        for ask in asks:
            self._counters.asks += 1
            self._counters.input_tokens += ask.input_tokens
            self._counters.output_tokens += ask.output_tokens
            self._tell(replace(ask, space=self._spaces.get(thread)))
        return work

    def _tell(self, ask: Ask) -> None:
        """Hand a committed conversation to the listeners; one that raises is logged, counted
        and passed over (the batch is committed: the plugin goes on)."""
        for listener in self._listeners:
            try:
                listener(ask)
            except Exception as exc:
                self._counters.listener_errors += 1
                log.error(
                    "thread %r: an on_ask listener raised %s for node (%d, %d)",
                    ask.thread, describe(exc), ask.level, ask.index,
                    extra={"chat_thread": ask.thread},
                )  # fmt: skip
