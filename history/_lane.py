"""A thread's processing: its lane (what this process holds of it), and the `Runner` that
brings the lane up to date through `process_one`, a message's lines first, then one
version-checked commit.

`History` works on each thread in its own lane: the committed outline as last seen, the nodes
and tail messages read, the rows handed over and not yet processed, the answers received since
the last commit, the wake event of a pause, and the erase generation. Forgetting a thread drops
its lane whole (a lane at work only empties, and is dropped once it stops); `Lanes` keeps the
lanes of the threads worked on last warm and forgets the rest, so a store with many threads does
not grow the process for months.

The processors move a copy of the outline and ask for lines through a callback; `process_one`
gives them the callback (the summarizer's asking loop) and commits what they did, for the
plugin and for a rebuild alike. A `Runner` brings a thread's lane up to date through it, in
batches, under the thread's claim, and tells the listeners what each commit asked.

A message that only joins the tail is committed later (the deferred commit, decided here
alone): it waits in its lane (`Lane.processed`) and is committed with a later message's
commit, up to TOGETHER of them (`Lane.due`); once the thread's messages stop, the lane waits
LINGER seconds for another (`Lanes.linger`), then commits them alone (`Runner.flush`). The
plugin only says that a message came to a running lane (`Lane.came`) or that the app waits
for its threads (`Lanes.hasten`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import anyio
from anyio.abc import TaskGroup

from ._generations import named_change
from ._names import Display, display
from ._spaces import space_of
from .contract import Ask, NodeKey, Outline, Stored, Summary, Task
from .errors import ConfigurationError, StoreError
from .pins import as_recorded
from .processing import MessageReader, Vanished
from .processors.compact import compact
from .processors.summarize import Nodes, boundaries
from .settings import HistorySettings, recorded
from .store import Store
from .summarizer import Asker, AskFn, Counters, Memory, describe, write

log = logging.getLogger(__name__)

BATCH = 256
"""Messages processed between two looks at the store (and rows a lane keeps handed over)."""
TOGETHER = 64
"""Messages that only join a thread's tail committed together at most (the commit also indexes
them for search)."""
LINGER = 5.0
"""Seconds a thread whose last messages only joined its tail waits for more before it commits
them (at once when the app waits for its threads, or closes). Long enough that a thousand
threads taking turns at a thousand messages a second commit in runs (with one second, each
message waited out its second and committed alone: 2.3 times the CPU a message)."""
NODE_CACHE = 256
"""Nodes a lane keeps in memory (left siblings, lines before a message); past it, the older
half is dropped."""
WARM_THREADS = 256
"""Lanes whose outline, recent nodes and tail messages stay in memory between messages."""
STORE_CLOSE = 1.0
"""Seconds closing the store may take after `close_timeout` (a full disk) before it is left."""
FLUSH_ON_STOP = 0.5
"""Seconds a stopped batch may take to commit the messages that waited for it."""


@dataclass(eq=False, kw_only=True)
class Lane:
    """One thread's state in this process; nothing in it is needed for correctness, only to
    spare reads, except `generation`, `running` and `dirty`."""

    thread: str
    outline: Outline | None = None
    """The outline as this process last saw, committed or processed it: the committed one,
    moved on by the `waiting` messages."""
    waiting: list[Stored] = field(default_factory=list)
    """Messages processed here that only joined the tail, not yet committed: a later commit
    records them with its own message, or `Runner.flush` alone."""
    nodes: dict[NodeKey, Summary | None] = field(default_factory=dict)
    """Committed nodes read or written here (None: known absent)."""
    recent: dict[str, Stored] = field(default_factory=dict)
    """The tail's messages by id, as read or handed over: their lines are written from these."""
    handed: dict[int, Stored] = field(default_factory=dict)
    """Rows stored here and not yet processed, by seq: processing takes them from here
    instead of reading them back."""
    newest: int | None = None
    """The seq of the newest row stored here, handed over or not (None: none since the lane
    was made or forgot the thread). On a store no other process writes, nothing past it can be
    pending."""
    memory: Memory = field(default_factory=Memory)
    """The summarizer's answers received since the thread's last commit."""
    generation: int = 0
    """How often the thread was erased while this lane lived: reads from before one are stale."""
    wake: anyio.Event | None = None
    """Set to end the pause after a failed batch early (`History.retry`)."""
    nudge: anyio.Event | None = None
    """Set to end the wait for more messages before `waiting` is committed."""
    running: bool = False
    """A task is processing the thread."""
    dirty: bool = False
    """Messages came while it ran: it looks again before it stops."""
    hurried: bool = False
    """The app asked for a retry while it ran: a batch failing now is tried again at once."""
    fallbacks: bool = False
    """A commit of it wrote fallback lines, not yet handed to `history._again`."""
    shared: bool = False
    """Another process works on the thread too (seen by its claims): the store is read as if
    it were shared, for what others committed or stored."""

    def drop_reads(self) -> None:
        """Another writer may have moved the thread: what was read of it is dropped. New
        containers, so that a batch still holding the old ones cannot bring them back."""
        self.nodes, self.recent, self.handed = {}, {}, {}

    def forget(self, *, answers: bool = True) -> None:
        """Drop what was read of the thread, its outline and what waits to be committed too (the
        store still holds those messages, to be processed again); its answers unless told to
        keep them (a batch gone stale under another writer is redone with the answers it
        received)."""
        self.outline, self.waiting, self.newest = None, [], None
        self.drop_reads()
        if answers:
            self.memory.clear()

    def hand(self, stored: Stored) -> None:
        """Keep a row just stored for processing, up to a batch of them."""
        self.newest = max(stored.seq, -1 if self.newest is None else self.newest)
        if len(self.handed) < BATCH:
            self.handed[stored.seq] = stored

    def take_handed(self, position: int) -> list[Stored]:
        """The rows handed over that come next after `position`, in a run with no gap."""
        handed = self.handed
        if not handed:
            return []
        run: list[Stored] = []
        while (stored := handed.pop(position + 1 + len(run), None)) is not None:
            run.append(stored)
        for seq in [seq for seq in handed if seq <= position + len(run)]:
            del handed[seq]  # processed already (read from the store after a gap)
        return run

    # The deferred commit: a message that only joins the tail waits for a later commit.

    def due(self) -> bool:
        """Whether the next message is committed whatever it does: TOGETHER would wait."""
        return len(self.waiting) + 1 >= TOGETHER

    def processed(self, stored: Stored, *, committed: bool) -> None:
        """`stored` was processed: `committed` (with those waiting), or left waiting."""
        if committed:
            self.waiting = []
        else:
            self.waiting.append(stored)

    def looking(self) -> None:
        """A look at what is pending starts: a message that comes from now on needs another."""
        self.dirty = False

    def came(self) -> None:
        """A message came while the lane runs: it looks again before it stops, and stops
        waiting for more before it commits what waits."""
        self.dirty = True
        self.hasten()

    def hasten(self) -> None:
        """End the wait for more messages (`Lanes.linger`): what waits is committed now."""
        if self.nudge is not None:
            self.nudge.set()

    def known_nodes(self) -> dict[NodeKey, Summary | None]:
        """The node cache for the next message, its older half dropped once past NODE_CACHE."""
        known = self.nodes
        if len(known) > NODE_CACHE:
            # The newest half stays: the left siblings the next merges read, recently read.
            for key in list(known)[: len(known) - NODE_CACHE // 2]:
                del known[key]
        return known


class Lanes:
    """The lanes of the threads this process works on, the last worked on last."""

    def __init__(self, *, close_timeout: float = 10.0) -> None:
        if not 0 < close_timeout < float("inf"):
            raise ConfigurationError(
                f"close_timeout must be a number of seconds > 0, got {close_timeout!r}"
            )
        self.close_timeout = close_timeout
        self._lanes: dict[str, Lane] = {}
        self.busy = 0
        """Lanes running now."""
        self.idle = anyio.Event()
        """Set while no lane runs; a new one is made when one starts."""
        self.idle.set()
        self._hurry = 0
        """Callers of `wait` (and a closing block): no thread waits for more messages."""

    def __iter__(self) -> Iterator[Lane]:
        return iter(list(self._lanes.values()))

    async def settle(self) -> bool:
        """Wait `close_timeout` at most for every lane to stop; False (logged) when some still
        run then: the caller cancels them."""
        with anyio.move_on_after(self.close_timeout):
            while self.busy:
                await self.idle.wait()
        if self.busy:
            log.warning(
                "closing: %d thread(s) still at work after %.1fs are cancelled; their messages "
                "stay pending for the next open",
                self.busy,
                self.close_timeout,
            )
        return not self.busy

    def get(self, thread: str) -> Lane:
        """The thread's lane, made (as the newest) if it has none."""
        lane = self._lanes.get(thread)
        if lane is None:
            lane = self._lanes[thread] = Lane(thread=thread)
        return lane

    def holds(self, lane: Lane) -> bool:
        """`lane` is still its thread's (not forgotten and replaced since)."""
        return self._lanes.get(lane.thread) is lane

    def running(self, thread: str) -> bool:
        lane = self._lanes.get(thread)
        return lane is not None and lane.running

    def erased(self, thread: str) -> None:
        """The thread was erased: its lane's reads are stale, and its lane is dropped."""
        lane = self._lanes.get(thread)
        if lane is not None:
            lane.generation += 1
            self._drop(lane)

    def start(self, lane: Lane) -> None:
        """`lane` starts running."""
        if not self.busy:
            self.idle = anyio.Event()
        self.busy += 1
        lane.running = True

    def stop(self, lane: Lane) -> None:
        """`lane` stopped: it becomes the newest warm lane (a running lane is never dropped),
        and the oldest idle ones past WARM_THREADS are forgotten."""
        lane.running, lane.wake, lane.nudge = False, None, None
        self.busy -= 1
        self._lanes[lane.thread] = self._lanes.pop(lane.thread)  # the newest, last
        for idle in list(self._lanes.values())[: max(0, len(self._lanes) - WARM_THREADS)]:
            if not idle.running:
                self._drop(idle)
        if not self.busy:
            self.idle.set()

    async def linger(self, lane: Lane) -> None:
        """Wait a moment for the thread's next message, so that a run of messages that only
        join its tail is committed once; not while the app waits for its threads, nor for a
        thread whose messages this process did not store (a worker's: none would wake it)."""
        if self._hurry or lane.newest is None:
            return
        nudge = lane.nudge = anyio.Event()
        with anyio.move_on_after(LINGER):
            await nudge.wait()
        lane.nudge = None

    def hasten(self) -> None:
        """End every thread's wait for more messages, and let none wait again (a closing
        block): what waits is committed now."""
        self._hurry += 1
        for lane in self:
            lane.hasten()

    @contextlib.contextmanager
    def hastened(self) -> Iterator[None]:
        """`hasten` while the app waits for its threads."""
        self.hasten()
        try:
            yield
        finally:
            self._hurry -= 1

    def _drop(self, lane: Lane) -> None:
        """Forget the thread: its lane empties, and is dropped unless a task still runs it."""
        lane.forget()
        if not lane.running and self.holds(lane):
            del self._lanes[lane.thread]


class Lookouts:
    """Threads another process held when this one claimed them. That process takes up what this
    one stored, unless it stopped or died: each is looked at again once its claim could have
    lapsed, unless the History is leaving (`wait` and leaving the block do not wait for them)."""

    def __init__(self) -> None:
        self.leaving = anyio.Event()
        self._threads: set[str] = set()

    def watch(
        self, thread: str, group: TaskGroup, after: float, schedule: Callable[[str], None]
    ) -> None:
        """Call `schedule(thread)` in `after` seconds (once, however often it is watched)."""
        if thread not in self._threads and not self.leaving.is_set():
            self._threads.add(thread)
            group.start_soon(self._later, thread, after, schedule, name=f"history:{thread}:held")

    async def _later(self, thread: str, after: float, schedule: Callable[[str], None]) -> None:
        with anyio.move_on_after(after):
            await self.leaving.wait()
        self._threads.discard(thread)
        if not self.leaving.is_set():
            schedule(thread)


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
        state,
        work,
        nodes.written,
        [as_recorded(a, settings.line) for a in asks],
        model_key,
        lines_changed=lines_changed,
        processed=[*waiting, stored],
        change=named,
    ):
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
        `linger` waits for the thread's next message (`Lane.came` sets `lane.dirty`); once it
        comes to nothing, they are committed on their own, before the claim is let go.
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
                    lane.looking()
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
            if state is None or not await self.store.messages_after(lane.thread, state.position, 1):
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
                batch = await self.store.messages_after(thread, state.position, BATCH)
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
                        lane, state, stored, defer=not lane.due(), waiting=lane.waiting
                    )
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
                lane.processed(stored, committed=done.version != state.version)
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
            store,
            state,
            stored,
            nodes=nodes,
            read=read,
            ask=self._asker.asking(lane.memory),
            settings=self.settings,
            model_key=self.model_key,
            defer=defer,
            waiting=waiting,
            names=self._names[thread],
        )
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
                    ask.thread,
                    describe(exc),
                    ask.level,
                    ask.index,
                    extra={"chat_thread": ask.thread},
                )
