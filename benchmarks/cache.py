"""What a prompt costs with a provider's prompt cache, turn after turn.

A prompt is a sequence of blocks (the outline's chunks, a summary, each message) with cache
marks after some of them. Each turn is measured against the turns before it:

- *prefix*: the tokens it shares with the previous turn's prompt, as a prefix;
- *OpenAI-style read* (implicit caching, OpenAI's models before GPT-5.6): the prefix, counted
  only from 1,024 tokens on and in steps of 128, no write premium;
- *marked read and write* (Anthropic, and OpenAI's explicit breakpoints on GPT-5.6 and later):
  entries are written at marks (from the provider's minimum on); a turn reads the longest
  entry that is still a prefix of it and ends on one of its block boundaries (Anthropic: within
  20 blocks before one of its marks); it writes everything between that read and its last mark;
- *cost* in input-token equivalents: read tokens at the cache-read price, written tokens at the
  provider's write price, the rest at 1;
- *floor*: the cache-read price times the prompt, plus the turn's new tokens (after a pause
  longer than the cache lives, the whole prompt at the write price); each provider has its
  own, since their caches live for different times.

Two `World`s: `FOREVER`, where entries never expire and OpenAI caches implicitly, and
`EXPIRING`, where each turn carries its message's time and an entry expires once unused for
the provider's retention (Anthropic's 5 minutes, a write 1.25x; OpenAI GPT-5.6's 30 minutes,
its explicit breakpoints, a write 1.25x: `history.agent.caching`, from pydantic-ai's profiles).

Every block is tokenized on its own (memoized), so comparing prompts is a comparison of blocks,
not of whole texts; a prompt's tokens are its blocks' tokens plus one separator per block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache

from history.agent.caching import facts
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
    """The least `anthropic_cost` could be (see the module docstring)."""
    cold: bool = False
    """The turn came after a pause longer than Anthropic's cache lives: its floor is the whole
    prompt written again."""
    openai_floor: float
    """The least `openai_cost` could be: the same, after a pause longer than OpenAI's cache
    lives (with caches that expire; never with its implicit cache that never does)."""


@dataclass(frozen=True, kw_only=True)
class Marked:
    """A cache written at a prompt's marks (Anthropic's, and OpenAI's explicit breakpoints)."""

    minimum: int
    """The fewest tokens an entry has."""
    write: float | None = None
    """What a written token costs; None: `Prices.write`."""
    retention: timedelta | None = None
    """How long an entry lives after its last use; None: for ever."""
    lookback: int | None = ANTHROPIC_LOOKBACK
    """How many blocks before a mark a read may end; None: any."""

    @classmethod
    def of(cls, model: str, *, lookback: int | None) -> Marked:
        """The cache of a `provider:name` model, as pydantic-ai's profiles and
        `history.agent.caching` give it."""
        found = facts(model)
        return cls(
            minimum=found.minimum, write=found.write, retention=found.retention, lookback=lookback
        )


@dataclass(frozen=True, kw_only=True)
class World:
    """How the providers' caches behave: for ever (`FOREVER`), or as they bill (`EXPIRING`)."""

    name: str
    anthropic: Marked
    openai: Marked | None
    """None: OpenAI's implicit prefix cache (no marks, no premium, no expiry)."""


FOREVER = World(
    name="caches that never expire", anthropic=Marked(minimum=ANTHROPIC_MINIMUM), openai=None
)
EXPIRING = World(
    name="caches that expire",
    anthropic=Marked.of("anthropic:claude-sonnet-5-5", lookback=ANTHROPIC_LOOKBACK),
    openai=Marked.of("openai:gpt-5.6", lookback=None),
)
"""Anthropic's 5-minute cache (its default) and OpenAI's GPT-5.6 explicit breakpoints (30
minutes), each with its write premium."""


@dataclass(kw_only=True)
class _Entries:
    """What one provider holds for a conversation: entries (prefix lengths) by last use."""

    cache: Marked
    used: dict[int, datetime | None] = field(default_factory=dict[int, "datetime | None"])

    def turn(
        self, ends: list[int], marks: tuple[int, ...], prefix: int, at: datetime | None
    ) -> tuple[int, int]:
        """Tokens read and written by a prompt whose blocks end at `ends`."""
        live = {p: t for p, t in self.used.items() if p <= prefix and not self.expired(t, at)}
        back = self.cache.lookback
        reachable = {
            ends[b - 1]
            for mark in marks
            for b in range(max(1, mark - back) if back is not None else 1, mark + 1)
        }
        read = max(live.keys() & reachable, default=0)
        written = {ends[m - 1] for m in marks if m and ends[m - 1] >= self.cache.minimum}
        if read:
            live[read] = at
        live.update(dict.fromkeys(written, at))
        self.used = live
        return read, max(max(written, default=0) - read, 0)

    def expired(self, last: datetime | None, at: datetime | None) -> bool:
        keep = self.cache.retention
        return keep is not None and last is not None and at is not None and at - last > keep


@dataclass(kw_only=True)
class Meter:
    """Measures a strategy's prompts one turn after another, in one `World`."""

    prices: Prices = field(default_factory=Prices)
    world: World = FOREVER
    _blocks: tuple[str, ...] = ()
    _at: datetime | None = None
    _anthropic: _Entries | None = None
    _openai: _Entries | None = None

    def measure(self, prompt: Prompt, new: int, at: datetime | None = None) -> Turn:
        """The turn of `prompt`, sent at `at` (None: caches never expire), `new` tokens of it
        having arrived since the previous one."""
        w = self.world
        self._anthropic = self._anthropic or _Entries(cache=w.anthropic)
        sizes = [count(block) + 1 for block in prompt.blocks]
        ends = _running(sizes)
        tokens = ends[-1] if ends else 0
        prefix = self._prefix(prompt.blocks, sizes)
        anthropic_read, anthropic_write = self._anthropic.turn(ends, prompt.marks, prefix, at)
        if w.openai is None:
            openai_read = prefix // OPENAI_STEP * OPENAI_STEP if prefix >= OPENAI_MINIMUM else 0
            openai_write, premium = 0, 1.0
        else:
            self._openai = self._openai or _Entries(cache=w.openai)
            openai_read, openai_write = self._openai.turn(ends, prompt.marks, prefix, at)
            premium = w.openai.write or self.prices.write
        cold = self._anthropic.expired(self._at, at)
        openai_cold = self._openai is not None and self._openai.expired(self._at, at)
        self._blocks, self._at = prompt.blocks, at

        read, write = self.prices.read, w.anthropic.write or self.prices.write
        return Turn(
            tokens=tokens,
            new=new,
            prefix=prefix,
            openai_read=openai_read,
            anthropic_read=anthropic_read,
            anthropic_write=anthropic_write,
            openai_cost=read * openai_read
            + premium * openai_write
            + (tokens - openai_read - openai_write),
            anthropic_cost=read * anthropic_read
            + write * anthropic_write
            + (tokens - anthropic_read - anthropic_write),
            floor=write * tokens if cold else read * tokens + new,
            openai_floor=premium * tokens if openai_cold else read * tokens + new,
            cold=cold,
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
