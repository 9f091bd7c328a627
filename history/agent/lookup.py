"""Zoom and search: how an agent reaches what its outline only summarizes.

`zoom(label)` opens a line into the two lines under it, and a single message's label (`"12+1"`)
into the message itself, whole, in pages of `PAGE` bytes when it is long. An agent zooms into
its own step tree the same way, by the step labels of its step outline (`"s4+2"`, `"s5+1"`).
`search(query)` finds the thread's lines and messages by their words and gives the labels to
zoom into; `recall_block` is what a view appends of them for the newest message (its `recall`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .._checks import LARGEST, argument_text, optional_argument_text, whole, wrong
from .._generations import current_hits, current_nodes
from .._names import Display, display, named, named_query
from ..contract import Hit, Message, Stored, Summary, format_at
from ..errors import NotFoundError
from ..lines import cut, line_of, one_line, prefix, size, speaker
from ..lines import label as label_of
from ..plugin import History, Reading, ReadOnly
from ..processors.weight import tokens

PAGE = 32_000
"""Bytes of a message sent at once: the head the view sends, and a page of zoom."""
RECALL_HITS = 10
"""Hits the recall block draws from, the best first."""
RECALL_HEADER = "Earlier in this conversation, found for the newest message (label|text):"
_LABEL = re.compile(r"\s*(s?)(\d+)\s*\+\s*(\d+)\s*")


@dataclass(frozen=True, kw_only=True)
class Zoom:
    """A line opened: the two lines under it, or a page of the message it stands for."""

    label: str
    level: int
    index: int
    lines: tuple[Summary, ...]
    """The two lines under the node; empty when the label is a single message's."""
    message: Message | None
    """The message, when the label is a single message's (`"{index}+1"`)."""
    page: int
    """The page of the message shown, from 1."""
    pages: int
    """How many pages the message has (1 for a line)."""
    text: str
    """What an agent reads: the lines as `label|text`, or the message's page with a header."""


async def zoom(
    history: Reading,
    thread: str,
    label: str,
    *,
    agent: str | None = None,
    page: int = 1,
    page_bytes: int = PAGE,
) -> Zoom:
    """Open the line `label` of `thread`; a label that is not a node of it is a NotFoundError.

    A label is `"{first}+{count}"`: `count` a power of two and `first` a multiple of it, as the
    outline and search give them. `"12+1"` is message 12 itself, whole; `page` pages through a
    message longer than `page_bytes`. A step label (`"s{first}+{count}"`) opens `agent`'s own
    step tree, down to a step whole (`"s3+1"`); no one else's.
    """
    checked(history, thread, agent)
    argument_text("label", label)
    if isinstance(page, bool) or not isinstance(page, int):  # a page out of range: not found
        wrong("page", page, "a whole number")
    whole("page_bytes", page_bytes, low=4)
    step, level, index = _parse(thread, label)
    tree = ""
    if step:
        if not agent:
            raise NotFoundError(
                f"{label.strip()!r} is a step label: only the agent whose step it is can zoom "
                "into it"
            )
        tree = agent
    name = label_of(level, index, agent=tree)
    if level == 0:
        return await _message(history, thread, index, page, page_bytes, agent=tree)
    keys = [(level, index), (level - 1, 2 * index), (level - 1, 2 * index + 1)]
    found = await history.store.nodes(thread, keys, agent=tree)
    if not found or (found[0].level, found[0].index) != (level, index):
        raise NotFoundError(
            f"no line {label!r} in thread {thread!r}: use a label from the outline or from "
            "search, like the ones before each '|'"
        )
    lines = await current_nodes(history.store, thread, found[1:])  # a lost child is skipped
    text = "\n".join(f"{n.label}|{one_line(n.text)}" for n in lines)
    return Zoom(
        label=name,
        level=level,
        index=index,
        lines=tuple(lines),
        message=None,
        page=1,
        pages=1,
        text=text,
    )


async def search(
    history: Reading, thread: str, query: str, *, limit: int = 10, agent: str | None = None
) -> list[Hit]:
    """The thread's messages and lines that match `query`, ranked as `history.store._search.ranking`
    says: at most `limit` distinct hits, the best first.

    A line is listed only when it holds a word of the query that no better hit holds. A hit's
    text is one line, at most the thread's `line` bytes. With `agent`, its own steps and step
    lines are searched too.
    """
    checked(history, thread, agent)
    argument_text("query", query, empty=True)
    whole("limit", limit, low=1, high=10_000)
    hits = []
    names = display(await history.store.names(thread), thread)
    found = await history.store.search(thread, named_query(query, names), limit, agent=agent)
    for hit in await current_hits(history.store, thread, found):
        text = one_line(await _named_hit(history, hit, names))
        if size(text) > history.settings.line:
            text = cut(text, history.settings.line)
        hits.append(replace(hit, text=text))
    return hits


async def _named_hit(history: Reading, hit: Hit, names: Display) -> str:
    """A message's hit reads its header under the display names (a line's is stored so)."""
    if not names or hit.message is None:
        return hit.text
    stored = await history.store.message(hit.message)
    if stored is None or hit.text != line_of(stored.message):
        return hit.text
    return line_of(named(stored.message, names))


async def recall_block(
    history: Reading,
    thread: str,
    query: str,
    *,
    agent: str | None,
    budget: int,
    whole: int,
) -> str:
    """The best search hits for `query` as `{label}|{text}` lines under `RECALL_HEADER`, as
    many as fit `budget` tokens (the header included); hits on messages from index `whole` on,
    which the tail holds whole, are left out. Empty when nothing fits or nothing is found."""
    encoding = history.settings.encoding
    lines = [RECALL_HEADER]
    used = tokens(RECALL_HEADER, encoding)
    for hit in await search(history, thread, query, limit=RECALL_HITS, agent=agent):
        if hit.index << hit.level >= whole:
            continue
        line = f"{hit.label}|{hit.text}"
        cost = tokens(line, encoding) + 1
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines) if len(lines) > 1 else ""


def checked(history: object, thread: object, agent: object) -> None:
    """Refuse what is not a History's or a ReadOnly's thread (by name) and agent, naming the
    argument."""
    if not isinstance(history, History | ReadOnly):
        wrong("history", history, "a History or a ReadOnly")
    argument_text("thread", thread)
    optional_argument_text("agent", agent)


def _parse(thread: str, text: str) -> tuple[bool, int, int]:
    match = _LABEL.fullmatch(text)
    if match is None:
        raise NotFoundError(
            f"{text!r} is not a label: a label is first+count as the outline shows it, "
            "like '0+8' or '12+1' (or an agent's step label, like 's4+2')"
        )
    step, first, count = bool(match[1]), int(match[2]), int(match[3])
    if count < 1 or count & (count - 1) or first % count or first + count > LARGEST:
        raise NotFoundError(
            f"no line {text!r} in thread {thread!r}: a line covers a power of two of messages "
            "starting at a multiple of it; use a label from the outline or from search"
        )
    return step, count.bit_length() - 1, first // count


async def _message(
    history: Reading, thread: str, index: int, page: int, page_bytes: int, *, agent: str
) -> Zoom:
    name = label_of(0, index, agent=agent)
    stored = await _find(history, thread, index, agent)
    if stored is None:
        raise NotFoundError(
            f"no message {name!r} in thread {thread!r}: use a label from the outline or from search"
        )
    m = stored.message
    pages = _pages(m.text, page_bytes)
    if not 1 <= page <= len(pages):
        raise NotFoundError(f"message {name!r} has {len(pages)} page(s); there is no page {page!r}")
    names = display(await history.store.names(thread), thread)
    shown = [f"{name}|{speaker(named(m, names))}, {format_at(m.at)}:", pages[page - 1]]
    if page == len(pages) and m.files:
        shown.append("[files: " + ", ".join(f.name for f in m.files) + "]")
    if page < len(pages):
        shown.append(f'[page {page} of {len(pages)}: zoom("{name}", page={page + 1}) reads on]')
    return Zoom(
        label=name,
        level=0,
        index=index,
        lines=(),
        message=m,
        page=page,
        pages=len(pages),
        text="\n".join(shown),
    )


async def _find(history: Reading, thread: str, index: int, agent: str) -> Stored | None:
    """Shared message `index` (or `agent`'s step `index`): through its line once it left the
    tail, else in the tail."""
    node = await history.store.summary(thread, 0, index, agent=agent)
    if node is not None and node.message is not None:
        return await history.store.message(node.message)
    snapshot = await history.store.snapshot(thread, agent=agent or None)
    if snapshot is None:
        return None
    outline = snapshot.outline
    steps = outline.steps.get(agent)
    left = outline.boundary if not agent else steps.boundary if steps is not None else 0
    if index < left:
        return None
    for stored in snapshot.tail:
        m = stored.message
        place = stored.step_index if m.step and m.author == agent else stored.index
        if ((m.step and m.author == agent) if agent else not m.step) and place == index:
            return stored
    return None


def _pages(text: str, page_bytes: int) -> list[str]:
    """`text` in pages of at most `page_bytes` bytes, split between characters."""
    pages: list[str] = []
    rest = text
    while rest:
        head = prefix(rest, max(page_bytes, 4))
        pages.append(head)
        rest = rest[len(head) :]
    return pages or [""]
