"""Where the collections live: the `Store` protocol, and opening one by its URL or path.

A store keeps the collections (`collections/*.sql`): messages, summaries, outlines and calls,
and what a thread is called and was built with. Writes are short explicit transactions, never
held across a model call; the processor's commit checks the outline's version, so a concurrent
writer (or an erase) makes it redo.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

from .._generated import Generation, Name
from ..contract import About, Ask, Hit, Message, Outline, Snapshot, Stored, Summary, Tally
from ..errors import ConfigurationError
from ._changes import Change
from ._claims import Claim
from ._records import Loaded, ThreadRecords
from ._writes import Move


class Store(Protocol):
    """What the plugin needs from a database. One contract test suite runs against each."""

    url: str
    language: str
    """The language search stems in (`history._languages`), known once open. Every process sharing
    a store must ask for the same one, or each indexes the store again when it opens."""
    shared: bool
    """Other processes may process the same threads: each claim starts from what is committed."""
    lease: float
    """Seconds a claim on a thread lasts unless renewed (`_claims.py`)."""

    async def open(self) -> None:
        """Connect and apply any migration not yet recorded."""
        ...

    async def close(self) -> None: ...

    async def add(
        self, message: Message, weight: int, *, native: str | None = None
    ) -> Stored | None:
        """Store a message with the thread's next seq; None when it was already stored as is.

        `native` is the provider's form of an agent's own message (see `History.message_created`).
        Raises ConflictError when the id is stored with other content.
        """
        ...

    async def outline(self, thread: str) -> Outline | None:
        """The thread's outline with its tail, or None when the thread has no messages."""
        ...

    async def snapshot(
        self,
        thread: str,
        *,
        agent: str | None = None,
        tree: bool = False,
        outline: Outline | None = None,
    ) -> Snapshot | None:
        """The thread read in one transaction, for a view, a zoom or a report; None when it has
        no messages.

        `nodes` are those of the outline's lines and `steps` those of `agent`'s step outline;
        with `tree`, every node of the thread. With `outline` (one the thread had earlier, as
        a view holds it), the tail and nodes are read for it instead of the committed one.
        Its display names, `(made, shown)` change numbers and the generations of its nodes
        (docs/generations.md) are read in the same transaction, for names and generations.
        """
        ...

    async def messages_after(self, thread: str, after: int, limit: int) -> list[Stored]:
        """Stored messages of the thread with seq > `after`, in seq order."""
        ...

    async def natives(self, thread: str, after: int) -> dict[str, str]:
        """The native forms of the thread's messages with seq > `after` that have one, by id."""
        ...

    async def message(self, id: str) -> Stored | None: ...

    async def messages(self, thread: str, first: int, last: int) -> list[Stored]:
        """The thread's messages with `first <= seq <= last`, in seq order."""
        ...

    async def summary(
        self, thread: str, level: int, index: int, *, agent: str = ""
    ) -> Summary | None:
        """The node at `level`, `index` of the shared tree, or of `agent`'s step tree."""
        ...

    async def summaries(self, thread: str | None = None) -> list[Summary]:
        """Every node of every tree, sorted by thread, agent (`""` first), level, index."""
        ...

    async def commit(
        self,
        before: Outline,
        after: Outline,
        written: Sequence[Summary],
        asks: Sequence[Ask],
        model: str,
        *,
        lines_changed: bool,
        processed: Sequence[Stored],
        change: Change | None = None,
    ) -> bool:
        """Write a batch in one transaction if the outline is still `before`; False if not.
        `processed` are the messages it processes (those after the committed outline's
        position, up to `after`'s): they are indexed for search with it. `change`: the name
        generations of the nodes it writes (docs/generations.md, section 3.4)."""
        ...

    async def names(self, thread: str | None = None) -> list[Name]:
        """Every display name (None), or those that apply in `thread` (store-wide and its own)."""
        ...

    async def authors(self, thread: str | None = None) -> set[str]:
        """Who the thread's messages (None: any message) are by or to."""
        ...

    async def author_threads(self, author: str) -> list[str]:
        """The threads with a message by or to `author`, sorted."""
        ...

    async def generations(
        self,
        thread: str,
        keys: Sequence[tuple[int, int]] | None = None,
        *,
        agent: str = "",
        upto: int | None = None,
    ) -> list[Generation]:
        """The thread's generations after the first, by node and number; or, of each node
        `keys` (level, index) of `agent`'s tree (`""`: the shared one) that has one, its newest
        made by change `upto` (None: its newest)."""
        ...

    async def shown(self, thread: str) -> tuple[int, int]:
        """`(made, shown)`: the thread's newest change, and the newest its outline has taken."""
        ...

    async def revise(self, thread: str, make: Callable[[ThreadRecords], Change | None]) -> bool:
        """Read the thread whole and write the change `make` makes of it (None: none), in one
        transaction that holds its outline: False when the store holds no outline of it."""
        ...

    async def change(self, before: Outline, change: Change) -> bool:
        """Write a change to a thread's lines in one transaction, if its outline is still
        `before` (its version is bumped); False if it moved or the thread was erased."""
        ...

    async def erase(self, thread: str) -> bool:
        """Delete the thread's messages, summaries, outline and calls in one transaction."""
        ...

    async def retract(self, before: Outline, after: Outline, gone: Sequence[Stored]) -> bool:
        """Delete the thread's newest messages `gone` (in seq order, with their search rows)
        and write `after` (its outline without them), in one transaction, if the outline is
        still `before` and `gone[-1]` is still its newest message; False if not. Taking back the
        thread's first message deletes its outline too."""
        ...

    async def threads(self) -> list[str]:
        """Every thread with stored messages, sorted."""
        ...

    async def about(self, thread: str | None = None) -> list[About]:
        """The title and recorded settings of one thread (none when it has neither), or of
        every thread that has them, sorted."""
        ...

    async def describe(
        self,
        thread: str,
        *,
        title: str | None = None,
        settings: str | None = None,
        space: str | None = None,
    ) -> None:
        """Give a thread its title, record the settings it was built with (JSON), or put it in
        a space (replacing the one recorded); a value left None stays as it is. An erase
        forgets them all."""
        ...

    async def behind(self) -> list[str]:
        """Threads with stored messages not yet processed."""
        ...

    async def calls(self, thread: str | None = None) -> list[Ask]:
        """Recorded summarizer calls, in the order they were made."""
        ...

    async def tallies(self, thread: str | None = None) -> tuple[list[Tally], dict[str, int]]:
        """One thread's recorded calls (or every thread's) counted per thread and model, and
        each thread's fallback lines (`fallbacks`), in one read."""
        ...

    async def fallbacks(self, thread: str | None = None) -> dict[str, int]:
        """Each thread's lines (or one thread's) that read as a fallback, each as its newest
        generation reads (a line asked again is one no more); the threads that have some."""
        ...

    async def moves(self, thread: str) -> list[Move]:
        """Every commit that changed the thread's lines (a cut, a fold), oldest first."""
        ...

    async def weights(self, thread: str, last: int) -> list[tuple[int, int]]:
        """Each stored message's `(seq, weight)` up to seq `last`, in seq order."""
        ...

    async def nodes(
        self, thread: str, keys: Sequence[tuple[int, int]], *, agent: str = ""
    ) -> list[Summary]:
        """The nodes of one tree at `(level, index)` keys that exist, in the order of `keys`."""
        ...

    async def search(
        self, thread: str, query: str, limit: int, *, agent: str | None = None
    ) -> list[Hit]:
        """The thread's lines and shared messages that match the words of `query`, ranked as
        `ranking` says: at most `limit` distinct hits, the best first.

        With `agent`, that agent's own step rows too (the shared ones always). A query with no
        words finds nothing.
        """
        ...

    async def export_thread(self, thread: str) -> ThreadRecords | None:
        """Everything stored for the thread, read in one transaction; None when nothing is."""
        ...

    async def load_records(
        self, batch: Sequence[ThreadRecords], *, replace: bool = False
    ) -> Loaded:
        """Write records in one transaction; what is already stored as it comes is skipped.

        Each thread is merged by `records.plan`, so a contradiction (ConflictError: another
        text for a stored node, say) is refused before anything is written.

        With `replace`, each thread's summaries and outline become the given ones, provided its
        outline still has the given epoch and version (a rebuild swapping its result in).
        """
        ...

    def claim(self, thread: str) -> AbstractAsyncContextManager[Claim]:
        """Hold the right to process the thread: yields a false Claim when another process
        holds it.

        A claim ends with its block, or with its lease (`_claims.py`): the threads of a process
        that dies or stops are taken over once it lapses.
        """
        ...


DEFAULT_STORE = "chat-outline.sqlite"
"""The SQLite file a store is kept in when none is named."""
FORMER_STORE = "chat-history.sqlite"
"""The default file of the releases named chat-history."""


def default_store() -> str:
    """The default SQLite file: `chat-outline.sqlite`, or the former default when only it exists."""
    if not Path(DEFAULT_STORE).exists() and Path(FORMER_STORE).exists():
        return FORMER_STORE
    return DEFAULT_STORE


def open_store(
    where: str | Path,
    *,
    create: bool = True,
    read_only: bool = False,
    search_language: str | None = None,
) -> Store:
    """A store for a path (SQLite) or a `postgresql://` URL.

    `create=False` refuses a missing or empty SQLite file (a PostgreSQL schema without tables)
    rather than make a store there, and `read_only` reads without writing (nor creating)
    anything. `search_language` is
    the language search stems in; None keeps the one the database was indexed in (English for
    a new one), and another indexes it again on opening.
    """
    text = str(where)
    if text.startswith(("postgresql://", "postgres://")):
        try:
            from .postgres import PostgresStore
        except ImportError as exc:
            raise ConfigurationError(
                f"{text!r} needs asyncpg: pip install 'chat-outline[postgres]' ({exc})"
            ) from exc
        return PostgresStore(text, language=search_language, create=create, read_only=read_only)
    from .sqlite import SQLiteStore

    path = text.removeprefix("sqlite:///").removeprefix("sqlite://")
    return SQLiteStore(path, create=create, read_only=read_only, language=search_language)
