"""The simulate trace (SPEC section 8): the plugin's whole state as one JSON object.

Two implementations that follow the SPEC print the same object for the same input, so this is
what parity is checked on: every ask, every node of every tree, every outline.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .contract import Ask, Message, Outline, Summary, entries_json, format_at
from .errors import InputError
from .ingest import parse_line
from .settings import HistorySettings

if TYPE_CHECKING:
    from .plugin import History

Json = dict[str, Any]


def ask_json(ask: Ask) -> Json:
    return {
        "thread": ask.thread,
        "prompts": list(ask.prompts),
        "answers": list(ask.answers),
        "line": ask.line,
    }


def summary_json(node: Summary) -> Json:
    agent = {"agent": node.agent} if node.agent else {}
    return {
        "thread": node.thread,
        **agent,
        "level": node.level,
        "index": node.index,
        "text": node.text,
        "bytes": node.bytes,
        "message": node.message,
        "at": format_at(node.at),
    }


def outline_json(o: Outline) -> Json:
    def at(value: Any) -> str | None:
        return None if value is None else format_at(value)

    return {
        "thread": o.thread,
        "lines": entries_json(o.lines),
        "bytes": o.bytes,
        "boundary": o.boundary,
        "since": at(o.since),
        "gone": at(o.gone),
        "tokens": o.tokens,
        "draining": o.draining,
        "tail": [[t.id, t.weight, format_at(t.at), t.step] for t in o.tail],
        "steps": {agent: steps.to_json() for agent, steps in sorted(o.steps.items())},
    }


async def snapshot(history: History, asks: Iterable[Ask]) -> Json:
    """The trace of everything the plugin holds now, with the asks made so far."""
    outlines = []
    for thread in await history.store.threads():
        outline = await history.store.outline(thread)
        if outline is not None:
            outlines.append(outline_json(outline))
    nodes = await history.store.summaries()
    return {
        "asks": [ask_json(a) for a in asks],
        "summaries": [summary_json(s) for s in nodes if not s.agent],
        "steps": [summary_json(s) for s in nodes if s.agent],
        "outlines": outlines,
    }


async def simulate(
    lines: Iterable[bytes],
    settings: HistorySettings,
    *,
    store: str = ":memory:",
    report: Any = None,
) -> Json:
    """Run the real plugin over JSONL lines, each handled completely before the next.

    Bad lines are reported through `report(number, reason)` and leave nothing in the trace.
    """
    from .plugin import History

    asks: list[Ask] = []
    async with History(settings, store=store, on_ask=asks.append, pause=0.0) as history:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                event = parse_line(raw)
                if isinstance(event, Message):
                    await history.message_created(event)
                else:
                    await history.thread_deleted(event.thread)
            except InputError as exc:
                if report is not None:
                    report(number, str(exc))
                continue
            await history.wait()
        return await snapshot(history, asks)
