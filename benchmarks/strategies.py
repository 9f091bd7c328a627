"""The strategies compared: what each sends an agent after every message of a conversation.

Each is made fresh for one conversation and one budget (the most tokens its prompt should
hold), fed the messages one at a time, and asked for the prompt after each. Messages are
rendered the same way for all of them (`block`), so only what a strategy keeps, summarizes and
reorders differs. The peers that need LangChain, LlamaIndex or pydantic-ai's compaction
libraries live in `langchain_peers`, `llamaindex_peers` and `pydantic_peers` and are skipped
when those are not installed.
"""

from __future__ import annotations

import importlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from history.contract import Message
from history.lines import render
from history.plugin import History
from history.settings import HistorySettings

from . import install_hint
from .cache import Prompt, count
from .corpora import Conversation, Fact
from .fakes import Behaviour, CompressingSummarizer, Compressor, Usage
from .view import chat_history_prompt, search_finds

log = logging.getLogger(__name__)


class Strategy(Protocol):
    """One memory, for one conversation."""

    usage: Usage
    """What its summarizer was asked and answered."""
    kind: str | None
    """What the last message did to the prompt, when the strategy can tell (else None)."""

    async def start(self) -> None: ...

    async def add(self, message: Message) -> Prompt:
        """Take the next message; return what the agent is sent now."""
        ...

    async def found(self, facts: tuple[Fact, ...]) -> float | None:
        """The share of `facts` its search finds, or None when it has no search."""
        ...

    async def stop(self) -> None: ...


@dataclass(frozen=True, kw_only=True)
class Setup:
    """What a strategy is made with."""

    budget: int
    conversation: Conversation
    behaviour: Behaviour


Factory = Callable[[Setup], Strategy]


def block(message: Message, agent: str) -> str:
    """A message as every strategy sends it: the agent's own answers as their text (a provider
    gets them as the assistant's, as `view()` sends them), everyone else's messages and every
    tool step with their speaker (`author → to: text`)."""
    if message.author == agent and not message.step:
        return message.text
    return render(message)


class _Plain:
    """The strategies without a summarizer or a search."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.kind: str | None = None

    async def start(self) -> None:
        return None

    async def found(self, facts: tuple[Fact, ...]) -> float | None:
        return None

    async def stop(self) -> None:
        return None


class FullHistory(_Plain):
    """Every message, whole: the prompt only grows."""

    def __init__(self, setup: Setup) -> None:
        super().__init__()
        self.agent = setup.conversation.agent
        self.blocks: list[str] = []

    async def add(self, message: Message) -> Prompt:
        self.blocks.append(block(message, self.agent))
        return Prompt(blocks=tuple(self.blocks), marks=(len(self.blocks),))


class RollingWindow(_Plain):
    """The newest messages that fit the budget, whole; older ones are dropped."""

    def __init__(self, setup: Setup) -> None:
        super().__init__()
        self.budget = setup.budget
        self.agent = setup.conversation.agent
        self.window: deque[tuple[str, int]] = deque()
        self.tokens = 0

    async def add(self, message: Message) -> Prompt:
        text = block(message, self.agent)
        self.window.append((text, count(text) + 1))
        self.tokens += self.window[-1][1]
        while self.tokens > self.budget and len(self.window) > 1:
            self.tokens -= self.window.popleft()[1]
        return Prompt(blocks=tuple(text for text, _ in self.window), marks=(len(self.window),))


class ChatHistory:
    """The plugin itself, on an in-memory store, with the shared summarizer behaviour."""

    cut_gap = True
    """SPEC version 2's cut gap; the variant without it runs beside, to measure what it does."""

    model: str | None = None
    """The agent's model, for `for_budget(model=)`: None leaves the cold cut off."""

    def __init__(self, setup: Setup) -> None:
        # What a user gets for the budget: the tail grows to half of it and is cut to a tenth,
        # the outlines take the other half.
        self.settings = HistorySettings.for_budget(
            setup.budget, summarizer="echo", model=self.model, cut_gap=self.cut_gap
        )
        self.compressor = Compressor(setup.behaviour)
        self.usage = self.compressor.usage
        self.thread = setup.conversation.thread
        self.agent = setup.conversation.agent
        self.history = History(
            self.settings,
            store=":memory:",
            model=CompressingSummarizer(self.compressor, limit=self.settings.line),
            pause=0.0,
        )
        self.kind: str | None = None
        self.lines: list[tuple[int, int]] = []
        self.blocks: tuple[str, ...] = ()

    async def start(self) -> None:
        await self.history.__aenter__()

    async def add(self, message: Message) -> Prompt:
        await self.history.message_created(message)
        await self.history.wait()
        outline = await self.history.outline(self.thread)
        lines = [(level, index) for level, index, _, _ in outline.lines] if outline else []
        if lines == self.lines:
            self.kind = "cut" if outline and outline.cut_at == message.at else "grow"
        else:  # lines only appended: a cut; anything else: a fold (after a cut)
            self.kind = "cut" if lines[: len(self.lines)] == self.lines else "fold"
        if self.kind == "cut" and outline and outline.tokens > self.settings.tail[0]:
            self.kind = "cut short"  # the newest `kept` messages alone outweigh the tail
        self.lines = lines
        prompt = await chat_history_prompt(self.history, self.thread, agent=self.agent)
        if self.kind == "grow" and prompt.blocks[: len(self.blocks)] != self.blocks:
            # The view changed what it sent before: a tool call goes as text until its
            # result comes, then as a call.
            self.kind = "break"
        self.blocks = prompt.blocks
        return prompt

    async def found(self, facts: tuple[Fact, ...]) -> float | None:
        hits = [await search_finds(self.history, self.thread, f.cue, f.value) for f in facts]
        return sum(hits) / len(facts) if facts else None

    async def stop(self) -> None:
        await self.history.__aexit__(None, None, None)


class ChatHistoryNoGap(ChatHistory):
    """chat-outline with the chapter's cut rule (`cut_gap=False`): not a peer, a control."""

    cut_gap = False


class ChatHistoryCold(ChatHistory):
    """chat-outline with the cold cut at its provider's cache lifetime
    (`for_budget(model="anthropic:claude-sonnet-5-5")`: 300 seconds): a control."""

    model = "anthropic:claude-sonnet-5-5"


class ChatHistoryColdOpenAI(ChatHistory):
    """chat-outline with the cold cut at GPT-5.6's cache lifetime
    (`for_budget(model="openai:gpt-5.6")`: 1,800 seconds), judged on OpenAI's cost: a control."""

    model = "openai:gpt-5.6"


CORE: dict[str, Factory] = {
    "chat-outline": ChatHistory,
    "chat-outline-cold": ChatHistoryCold,
    "chat-outline-cold-openai": ChatHistoryColdOpenAI,
    "chat-outline-no-gap": ChatHistoryNoGap,
    "full-history": FullHistory,
    "rolling-window": RollingWindow,
}
PEERS: dict[str, tuple[str, str]] = {
    "langchain-middleware": ("langchain_peers", "Middleware"),
    "langchain-summary-buffer": ("langchain_peers", "SummaryBuffer"),
    "llamaindex-summary-buffer": ("llamaindex_peers", "SummaryBuffer"),
    "harness-summarizing": ("pydantic_peers", "Summarizing"),
    "harness-summarizing-whole": ("pydantic_peers", "SummarizingWhole"),
    "harness-tiered": ("pydantic_peers", "Tiered"),
    "harness-sliding-window": ("pydantic_peers", "SlidingWindow"),
    "summarization-pydantic-ai": ("pydantic_peers", "Summarization"),
    "anthropic-compaction": ("compaction_peers", "Anthropic"),
    "openai-compaction": ("compaction_peers", "OpenAI"),
}
UNBUDGETED = ("full-history", "anthropic-compaction")
"""Run once, without a budget: the full history, and Anthropic's compaction, whose trigger
(50,000 tokens at least) no budget of the report reaches."""


def available() -> tuple[dict[str, Factory], dict[str, str]]:
    """The strategies that can run here, and why the others cannot."""
    found: dict[str, Factory] = dict(CORE)
    missing: dict[str, str] = {}
    for name, (module, attribute) in PEERS.items():
        try:
            loaded = importlib.import_module(f"{__package__}.{module}")
        except ImportError as exc:
            missing[name] = f"not installed ({exc.name}): {install_hint(exc.name)}"
            log.warning("skipping %s: %s is not installed", name, exc.name)
            continue
        found[name] = getattr(loaded, attribute)
    return found, missing
