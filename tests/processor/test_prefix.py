"""A provider's prompt cache keeps hitting: each view starts with the last until a cut or a fold;
and a tool call is never sent without its result, wherever the cut falls."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    repair_messages,
)

from history import Message, Outline, prompt_text, view
from history.agent.steps import Call, Calls, Return, Returns, encode

from ..conftest import Opener, Settings, message

pytestmark = pytest.mark.anyio

WORDS = (
    "price",
    "launch",
    "trailer",
    "copy",
    "budget",
    "venue",
    "date",
    "guest",
    "list",
    "stage",
    "light",
    "sound",
)


def say(n: int, turn: int) -> str:
    """Ana's turn-th message: its length varies, so cuts fall everywhere."""
    return " ".join(WORDS[(turn + k) % len(WORDS)] for k in range(1 + (turn * 7) % 23))


def turn_messages(
    turn: int, n: int, *, tools: bool, interject: Sequence[str] = ()
) -> list[Message]:
    """Ana asks; north may call two tools (others may speak before the results); north answers."""
    out = [message(n, say(n, turn))]
    if tools:
        ids = (f"c{turn}a", f"c{turn}b")
        calls = Calls(calls=tuple(Call(id=i, name="look", args={"q": i}) for i in ids))
        results = Returns(returns=tuple(Return(id=i, name="look", content=f"r {i}") for i in ids))
        out.append(message(n + len(out), encode(calls), author="north", to="", step=True))
        for who in interject:
            out.append(message(n + len(out), f"{who} waits", author=who, to=""))
        out.append(message(n + len(out), encode(results), author="north", to="", step=True))
    out.append(message(n + len(out), f"noted {turn}", author="north", to="Ana"))
    return out


def blocks(sent: list[ModelMessage]) -> list[str]:
    """The shared outline's blocks (an agent's step outline, after them, starts with `s`)."""
    texts = [p.content or "" for m in sent for p in m.parts if isinstance(p, CompactionPart)]
    return [text for text in texts if not text.startswith("s")]


@pytest.mark.slow
@pytest.mark.parametrize("block_lines", [4, None], ids=["4 lines", "by size"])
async def test_each_turn_starts_with_the_last_until_a_cut_or_a_fold(
    open_history: Opener, block_lines: int | None
) -> None:
    settings: Settings = {
        "summarizer": "echo",
        "tail": (120, 240),
        "outline": (300, 600),
        "line": 96,
        "kept": 2,
    }
    async with open_history(**settings) as run:
        before: tuple[str, Outline, list[str]] | None = None
        breaks: list[int] = []
        changes: list[int] = []
        cuts = folds = n = 0
        for turn in range(150):
            sent_messages = turn_messages(turn, n, tools=turn % 3 == 0)
            n += len(sent_messages)
            await run.send(*sent_messages)
            outline = await run.history.outline("t")
            assert outline is not None
            sent = await view(run.history, "t", agent="north", block_lines=block_lines)
            text = prompt_text(sent)
            if before is not None:
                last_text, last, last_blocks = before
                cut = outline.cut_at != last.cut_at
                folded = outline.lines[: len(last.lines)] != last.lines
                mine, was = outline.steps.get("north"), last.steps.get("north")
                if mine is not None and was is not None:
                    folded |= mine.lines[: len(was.lines)] != was.lines
                cuts, folds = cuts + cut, folds + folded
                if cut or folded:
                    changes.append(turn)
                if not text.startswith(last_text):
                    breaks.append(turn)
                if cut and not folded:  # lines were only appended: the full blocks stay
                    full = max(len(last_blocks) - 1, 0)
                    assert blocks(sent)[:full] == last_blocks[:full]
            if block_lines is None:  # at most 8 closed blocks, whatever the outline holds
                assert len(blocks(sent)) <= 9
            before = (text, outline, blocks(sent))
    assert breaks == changes
    assert cuts >= 20 and folds >= 5


def well_paired(sent: list[ModelMessage]) -> bool:
    """Every call is answered in the next request, every result answers the call before it."""
    for k, m in enumerate(sent):
        if isinstance(m, ModelResponse):
            called = {p.tool_call_id for p in m.parts if isinstance(p, ToolCallPart)}
            after = sent[k + 1] if k + 1 < len(sent) else None
            answered = {
                p.tool_call_id
                for p in (after.parts if isinstance(after, ModelRequest) else [])
                if isinstance(p, ToolReturnPart)
            }
            if not called <= answered:
                return False
        else:
            results = {p.tool_call_id for p in m.parts if isinstance(p, ToolReturnPart)}
            prior = sent[k - 1] if k else None
            calls = {
                p.tool_call_id
                for p in (prior.parts if isinstance(prior, ModelResponse) else [])
                if isinstance(p, ToolCallPart)
            }
            if not results <= calls:
                return False
    return True


@pytest.mark.slow
async def test_calls_and_results_stay_paired_at_every_cut_position(open_history: Opener) -> None:
    turns: list[list[Message]] = []
    for turn in range(12):
        # Bob speaks before the results come; or Bob and then north, and the results come late.
        who = ("Bob", "north") if turn % 4 == 3 else ("Bob",)
        turns.append(turn_messages(turn, sum(map(len, turns)), tools=True, interject=who))
    place = {m.id: k for messages in turns for k, m in enumerate(messages)}
    starts: set[int] = set()
    lone_calls = lone_results = 0
    for low in range(40, 140, 15):
        async with open_history(summarizer="scripted", tail=(low, 2 * low), kept=1) as run:
            for m in (m for messages in turns for m in messages):
                await run.send(m)
                sent = await view(run.history, "t", agent="north")
                assert well_paired(sent), prompt_text(sent)
                # pydantic-ai finds nothing to drop or to make up
                assert repair_messages(sent, repair_last_response=False) == sent
                text = prompt_text(sent)
                lone_calls += "north called look" in text
                lone_results += "north's call" in text
                outline = await run.history.outline("t")
                assert outline is not None
                if outline.outlined:
                    starts.add(place[outline.tail[0].id])
            await run.history.thread_deleted("t")
    # The tail started at each message of a turn: the cut fell between every call and result.
    assert starts == set(range(6))
    assert lone_calls > 0 and lone_results > 0
