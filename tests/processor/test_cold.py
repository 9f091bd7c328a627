"""A cold turn through the pydantic-ai hook: the cold cut lands on the cold request, or is held
until the next cold turn, so it never breaks a warm cache (`history.agent._cold`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import anyio
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import CompactionPart, ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from history import Message, ThreadHistory, prompt_text, view
from history.errors import ConfigurationError

from ..conftest import Opener, exchange

pytestmark = pytest.mark.anyio

CHAT = exchange([f"point {k} " * 12 for k in range(8)])  # a minute apart, on 2026-11-01
"""Sixteen messages, 530 tokens: under `tail[1]` 2,000, over `tail[0]` 100."""
TAIL = (100, 2_000)


def outlined(messages: list[ModelMessage]) -> bool:
    return any(isinstance(p, CompactionPart) for m in messages for p in m.parts)


def answering(seen: list[list[ModelMessage]]) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("noted")])

    return FunctionModel(model)


@pytest.mark.parametrize("cold", [3_600.0, None])
async def test_a_cold_turn_waits_for_its_cut_and_is_sent_it(
    open_history: Opener, cold: float | None
) -> None:
    """The chat's last message was a month ago: the run's prompt is cold, so it is sent the
    tail cut down to `tail[0]`; without `cold`, the whole chat."""
    seen: list[list[ModelMessage]] = []
    async with open_history(summarizer="echo", tail=TAIL, kept=1, cold=cold) as run:
        await run.send(*CHAT)
        hook = ThreadHistory(run.history, "t", agent="north", user="Ana", tools=False)
        await Agent(answering(seen), capabilities=[hook]).run("Where were we?")
        outline = await run.history.outline("t")
        assert outline is not None
        boundary = outline.boundary
    assert outlined(seen[0]) == (cold is not None)
    assert boundary == (0 if cold is None else 13)  # down to tail[0]: the prompt and 3 more


@pytest.mark.slow
async def test_a_cold_cut_that_misses_the_wait_is_held_until_the_next_cold_turn(
    open_history: Opener,
) -> None:
    gate = anyio.Event()

    async def summarizer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await gate.wait()  # the summarizer is slower than the turn waits
        return ModelResponse(parts=[TextPart("a line")])

    seen: list[list[ModelMessage]] = []
    async with open_history(
        model=FunctionModel(summarizer), tail=TAIL, kept=1, cold=3_600.0
    ) as run:
        await run.send(*CHAT[:2])  # nothing to cut yet: the catching up needs no summarizer
        for m in CHAT[2:]:
            await run.history.message_created(m)
        hook = ThreadHistory(
            run.history, "t", agent="north", user="Ana", tools=False, cold_wait=0.2
        )
        agent = Agent(answering(seen), capabilities=[hook])
        await agent.run("Where were we?")  # cold: its cut misses the 0.2 s
        gate.set()
        await run.history.wait()
        outline = await run.history.outline("t")
        assert outline is not None and outline.boundary > 0  # the cut is committed
        await agent.run("And then?")  # warm: sent the outline of before the cut
        assert not outlined(seen[1])
        assert prompt_text(seen[1]).startswith(prompt_text(seen[0]))

        # The app hands the next message itself, an hour and a half after the last.
        late = datetime.now(UTC) + timedelta(minutes=90)
        cold = Message(id="late", thread="t", author="Ana", to="north", text="Back.", at=late)
        await run.history.message_created(cold)
        quiet = ThreadHistory(
            run.history, "t", agent="north", user="Ana", tools=False, record_prompt=False
        )
        await Agent(answering(seen), capabilities=[quiet]).run("Back.")
        await run.history.wait()
        now = await view(run.history, "t", agent="north", cache_point=False)
    assert outlined(seen[2])  # the cold turn lands the held cut
    assert prompt_text(now).startswith(prompt_text(seen[2]).split("[user]\nAna → north: Back.")[0])


@pytest.mark.parametrize("wait", [-1, float("nan"), True, "10"])
async def test_a_cold_wait_that_is_no_number_of_seconds_is_refused(
    open_history: Opener, wait: object
) -> None:
    async with open_history() as run:
        with pytest.raises(
            ConfigurationError, match=f"cold_wait must be 0 or more seconds, got {wait!r}"
        ):
            ThreadHistory(run.history, "t", cold_wait=wait)  # type: ignore[arg-type]
