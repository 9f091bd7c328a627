"""A replay answers from recorded conversations; only a miss reaches the model, or is refused."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from history import (
    Echo,
    History,
    HistorySettings,
    Replay,
    Reply,
    StoreError,
    Task,
    UnpinnedError,
)
from history.contract import Ask, Outcome
from history.pins import as_recorded, model_key, pinned
from history.store import Store
from history.store._records import ThreadRecords
from history.store.sqlite import SQLiteStore
from history.summarizer import Exhausted, write

from ..chats import SMALL, Fickle, ingest, long_chat, trace
from ..conftest import message

pytestmark = pytest.mark.anyio
FICKLE = HistorySettings(summarizer="fickle", **SMALL)


def task(thread: str = "t", index: int = 3) -> Task:
    return Task(thread=thread, level=0, index=index, prompt=f"compress {index}", input="a b c")


def ask(prompts: Sequence[str], answers: Sequence[str], outcome: Outcome = "cut") -> Ask:
    return Ask(
        thread="t",
        level=0,
        index=3,
        prompts=tuple(prompts),
        answers=tuple(answers),
        line=answers[-1] if answers else "",
        input_tokens=50,
        output_tokens=9,
        outcome=outcome,
    )


class Counting:
    name = "counting"

    def __init__(self) -> None:
        self.asked: list[tuple[str, ...]] = []

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.asked.append(tuple(prompts))
        return Reply(text="fresh", input_tokens=7, output_tokens=2)


async def test_a_recorded_conversation_answers_each_turn_of_its_prefix() -> None:
    inner = Counting()
    replay = Replay(inner, [ask(["p0", "p1", "p2"], ["a0", "a1", "a2"])])
    assert await replay.reply(task(), ["p0"], []) == Reply(text="a0")  # no tokens: not paid again
    assert await replay.reply(task(), ["p0", "p1"], ["a0"]) == Reply(text="a1")
    assert await replay.reply(task(), ["p0", "p1", "p2"], ["a0", "a1"]) == Reply(text="a2")
    fourth = ["p0", "p1", "p2", "p3"]
    assert await replay.reply(task(), fourth, ["a0", "a1", "a2"]) == Reply(
        text="fresh", input_tokens=7, output_tokens=2
    )
    assert await replay.reply(task(thread="u"), ["p0"], []) == Reply(
        text="fresh", input_tokens=7, output_tokens=2
    )  # another thread's conversation is not this one's pin
    assert inner.asked == [tuple(fourth), ("p0",)]
    assert (replay.hits, replay.misses, replay.name) == (3, 2, "counting")


async def test_the_earliest_recorded_answer_wins() -> None:
    replay = Replay(None, [ask(["p0"], ["first"]), ask(["p0", "p1"], ["second", "x"])], name="m")
    assert (await replay.reply(task(), ["p0"], [])).text == "first"


async def test_a_refused_miss_names_the_node_and_calls_nothing() -> None:
    inner = Counting()
    replay = Replay(inner, [], refuse_misses=True)
    with pytest.raises(UnpinnedError, match=r"thread 't': no recorded answer for node \(0, 3\)"):
        await replay.reply(task(), ["p0"], [])
    assert inner.asked == [] and replay.misses == 1
    with pytest.raises(UnpinnedError):
        await Replay(None, [], name="m").reply(task(), ["p0"], [])


async def test_a_recorded_fallback_falls_back_again_to_the_same_cut() -> None:
    follow_up_failed = ask(["p0", "p1"], ["a0 " * 30], outcome="fallback")
    with pytest.raises(Exhausted):
        await Replay(None, [follow_up_failed], name="m").reply(task(), ["p0", "p1"], ["a0"])

    t = replace(task(), prompt="p0", input="word " * 40)
    replay = Replay(None, [ask(["p0"], [], outcome="fallback")], name="m")
    again = await write(t, replay.reply, limit=64, tries=3)
    assert again.outcome == "fallback"
    assert again.line == (await write(t, _exhausted, limit=64, tries=3)).line
    assert again.line == ("word " * 13)[:61] + "…"


async def _exhausted(task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
    raise Exhausted("kept failing")


def test_the_model_key_is_the_plugins() -> None:
    settings = HistorySettings(summarizer="echo", model_settings={"temperature": 0.0})
    history = History(settings, store=":memory:")
    assert model_key("echo", settings.model_settings) == history.model_key
    assert model_key("echo", None) != history.model_key


@pytest.mark.slow
async def test_the_plugin_replays_every_line_and_records_each_call_once(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite"
    await ingest(long_chat(240), FICKLE, store=str(path), model=Fickle(1))
    store = SQLiteStore(str(path))
    await store.open()
    original = await store.export_thread("t")
    expected, calls = await trace(store), await store.calls()
    await store.close()
    assert original is not None

    # Only the messages and the calls go across: the plugin processes the thread again.
    again = tmp_path / "b.sqlite"
    store = SQLiteStore(str(again))
    await store.open()
    await store.load_records(
        [ThreadRecords(thread="t", messages=original.messages, calls=original.calls)]
    )
    await store.close()
    key = model_key("fickle", None)
    fickle = Fickle(2)
    replay = Replay(fickle, pinned(original.calls, key), refuse_misses=True)
    asks: list[Ask] = []
    async with History(FICKLE, store=str(again), model=replay, on_ask=asks.append) as history:
        await history.wait()
        assert await trace(history.store) == expected
        assert await history.store.calls() == calls  # nothing recorded twice
        assert (history.counters.failures, history.counters.fallbacks) == (0, 0)
    assert fickle.requests == 0 and replay.misses == 0
    # What the replay's conversations record is what was recorded (an answer past the bound
    # comes back with stand-ins for its dropped bytes, and is recorded as before).
    assert [(a.prompts, as_recorded(a, FICKLE.line).answers, a.line) for a in asks] == [
        (c.prompts, c.answers, c.line) for c in calls
    ]
    assert {(a.input_tokens, a.output_tokens) for a in asks} == {(0, 0)}


class Stop(Exception):
    pass


async def test_a_refused_miss_in_the_plugin_waits_and_never_writes_a_cut_line(
    tmp_path: Path,
) -> None:
    settings = HistorySettings(summarizer="echo", line=64, tail=(10, 20), kept=1)
    replay = Replay(Echo(), [], refuse_misses=True)
    async with History(settings, store=tmp_path / "c.sqlite", model=replay, pause=0.01) as h:
        await h.message_created(message(0, "long " * 40))
        await h.message_created(message(1, "long " * 40))
        with anyio.fail_after(5):
            await h.wait()  # the thread waits for calls to be allowed; asking again cannot help
        assert await h.store.summaries() == []
        assert await h.store.calls() == []
        assert (h.counters.fallbacks, h.counters.failures, h.counters.refused) == (0, 0, 1)
        assert replay.misses == 1
        outline = await h.outline("t")
        assert outline is not None and outline.position == 0


async def test_a_replace_refuses_a_thread_that_changed_since_it_was_read(store: Store) -> None:
    await store.add(message(0, "hello"), 5)
    read = await store.export_thread("t")
    assert read is not None and read.outline is not None
    await store.add(message(1, "again"), 5)
    stale = replace(read, outline=replace(read.outline, version=read.outline.version + 1))
    with pytest.raises(StoreError, match="changed while it was rebuilt"):
        await store.load_records([stale], replace=True)
    await store.erase("t")
    with pytest.raises(StoreError, match="erased while it was rebuilt"):
        await store.load_records([read], replace=True)
    assert await store.threads() == []  # the erased thread is not brought back
