"""pydantic-ai's offline models run with `ThreadHistory` as they come, tools included.

`TestModel` calls every tool with made-up arguments (a label `'a'`, a query `'a'`) and answers
with what they returned; the recall tools answer a bad label or an empty query with a message
the model can use, so a run ends instead of retrying until it fails.
"""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from history import ThreadHistory, prompt_text

from ..conftest import Opener, exchange

pytestmark = pytest.mark.anyio


async def test_a_test_model_agent_runs_with_its_tools_and_is_recorded(
    open_history: Opener,
) -> None:
    async with open_history(tail=(60, 200)) as run:
        agent = Agent(TestModel(), capabilities=[ThreadHistory(run.history, "t", agent="north")])
        first = await agent.run("What did we settle?")  # a new thread: it calls both tools
        await run.history.wait()
        recorded = await run.history.store.messages_after("t", -1, 100)
        assert [s.message.text for s in recorded] == ["What did we settle?", first.output]
        await run.send(*exchange([f"Point {n}: the price is 49 euros" for n in range(8)], start=2))
        second = await agent.run("And the date?")  # a thread with an outline and a tail
        await run.history.wait()
        recorded = await run.history.store.messages_after("t", -1, 100)
        outline = await run.history.outline("t")
    assert "'a' is not a label" in first.output  # TestModel answers with what its tools said
    assert "nothing in this conversation matches 'a'" in first.output
    assert second.output == "success (no tool calls)"  # it calls tools only in a new chat
    assert outline is not None and outline.lines
    texts = [s.message.text for s in recorded]
    assert texts[-2:] == ["And the date?", second.output]


def script_of(call: ToolCallPart, seen: list[list[ModelMessage]]) -> FunctionModel:
    """A model that makes `call` once, then answers `Done.`; what it was sent goes to `seen`."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[call] if len(seen) == 1 else [TextPart("Done.")])

    return FunctionModel(model)


async def test_an_empty_query_and_a_bad_label_are_answered_once(open_history: Opener) -> None:
    calls = [
        (ToolCallPart("search_history", {"query": "  "}, tool_call_id="s"), "the query is empty"),
        (ToolCallPart("zoom", {"label": "price"}, tool_call_id="z"), "'price' is not a label"),
        (ToolCallPart("zoom", {"label": "0+1", "page": 0}, tool_call_id="p"), "no page 0"),
    ]
    async with open_history(tail=(60, 200)) as run:
        await run.send(*exchange(["Plan the launch"]))
        for call, said in calls:
            seen: list[list[ModelMessage]] = []
            agent = Agent(script_of(call, seen), capabilities=[ThreadHistory(run.history, "t")])
            assert (await agent.run("Hello?")).output == "Done."
            assert len(seen) == 2, call  # one call, one answer: no retry
            assert said in prompt_text(seen[1]).splitlines()[-1], call
