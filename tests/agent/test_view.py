"""What an agent is sent: the outline in blocks, then the tail whole, from the log."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import anyio
import pytest
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from history import Reply, Task, prompt_text, render_view, view
from history.agent.steps import Call, Calls, Return, Returns, encode

from ..conftest import START, Opener, exchange, kinds, message

pytestmark = pytest.mark.anyio


def at(n: int) -> datetime:
    return START + timedelta(minutes=n)


def said(messages: Sequence[ModelMessage]) -> list[object]:
    """What each part of the messages says: the tail's prompts and answers, in order."""
    out: list[object] = []
    for m in messages:
        for p in m.parts:
            assert isinstance(p, UserPromptPart | TextPart), p
            out.append(p.content)
    return out


def compaction(messages: Sequence[ModelMessage]) -> list[str]:
    return [p.content or "" for m in messages for p in m.parts if isinstance(p, CompactionPart)]


async def test_a_thread_never_cut_is_sent_whole(open_history: Opener) -> None:
    async with open_history(tail=(1000, 2000)) as run:
        await run.send(*exchange(["Plan the launch", "for December\nplease"]))
        sent = await view(run.history, "t", agent="north")
    assert sent == [
        ModelRequest(parts=[UserPromptPart("Ana → north: Plan the launch", timestamp=at(0))]),
        ModelResponse(parts=[TextPart("ok")], timestamp=at(1)),
        ModelRequest(parts=[UserPromptPart("Ana → north: for December\nplease", timestamp=at(2))]),
        ModelResponse(parts=[TextPart("ok")], timestamp=at(3)),
    ]


async def test_an_unknown_thread_has_an_empty_view(open_history: Opener) -> None:
    async with open_history() as run:
        assert await view(run.history, "nobody") == []


async def test_the_outline_comes_in_blocks_of_lines_then_a_cache_mark(open_history: Opener) -> None:
    async with open_history(tail=(30, 60), kept=2) as run:
        await run.send(*exchange([f"item {k}" for k in range(6)]), message(12, "two\nlines"))
        await run.send(*exchange(["item 7", "item 8"], start=13))
        outline = await run.history.outline("t")
        sent = await view(run.history, "t", agent="north", block_lines=3)
    assert outline is not None and outline.boundary == 14
    assert compaction(sent) == [
        "0+1|Ana → north: item 0\n1+1|north → Ana: ok\n2+1|Ana → north: item 1",
        "3+1|north → Ana: ok\n4+1|Ana → north: item 2\n5+1|north → Ana: ok",
        "6+1|Ana → north: item 3\n7+1|north → Ana: ok\n8+1|Ana → north: item 4",
        "9+1|north → Ana: ok\n10+1|Ana → north: item 5\n11+1|north → Ana: ok",
        "12+1|Ana → north: two lines\n13+1|Ana → north: item 7",
    ]
    # A mark after the last full block, which stays the same while cuts append lines, and one
    # after the whole outline; then the tail, whole.
    assert kinds(sent[0]) == [*["compaction"] * 4, "mark", "compaction", "mark"]
    assert said(sent[1:]) == ["ok", "Ana → north: item 8", "ok"]


async def test_by_default_a_block_closes_at_an_eighth_of_the_outline_bound(
    open_history: Opener,
) -> None:
    texts = ["item 0", "item 1", "a message that fills most of a block", "item 3", "item 4"]
    async with open_history(tail=(30, 60), kept=2, outline=(200, 400)) as run:
        await run.send(*exchange([*texts, "item 5"]), message(12, "two\nlines"))
        await run.send(*exchange(["item 7", "item 8"], start=13))
        sent = await view(run.history, "t", agent="north")
    # 400 // 8 = 50 bytes, as the outline counts them (a line's bytes and one): "Ana → north:
    # item 0" counts 22, "north → Ana: ok" 16, the long message's line 52.
    assert compaction(sent) == [
        "0+1|Ana → north: item 0\n1+1|north → Ana: ok\n2+1|Ana → north: item 1",
        "3+1|north → Ana: ok\n4+1|Ana → north: a message that fills most of a block",
        "5+1|north → Ana: ok\n6+1|Ana → north: item 3\n7+1|north → Ana: ok",
        "8+1|Ana → north: item 4\n9+1|north → Ana: ok\n10+1|Ana → north: item 5",
        "11+1|north → Ana: ok",
    ]
    # The mark after the closed blocks, which cuts leave in place, and the outline's end; then
    # the tail, whose first message shares the outline's request.
    assert kinds(sent[0])[:7] == [*["compaction"] * 4, "mark", "compaction", "mark"]


async def test_without_cache_marks_the_outline_is_only_its_blocks(open_history: Opener) -> None:
    async with open_history(tail=(30, 60), kept=2) as run:
        await run.send(*exchange([f"item {k}" for k in range(8)]))
        sent = await view(run.history, "t", agent="north", block_lines=4, cache_point=False)
    assert kinds(sent[0]) == ["compaction"] * 4  # 13 lines; the tail starts with north's "ok"


class Gate:
    """A summarizer that answers only once it is let through."""

    name = "gate"

    def __init__(self) -> None:
        self.open = anyio.Event()

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        await self.open.wait()
        return Reply(text=f"line {task.index}")


async def test_the_tail_comes_from_the_log_when_processing_lags(open_history: Opener) -> None:
    gate = Gate()
    texts = [f"a long message number {k} that needs a line of its own" for k in range(6)]
    async with open_history(tail=(40, 80), line=64, model=gate, kept=1) as run:
        for m in exchange(texts):
            await run.history.message_created(m)
        await anyio.sleep(0.05)
        outline = await run.history.outline("t")
        sent = await view(run.history, "t", agent="north")
        gate.open.set()
    assert outline is not None and outline.position < 11  # stuck on the summarizer
    assert said(sent) == [x for t in texts for x in (f"Ana → north: {t}", "ok")]


async def test_a_message_too_large_is_sent_as_its_head_with_a_note(open_history: Opener) -> None:
    async with open_history(tail=(5000, 10000)) as run:
        await run.send(message(0, "é" * 60), message(1, "x" * 90, author="north", to="Ana"))
        sent = await view(run.history, "t", agent="north", page=100)
    assert sent[0].parts[0] == UserPromptPart(
        "Ana → north: " + "é" * 50 + '\n[… 20 more bytes: zoom("0+1", page=2) reads on]',
        timestamp=at(0),
    )
    assert sent[1].parts == [TextPart("x" * 90)]


async def test_the_window_by_age_keeps_only_newer_lines_and_messages(
    open_history: Opener,
) -> None:
    async with open_history(tail=(30, 60), kept=2) as run:
        await run.send(*exchange([f"item {k}" for k in range(8)]))
        whole = await view(run.history, "t", agent="north", block_lines=100)
        recent = await view(run.history, "t", agent="north", block_lines=100, since=at(9))
        newest = await view(run.history, "t", agent="north", since=at(14))
    labels = [line.split("|")[0] for line in compaction(whole)[0].split("\n")]
    assert labels == [f"{k}+1" for k in range(13)]
    assert compaction(recent) == [
        "9+1|north → Ana: ok\n10+1|Ana → north: item 5\n11+1|north → Ana: ok\n"
        "12+1|Ana → north: item 6"
    ]
    assert compaction(newest) == []
    assert said(newest) == ["Ana → north: item 7", "ok"]


async def test_each_author_is_sent_as_what_they_are(open_history: Opener) -> None:
    call = Calls(calls=(Call(id="c1", name="price", args={"item": "tea"}),), text="checking")
    result = Returns(returns=(Return(id="c1", name="price", content=4200),))
    async with open_history(tail=(5000, 10000)) as run:
        await run.send(
            message(0, "what is the price?", to=""),
            message(1, encode(call), author="north", to="", step=True),
            message(2, encode(call), author="south", to="", step=True),
            message(3, encode(result), author="north", to="", step=True),
            message(4, "4200", author="north", to="Ana"),
            message(5, "thanks", author="Bob", to="north"),
        )
        north = await view(run.history, "t", agent="north")
        nobody = await view(run.history, "t")
    assert north == [
        ModelRequest(parts=[UserPromptPart("Ana: what is the price?", timestamp=at(0))]),
        ModelResponse(
            parts=[TextPart("checking"), ToolCallPart("price", {"item": "tea"}, "c1")],
            timestamp=at(1),
        ),
        ModelRequest(parts=[ToolReturnPart("price", 4200, "c1", timestamp=at(3))]),
        ModelResponse(parts=[TextPart("4200")], timestamp=at(4)),
        ModelRequest(parts=[UserPromptPart("Bob → north: thanks", timestamp=at(5))]),
    ]
    assert prompt_text(nobody) == (
        "[user]\nAna: what is the price?\n"
        "[user]\nnorth: checking\n"
        '[user]\nnorth called price (call c1) with {"item": "tea"}\n'
        "[user]\nsouth: checking\n"
        '[user]\nsouth called price (call c1) with {"item": "tea"}\n'
        "[user]\nnorth's call c1 of price returned (success): 4200\n"
        "[user]\nnorth → Ana: 4200\n"
        "[user]\nBob → north: thanks\n"
    )


async def test_a_step_that_is_not_a_tool_step_is_plain_text(open_history: Opener) -> None:
    async with open_history(tail=(5000, 10000)) as run:
        await run.send(message(0, "looked up the price: 4200", author="north", step=True))
        sent = await view(run.history, "t", agent="north")
    assert sent == [
        ModelRequest(
            parts=[UserPromptPart("north → north: looked up the price: 4200", timestamp=at(0))]
        )
    ]


async def test_render_view_counts_tokens_and_bytes(open_history: Opener) -> None:
    async with open_history(tail=(5000, 10000)) as run:
        await run.send(*exchange(["héllo"]))
        rendered = await render_view(run.history, "t", agent="north")
    assert rendered.text == "[user]\nAna → north: héllo\n[assistant]\nok\n"
    assert rendered.bytes == len(rendered.text.encode("utf-8")) == 44
    assert rendered.tokens == 15
