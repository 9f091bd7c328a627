"""Long conversations, a model whose answers change from run to run, and a trace of a store."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import replace

from history import File, History, HistorySettings, Message, Reply, Summarizer, Task
from history._trace import outline_json, summary_json
from history.contract import Ask
from history.lines import normalize
from history.store import Store
from history.store._records import ThreadRecords

from .conftest import Options, message

WORDS = (
    "Ana",
    "north",
    "Bo",
    "price",
    "42",
    "launch",
    "December",
    "trailer",
    "budget",
    "€1,200",
    "ship",
    "déjà",
    "vu",
    "日本",
    "id-7781",
    "agreed?",
    "no",
    "yes",
    "maybe",
    "tomorrow",
    "invoice",
    "#A-19",
    "contract",
    "'quoted'",
    "🚀",
    '"double"',
    "tab\there",
)

SMALL: Options = {"line": 96, "tail": (80, 240), "outline": (300, 700), "kept": 2}
"""Budgets small enough that trees are deep and outlines fold on a few hundred messages."""


def long_chat(count: int, *, thread: str = "t", seed: int = 0) -> list[Message]:
    """A conversation of `count` messages: short and long texts, newlines, steps and files."""
    rng = random.Random(seed)
    out: list[Message] = []
    for n in range(count):
        size = rng.choice([1, 3, 8, 20, 60, 150, 400])
        lines = [" ".join(rng.choice(WORDS) for _ in range(size))]
        if rng.random() < 0.2:
            lines.append(" ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 30))))
        files = (File(name=f"f{n}.pdf", mime="application/pdf", size=250_000),)
        out.append(
            message(
                n,
                "\n".join(lines),
                thread=thread,
                author=rng.choice(["Ana", "north", "Bo"]),
                to=rng.choice(["", "Ana", "north"]),
                step=rng.random() < 0.08,
                files=files if rng.random() < 0.05 else (),
            )
        )
    out[7] = message(7, "huge " * 14_000, thread=thread)  # over the 64,000-byte input limit
    return out


class Fickle:
    """A model whose answers change from run to run, so only a replay gives a line again.

    Some answers are empty or too long (asked again in the same conversation), every merge at
    level 1 whose index is 5 modulo 7 keeps failing (its line falls back to a cut), and each
    answer reports tokens.
    """

    def __init__(self, seed: int, *, name: str = "fickle") -> None:
        self.name = name
        self.requests = 0
        self._rng = random.Random(seed)

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.requests += 1
        if task.level == 1 and task.index % 7 == 5:
            raise RuntimeError("the provider is down")
        roll = self._rng.random()
        if roll < 0.1:
            text = ""
        elif roll < 0.3:
            text = task.input
        else:
            text = f"{self._rng.randrange(10**6)} {normalize(task.input)[:50]}"
        return Reply(text=text, input_tokens=len(prompts[-1]) // 4, output_tokens=len(text) // 4)


async def ingest(
    messages: Sequence[Message],
    settings: HistorySettings,
    *,
    store: str,
    model: Summarizer | None = None,
) -> list[Ask]:
    """Hand the messages to the plugin as an app would; the asks it made."""
    asks: list[Ask] = []
    async with History(settings, store=store, model=model, on_ask=asks.append, pause=0.0) as h:
        for m in messages:
            await h.message_created(m)
        await h.wait()
    return asks


async def trace(store: Store) -> str:
    """The store's summaries and outlines as the simulate trace prints them, as JSON text."""
    outlines = []
    for thread in await store.threads():
        outline = await store.outline(thread)
        assert outline is not None
        outlines.append(outline_json(outline))
    summaries = [summary_json(s) for s in await store.summaries()]
    return json.dumps({"summaries": summaries, "outlines": outlines}, ensure_ascii=False)


def without_epoch(records: ThreadRecords | None) -> ThreadRecords:
    """The records with what is per store (the outline's epoch and version) blanked."""
    assert records is not None and records.outline is not None
    return replace(records, outline=replace(records.outline, epoch="", version=0))
