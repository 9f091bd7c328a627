"""Lines: a message's own line when it leaves the tail, then the merges up the tree.

A short message is its own line and two short lines are simply joined; only a text over the
`line` limit is sent to the summarizer (SPEC section 6). A step that leaves gets its line the
same way in its agent's own step tree (section 6a).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from history.contract import NodeKey, Outline, Stored, Summary, Task
from history.lines import bound_input, line_of, size
from history.processing import LineWriter, ManyReader, NodeReader


class Nodes:
    """The trees as one batch sees them: what is stored, plus what the batch wrote so far.

    `known` may be shared across batches of a thread: it caches committed nodes, while the
    batch's own writes stay apart until `settle()` after its commit. `boundaries` are the
    committed outline's, by tree (`""` for the shared tree, an agent for its step tree): a batch
    commits its nodes with its outline, so no stored node covers a message at or past its
    tree's boundary, and those are known absent without asking the store.
    """

    def __init__(
        self,
        thread: str,
        read: NodeReader,
        *,
        boundaries: Mapping[str, int] | None = None,
        known: dict[NodeKey, Summary | None] | None = None,
        read_many: ManyReader | None = None,
    ) -> None:
        self.thread = thread
        self.written: list[Summary] = []
        self._read = read
        self._read_many = read_many
        self._boundaries = boundaries
        self._known = {} if known is None else known
        self._batch: dict[NodeKey, Summary] = {}

    def _past(self, agent: str, level: int, index: int) -> bool:
        """Known absent: past its tree's boundary (an agent with no step outline has none)."""
        if self._boundaries is None:
            return False
        return bool((index + 1) * 2**level > self._boundaries.get(agent, 0))

    async def get(self, level: int, index: int, *, agent: str = "") -> Summary | None:
        key = NodeKey(agent, level, index)
        if key in self._batch:
            return self._batch[key]
        if self._past(agent, level, index):
            return None
        if key not in self._known:
            self._known[key] = await self._read(agent, level, index)
        return self._known[key]

    async def prefetch(self, keys: list[tuple[int, int]], *, agent: str = "") -> None:
        """Read the nodes of one tree at `keys` that `get` would ask the store for, in one read
        if a reader of many was given (else `get` reads them one at a time, as it needs them)."""
        wanted = [
            key
            for key in dict.fromkeys(keys)
            if NodeKey(agent, *key) not in self._batch
            and NodeKey(agent, *key) not in self._known
            and not self._past(agent, *key)
        ]
        if self._read_many is None or len(wanted) < 2:
            return
        found = {(n.level, n.index): n for n in await self._read_many(agent, wanted)}
        for key in wanted:
            self._known[NodeKey(agent, *key)] = found.get(key)

    def put(self, node: Summary) -> None:
        self._batch[NodeKey(node.agent, node.level, node.index)] = node
        self.written.append(node)

    def settle(self) -> None:
        """The batch committed: its nodes are stored now."""
        self._known.update(self._batch)


def boundaries(outline: Outline) -> dict[str, int]:
    """Each tree's committed boundary: past it no node is stored (see `Nodes`)."""
    return {"": outline.boundary} | {a: o.boundary for a, o in outline.steps.items()}


def ruler(limit: int) -> str:
    """What `{limit}` stands for in a task: the bound in words, then a ruler of `limit` dashes."""
    return (
        f"at most {limit} bytes (about {limit * 70 // 512} words), no longer than this ruler:\n"
        + "-" * limit
    )


def leaf_task(
    thread: str, index: int, text: str, before: list[str], limit: int, *, agent: str = ""
) -> Task:
    """The task that compresses message `index` (or step `index` of `agent`), with the lines
    before it as `<chat>`."""
    placed = bound_input(text)
    chat = "<chat>\n" + "\n".join(before) + "\n</chat>\n" if before else ""
    what = f"step {index} of {agent}" if agent else f"message {index}"
    prompt = (
        f"Compaction: compress {what} into one line of {ruler(limit)}\n"
        f"{chat}<input>\n{placed}\n</input>"
    )
    return Task(thread=thread, level=0, index=index, prompt=prompt, input=placed, agent=agent)


def merge_task(
    thread: str, level: int, right: int, joined: str, limit: int, *, agent: str = ""
) -> Task:
    """The task that merges nodes `(level, right - 1)` and `(level, right)` into their parent."""
    n = 2**level
    placed = bound_input(joined)
    pair = f"{(right - 1) * n}+{n} and {right * n}+{n}"
    what = f"step lines {pair} of {agent}" if agent else f"lines {pair}"
    prompt = (
        f"Compaction: merge {what}, adjacent, into one line of {ruler(limit)}\n"
        f"<input>\n{placed}\n</input>"
    )
    return Task(
        thread=thread,
        level=level + 1,
        index=(right - 1) // 2,
        prompt=prompt,
        input=placed,
        agent=agent,
    )


async def summarize(stored: Stored, nodes: Nodes, write: LineWriter, *, limit: int) -> Summary:
    """Write the line of a message that leaves the tail, then merge up while pairs close.

    A shared message's line goes in the shared tree at its index; a step's in its agent's step
    tree at its step index. Returns the message's level-0 line.
    """
    m = stored.message
    agent = m.author if m.step else ""
    index = stored.step_index if m.step else stored.index
    assert index is not None, f"message {m.id!r} has no place in a tree"
    text, fallback = line_of(m), False
    if size(text) > limit:
        before = [
            node.text
            for k in range(max(0, index - 4), index)
            if (node := await nodes.get(0, k, agent=agent)) is not None
        ]
        done = await write(leaf_task(nodes.thread, index, text, before, limit, agent=agent))
        text, fallback = done.line, done.outcome == "fallback"
    leaf = _node(nodes.thread, agent, 0, index, text, m.id, m.at, fallback)
    nodes.put(leaf)

    # An odd index completes a pair: the two merge into their parent, and so on up.
    level, j = 0, index
    while j % 2 == 1:
        left = await nodes.get(level, j - 1, agent=agent)
        right = await nodes.get(level, j, agent=agent)
        if left is None or right is None:
            break
        if await nodes.get(level + 1, j // 2, agent=agent) is not None:
            break
        joined, fallback = f"{left.text}\n{right.text}", False
        if size(joined) > limit:
            done = await write(merge_task(nodes.thread, level, j, joined, limit, agent=agent))
            joined, fallback = done.line, done.outcome == "fallback"
        at = max(left.at, right.at)
        parent = _node(nodes.thread, agent, level + 1, j // 2, joined, None, at, fallback)
        nodes.put(parent)
        level, j = level + 1, j // 2
    return leaf


def _node(
    thread: str,
    agent: str,
    level: int,
    index: int,
    text: str,
    message: str | None,
    at: datetime,
    fallback: bool,
) -> Summary:
    return Summary(
        thread=thread,
        agent=agent,
        level=level,
        index=index,
        text=text,
        bytes=size(text),
        message=message,
        at=at,
        fallback=fallback,
    )
