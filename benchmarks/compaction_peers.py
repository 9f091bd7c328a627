"""The providers' own compactions, which pydantic-ai switches on: modelled offline.

`AnthropicCompaction` and `OpenAICompaction` (stateful, the default) do nothing on the client:
they add a `context_management` edit to each request (`get_model_settings`), and the provider
compacts on its side when a request's input passes the edit's trigger. What the documentation
says happens then is modelled here:

- the trigger is the capability's own: `AnthropicCompaction().token_threshold` (150,000 by
  default, 50,000 at least, so no budget of the report: it runs once, at its default) and
  `OpenAICompaction(token_threshold=budget)` (`compact_threshold`, which any budget can be);
- past it, the conversation's own model writes a summary of everything before the newest
  message (the shared behaviour, `fakes.Compressor`), and later requests send that summary and
  what came after it (Anthropic drops what precedes its compaction block; OpenAI sends "only
  that item and the content after it");
- the summary is billed at the conversation's model's price: its input as read from the
  prompt cache (the prompt it reads was cached by the turn before), its output at the model's
  output price (`Prices.own_output`). The strategy says so with `own_model`.
"""

from __future__ import annotations

from pydantic_ai.models.anthropic import AnthropicCompaction
from pydantic_ai.models.openai import OpenAICompaction

from history.contract import Message

from .cache import Prompt, count
from .corpora import Fact
from .fakes import Compressor
from .strategies import Setup, block


class _Provider:
    own_model = True
    """Its summary is written by the conversation's model, at that model's prices."""

    def __init__(self, setup: Setup, threshold: int) -> None:
        self.compressor = Compressor(setup.behaviour)
        self.usage = self.compressor.usage
        self.agent = setup.conversation.agent
        self.threshold = threshold
        self.kind: str | None = None
        self.blocks: list[str] = []

    async def start(self) -> None:
        return None

    async def found(self, facts: tuple[Fact, ...]) -> float | None:
        return None

    async def stop(self) -> None:
        return None

    async def add(self, message: Message) -> Prompt:
        self.blocks.append(block(message, self.agent))
        if len(self.blocks) > 1 and sum(count(b) + 1 for b in self.blocks) > self.threshold:
            before = "\n".join(self.blocks[:-1])
            summary = self.compressor.summarize(before, sent="\n".join(self.blocks))
            self.blocks = [summary, self.blocks[-1]]
        return Prompt(blocks=tuple(self.blocks), marks=(len(self.blocks),))


class Anthropic(_Provider):
    """`AnthropicCompaction()`: the server compacts past 150,000 input tokens."""

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup, AnthropicCompaction().token_threshold)


class OpenAI(_Provider):
    """`OpenAICompaction(token_threshold=budget)`: the server compacts past the budget."""

    def __init__(self, setup: Setup) -> None:
        capability: OpenAICompaction[None] = OpenAICompaction(token_threshold=setup.budget)
        assert capability.token_threshold is not None
        super().__init__(setup, capability.token_threshold)
