"""`python -m benchmarks.provider`: what the providers receive on the demo chat, and what
recall costs the tail.

1. The demo's next request as each provider would receive it (`history.agent.providers`,
   offline): tokens, cache marks, the prefix to cache against the provider's minimum, and the
   input cost of a turn between cuts in uncached-token equivalents (`Measured.turn_cost`, the
   figure the cost benchmark can take per turn).
2. Two turns of the demo's agent, each zooming into the outline's two longest lines then
   answering: with the recall not recorded in the thread (as the plugin does), recorded as
   steps whole (as it did before), and without the zooms: messages cut and outline lines.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal
from unittest import mock

import anyio
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import history.agent.capability as capability
from history import History, HistorySettings, ThreadHistory
from history.agent.providers import provider_request
from history.cli import _demo as demo
from history.cli import main as cli

MODELS = (
    "openai-chat:gpt-4.1-mini",
    "openai:gpt-5.6",
    "anthropic:claude-sonnet-4-5",
    "anthropic:claude-opus-4-5",
)
THREAD, AGENT = demo.THREAD, demo.AGENT
SETTINGS = HistorySettings(summarizer="echo", tail=demo.TAIL, outline=demo.OUTLINE, line=demo.LINE)


@contextlib.contextmanager
def demo_store() -> Iterator[str]:
    """The demo chat ingested into a temporary store, as `chat-outline demo` does."""
    with tempfile.TemporaryDirectory() as scratch:
        db = str(Path(scratch) / "demo.sqlite")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert cli(["demo", "--db", db]) == 0
        yield db


async def requests(db: str) -> None:
    async with History(SETTINGS, store=db, process=False) as history:
        for model in MODELS:
            m = (await provider_request(history, THREAD, model, agent=AGENT)).measured
            print(f"{m.summary()}; a turn costs {m.turn_cost():,.0f}")


Mode = Literal["not recorded", "recorded whole", "no zoom"]


async def recall(db: str, mode: Mode) -> str:
    """Two turns of the demo's agent, each zooming into the outline's two longest lines."""
    async with History(SETTINGS, store=db) as history:
        before = await history.outline(THREAD)
        assert before is not None
        longest = sorted(((b, lv, ix) for lv, ix, b, _ in before.lines), reverse=True)[:2]
        labels = [] if mode == "no zoom" else [f"{ix << lv}+{1 << lv}" for _, lv, ix in longest]
        found = 0
        for turn in range(2):
            hook = ThreadHistory(history, THREAD, agent=AGENT, user="Maya")
            model = FunctionModel(_zooms_then_answers(labels))
            result = await Agent(model, capabilities=[hook]).run(f"What did we settle? ({turn})")
            found += sum(
                len(p.model_response_str())
                for m in result.new_messages()
                for p in m.parts
                if isinstance(p, ToolReturnPart)
            )
            await history.wait()
        after = await history.outline(THREAD)
        assert after is not None
    return (
        f"{mode}: {found:,} bytes recalled; {after.boundary - before.boundary} messages cut, "
        f"outline {len(before.lines)} -> {len(after.lines)} lines, tail {after.tokens:,} tokens"
    )


def _zooms_then_answers(
    labels: list[str],
) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """A run's model: a zoom into each label in turn, then an answer."""
    left = list(labels)

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if left:
            call = ToolCallPart("zoom", {"label": left.pop(0)}, tool_call_id=f"z{len(left)}")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("Noted.")])

    return script


def main() -> None:
    with demo_store() as db:
        anyio.run(requests, db)
    for mode in ("not recorded", "recorded whole", "no zoom"):
        with demo_store() as db, contextlib.ExitStack() as patches:
            if mode == "recorded whole":  # as before: recall recorded as steps, whole
                patches.enter_context(mock.patch.object(capability, "recalled", lambda step: step))
                patches.enter_context(
                    mock.patch.object(ThreadHistory, "_recall", lambda self, message: False)
                )
            print(anyio.run(recall, db, mode))


if __name__ == "__main__":
    main()
