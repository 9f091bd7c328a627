"""The search index's rows: what a message or a line is indexed as, its terms stemmed in the
store's language and spaced, waiting for their postings (`indexing.post`).

A message is indexed as its line (`line_of`) with its day; a line as its text with the days
from its first message's to its own; a step in its agent's tree, at its step index. A row
keeps its words only until its postings are written: what takes a row back (`unposted_row`)
finds its postings by the stems it was made of.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ...contract import Message, Stored, Summary, format_at
from ...lines import line_of
from .._rows import Params
from . import terms


def _search_row(
    *,
    thread: str,
    agent: str,
    line: bool,
    level: int,
    index: int,
    message: str | None,
    since: datetime,
    at: datetime,
    text: str,
    language: str,
) -> Params:
    """A row of the search index: the terms of `text` and of the days from `since` to `at`,
    stemmed in `language` (the text itself is read from its summary or message)."""
    found = terms.indexed(text, since, at, language)
    return {
        "thread": thread,
        "agent": agent,
        "line": line,
        "level": level,
        "idx": index,
        "message": message,
        "since": format_at(since),
        "at": format_at(at),
        "words": terms.spaced(found),
        "length": len(found),
    }


def message_search_row(message: Message, index: int, language: str, *, agent: str = "") -> Params:
    """A message's search row: its line (`line_of`) and its day, stemmed in `language`; a
    step's is its agent's, at its step index."""
    m = message
    return _search_row(
        thread=m.thread,
        agent=agent,
        line=False,
        level=0,
        index=index,
        message=m.id,
        since=m.at,
        at=m.at,
        text=line_of(m),
        language=language,
    )


def stored_search_rows(messages: Sequence[Stored], language: str) -> list[Params]:
    """The search rows of stored messages: shared ones at their index, steps in their agent's
    tree at their step index (a step stored before step trees, with no agent, is not indexed)."""
    found = []
    for s in messages:
        m = s.message
        if not m.step and s.index is not None:
            found.append(message_search_row(m, s.index, language))
        elif m.step and m.author and s.step_index is not None:
            found.append(message_search_row(m, s.step_index, language, agent=m.author))
    return found


def unposted_row(row: Params, stems: Sequence[str] | None = None) -> Params:
    """What `unpost` deletes of a search row (`_search_row`'s, or its key with `stems`): its
    postings, found by its stems (a posted row keeps no words)."""
    held = sorted(set(row["words"].split() if stems is None else stems))
    key = ("thread", "agent", "line", "level", "idx")
    return {**{k: row[k] for k in key}, "stems": held}


def line_stems(text: str, since: str, at: str, language: str) -> list[str]:
    """The stems a line's search row holds, made from `text` over its stored days (`since` to
    `at`) as `line_search_row` made them."""
    return terms.indexed(text, datetime.fromisoformat(since), datetime.fromisoformat(at), language)


def line_search_row(node: Summary, since: datetime, language: str) -> Params:
    """A line's search row: its text and the days from `since` (its first message's) to its
    `at`, stemmed in `language`."""
    return _search_row(
        thread=node.thread,
        agent=node.agent,
        line=True,
        level=node.level,
        index=node.index,
        message=None,
        since=since,
        at=node.at,
        text=node.text,
        language=language,
    )


def first_indexes(nodes: Sequence[Summary]) -> list[int]:
    """The index of the first message each node covers."""
    return sorted({node.index * 2**node.level for node in nodes if not node.agent})


def line_search_rows(
    nodes: Sequence[Summary], firsts: dict[int, str], language: str
) -> list[Params]:
    """The search rows of lines, given the `at` of their first messages by index (a line whose
    first message is not stored counts from its own `at`)."""
    found = []
    for node in nodes:
        # `firsts` are shared messages': a step tree's line counts from its own `at`.
        first = None if node.agent else firsts.get(node.index * 2**node.level)
        since = datetime.fromisoformat(first) if first is not None else node.at
        found.append(line_search_row(node, since, language))
    return found


def thread_search_rows(
    messages: Sequence[Stored], nodes: Sequence[Summary], language: str
) -> list[Params]:
    """The search rows of a thread's messages and lines (an index being rebuilt)."""
    shared = [s for s in messages if s.index is not None and not s.message.step]
    firsts = {s.index: format_at(s.message.at) for s in shared if s.index is not None}
    return stored_search_rows(messages, language) + line_search_rows(nodes, firsts, language)
