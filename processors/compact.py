"""The processor `history.compact`: each message joins the tail, the tail is cut, the outline folds.

The tail grows a message at a time and shrinks in one batch (the cut); the outline grows with
the lines of what left and, past its maximum, merges its most overdue pairs (the fold). A step
that leaves joins its agent's step outline, which folds the same way (SPEC section 6a). Between
cuts and folds nothing at the start of an agent's prompt moves (SPEC section 5).
It takes data and hands back what changed: lines are written through the `LineWriter` it is
given, and the core (`history._lane`) commits the outline it moved.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from typing import Protocol

from history.contract import Entry, Outline, StepOutline, Stored, TailItem
from history.processing import Change, LineWriter, MessageReader, Vanished
from history.settings import HistorySettings

from .summarize import Nodes, summarize


async def compact(
    outline: Outline,
    stored: Stored,
    nodes: Nodes,
    write: LineWriter,
    read: MessageReader,
    settings: HistorySettings,
) -> Change:
    """Move `outline` forward by one message: join the tail, cut, fold. Mutates `outline`."""
    outline.tail.append(stored.tail_item())
    outline.tokens += stored.weight
    outline.position = stored.seq
    low, high = settings.tail
    # The cut gap: once kept messages stopped a cut above `low`, wait for another `high - low`.
    threshold = max(high, outline.floor + high - low) if settings.cut_gap else high
    cut = False
    if outline.tokens > threshold or (outline.tokens > low and _cold(outline, settings.cold)):
        cut = await _cut(outline, nodes, write, read, settings)
        outline.floor = outline.tokens
    if cut:
        outline.cut_at = stored.message.at
    outline.since = outline.tail[0].at
    folded = await fold(outline, nodes, settings.outline)
    if settings.steps is not None:
        for agent in sorted(outline.steps):
            folded |= await fold(outline.steps[agent], nodes, settings.steps, agent=agent)
    return Change(cut=cut, folded=folded)


def _cold(outline: Outline, cold: float | None) -> bool:
    """The message that just joined came more than `cold` seconds after the one before it in the
    tail (the cold cut, SPEC version 3): the provider's cache of the prompt is gone anyway."""
    if cold is None or len(outline.tail) < 2:
        return False
    return (outline.tail[-1].at - outline.tail[-2].at).total_seconds() > cold


async def _cut(
    outline: Outline,
    nodes: Nodes,
    write: LineWriter,
    read: MessageReader,
    settings: HistorySettings,
) -> bool:
    low = settings.tail[0]
    shared = sum(not item.step for item in outline.tail)
    left = False
    while outline.tokens > low and len(outline.tail) > 1:
        oldest = outline.tail[0]
        if not oldest.step and shared <= settings.kept:
            break  # the newest `kept` shared messages stay whole, however much they weigh
        outline.tail.popleft()
        outline.tokens -= oldest.weight
        outline.gone = oldest.at if outline.gone is None else max(outline.gone, oldest.at)
        left = True
        if oldest.step:
            if settings.steps is not None:
                await _step_leaves(outline, oldest, nodes, write, read, settings)
            continue
        shared -= 1
        line = await nodes.get(0, outline.boundary)
        if line is None:
            line = await summarize(await _read(read, oldest.id), nodes, write, limit=settings.line)
        outline.lines.append(Entry(0, outline.boundary, line.bytes, oldest.at))
        outline.bytes += line.bytes + 1
        outline.boundary += 1
    return left


async def _step_leaves(
    outline: Outline,
    item: TailItem,
    nodes: Nodes,
    write: LineWriter,
    read: MessageReader,
    settings: HistorySettings,
) -> None:
    """A step left the tail: its line in its agent's step tree, then into the step outline."""
    stored = await _read(read, item.id)
    agent, index = stored.message.author, stored.step_index
    if not agent or index is None:
        return  # stored before step trees (no agent, or no step index): it keeps no line
    line = await nodes.get(0, index, agent=agent)
    if line is None:
        line = await summarize(stored, nodes, write, limit=settings.line)
    # A thread stored by version 1: the agent's earlier steps left without a line.
    steps = outline.steps.setdefault(agent, StepOutline(boundary=index))
    steps.lines.append(Entry(0, index, line.bytes, item.at))
    steps.bytes += line.bytes + 1
    steps.boundary = index + 1


async def _read(read: MessageReader, id: str) -> Stored:
    message = await read(id)
    if message is None:
        raise Vanished(id)
    return message


class _Lines(Protocol):
    """What a fold moves: the shared outline, or one agent's step outline."""

    lines: list[Entry]
    bytes: int
    boundary: int
    draining: bool


async def fold(outline: _Lines, nodes: Nodes, bounds: tuple[int, int], *, agent: str = "") -> bool:
    """Merge the most overdue pairs of lines until the outline is back under `bounds[0]`.

    A pair is two neighbours at level L with indices 2k and 2k + 1 whose parent is built; its due
    is `(boundary - last) / 2**L`, `last` being the pair's last message. The highest due merges
    first, the oldest among equals. When no pair can merge, the fold goes on at the next message.
    `agent` names the step tree of a step outline (`""`: the shared tree).
    """
    low, high = bounds
    if not (outline.bytes > high or outline.draining):
        return False
    outline.draining = True
    folded = outline.bytes > low and await _merge(outline, nodes, low, agent)
    if outline.bytes <= low:
        outline.draining = False
    return folded


async def _merge(outline: _Lines, nodes: Nodes, low: int, agent: str) -> bool:
    """The fold's merges, most overdue first, until the outline is under `low` bytes or no pair
    is left. The lines cover consecutive spans of messages in order, so two siblings are
    neighbours whenever both are lines, and the oldest pair is the one that starts first:
    the pairs wait in a heap by due and start, and a merge adds the one its parent closes."""
    lines, boundary = outline.lines, outline.boundary
    present = {(level, index) for level, index, _, _ in lines}
    pairs: list[tuple[float, int, int, int]] = []

    def pair(level: int, index: int) -> None:
        """Wait with the pair of lines (level, index) and (level, index + 1), if both are."""
        if not index % 2 and (level, index) in present and (level, index + 1) in present:
            span = 2**level
            # Exact: an integer over a power of two is a float with no rounding.
            due = (boundary - ((index + 2) * span - 1)) / span
            heapq.heappush(pairs, (-due, index * span, level, index))

    for level, index, _, _ in lines:
        pair(level, index)
    await nodes.prefetch([_parent(level, index) for _, _, level, index in pairs], agent=agent)
    folded = False
    while outline.bytes > low and pairs:
        _, start, level, index = heapq.heappop(pairs)
        if (level, index) not in present or (level, index + 1) not in present:
            continue  # one of them merged meanwhile
        parent = await nodes.get(level + 1, index // 2, agent=agent)
        if parent is None:
            continue  # not built: this fold cannot merge it
        pos = bisect_left(lines, start, key=_start)
        (_, _, left_bytes, left_at), (_, _, right_bytes, right_at) = lines[pos : pos + 2]
        lines[pos : pos + 2] = [Entry(level + 1, index // 2, parent.bytes, max(left_at, right_at))]
        outline.bytes += (parent.bytes + 1) - (left_bytes + 1) - (right_bytes + 1)
        present -= {(level, index), (level, index + 1)}
        present.add((level + 1, index // 2))
        pair(level + 1, index // 2 - index // 2 % 2)
        folded = True
    return folded


def _start(line: Entry) -> int:
    """The first message a line covers."""
    return line[1] << line[0]


def _parent(level: int, index: int) -> tuple[int, int]:
    return level + 1, index // 2
