"""What a prompt costs with a provider's prompt cache, turn after turn.

A prompt is a sequence of blocks (the outline's chunks, a summary, each message) with cache
marks after some of them. Each turn is measured against the turns before it:

- *prefix*: the tokens it shares with the previous turn's prompt, as a prefix;
- *OpenAI-style read*: the prefix, counted only from 1,024 tokens on and in steps of 128;
- *Anthropic-style read and write*: entries are written at marks (from 1,024 tokens on); a turn
  reads the longest entry that is still a prefix of it and ends on one of its block boundaries
  within 20 blocks before one of its marks; it writes everything between that read and its last
  mark;
- *cost* in input-token equivalents: read tokens at the cache-read price, written tokens at the
  cache-write price (Anthropic-style only: OpenAI charges no premium), the rest at 1;
- *floor*: the cache-read price times the prompt, plus the turn's new tokens.

Every block is tokenized on its own (memoized), so comparing prompts is a comparison of blocks,
not of whole texts; a prompt's tokens are its blocks' tokens plus one separator per block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from history.processors.weight import encoding

ENCODING = "cl100k_base"
OPENAI_MINIMUM = 1_024
OPENAI_STEP = 128
ANTHROPIC_MINIMUM = 1_024
ANTHROPIC_LOOKBACK = 20


@lru_cache(maxsize=200_000)
def token_ids(text: str) -> tuple[int, ...]:
    """The tokens of one block (tiktoken, specials as plain text), memoized by text."""
    return tuple(encoding(ENCODING).encode_ordinary(text))


def count(text: str) -> int:
    """How many tokens `text` is."""
    return len(token_ids(text))


@dataclass(frozen=True, kw_only=True)
class Prices:
    """Prices in input-token equivalents (an uncached input token costs 1)."""

    read: float = 0.1
    """A token read from the cache."""
    write: float = 1.25
    """A token written to the cache (Anthropic-style only)."""
    summary_input: float = 0.05
    """A token sent to the summarizer: a small model's input ($0.10 a million tokens) against
    the agent's model ($2.00)."""
    summary_output: float = 0.2
    """A token the summarizer writes ($0.40 a million against $2.00)."""
    own_output: float = 5.0
    """A token the conversation's own model writes ($10 a million against $2.00), for the
    compactions a provider runs with it."""


@dataclass(frozen=True, kw_only=True)
class Prompt:
    """What an agent is sent on one turn."""

    blocks: tuple[str, ...]
    """The prompt's pieces, in order: each is tokenized on its own."""
    marks: tuple[int, ...] = ()
    """Cache marks, as block counts: a mark `k` sits after the first `k` blocks."""

    @property
    def text(self) -> str:
        return "\n".join(self.blocks)


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One turn's numbers."""

    tokens: int
    """The prompt's tokens."""
    new: int
    """Tokens of the messages that arrived since the previous turn."""
    prefix: int
    """Tokens shared with the previous turn's prompt, as a prefix."""
    openai_read: int
    anthropic_read: int
    anthropic_write: int
    openai_cost: float
    anthropic_cost: float
    floor: float


@dataclass(kw_only=True)
class Meter:
    """Measures a strategy's prompts one turn after another."""

    prices: Prices = field(default_factory=Prices)
    _blocks: tuple[str, ...] = ()
    _cached: frozenset[int] = frozenset()
    """Anthropic-style entries (prefix lengths) that are still prefixes of the last prompt."""

    def measure(self, prompt: Prompt, new: int) -> Turn:
        sizes = [count(block) + 1 for block in prompt.blocks]
        ends = _running(sizes)
        tokens = ends[-1] if ends else 0
        prefix = self._prefix(prompt.blocks, sizes)

        openai_read = prefix // OPENAI_STEP * OPENAI_STEP if prefix >= OPENAI_MINIMUM else 0

        valid = {p for p in self._cached if p <= prefix}
        reachable = {
            ends[b - 1]
            for mark in prompt.marks
            for b in range(max(1, mark - ANTHROPIC_LOOKBACK), mark + 1)
        }
        anthropic_read = max(valid & reachable, default=0)
        written = {ends[m - 1] for m in prompt.marks if m and ends[m - 1] >= ANTHROPIC_MINIMUM}
        anthropic_write = max(max(written, default=0) - anthropic_read, 0)
        self._blocks = prompt.blocks
        self._cached = frozenset(valid | written)

        read, write = self.prices.read, self.prices.write
        rest = tokens - anthropic_read - anthropic_write
        return Turn(
            tokens=tokens,
            new=new,
            prefix=prefix,
            openai_read=openai_read,
            anthropic_read=anthropic_read,
            anthropic_write=anthropic_write,
            openai_cost=read * openai_read + (tokens - openai_read),
            anthropic_cost=read * anthropic_read + write * anthropic_write + rest,
            floor=read * tokens + new,
        )

    def _prefix(self, blocks: tuple[str, ...], sizes: list[int]) -> int:
        """Tokens shared with the previous prompt: whole equal blocks, then a common start."""
        before = self._blocks
        if blocks[: len(before)] == before:  # the common case: the prompt only grew
            return sum(sizes[: len(before)])
        shared = 0
        for k, (old, new) in enumerate(zip(before, blocks, strict=False)):
            if old == new:
                shared += sizes[k]
                continue
            a, b = token_ids(old), token_ids(new)
            n = 0
            for x, y in zip(a, b, strict=False):
                if x != y:
                    break
                n += 1
            return shared + n
        return shared


def _running(sizes: list[int]) -> list[int]:
    ends, total = [], 0
    for size in sizes:
        total += size
        ends.append(total)
    return ends
