"""Re-summaries: lines asked again as their next generation (docs/generations.md, section 4)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from history import History, HistorySettings, InputError, SummarizerError, prompt_text, view
from history._generations import current_nodes, tree
from history.contract import NodeKey, Reply, Task

from ..conftest import Opener, Settings, exchange, message

pytestmark = pytest.mark.anyio

LONG = "We weighed the venue, the budget and the date for the launch by the river " * 2
SETTINGS: Settings = {"summarizer": "echo", "line": 96, "tail": (30, 60), "kept": 2}


def texts(k: int) -> list[str]:
    return [LONG if n % 3 == 0 else f"short note {n}" for n in range(k)]


class Counting:
    """Answers `R{level}.{index}` and counts its calls."""

    name = "counting"

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.calls.append((task.level, task.index))
        return Reply(text=f"R{task.level}.{task.index}", input_tokens=10, output_tokens=2)


class Broken:
    name = "broken"

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        raise RuntimeError("always down")


@pytest.mark.slow
async def test_a_dry_run_counts_exactly_the_calls_the_run_makes(
    open_history: Opener, database: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_history(store=database, **SETTINGS) as run:
        await run.send(*exchange(texts(40)))
        history = run.history
        outline = await history.outline("t")
        assert outline is not None
        calls = len(await history.store.calls("t"))
        dry = await history.reconsolidate("t", summarizer=Counting(), dry_run=True)
        counting = Counting()
        with caplog.at_level(logging.WARNING, logger="history.reconsolidating"):
            done = await history.reconsolidate("t", summarizer=counting)
            logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        deep_dry = await history.reconsolidate(
            "t", "0+16", summarizer=Counting(), depth=3, dry_run=True
        )
        deep = await history.reconsolidate("t", "0+16", summarizer=(c2 := Counting()), depth=3)
        recorded = await history.store.calls("t")
        usage = await history.usage("t")
        nodes = await current_nodes(history.store, "t", await history.store.summaries("t"))
    assert dry.calls == done.calls == len(counting.calls) > 0
    assert done.calls <= len(outline.lines)  # at most one call a line
    assert deep_dry.calls == deep.calls == len(c2.calls) and deep_dry.asked == deep.asked
    assert deep.asked == tuple(sorted(deep.asked, key=lambda a: int(a.split("+")[1])))
    assert len(recorded) == calls + done.calls + deep.calls  # recorded as every ask
    assert [(u.thread, u.calls) for u in usage.threads] == [("t", len(recorded))]
    assert [m.split(":")[1].split()[0] for m in logged] == list(done.asked)
    assert all(m.startswith("thread 't': ") for m in logged)
    assert any(n.text.startswith("R") for n in nodes)


async def test_old_generations_stay_readable(open_history: Opener) -> None:
    async with open_history(**SETTINGS) as run:
        await run.send(*exchange(texts(40)))
        before = {(n.level, n.index): n.text for n in await run.history.store.summaries("t")}
        await run.history.reconsolidate("t", "0+16", summarizer=Counting(), depth=2)
        await run.history.reconsolidate("t", "0+16", summarizer=Counting())
        found = await tree(run.history.store, "t")
    # Asked from its new children (depth 2), then, on its own, joined: the SPEC's rule on the
    # texts as they stand, and its two short children fit in a line.
    key = NodeKey("", 4, 0)
    assert found.numbers(key) == [0, 1, 2]
    texts_ = [t.text for n in (1, 2) if (t := found.text(key, n)) is not None]
    assert texts_ == ["R4.0", "R3.0\nR3.1"]
    for (level, index), text in before.items():
        first = found.text(NodeKey("", level, index), 0)
        assert first is not None and first.text == text  # generation 0 is kept
    changed = [k for k in found.later if found.numbers(k)[-1] >= 1]
    assert changed and all(found.current(k).generation == found.numbers(k)[-1] for k in changed)


async def test_fallback_lines_are_asked_again_with_their_parents(tmp_path: object) -> None:
    settings = HistorySettings(summarizer="scripted", tail=(1, 2), kept=1, line=64)
    long = "word " * 40
    store = f"{tmp_path}/f.sqlite"
    async with History(settings, store=store, model=Broken(), pause=0.0) as history:
        for k, text in enumerate([long, "ok", "fine", "later"]):
            await history.message_created(message(k, text))
            await history.wait()
    async with History(settings, store=store, pause=0.0) as history:
        counting = Counting()
        dry = await history.reconsolidate("t", summarizer=counting, fallbacks=True, dry_run=True)
        done = await history.reconsolidate("t", summarizer=counting, fallbacks=True)
        nodes = await current_nodes(history.store, "t", await history.store.summaries("t"))
        with pytest.raises(InputError):
            await history.reconsolidate("t", "0+1", summarizer=counting, fallbacks=True)
    assert dry.asked == done.asked == ("0+1", "0+2")
    assert sorted(counting.calls) == [(0, 0), (1, 0)]
    assert {(n.level, n.index): (n.text, n.fallback) for n in nodes} == {
        (0, 0): ("R0.0", False),
        (0, 1): ("Ana → north: ok", False),
        (1, 0): ("R1.0", False),
        (0, 2): ("Ana → north: fine", False),
    }


async def test_an_unreachable_summarizer_stops_the_run_with_nothing_written(
    open_history: Opener,
) -> None:
    async with open_history(**SETTINGS) as run:
        await run.send(*exchange(texts(20)))
        calls = len(await run.history.store.calls("t"))
        with pytest.raises(SummarizerError, match="failed 2 times"):
            await run.history.reconsolidate("t", summarizer=Broken(), max_failures=2)
        assert await run.history.store.generations("t") == []
        assert len(await run.history.store.calls("t")) == calls
        with pytest.raises(InputError):
            await run.history.reconsolidate("t", "3+2", summarizer=Counting())
        with pytest.raises(InputError):
            await run.history.reconsolidate("t", summarizer=Counting(), depth=0)


async def test_a_re_summary_reaches_the_prompt_at_the_next_cut_only(open_history: Opener) -> None:
    async with open_history(**SETTINGS) as run:
        await run.send(*exchange(texts(20)))
        before = prompt_text(await view(run.history, "t", agent="north")).split("[user]")[0]
        await run.history.reconsolidate("t", summarizer=Counting())
        between = prompt_text(await view(run.history, "t", agent="north")).split("[user]")[0]
        outline = await run.history.outline("t")
        assert outline is not None
        n, boundary = 100, outline.boundary
        while (outline := await run.history.outline("t")) and outline.boundary == boundary:
            await run.send(message(n, "ok", author="north", to="Ana"))
            n += 1
        after = prompt_text(await view(run.history, "t", agent="north")).split("[user]")[0]
        await run.history.reconsolidate("t", summarizer=Counting(), depth=2, now=True)
        at_once = prompt_text(await view(run.history, "t", agent="north")).split("[user]")[0]
    assert "|R" not in before and between == before
    assert "|R" in after
    assert at_once != after
