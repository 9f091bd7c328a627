"""What a model's provider caches: the fewest tokens, the marks a request may carry, how long a
prefix lives and what writing it costs.

pydantic-ai's model profiles hold some of these facts, and they are read from there: how long
a prefix lives when the request asks for nothing (`default_cache_retention`: 5 minutes at
Anthropic, 30 minutes on OpenAI's GPT-5.6 and later, unknown on OpenAI's earlier models, which
cache implicitly under an organization's policy) and whether an OpenAI model takes explicit
cache breakpoints (`openai_supports_prompt_cache_breakpoints`: GPT-5.6 and later, onto which
pydantic-ai maps `CachePoint`). The rest is kept here, each row with its source:

- the fewest tokens a prefix must have to be cached, from Anthropic's table
  (https://platform.claude.com/docs/en/build-with-claude/prompt-caching, "Cache limitations")
  and OpenAI's guide (https://developers.openai.com/api/docs/guides/prompt-caching: 1,024);
- at most 4 marks a request: Anthropic's `cache_control` blocks (the same page) and OpenAI's
  breakpoints, of which it keeps a request's last four (the same OpenAI guide; pydantic-ai's
  `models/openai/_caching.py` says so too);
- the write premium: Anthropic bills a write 1.25x for the 5-minute lifetime and 2x for the
  1-hour one (Anthropic's page, "Pricing"); OpenAI bills a write at an explicit breakpoint
  1.25x and an implicit one nothing (OpenAI's guide, "Pricing").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from pydantic_ai.profiles import ModelProfile

from ..errors import ConfigurationError
from ..settings import CACHED, cache_retention

Kind = Literal["openai-chat", "openai-responses", "anthropic"]
KINDS: dict[str, Kind] = {
    "openai": "openai-responses",
    "openai-responses": "openai-responses",
    "openai-chat": "openai-chat",
    "anthropic": "anthropic",
}
"""pydantic-ai's model name prefixes, as `infer_model` reads them (`openai:` is Responses)."""

MAX_MARKS = 4
"""Cache marks (Anthropic) or breakpoints (OpenAI) a request may carry."""
ANTHROPIC_MINIMUMS = (
    (("opus-5", "fable-5", "mythos-5"), 512),
    (("opus-4-8",), 1_024),
    (("opus-4-7",), 2_048),
    (("opus-4-6", "opus-4-5", "haiku-4-5"), 4_096),
    (("haiku-3",), 2_048),
)
"""Anthropic's table of the fewest tokens cached, as parts of a model's name (dots read as
dashes); any other Claude model (Sonnet 5, 4.6, 4.5, Opus 4.1, 4) caches from 1,024."""
ANTHROPIC_WRITE = {timedelta(minutes=5): 1.25, timedelta(hours=1): 2.0}
"""Anthropic's write premium by the prefix's lifetime."""
OPENAI_WRITE = 1.25
"""OpenAI's premium on a write at an explicit breakpoint."""


@dataclass(frozen=True, kw_only=True)
class CacheFacts:
    """How one model's provider caches a prompt's prefix."""

    minimum: int
    """The fewest tokens a cached prefix has."""
    marks: int
    """Marks a request may carry; 0 where the provider caches without them."""
    retention: timedelta | None
    """How long a prefix lives after its last use, the request asking for nothing; None where
    pydantic-ai's profile knows no documented bound."""
    write: float
    """What a written token costs, an uncached token costing 1."""


def split(model: str) -> tuple[Kind, str]:
    """A `provider:name` model string as the kind of request it makes and the model's name."""
    prefix, sep, name = model.partition(":")
    if not sep or not name or prefix not in KINDS:
        raise ConfigurationError(
            f"unknown model {model!r}: name one as provider:model, the provider one of "
            f"{', '.join(sorted(KINDS))} (like 'openai:gpt-5.6' or 'anthropic:claude-sonnet-4-5')"
        )
    return KINDS[prefix], name


def profile(model: str) -> ModelProfile:
    """pydantic-ai's profile of a `provider:name` model (its provider's, merged)."""
    kind, name = split(model)
    if kind == "anthropic":
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicProvider.model_profile(name) or {}
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIProvider.model_profile(name) or {}


def facts(model: str) -> CacheFacts:
    """The cache facts of a `provider:name` model (see the module docstring for the sources)."""
    kind, name = split(model)
    seconds = cache_retention(model)
    retention = None if seconds is None else timedelta(seconds=seconds)
    if kind == "anthropic":
        dashed = name.replace(".", "-")
        minimum = next(
            (least for parts, least in ANTHROPIC_MINIMUMS if any(p in dashed for p in parts)),
            CACHED,
        )
        write = ANTHROPIC_WRITE.get(retention or timedelta(minutes=5), 1.25)
        return CacheFacts(minimum=minimum, marks=MAX_MARKS, retention=retention, write=write)
    explicit = bool(profile(model).get("openai_supports_prompt_cache_breakpoints", False))
    return CacheFacts(
        minimum=CACHED,
        marks=MAX_MARKS if explicit else 0,
        retention=retention,
        write=OPENAI_WRITE if explicit else 1.0,
    )


def minimum_cacheable(model: str) -> int:
    """The fewest tokens `model`'s provider caches."""
    return facts(model).minimum
