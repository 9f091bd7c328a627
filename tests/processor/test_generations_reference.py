"""The plugin's names and generations against a reference written from `docs/generations.md`
alone (`tests/reference_generations.py`): every node's generations after renames, the name
generations of nodes written after them, and the nodes a re-summary would ask."""

from __future__ import annotations

import io
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from history import History, HistorySettings, InputError
from history.carry import export
from history.contract import Message

from .. import reference_generations as ref
from ..reference_generations import spec

pytestmark = pytest.mark.anyio

SETTINGS = {"line": 96, "tail": (40, 80), "outline": (600, 1200), "kept": 2, "steps": (300, 600)}
PEOPLE = ["Ana", "north", "Bo", "user", "assistant"]
WORDS = ["price", "Ana", "north", "users", "user_1", "Bo", "(user)", "assistant", "ok", "the"]
WORDS += ["plan,", "moved", "superuser"]


def chat(seed: int, count: int) -> list[dict[str, Any]]:
    """Messages between a few people and an agent: short ones (verbatim lines, joins) and long
    ones (asked, so their lines are echo's cuts, which hold names as words), some steps."""
    rng = random.Random(seed)
    start = datetime(2026, 12, 1, tzinfo=UTC)
    out = []
    for n in range(count):
        author = rng.choice(PEOPLE)
        words = rng.choices(WORDS, k=rng.choice([2, 3, 20, 40]))
        step = author == "assistant" and rng.random() < 0.3
        to = "" if step else rng.choice([p for p in PEOPLE if p != author] + [""])
        out.append(
            {
                "id": f"m{n}",
                "thread": "t",
                "author": author,
                "to": to,
                "text": " ".join(words),
                "at": (start + timedelta(minutes=n)).isoformat(),
                "step": step,
            }
        )
    return out


def reference_trace(inputs: list[dict[str, Any]]) -> dict[str, Any]:
    trace, errors = spec.simulate(
        [json.dumps(i).encode() for i in inputs],
        summarizer="echo",
        **SETTINGS,
    )
    assert errors == []
    return dict(trace)


def message_of(obj: dict[str, Any]) -> Message:
    return Message(
        id=obj["id"],
        thread=obj["thread"],
        author=obj["author"],
        to=obj["to"],
        text=obj["text"],
        at=datetime.fromisoformat(obj["at"]),
        step=obj["step"],
    )


async def generations(history: History) -> dict[ref.Node, list[tuple[str, str | None, int]]]:
    """Every node's generations as the plugin exports them: (text, form, change); generation
    0's form is the reference's to read from its text, so it is compared as None."""
    out = io.StringIO()
    await export(history.store, out)
    nodes: dict[ref.Node, dict[int, tuple[str, str | None, int]]] = {}
    for line in out.getvalue().splitlines():
        record = json.loads(line)
        agent = record.get("agent", "")
        if record["kind"] in ("summary", "step"):
            node = (agent, record["level"], record["index"])
            nodes.setdefault(node, {})[0] = (record["text"], None, 0)
        elif record["kind"] == "generation":
            node = (agent, record["level"], record["index"])
            entry = (record["text"], record["form"], record["made"])
            nodes.setdefault(node, {})[record["generation"]] = entry
    return {node: [gens[k] for k in sorted(gens)] for node, gens in nodes.items()}


def expected(thread: ref.Thread) -> dict[ref.Node, list[tuple[str, str | None, int]]]:
    return {
        node: [(g.text, None if k == 0 else g.form, g.change) for k, g in enumerate(gens)]
        for node, gens in thread.nodes.items()
    }


RENAMES: list[tuple[str, str, str | None]] = [
    ("Ana", "Anna", None),
    ("user", "Ana", None),  # the name Ana gave up is free
    ("north", "North Star", "t"),
    ("Bo", "Anna", None),  # refused: Ana shows as Anna
    ("ghost", "Casper", None),  # refused: nobody wrote as ghost
    ("Bo", " ", None),  # refused: an empty name
    ("assistant", "north", None),  # store-wide north is still north
    ("Ana", "Anna", None),  # no change: she shows as Anna already
]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_renames_and_later_nodes_match_the_reference(tmp_path: Path, seed: int) -> None:
    inputs = chat(seed, 70)
    first, later = inputs[:45], inputs[45:]
    threads = ref.threads_of(reference_trace(first), first)
    names = ref.Names()
    settings = HistorySettings(summarizer="echo", **SETTINGS)  # type: ignore[arg-type]
    async with History(settings, store=tmp_path / "s.sqlite") as history:
        for obj in first:
            await history.message_created(message_of(obj))
            await history.wait()
        assert await generations(history) == expected(threads["t"])  # generation 0 alike

        for author, name, thread in RENAMES:
            try:
                ref.rename(threads, names, author, name, thread)
            except ref.Refused:
                with pytest.raises(InputError):
                    await history.rename(author, name, thread=thread)
            else:
                await history.rename(author, name, thread=thread)
            assert await generations(history) == expected(threads["t"]), (author, name)

        # Nodes written after the renames get their name generations in the commit that
        # writes them (section 3.4), one change a commit.
        seen = set(threads["t"].nodes)
        for k, obj in enumerate(later, start=len(first) + 1):
            await history.message_created(message_of(obj))
            await history.wait()
            now = ref.threads_of(reference_trace(inputs[:k]), inputs[:k])["t"]
            new = [n for n in now.nodes if n not in seen]
            for n in new:
                threads["t"].nodes[n] = now.nodes[n]
                threads["t"].message_of.update(
                    {n: now.message_of[n]} if n in now.message_of else {}
                )
            threads["t"].messages = now.messages
            ref.name_generations(threads["t"], names, "t", new)
            seen |= set(new)
        assert await generations(history) == expected(threads["t"])


@pytest.mark.parametrize(
    ("label", "depth"), [(None, 1), (None, 2), (None, 3), ("first", 1), ("first", 4)]
)
async def test_a_dry_run_asks_the_nodes_the_reference_chooses(
    tmp_path: Path, label: str | None, depth: int
) -> None:
    inputs = chat(7, 80)
    threads = ref.threads_of(reference_trace(inputs), inputs)
    names = ref.Names()
    settings = HistorySettings(summarizer="echo", **SETTINGS)  # type: ignore[arg-type]
    async with History(settings, store=tmp_path / "s.sqlite") as history:
        for obj in inputs:
            await history.message_created(message_of(obj))
        await history.wait()
        await history.rename("Ana", "Anastasia Maria")  # longer lines: more are asked
        ref.rename(threads, names, "Ana", "Anastasia Maria")
        outline = await history.outline("t")
        assert outline is not None
        lines = [(level, index) for level, index, *_ in outline.lines]
        target = None if label is None else ref.label(("", *lines[0]))
        plan = ref.plan(threads["t"], names, lines, line=96, target=target, depth=depth)
        done = await history.reconsolidate(
            "t", target, summarizer="echo", depth=depth, dry_run=True
        )
    asked = [ref.label(node) for node, what in plan if what == "asked"]
    assert (done.calls, list(done.asked)) == (len(asked), asked)
