"""`python -m benchmarks.provider`: what the providers receive on the demo chat, and what
recall costs the tail.

1. The demo's next request as each provider would receive it (`history.providers`, offline):
   tokens, cache marks, the prefix to cache against the provider's minimum, and the input cost
   of a turn between cuts in uncached-token equivalents (`Measured.turn_cost`, the figure the
   cost benchmark can take per turn).
2. Two turns of the demo's agent, each zooming into the outline's two longest lines then
   answering, with what zoom finds kept in the thread as a note (as the plugin does) or whole
   (as it did before): the recall steps' weight, messages cut and outline lines after.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

import anyio
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import history.agent as agent
from history import History, HistorySettings, ThreadHistory
from history import demo
from history.cli import main as cli
from history.providers import provider_request
from history.steps import Returns, decode

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


async def recall(db: str, *, whole: bool) -> str:
    async with History(SETTINGS, store=db) as history:
        before = await history.outline(THREAD)
        assert before is not None
        for turn in range(2):
            sizes = sorted(((b, lv, ix) for lv, ix, b, _ in before.lines), reverse=True)[:2]
            labels = [f"{ix << lv}+{1 << lv}" for _, lv, ix in sizes]
            for label in labels:
                script = _zoom_then_answer(label)
                hook = ThreadHistory(history, THREAD, agent=AGENT, user="Maya")
                await Agent(FunctionModel(script), capabilities=[hook]).run(f"Recall {label}")
            await history.wait()
        after = await history.outline(THREAD)
        assert after is not None
        steps = await history.store.pending(THREAD, before.position, 1_000)
        weights = [s.weight for s in steps if isinstance(decode(s.message.text), Returns)]
    how = "whole" if whole else "as a note"
    return (
        f"recall kept {how}: zoom results weigh {min(weights)} to {max(weights)} tokens; "
        f"{after.boundary - before.boundary} messages cut, outline {len(before.lines)} -> "
        f"{len(after.lines)} lines after two turns of two zooms"
    )


def _zoom_then_answer(label: str) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if last.part_kind == "tool-return":
            return ModelResponse(parts=[TextPart("Noted.")])
        return ModelResponse(parts=[ToolCallPart("zoom", {"label": label}, tool_call_id="z")])

    return script


def main() -> None:
    with demo_store() as db:
        anyio.run(requests, db)
    for whole in (False, True):
        with demo_store() as db:
            keep = (lambda step: step) if whole else agent.recalled
            with mock.patch.object(agent, "recalled", keep):
                print(anyio.run(lambda: recall(db, whole=whole)))


if __name__ == "__main__":
    main()
