"""Writing the search index in a write transaction: rows indexed with their words waiting,
and their postings written in batches once `due` (the posting policy).

A commit indexes the messages it processes and the lines it writes, a load the summaries it
writes and the messages its outline has processed, and a change to a thread's lines indexes
them again (`changes.reindex`); each row is written with its words waiting for their postings
(`search_pending`), which a search reads meanwhile. The postings of what waits are written
together (`post`): a batch costs most of what it costs whatever its size, so a commit writes
them only once enough wait.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...contract import Summary
from .._adapter import Transaction
from .._rows import Params, stored_from_row, summary_from_row
from .rows import first_indexes, line_search_rows, thread_search_rows

POSTED_TOGETHER = 64
"""The fewest of a thread's messages whose search rows a commit leaves waiting for their
postings (a search reads their words). The lines written meanwhile wait with them: a line is a
few dozen words, two or so for every message that leaves the tail, and a batch costs most of
what it costs whatever its size (it changes a page for nearly every term it posts), so lines
starting batches of their own made half again as many."""
POSTED_SHARE = 200
"""A batch is at least this share of its thread's messages (one in 200, so from the 12,800th
message on it is more than `POSTED_TOGETHER`). The pages a batch changes grow with the thread's
postings, until each of its terms is on a page of its own: a batch that grows with the thread
keeps what a message's postings cost flat (with 64 at every length, a message of the last ten
thousand of a thread of 100,000 cost 1.23 times one of its first ten thousand)."""
POSTED_MOST = 256
"""However long the thread, a batch is written once this many of its messages wait: the commit
that writes one holds the store's write lock (a batch of 256 took 0.3 s in a thread of 100,000
messages, against 0.1 s for 64, and 0.45 s for 512 with no flatter cost)."""
POSTED_TERMS = 65_536
"""Or sooner, once the waiting messages hold this many terms: a search reads the words of every
waiting row, and 65,536 terms are about 1.3 MB of words (64 messages of five thousand words
were 6.5 MB)."""


def due(length: int, waiting: int, terms: int) -> bool:
    """Whether the postings of a thread of `length` messages are written, with `waiting` of its
    messages waiting for them and holding `terms` terms."""
    batch = min(POSTED_MOST, max(POSTED_TOGETHER, length // POSTED_SHARE))
    return waiting >= batch or terms >= POSTED_TERMS


async def post(tx: Transaction, thread: str, *, length: int | None = None) -> None:
    """Write the postings of the thread's search rows that wait for them: all of them, or, given
    the thread's `length` in messages, only when they are `due` (lines do not count: they go
    with the messages' batch)."""
    if length is not None:
        found = await tx.one("unposted", thread=thread)
        if found is None or not due(length, found["count"], found["terms"]):
            return
    await tx.execute("post_words", thread=thread)
    await tx.execute("post_search", thread=thread)
    await tx.execute("unpend", thread=thread)


async def index(tx: Transaction, found: Sequence[Params]) -> None:
    """Write search rows (`rows.*_search_rows`), their words waiting for their postings."""
    await tx.executemany("insert_search", found)
    await tx.executemany("insert_search_pending", found)


async def index_lines(
    tx: Transaction, thread: str, nodes: Sequence[Summary], language: str
) -> None:
    """Index lines for search, with the days from their first message's to their own."""
    if not nodes:
        return
    found = await tx.fetch("first_at", thread=thread, indexes=first_indexes(nodes))
    firsts = {r["idx"]: r["at"] for r in found}
    await index(tx, line_search_rows(nodes, firsts, language))


async def index_thread(tx: Transaction, thread: str, language: str) -> None:
    """Index a thread's processed messages and its lines for search (the index being made
    again)."""
    messages = await tx.fetch("processed_messages", thread=thread)
    nodes = await tx.fetch("summaries", thread=thread)
    found = thread_search_rows(
        [stored_from_row(r) for r in messages],
        [summary_from_row(r) for r in nodes],
        language,
    )
    await index(tx, found)
    await post(tx, thread)
