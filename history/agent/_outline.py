"""The outline as an agent is sent it: blocks of lines, with marks for the provider's cache.

The outline comes first in a view: one `CompactionPart` per block of lines, each line
`{label}|{text}` (newlines as spaces), oldest first, then a `CachePoint`. A block closes once it
holds an eighth of its outline's upper bound in bytes (or `block_lines` lines, when given), on
its own lines only: appending lines leaves the closed blocks byte-identical, so a provider that
caches whole blocks keeps hitting. An agent with steps is sent its own step outline after the
shared one, in blocks the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic_ai.messages import CachePoint, CompactionPart, ModelRequestPart, UserPromptPart

from .._generations import shown_snapshot
from ..contract import Entry, Snapshot, Summary
from ..lines import one_line, size
from ..settings import HistorySettings

log = logging.getLogger(__name__)

BLOCKS = 8
"""An outline at its upper bound goes in at most this many closed blocks and a partial one, when
blocks close by size. pydantic-ai's adapters frame each block as a summary (about 40 tokens), so
fewer blocks send less; smaller ones leave less to re-send after a cut (the partial block). Eight
keeps the marks within Anthropic's lookback (20 blocks from a mark) and scales with the budget."""


def outline_parts(
    settings: HistorySettings,
    snapshot: Snapshot,
    agent: str | None,
    block_lines: int | None,
    since: datetime | None,
    cache_point: bool,
) -> list[ModelRequestPart]:
    """The shared outline's blocks, then the agent's step outline's (SPEC section 6a).

    A cache point follows each outline's closed blocks when anything comes after them (its
    partial block, or the step outline): they stay the same until a fold, so the mark keeps
    hitting while cuts append lines. Another ends the outlines.
    """
    outline, snapshot = snapshot.outline, shown_snapshot(snapshot)
    shown = [(outline.lines, snapshot.nodes, settings.outline)]
    steps = outline.steps.get(agent) if agent else None
    if agent and steps is not None:
        shown.append((steps.lines, snapshot.steps, settings.steps or settings.outline))
    outlines = [
        _blocks(outline.thread, lines, nodes, since, block_lines, bounds[1] // BLOCKS)
        for lines, nodes, bounds in shown
    ]
    parts: list[ModelRequestPart] = []
    for texts, at, partial in outlines:
        closed = len(texts) - partial
        for k, text in enumerate(texts, 1):
            parts.append(CompactionPart(content=text))
            if cache_point and k == closed:
                parts.append(_mark(at))
    if cache_point and parts:
        if isinstance(parts[-1], UserPromptPart):  # the closed blocks end the outlines
            parts.pop()
        parts.append(_mark(max(at for texts, at, _ in outlines if texts)))
    return parts


def _blocks(
    thread: str,
    lines: list[Entry],
    nodes: Sequence[Summary],
    since: datetime | None,
    block_lines: int | None,
    block_bytes: int,
) -> tuple[list[str], datetime, bool]:
    """One outline as blocks of `{label}|{text}` lines (`nodes`, those of its `lines`), the
    newest `at` it shows, and whether its last block is partial. A block closes at
    `block_lines` lines or, when that is None, once its lines hold `block_bytes` bytes as the
    outline counts them (a line's bytes and one)."""
    entries = [e for e in lines if since is None or e.at >= since]
    if len(nodes) < len(lines):  # only if the store lost a node: show what is left
        log.warning(
            "thread %r: %d outline lines have no node",
            thread,
            len(lines) - len(nodes),
            extra={"chat_thread": thread},
        )
    if len(entries) < len(lines):
        keys = {(e.level, e.index) for e in entries}
        nodes = [n for n in nodes if (n.level, n.index) in keys]
    blocks: list[str] = []
    block: list[str] = []
    held = 0
    for n in nodes:
        block.append(f"{n.label}|{one_line(n.text)}")
        held += size(n.text) + 1
        if len(block) == block_lines or (block_lines is None and held >= block_bytes):
            blocks.append("\n".join(block))
            block, held = [], 0
    if block:
        blocks.append("\n".join(block))
    at = entries[-1].at if entries else datetime.min.replace(tzinfo=UTC)
    return blocks, at, bool(block)


def _mark(at: datetime) -> UserPromptPart:
    return UserPromptPart(content=[CachePoint()], timestamp=at)
