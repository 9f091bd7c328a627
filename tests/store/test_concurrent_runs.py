"""Runs of one thread at once (a chat app with two tabs open): each run is sent the thread as it
was stored before its prompt, then its own messages, so it answers its own prompt; every run's
messages are in the thread afterwards, in the order they were stored."""

from __future__ import annotations

import anyio
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from history import ThreadHistory

from ..conftest import Opener, exchange

pytestmark = pytest.mark.anyio

RUNS = 5


def prompts(messages: list[ModelMessage]) -> list[str]:
    return [str(p.content) for m in messages for p in m.parts if isinstance(p, UserPromptPart)]


async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Looks at the clock once (so each run makes two requests), then answers its last prompt."""
    await anyio.sleep(0.02)
    if not any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
        return ModelResponse(parts=[ToolCallPart("clock", {}, tool_call_id="c")])
    return ModelResponse(parts=[TextPart(f"answer to {prompts(messages)[-1]}")])


def clock() -> str:
    return "noon"


async def test_runs_at_once_each_answer_their_own_prompt(open_history: Opener) -> None:
    answers: dict[int, str] = {}
    async with open_history(tail=(2_000, 4_000)) as run:
        await run.send(*exchange(["Plan the launch"]))
        hook = ThreadHistory(run.history, "t", agent="north", user="Ana")
        agent = Agent(FunctionModel(model), capabilities=[hook], tools=[clock])

        async def ask(n: int) -> None:
            answers[n] = (await agent.run(f"question {n}")).output

        async with anyio.create_task_group() as group:
            for n in range(RUNS):
                group.start_soon(ask, n)
        await run.history.wait()
        stored = await run.history.store.messages_after("t", -1, 100)
    assert answers == {n: f"answer to Ana → north: question {n}" for n in range(RUNS)}
    texts = [s.message.text for s in stored if not s.message.step]
    assert texts[:2] == ["Plan the launch", "ok"]
    asked = [t for t in texts if t.startswith("question")]
    assert sorted(asked) == [f"question {n}" for n in range(RUNS)]
    for n in range(RUNS):  # each answer after its prompt, each run's steps between them
        assert texts.index(f"question {n}") < texts.index(answers[n])
    assert sum(s.message.step for s in stored) == 2 * RUNS  # a call and its result per run
