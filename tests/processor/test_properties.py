"""Invariants over random conversations (hypothesis), checked after every message."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from history import Ask, History, HistorySettings, Message, Outline, Stored, Summary
from history._trace import snapshot

from ..conftest import START, Settings

pytestmark = pytest.mark.slow

WORDS = ["ok", "price", "49 €", "launch", "naïve", "日本語", "trailer", "id-7f3a", "\n", "😀"]


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    threads = draw(st.lists(st.sampled_from(["a", "a", "b", "c"]), min_size=10, max_size=60))
    out = []
    for n, thread in enumerate(threads):
        words = draw(st.lists(st.sampled_from(WORDS), max_size=draw(st.sampled_from([3, 30]))))
        step = draw(st.booleans())
        out.append(
            Message(
                id=f"{thread}-{n}",
                thread=thread,
                author=draw(st.sampled_from(["Ana", "north"] if step else ["Ana", "north", ""])),
                to=draw(st.sampled_from(["", "Ana"])),
                text=" ".join(words),
                at=START + timedelta(seconds=draw(st.integers(0, 10_000))),
                step=step,
            )
        )
    return out


budgets = st.builds(
    Settings,
    summarizer=st.sampled_from(["echo", "scripted"]),
    line=st.sampled_from([64, 100]),
    tail=st.sampled_from([(10, 30), (30, 80)]),
    outline=st.sampled_from([(30, 60), (100, 200)]),
    kept=st.integers(1, 3),
    cut_gap=st.booleans(),
    steps=st.sampled_from([None, (30, 60), (100, 200)]),
)


def check(
    outline: Outline,
    trees: dict[tuple[str, int, int], Summary],
    processed: list[Stored],
    s: HistorySettings,
) -> None:
    nodes = {(level, index): n for (agent, level, index), n in trees.items() if not agent}
    # Every shared message that left is covered by exactly one line, in order.
    covered: list[int] = []
    for level, index, size, at in outline.lines:
        node = nodes[(level, index)]
        assert node.bytes == size and node.at == at
        covered.extend(range(index * 2**level, (index + 1) * 2**level))
    assert covered == list(range(outline.boundary))
    assert outline.bytes == sum(size + 1 for _, _, size, _ in outline.lines)
    assert outline.tokens == sum(t.weight for t in outline.tail)
    # The tail is a contiguous run of the processed messages, ending with the last one.
    assert [t.id for t in outline.tail] == [p.message.id for p in processed[-len(outline.tail) :]]
    left = processed[: len(processed) - len(outline.tail)]
    assert outline.boundary == sum(not p.message.step for p in left)
    if not outline.draining:
        assert outline.bytes <= s.outline[1]
    # A node covers exactly its messages: level 0 names its message; parents the newest at.
    shared = {p.index: p for p in processed if not p.message.step}
    for (level, index), node in nodes.items():
        first, span = index * 2**level, 2**level
        assert node.at == max(shared[k].message.at for k in range(first, first + span))
        if level == 0:
            assert node.message == shared[index].message.id
        else:
            assert node.message is None
    # Each agent's step outline covers, in order, exactly its steps that left.
    for agent, steps in outline.steps.items():
        covered = []
        for level, index, size, _ in steps.lines:
            assert trees[(agent, level, index)].bytes == size
            covered.extend(range(index * 2**level, (index + 1) * 2**level))
        mine = [p for p in left if p.message.step and p.message.author == agent]
        assert covered == list(range(len(mine))) == [p.step_index for p in mine]
        assert steps.boundary == len(mine)
        assert steps.bytes == sum(size + 1 for _, _, size, _ in steps.lines)
        if not steps.draining and s.steps is not None:
            assert steps.bytes <= s.steps[1]
    if s.steps is None:
        assert outline.steps == {}


async def play(messages: list[Message], s: HistorySettings, *, checks: bool) -> dict[str, Any]:
    asks: list[Ask] = []
    async with History(s, store=":memory:", on_ask=asks.append) as history:
        before: dict[str, Outline] = {}
        for m in messages:
            await history.message_created(m)
            await history.wait()
            if not checks:
                continue
            outline = await history.outline(m.thread)
            assert outline is not None
            processed = await history.store.messages(m.thread, 0, outline.position)
            nodes = {
                (n.agent, n.level, n.index): n for n in await history.store.summaries(m.thread)
            }
            check(outline, nodes, processed, s)
            old = before.get(m.thread)
            cut = old is not None and outline.tail[0].seq != old.tail[0].seq
            if old is not None and not cut and not old.draining:
                # No cut and no fold under way: the outline's bytes are unchanged.
                assert outline.lines == old.lines
            elif old is not None and outline.lines[: len(old.lines)] != old.lines:
                # Only a fold rewrites earlier lines, and it runs until under the minimum.
                assert outline.draining or outline.bytes <= s.outline[0]
            before[m.thread] = outline
            event("cut" if cut else "no cut")
            event("folded" if any(level for level, *_ in outline.lines) else "not folded")
        return await snapshot(history, asks)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), budgets)
def test_invariants_hold_after_every_message(messages: list[Message], s: Settings) -> None:
    anyio.run(lambda: play(messages, HistorySettings(**s), checks=True), backend="asyncio")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), budgets, st.randoms(use_true_random=False))
def test_the_result_does_not_depend_on_how_threads_interleave(
    messages: list[Message], s: Settings, rng: random.Random
) -> None:
    # Shuffle the threads against each other, keeping each thread's own order.
    queues = {t: [m for m in messages if m.thread == t] for t in {m.thread for m in messages}}
    order = [m.thread for m in messages]
    rng.shuffle(order)
    shuffled = [queues[t].pop(0) for t in order]
    settings_ = HistorySettings(**s)

    async def both() -> tuple[dict[str, Any], dict[str, Any]]:
        return await play(messages, settings_, checks=False), await play(
            shuffled, settings_, checks=False
        )

    one, other = anyio.run(both, backend="asyncio")
    assert one["summaries"] == other["summaries"]
    assert one["steps"] == other["steps"]
    assert one["outlines"] == other["outlines"]
    for thread in queues:
        assert [a for a in one["asks"] if a["thread"] == thread] == [
            a for a in other["asks"] if a["thread"] == thread
        ]
