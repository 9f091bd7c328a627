"""The pydantic-ai hook: the model sees exactly the view, and the run is recorded."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    CachePoint,
    ModelMessage,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from history import ThreadHistory, prompt_text, view, zoom
from history.agent.capability import INSTRUCTIONS
from history.agent.steps import Call, Calls, Feedback, Return, Returns, Step, decode, encode
from history.lines import size

from ..conftest import Opener, Run, exchange, message

pytestmark = pytest.mark.anyio

Script = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


def sent_form(messages: Sequence[ModelMessage]) -> list[tuple[object, ...]]:
    """What a provider is sent of messages: kinds, contents, tool names and ids."""
    out: list[tuple[object, ...]] = []
    for m in messages:
        parts: list[tuple[object, ...]] = []
        for p in m.parts:
            if isinstance(p, ToolCallPart):
                parts.append((p.part_kind, p.tool_name, p.args, p.tool_call_id))
            elif isinstance(p, ToolReturnPart):
                parts.append((p.part_kind, p.tool_name, p.content, p.tool_call_id, p.outcome))
            else:
                parts.append((p.part_kind, getattr(p, "content", None)))
        out.append((m.kind, tuple(parts)))
    return out


@pytest.mark.slow
async def test_the_model_sees_exactly_the_view_and_the_run_is_recorded(
    open_history: Opener,
) -> None:
    seen: list[list[ModelMessage]] = []
    expected: list[list[ModelMessage]] = []

    async with open_history(tail=(60, 260), kept=2) as run:

        async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            assert info.instructions is not None and INSTRUCTIONS in info.instructions
            seen.append(messages)
            await run.history.wait()
            expected.append(await view(run.history, "t", agent="north", cache_point=False))
            if len(seen) == 1:
                call = ToolCallPart("zoom", {"label": "0+2"}, tool_call_id="z1")
                return ModelResponse(parts=[TextPart("Let me look."), call])
            return ModelResponse(parts=[TextPart("We planned the launch.")])

        await run.send(*exchange(["Plan the launch", *[f"item {k}" for k in range(13)]]))
        outline = await run.history.outline("t")
        hook = ThreadHistory(run.history, "t", agent="north", user="Ana")
        agent = Agent(FunctionModel(model), capabilities=[hook])
        result = await agent.run("What did we plan?")
        await run.history.wait()
        recorded = await run.history.store.messages_after("t", 27, 100)
        after = await view(run.history, "t", agent="north", cache_point=False)

    assert outline is not None and outline.outlined  # the agent reads an outline
    assert result.output == "We planned the launch."
    assert len(seen) == 2
    zoomed = "0+1|Ana → north: Plan the launch\n1+1|north → Ana: ok"
    exchange_sent = [
        ("response", (("text", "Let me look."), ("tool-call", "zoom", {"label": "0+2"}, "z1"))),
        ("request", (("tool-return", "zoom", zoomed, "z1", "success"),)),
    ]
    # The thread's view, then (not recorded yet) this run's recall.
    assert sent_form(seen[0]) == sent_form(expected[0])
    assert sent_form(seen[1]) == sent_form(expected[1]) + exchange_sent
    assert prompt_text(seen[0]).endswith("[user]\nAna → north: What did we plan?\n")
    # What the zoom found is the thread's own history: the thread records the prompt and the
    # answer, and keeps the recall that led to it with the answer, as it was sent.
    assert [(s.message.author, s.message.step, s.message.text) for s in recorded] == [
        ("Ana", False, "What did we plan?"),
        ("north", False, "We planned the launch."),
    ]
    # The next run reads the same turn back from the thread, as it was sent: tool parts and all.
    assert sent_form(after)[-3:] == [
        *exchange_sent,
        ("response", (("text", "We planned the launch."),)),
    ]


async def run_once(run: Run, script: Script, **options: Any) -> list[list[ModelMessage]]:
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return script(messages, info)

    capability = ThreadHistory(run.history, "t", agent="north", user="Ana", **options)
    agent = Agent(FunctionModel(model), capabilities=[capability], system_prompt="You are north.")
    await agent.run("Hello?")
    await run.history.wait()
    return seen


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("Hi.")])


async def test_a_zoom_into_no_line_tells_the_model_what_to_do(open_history: Opener) -> None:
    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("zoom", {"label": "5+3"}, tool_call_id="z")])
        return ModelResponse(parts=[TextPart("Sorry.")])

    async with open_history(tail=(60, 200)) as run:
        seen = await run_once(run, script)
        recorded = await run.history.store.messages_after("t", -1, 100)
        natives = await run.history.store.natives("t", -1)
    error = "no line '5+3' in thread 't': a line covers a power of two of messages"
    assert error in prompt_text(seen[1])
    assert [s.message.text for s in recorded] == ["Hello?", "Sorry."]
    assert error in natives[recorded[1].message.id]  # kept with the answer, as it was sent


async def test_the_system_prompt_stays_first(open_history: Opener) -> None:
    async with open_history(tail=(60, 200)) as run:
        await run.send(*exchange(["Plan the launch"]))
        seen = await run_once(run, answer)
    assert isinstance(seen[0][0].parts[0], SystemPromptPart)
    assert prompt_text(seen[0]) == (
        "[system]\nYou are north.\n[user]\nAna → north: Plan the launch\n[assistant]\nok\n"
        "[user]\nAna → north: Hello?\n"
    )


def marks(messages: Sequence[ModelMessage]) -> int:
    return sum(
        isinstance(p, UserPromptPart) and CachePoint() in list(p.content)
        for m in messages
        for p in m.parts
    )


async def test_cache_marks_go_only_to_a_model_that_takes_them(open_history: Opener) -> None:
    async with open_history(tail=(30, 60), kept=2) as run:
        await run.send(*exchange([f"item {k}" for k in range(8)]))
        plain = await run_once(run, answer)
        marked = await run_once(run, answer, cache_point=True)
    assert marks(plain[0]) == 0
    assert marks(marked[0]) == 1


async def test_an_app_that_records_prompts_itself_is_not_recorded_twice(
    open_history: Opener,
) -> None:
    async with open_history(tail=(60, 200)) as run:
        await run.send(message(0, "Hello?", to=""))
        seen = await run_once(run, answer, record_prompt=False)
        recorded = await run.history.store.messages_after("t", -1, 100)
    assert prompt_text(seen[0]).endswith("[user]\nAna: Hello?\n")
    assert [(s.message.author, s.message.text) for s in recorded] == [
        ("Ana", "Hello?"),
        ("north", "Hi."),
    ]


def test_steps_round_trip() -> None:
    steps: list[Step] = [
        Calls(calls=(Call(id="a", name="f", args='{"x": 1}'), Call(id="b", name="g", args=None))),
        Returns(returns=(Return(id="a", name="f", content={"n": [1, 2]}, outcome="failed"),)),
        Feedback(text="Please answer with a number."),
    ]
    assert [decode(encode(step)) for step in steps] == steps
    for text in [
        "",
        "{}",
        "plain words",
        '{"tool_calls": []}',
        '{"tool_returns": [{"id": 1}]}',
        '{"feedback": "x", "more": 1}',
        "[1, 2]",
        "{not json",
    ]:
        assert decode(text) is None


async def test_the_agent_searches_its_thread(open_history: Opener) -> None:
    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            call = ToolCallPart("search_history", {"query": "trailer?"}, tool_call_id="s")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("Found it.")])

    async with open_history(tail=(60, 200)) as run:
        await run.send(*exchange(["Plan the launch", "We need a trailer"]))
        seen = await run_once(run, script)
    assert prompt_text(seen[1]).endswith(
        "[tool return s] search_history\n2+1|Ana → north: We need a trailer\n"
        "3+1|north → Ana: ok\n1+1|north → Ana: ok\n"  # the replies around it
    )


async def test_a_recall_is_sent_whole_but_not_recorded_in_the_thread(open_history: Opener) -> None:
    long = " ".join(f"word{k}" for k in range(500))
    zoomed: list[str] = []

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            zoomed.append(last.model_response_str())
            return ModelResponse(parts=[TextPart("It was long.")])
        return ModelResponse(parts=[ToolCallPart("zoom", {"label": "0+1"}, tool_call_id="z")])

    # The chapter's cut rule: with the cut gap, the long first message's weight sets the floor
    # and the next cut waits for the tail to outgrow it, whatever the run records.
    async with open_history(summarizer="echo", tail=(300, 600), kept=2, cut_gap=False) as run:
        await run.send(*exchange([long, *[f"item {k}" for k in range(10)]]))
        before = await run.history.outline("t")
        seen = await run_once(run, script)
        after = await run.history.outline("t")
        recorded = await run.history.store.messages_after("t", 21, 100)
        sent_next = await view(run.history, "t", agent="north")
    assert before is not None and after is not None
    assert zoomed and long in zoomed[0]  # the agent read the message whole
    assert long in prompt_text(seen[1]) and long in prompt_text(sent_next)
    # The thread holds the prompt and the answer only: the 3,890 bytes found weigh nothing.
    assert [(s.message.text, s.message.step) for s in recorded] == [
        ("Hello?", False),
        ("It was long.", False),
    ]
    assert all(s.weight < 20 for s in recorded)
    assert (after.cut_at, after.lines) == (before.cut_at, before.lines)  # no cut


async def test_recall_the_run_goes_on_from_is_recorded_as_steps_with_a_note(
    open_history: Opener,
) -> None:
    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls = sum(isinstance(p, ToolCallPart) for m in messages for p in m.parts)
        if calls == 0:
            return ModelResponse(parts=[ToolCallPart("zoom", {"label": "0+1"}, tool_call_id="z")])
        if calls == 1:
            return ModelResponse(parts=[ToolCallPart("price", {}, tool_call_id="p")])
        return ModelResponse(parts=[TextPart("4,200 EUR.")])

    def price() -> str:
        """The price."""
        return "4,200 EUR"

    async with open_history(summarizer="echo", tail=(300, 600), kept=2) as run:
        await run.send(*exchange(["The price is settled"]))
        hook = ThreadHistory(run.history, "t", agent="north", user="Ana")
        await Agent(FunctionModel(script), capabilities=[hook], tools=[price]).run("Price?")
        await run.history.wait()
        recorded = await run.history.store.messages_after("t", 1, 100)
        zoomed = (await zoom(run.history, "t", "0+1")).text
    steps = [decode(s.message.text) for s in recorded]
    assert steps[1:5] == [
        Calls(calls=(Call(id="z", name="zoom", args={"label": "0+1"}),)),
        Returns(returns=(Return(id="z", name="zoom", content=f"[recalled {size(zoomed)} bytes]"),)),
        Calls(calls=(Call(id="p", name="price", args={}),)),
        Returns(returns=(Return(id="p", name="price", content="4,200 EUR"),)),
    ]
