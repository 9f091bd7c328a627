"""LlamaIndex's `ChatSummaryMemoryBuffer`, driven as an app would drive it, with a mock LLM.

`put` takes each message and `get` returns what the agent is sent: the newest messages that fit
`token_limit`, after one system message that summarizes the rest (the previous summary
included). Its LLM is a `MockLLM` with the shared summarizer behaviour; its tokenizer is the
one every strategy counts with.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, CompletionResponse, MessageRole
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.mock import MockLLM
from llama_index.core.memory import ChatSummaryMemoryBuffer

from history.contract import Message

from .cache import Prompt, token_ids
from .corpora import Fact
from .fakes import Compressor
from .strategies import Setup, block

MARKER = "Transcript so far: "


class CompressingLLM(MockLLM):
    """A mock LLM that answers with the shared summarizer behaviour."""

    compressor: Any = None

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        content = prompt.split(MARKER, 1)[-1]
        return CompletionResponse(text=self.compressor.summarize(content, sent=prompt))


class SummaryBuffer:
    """`ChatSummaryMemoryBuffer.from_defaults(token_limit=2 * budget // 3)`: the rest of the
    budget is for its summary."""

    def __init__(self, setup: Setup) -> None:
        self.compressor = Compressor(setup.behaviour)
        self.usage = self.compressor.usage
        llm = CompressingLLM()
        llm.compressor = self.compressor
        self.memory: Any = ChatSummaryMemoryBuffer.from_defaults(
            llm=llm, token_limit=2 * setup.budget // 3, tokenizer_fn=token_ids
        )
        self.agent = setup.conversation.agent
        self.blocks: dict[str, str] = {}
        self.kind: str | None = None

    async def start(self) -> None:
        return None

    async def add(self, message: Message) -> Prompt:
        self.blocks[message.id] = block(message, self.agent)
        role = MessageRole.ASSISTANT if message.author == self.agent else MessageRole.USER
        if message.step and message.author != self.agent:
            role = MessageRole.TOOL
        self.memory.put(
            ChatMessage(role=role, content=message.text, additional_kwargs={"id": message.id})
        )
        messages = self.memory.get()
        ids = [m.additional_kwargs.get("id") for m in messages]
        blocks = tuple(
            self.blocks[id] if id in self.blocks else str(m.content)
            for id, m in zip(ids, messages, strict=True)
        )
        head = 1 if ids and ids[0] not in self.blocks else 0
        return Prompt(blocks=blocks, marks=tuple(sorted({head, len(blocks)} - {0})))

    async def found(self, facts: tuple[Fact, ...]) -> float | None:
        return None

    async def stop(self) -> None:
        return None
