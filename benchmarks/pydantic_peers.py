"""pydantic-ai's own compactions, run through their real capability classes and hooks.

- `pydantic-ai-harness` (0.62): `SummarizingCompaction` (incremental, its default, and not),
  `TieredCompaction` with the tiers its README recommends (`ClearToolResults(max_tokens=1,
  keep_pairs=3)`, then `SummarizingCompaction(max_messages=1, keep_messages=20)`; its
  `DeduplicateFileReads` tier is left out: the corpora read no files) and
  `SlidingWindowCompaction`. Each is triggered at the budget and, where it takes one, keeps a
  third of it (`keep_tokens`), as LangChain's middleware is set.
- `summarization-pydantic-ai` (0.1): `SummarizationCapability(trigger=("tokens", budget),
  keep=("tokens", budget // 3))`.

pydantic-ai calls a capability's `before_model_request(ctx, request_context)` before every
model request with the run's messages; here it is called after every message with the app's
stored history, as `ctx.messages`, and what the hook leaves in `request_context.messages` is the
prompt. What it writes back into `ctx.messages` stays in the history (harness's compactions
do: "Compaction updates persistent run history"); `summarization-pydantic-ai` only replaces the
request's messages, which pydantic-ai does not write back (`_agent_graph.HistoryMirroringMessages`
mirrors edits made in place), so its history stays whole and it summarizes again on every request
past its trigger, as it does in an app. Their summaries are written by a pydantic-ai
`FunctionModel` with the shared behaviour (`fakes.Compressor`), at the summarizer's prices; every
count is the shared tokenizer's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext, ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RunUsage
from pydantic_ai_harness.compaction import (
    ClearToolResults,
    SlidingWindowCompaction,
    SummarizingCompaction,
    TieredCompaction,
)
from pydantic_ai_summarization import SummarizationCapability

from history.agent.steps import Calls, Returns, decode
from history.contract import Message

from .cache import Prompt, count
from .corpora import Fact
from .fakes import Compressor
from .strategies import Setup, block

_MESSAGES = re.compile(r"<messages>(.*)</messages>", re.S)
_PREVIOUS = re.compile(r"<previous-summary>(.*)</previous-summary>", re.S)


def to_summarize(request: str) -> str:
    """What a summary request asks to compress: its transcript and any previous summary."""
    found = [m.group(1) for pattern in (_MESSAGES, _PREVIOUS) if (m := pattern.search(request))]
    return "\n".join(found) if found else request


def summarizer(compressor: Compressor) -> FunctionModel:
    """A pydantic-ai model that answers a summary request with the shared behaviour."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent = "\n".join([*(info.instructions or "",), *(text(m) for m in messages)])
        summary = compressor.summarize(to_summarize(sent), sent=sent)
        return ModelResponse(parts=[TextPart(content=summary or "-")])

    return FunctionModel(answer, model_name="bench-compressor")


def text(message: ModelMessage) -> str:
    """What a model reads of a message: its parts' text, tool calls and results as JSON."""
    pieces = []
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            pieces.append(part.args_as_json_str())
            continue
        content = getattr(part, "content", None)
        if isinstance(content, str):
            pieces.append(content)
        elif content is not None:
            pieces.append(json.dumps(content, default=str, ensure_ascii=False))
    return "\n".join(pieces)


def convert(message: Message, agent: str) -> ModelMessage:
    """A corpus message as pydantic-ai holds it: the agent's tool steps as calls and results,
    its answers as responses, everyone else's messages as user prompts (`block`'s text)."""
    step = decode(message.text) if message.step else None
    if isinstance(step, Calls):
        calls = [ToolCallPart(tool_name=c.name, args=c.args, tool_call_id=c.id) for c in step.calls]
        return ModelResponse(parts=calls)
    if isinstance(step, Returns):
        returns = [
            ToolReturnPart(tool_name=r.name, content=r.content, tool_call_id=r.id)
            for r in step.returns
        ]
        return ModelRequest(parts=returns)
    if message.author == agent and not message.step:
        return ModelResponse(parts=[TextPart(content=message.text)])
    return ModelRequest(parts=[UserPromptPart(content=block(message, agent))])


class _Capability:
    """One capability's `before_model_request`, called after every message."""

    def __init__(self, setup: Setup) -> None:
        self.compressor = Compressor(setup.behaviour)
        self.usage = self.compressor.usage
        self.model = summarizer(self.compressor)
        self.agent = setup.conversation.agent
        self.kind: str | None = None
        self.messages: list[ModelMessage] = []
        self.blocks: dict[int, str] = {}
        """Each stored message's block, by identity (the messages stay alive in `kept`)."""
        self.kept: list[ModelMessage] = []
        self.capability: Any = self.make(setup.budget)

    def make(self, budget: int) -> Any:
        raise NotImplementedError

    async def start(self) -> None:
        return None

    async def found(self, facts: tuple[Fact, ...]) -> float | None:
        return None

    async def stop(self) -> None:
        return None

    async def add(self, message: Message) -> Prompt:
        converted = convert(message, self.agent)
        self.kept.append(converted)
        self.blocks[id(converted)] = block(message, self.agent)
        self.messages.append(converted)
        ctx = RunContext(deps=None, model=self.model, usage=RunUsage(), messages=self.messages)
        request = ModelRequestContext(
            model=self.model,
            messages=list(self.messages),
            model_settings=None,
            model_request_parameters=ModelRequestParameters(),
        )
        sent = (await self.capability.before_model_request(ctx, request)).messages
        return self.prompt(sent)

    def tokens(self, messages: Any) -> int:
        """Tokens of `messages` as every strategy counts them (a stored message's block)."""
        return sum(count(self.blocks.get(id(m)) or text(m)) + 1 for m in messages)

    def prompt(self, sent: list[ModelMessage]) -> Prompt:
        """The blocks sent, marked after a leading summary and at the end."""
        blocks = tuple(self.blocks.get(id(m)) or text(m) for m in sent)
        head = max((k + 1 for k, m in enumerate(sent[:3]) if id(m) not in self.blocks), default=0)
        return Prompt(blocks=blocks, marks=tuple(sorted({head, len(blocks)} - {0})))


def _tokens(text: str) -> int:
    return count(text)


class Summarizing(_Capability):
    """`SummarizingCompaction(max_tokens=budget, keep_tokens=budget // 3)` (incremental)."""

    incremental = True

    def make(self, budget: int) -> Any:
        return SummarizingCompaction(
            model=self.model,
            max_tokens=budget,
            keep_tokens=budget // 3,
            tokenizer=_tokens,
            incremental=self.incremental,
        )


class SummarizingWhole(Summarizing):
    """The same with `incremental=False`: each summary is written from the messages alone."""

    incremental = False


class Tiered(_Capability):
    """`TieredCompaction` with its README's tiers, its target the budget."""

    def make(self, budget: int) -> Any:
        tiers = [
            ClearToolResults(max_tokens=1, keep_pairs=3, tokenizer=_tokens),
            SummarizingCompaction(
                model=self.model, max_messages=1, keep_messages=20, tokenizer=_tokens
            ),
        ]
        return TieredCompaction(tiers=tiers, target_tokens=budget, tokenizer=_tokens)


class SlidingWindow(_Capability):
    """`SlidingWindowCompaction(max_tokens=budget, keep_tokens=budget // 3)`: no summary."""

    def make(self, budget: int) -> Any:
        return SlidingWindowCompaction(
            max_tokens=budget, keep_tokens=budget // 3, tokenizer=_tokens
        )


class Summarization(_Capability):
    """summarization-pydantic-ai's `SummarizationCapability`, at the budget, keeping a third."""

    def make(self, budget: int) -> Any:
        made: Callable[..., Any] = SummarizationCapability
        return made(
            trigger=("tokens", budget),
            keep=("tokens", budget // 3),
            model=self.model,
            token_counter=self.tokens,
        )
