"""What chat-outline sends an agent, rendered for the benchmarks: the one place to swap.

The plugin's own view (`history.view.render_view`) is being written elsewhere; until it lands,
`chat_history_prompt` renders the same thing from the committed outline: the outline's lines as
`{label}|{text}` (newlines as spaces), in blocks of `OUTLINE_BLOCK` lines so that appending
lines leaves the earlier blocks byte-identical, then the tail whole, from the log (the
processed tail plus everything stored after it). Cache marks sit after the last full outline
block, after the outline, and at the end.

To benchmark the real view instead, replace the body of `chat_history_prompt` with a call to
`render_view(history, thread)` and build the `Prompt` from its blocks; and `search_finds` with
the thread search.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from history.contract import Message
from history.lines import label, one_line, render
from history.plugin import History
from history.zoom import search

from .cache import Prompt

OUTLINE_BLOCK = 16
"""Outline lines per block."""
LAST = 2**62


@dataclass(kw_only=True)
class Memo:
    """What a long run already read: nodes and messages never change once written."""

    lines: dict[tuple[int, int], str] = field(default_factory=dict)
    messages: dict[int, Message] = field(default_factory=dict)


async def chat_history_prompt(history: History, thread: str, memo: Memo | None = None) -> Prompt:
    """The prompt an agent of `thread` is sent now. `memo` saves reads across turns."""
    memo = memo if memo is not None else Memo()
    outline = await history.outline(thread)
    if outline is None:
        return Prompt(blocks=())
    lines = []
    for level, index, _, _ in outline.lines:
        text = memo.lines.get((level, index))
        if text is None:
            node = await history.store.summary(thread, level, index)
            assert node is not None, f"{thread!r} lost node ({level}, {index})"
            text = memo.lines[(level, index)] = one_line(node.text)
        lines.append(f"{label(level, index)}|{text}")

    first = outline.tail[0].seq if outline.tail else outline.position + 1
    known = max(memo.messages, default=first - 1)
    for stored in await history.store.messages(thread, max(first, known + 1), LAST):
        memo.messages[stored.seq] = stored.message
    for seq in [seq for seq in memo.messages if seq < first]:
        del memo.messages[seq]
    tail = [render(memo.messages[seq]) for seq in sorted(memo.messages)]

    blocks = ["\n".join(lines[k : k + OUTLINE_BLOCK]) for k in range(0, len(lines), OUTLINE_BLOCK)]
    marks = {len(lines) // OUTLINE_BLOCK, len(blocks), len(blocks) + len(tail)} - {0}
    return Prompt(blocks=(*blocks, *tail), marks=tuple(sorted(marks)))


async def search_finds(history: History, thread: str, cue: str, value: str) -> bool:
    """Whether the thread's search for `cue` turns up `value`: in a hit's line, or in the
    message a level-0 hit names (what an agent reaches with one zoom)."""
    for hit in await search(history, thread, cue, limit=10):
        if value in hit.text:
            return True
        stored = await history.store.message(hit.message) if hit.message else None
        if stored is not None and value in stored.message.text:
            return True
    return False
