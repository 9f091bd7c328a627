"""Lines: a message's own line when it leaves the tail, then the merges up the tree.

A short message is its own line and two short lines are simply joined; only a text over the
`line` limit is sent to the summarizer (SPEC section 6).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from history.contract import Stored, Summary
from history.lines import bound_input, line_of, size
from history.summarizer import Task

LineWriter = Callable[[Task], Awaitable[str]]
"""Writes the line for a task: asks the summarizer, retries, cuts."""
NodeReader = Callable[[int, int], Awaitable[Summary | None]]
ManyReader = Callable[[list[tuple[int, int]]], Awaitable[list[Summary]]]
"""Reads the nodes at some keys at once (those that exist)."""


class Nodes:
    """The tree as one batch sees it: what is stored, plus what the batch has written so far.

    `known` may be shared across batches of a thread: it caches committed nodes, while the
    batch's own writes stay apart until `settle()` after its commit. `boundary` is the committed
    outline's: a batch commits its nodes with its outline, so no stored node covers a message
    at or past it, and those are known absent without asking the store.
    """

    def __init__(
        self,
        thread: str,
        read: NodeReader,
        *,
        boundary: int | None = None,
        known: dict[tuple[int, int], Summary | None] | None = None,
        read_many: ManyReader | None = None,
    ) -> None:
        self.thread = thread
        self.written: list[Summary] = []
        self._read = read
        self._read_many = read_many
        self._boundary = boundary
        self._known = {} if known is None else known
        self._batch: dict[tuple[int, int], Summary] = {}

    async def get(self, level: int, index: int) -> Summary | None:
        key = (level, index)
        if key in self._batch:
            return self._batch[key]
        if self._boundary is not None and (index + 1) * 2**level > self._boundary:
            return None
        if key not in self._known:
            self._known[key] = await self._read(level, index)
        return self._known[key]

    async def prefetch(self, keys: list[tuple[int, int]]) -> None:
        """Read the nodes at `keys` that `get` would ask the store for, in one read if a
        reader of many was given (else `get` reads them one at a time, as it needs them)."""
        wanted = [
            key
            for key in dict.fromkeys(keys)
            if key not in self._batch
            and key not in self._known
            and (self._boundary is None or (key[1] + 1) * 2 ** key[0] <= self._boundary)
        ]
        if self._read_many is None or len(wanted) < 2:
            return
        found = {(n.level, n.index): n for n in await self._read_many(wanted)}
        for key in wanted:
            self._known[key] = found.get(key)

    def put(self, node: Summary) -> None:
        self._batch[(node.level, node.index)] = node
        self.written.append(node)

    def settle(self) -> None:
        """The batch committed: its nodes are stored now."""
        self._known.update(self._batch)


def ruler(limit: int) -> str:
    """What `{limit}` stands for in a task: the bound in words, then a ruler of `limit` dashes."""
    return (
        f"at most {limit} bytes (about {limit * 70 // 512} words), no longer than this ruler:\n"
        + "-" * limit
    )


def leaf_task(thread: str, index: int, text: str, before: list[str], limit: int) -> Task:
    """The task that compresses message `index`, with the lines before it as `<chat>`."""
    placed = bound_input(text)
    chat = "<chat>\n" + "\n".join(before) + "\n</chat>\n" if before else ""
    prompt = (
        f"Compaction: compress message {index} into one line of {ruler(limit)}\n"
        f"{chat}<input>\n{placed}\n</input>"
    )
    return Task(thread=thread, level=0, index=index, prompt=prompt, input=placed)


def merge_task(thread: str, level: int, right: int, joined: str, limit: int) -> Task:
    """The task that merges nodes `(level, right - 1)` and `(level, right)` into their parent."""
    n = 2**level
    placed = bound_input(joined)
    prompt = (
        f"Compaction: merge lines {(right - 1) * n}+{n} and {right * n}+{n}, adjacent, "
        f"into one line of {ruler(limit)}\n<input>\n{placed}\n</input>"
    )
    return Task(thread=thread, level=level + 1, index=(right - 1) // 2, prompt=prompt, input=placed)


async def summarize(stored: Stored, nodes: Nodes, write: LineWriter, *, limit: int) -> None:
    """Write the line of a shared message that leaves the tail, then merge up while pairs close."""
    m, index = stored.message, stored.index
    assert index is not None, "a step has no line"
    text = line_of(m)
    if size(text) > limit:
        before = [
            node.text
            for k in range(max(0, index - 4), index)
            if (node := await nodes.get(0, k)) is not None
        ]
        text = await write(leaf_task(nodes.thread, index, text, before, limit))
    nodes.put(_node(nodes.thread, 0, index, text, m.id, m.at))

    # An odd index completes a pair: the two merge into their parent, and so on up.
    level, j = 0, index
    while j % 2 == 1:
        left, right = await nodes.get(level, j - 1), await nodes.get(level, j)
        if left is None or right is None or await nodes.get(level + 1, j // 2) is not None:
            break
        joined = f"{left.text}\n{right.text}"
        if size(joined) > limit:
            joined = await write(merge_task(nodes.thread, level, j, joined, limit))
        nodes.put(_node(nodes.thread, level + 1, j // 2, joined, None, max(left.at, right.at)))
        level, j = level + 1, j // 2


def _node(
    thread: str, level: int, index: int, text: str, message: str | None, at: datetime
) -> Summary:
    return Summary(
        thread=thread, level=level, index=index, text=text, bytes=size(text), message=message, at=at
    )
