"""The outline as an agent is sent it: blocks of lines, with marks for the provider's cache.

The outline comes first in a view: one `CompactionPart` per block of `block_lines` lines, each
line `{label}|{text}` (newlines as spaces), oldest first, then a `CachePoint`. Appending lines
leaves the full blocks byte-identical, so a provider that caches whole blocks keeps hitting. An
agent with steps is sent its own step outline after the shared one, in blocks the same way.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from pydantic_ai.messages import CachePoint, CompactionPart, ModelRequestPart, UserPromptPart

from ..contract import Entry, Outline
from ..lines import one_line
from ..plugin import History

log = logging.getLogger(__name__)


async def outline_parts(
    history: History,
    outline: Outline,
    agent: str | None,
    block_lines: int,
    since: datetime | None,
    cache_point: bool,
) -> list[ModelRequestPart]:
    """The shared outline's blocks, then the agent's step outline's (SPEC section 6a).

    A cache point follows the last full block of each outline when a partial block comes after
    it: the full blocks stay the same until a fold, so the mark keeps hitting while cuts append
    lines. Another ends the outlines.
    """
    steps = outline.steps.get(agent) if agent else None
    outlines = [await _blocks(history, outline.thread, outline.lines, "", block_lines, since)]
    if agent and steps is not None:
        outlines.append(
            await _blocks(history, outline.thread, steps.lines, agent, block_lines, since)
        )
    parts: list[ModelRequestPart] = []
    for texts, at, partial in outlines:
        for k, text in enumerate(texts):
            parts.append(CompactionPart(content=text))
            if cache_point and partial and k == len(texts) - 2:
                parts.append(_mark(at))
    if cache_point and parts:
        parts.append(_mark(max(at for texts, at, _ in outlines if texts)))
    return parts


async def _blocks(
    history: History,
    thread: str,
    lines: list[Entry],
    agent: str,
    block_lines: int,
    since: datetime | None,
) -> tuple[list[str], datetime, bool]:
    """One outline as blocks of `{label}|{text}` lines, the newest `at` it shows, and whether
    its last block is partial."""
    entries = [e for e in lines if since is None or e[3] >= since]
    keys = [(level, index) for level, index, _, _ in entries]
    nodes = await history.store.nodes(thread, keys, agent=agent)
    if len(nodes) < len(keys):  # only if the store lost a node: show what is left
        log.warning(
            "thread %r: %d outline lines have no node", thread, len(keys) - len(nodes),
            extra={"chat_thread": thread},
        )  # fmt: skip
    texts = [f"{n.label}|{one_line(n.text)}" for n in nodes]
    blocks = ["\n".join(texts[k : k + block_lines]) for k in range(0, len(texts), block_lines)]
    at = entries[-1][3] if entries else datetime.min.replace(tzinfo=UTC)
    return blocks, at, len(texts) % block_lines != 0


def _mark(at: datetime) -> UserPromptPart:
    return UserPromptPart(content=[CachePoint()], timestamp=at)
