"""Renames: an author's display name, store-wide or in one thread, and the lines it rewrites
(docs/generations.md, sections 2, 3 and 6). Never a model call."""

from __future__ import annotations

import logging

from ._generated import Generation, Name
from ._generations import Tree, renamed
from ._names import check_name, display
from .errors import InputError
from .store import Store
from .store import _changes as changes
from .store._records import ThreadRecords

log = logging.getLogger(__name__)


async def rename(
    store: Store, author: str, name: str, *, thread: str | None = None, now: bool = False
) -> int:
    """Show `author` as `name` store-wide (thread None) or in `thread`; the number of lines
    rewritten. Refused (InputError, nothing changed): an empty name, an author the store (or
    the thread) has never seen, a name another author of the same scope shows as."""
    check_name(name)
    if not isinstance(author, str):
        raise InputError(f"author must be a string, got {author!r}", field="author")
    if thread is not None and not (isinstance(thread, str) and thread):
        raise InputError(f"thread must be a non-empty string, got {thread!r}", field="thread")
    threads = [thread] if thread is not None else await store.author_threads(author)
    if not threads or author not in await store.authors(threads[0]):
        where = "the store" if thread is None else f"thread {thread!r}"
        raise InputError(f"author {author!r} is not known to {where}", field="author")
    names = await store.names(thread)
    scope = "" if thread is None else thread
    await _check_unique(store, names, author, name, scope)
    given = Name(thread=scope, author=author, name=name)
    # Every thread's old name as it was before the first thread's change sets the new one.
    names = await store.names()
    rewritten = 0
    for each in threads:
        rewritten += await _rename_thread(store, each, given, names, now=now)
    return rewritten


async def _check_unique(
    store: Store, names: list[Name], author: str, name: str, scope: str
) -> None:
    """Refuse a name another known author of the scope already shows as (section 2)."""
    shown = display(names if scope else [n for n in names if not n.thread], scope)
    known = await store.authors(scope or None)
    for other in known - {author}:
        if shown.get(other, other) == name:
            raise InputError(
                f"name {name!r} is already {other!r}'s"
                + (f" in thread {scope!r}" if scope else ""),
                field="name",
            )


async def _rename_thread(
    store: Store, thread: str, given: Name, names: list[Name], *, now: bool
) -> int:
    """One thread's change: the name set and its lines rewritten, read and written in one
    transaction, so it is serialized with the thread's commits like any of them."""
    before = display(names, thread)
    kept = [n for n in names if (n.thread, n.author) != (given.thread, given.author)]
    after = display([*kept, given], thread)
    old, new = before.get(given.author, given.author), after.get(given.author, given.author)
    made: list[Generation] = []

    def make(records: ThreadRecords) -> changes.Change:
        messages = {s.message.id: s.message for s in records.messages}
        found = Tree(records.summaries, records.generations, messages)
        made[:] = renamed(found, thread, after, old, new) if old != new else []
        # Search keeps the lines' first words, and a hit reads the current text: indexing
        # every line again would cost a rename of 10,000 lines seconds (see lookup.search).
        return changes.Change(generations=made, names=[given], now=now)

    if not await store.revise(thread, make):
        return 0
    if made:
        log.info(
            "thread %r: %r shown as a new name, %d lines rewritten",
            thread,
            given.author,
            len(made),
            extra={"chat_thread": thread},
        )
    return len(made)
