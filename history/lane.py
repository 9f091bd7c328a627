"""A lane: what this process holds of one thread, and the lanes it keeps.

`History` works on each thread in its own lane: the committed outline as last seen, the nodes
and tail messages read, the rows handed over and not yet processed, the answers received since
the last commit, the wake event of a pause, and the erase generation. Forgetting a thread drops
its lane whole (a lane at work only empties, and is dropped once it stops); `Lanes` keeps the
lanes of the threads worked on last warm and forgets the rest, so a store with many threads does
not grow the process for months.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup

from .asking import Memory
from .contract import Outline, Stored, Summary
from .errors import ConfigurationError
from .processing import NodeKey

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
    """A commit of it wrote fallback lines, not yet handed to `history.again`."""
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
                self.busy, self.close_timeout,
            )  # fmt: skip
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
