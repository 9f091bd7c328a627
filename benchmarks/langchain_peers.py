"""LangChain's memories, driven as an app would drive them, with a fake chat model.

- `Middleware`: LangChain v1's `SummarizationMiddleware` (the agent middleware). Its
  `before_model` hook runs before every model call, as in an agent; its state update replaces
  the conversation with a summary message and the kept messages.
- `SummaryBuffer`: the classic `ConversationSummaryBufferMemory` (from `langchain-classic`).

Both summarize through `CompressingChatModel`, which has the shared behaviour, and count
tokens with the same tokenizer as every other strategy. Everything else is their defaults.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult

from history.contract import Message

from .cache import Prompt, count
from .corpora import Fact
from .fakes import Compressor
from .strategies import Setup, block

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # deprecated in favour of the middleware, still widely used
    from langchain_classic.memory import ConversationSummaryBufferMemory

_TAGS = re.compile(r"<[^>]*>")


def middleware_content(request: str) -> str:
    """The messages to summarize, out of the middleware's summary prompt (XML tags dropped)."""
    body = request.split("Messages to summarize:", 1)[-1].rsplit("</messages>", 1)[0]
    return _TAGS.sub("\n", body)


def summary_buffer_content(request: str) -> str:
    """The current summary and the new lines, out of the classic summary prompt."""
    body = request.rsplit("Current summary:", 1)[-1].rsplit("New summary:", 1)[0]
    return body.replace("New lines of conversation:", "")


class CompressingChatModel(BaseChatModel):
    """A chat model that answers with the shared summarizer behaviour."""

    compressor: Any
    extract: Any
    """Takes the request's text, returns the part to compress."""

    @property
    def _llm_type(self) -> str:
        return "bench-compressor"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        sent = "\n".join(m.text for m in messages)
        summary = self.compressor.summarize(self.extract(sent), sent=sent)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=summary))])

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        return tokens(messages)


def tokens(messages: Any) -> int:
    """What every strategy counts: a message's tokens plus one separator."""
    return sum(count(m.text) + 1 for m in messages)


class _Converter:
    """Turns the conversation's messages into LangChain messages, tool steps paired."""

    def __init__(self, setup: Setup) -> None:
        self.agent = setup.conversation.agent
        self.call = "call-0"
        self.blocks: dict[str, str] = {}

    def convert(self, m: Message) -> BaseMessage:
        self.blocks[m.id] = block(m, self.agent)
        if m.step and m.author == self.agent:
            self.call = f"call-{m.id}"
            calls = [{"name": "tool", "args": {}, "id": self.call, "type": "tool_call"}]
            return AIMessage(content=m.text, tool_calls=calls, id=m.id)
        if m.step:
            return ToolMessage(content=m.text, tool_call_id=self.call, id=m.id)
        if m.author == self.agent:
            return AIMessage(content=m.text, id=m.id)
        return HumanMessage(content=m.text, id=m.id)

    def prompt(self, messages: list[BaseMessage]) -> Prompt:
        blocks = tuple(self.blocks.get(m.id or "", m.text) for m in messages)
        head = 1 if messages and (messages[0].id or "") not in self.blocks else 0
        return Prompt(blocks=blocks, marks=tuple(sorted({head, len(blocks)} - {0})))


class _Peer:
    def __init__(self, setup: Setup, extract: Any) -> None:
        self.compressor = Compressor(setup.behaviour)
        self.usage = self.compressor.usage
        self.model = CompressingChatModel(compressor=self.compressor, extract=extract)
        self.converter = _Converter(setup)
        self.kind: str | None = None

    async def start(self) -> None:
        return None

    async def found(self, facts: tuple[Fact, ...]) -> float | None:
        return None

    async def stop(self) -> None:
        return None


class Middleware(_Peer):
    """`SummarizationMiddleware(trigger=("tokens", budget), keep=("tokens", budget // 3))`."""

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup, middleware_content)
        self.middleware: Any = SummarizationMiddleware(
            model=self.model,
            trigger=("tokens", setup.budget),
            keep=("tokens", setup.budget // 3),
            token_counter=tokens,
        )
        self.messages: list[Any] = []

    async def add(self, message: Message) -> Prompt:
        self.messages.append(self.converter.convert(message))
        update = self.middleware.before_model({"messages": self.messages}, None)
        if update is not None:
            self.messages = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
        return self.converter.prompt(self.messages)


class SummaryBuffer(_Peer):
    """`ConversationSummaryBufferMemory(max_token_limit=2 * budget // 3)`: the rest of the
    budget is for its running summary."""

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup, summary_buffer_content)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.memory: Any = ConversationSummaryBufferMemory(
                llm=self.model,
                max_token_limit=2 * setup.budget // 3,
                return_messages=True,
                summary_message_cls=SystemMessage,
            )

    async def add(self, message: Message) -> Prompt:
        self.memory.chat_memory.add_message(self.converter.convert(message))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.memory.prune()
        messages = self.memory.load_memory_variables({})[self.memory.memory_key]
        return self.converter.prompt(messages)
