"""Metering: the summarizer's calls and tokens per thread, and what they cost.

Read from the recorded calls, so it covers every process that wrote the store. A call is one
conversation (one line asked for, with its follow-ups); its tokens are what the provider
reported. A call answered from pins is not recorded again and costs nothing. Prices are per
million tokens, in whatever currency the app bills in.

The plugin also reports each call to the host as it is committed: `History(on_ask=...)` is
called with every `Ask`, which carries its thread and its tokens (zero for answers replayed
from pins), so an app can bill it per space or user as it happens.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .errors import ConfigurationError
from .store import Store

MILLION = 1_000_000


@dataclass(frozen=True, kw_only=True)
class ThreadUsage:
    """One thread's summarizer calls and their cost."""

    thread: str
    calls: int
    """Conversations recorded: one per line the summarizer was asked for."""
    input_tokens: int
    output_tokens: int
    cost: float
    """`input_tokens` and `output_tokens` at the prices asked for."""


@dataclass(frozen=True, kw_only=True)
class Usage:
    """The summarizer's calls and tokens over some threads, and their cost."""

    threads: tuple[ThreadUsage, ...]
    """Per thread, sorted by thread; threads with no calls are left out."""
    calls: int
    input_tokens: int
    output_tokens: int
    cost: float
    input_price: float
    """The price of a million input tokens the cost was computed with."""
    output_price: float
    """The price of a million output tokens."""


def price(
    input_tokens: int, output_tokens: int, *, input_price: float, output_price: float
) -> float:
    """The cost of some tokens, the prices being per million tokens."""
    return (input_tokens * input_price + output_tokens * output_price) / MILLION


async def usage(
    store: Store,
    thread: str | None = None,
    *,
    input_price: float = 0.0,
    output_price: float = 0.0,
) -> Usage:
    """The recorded calls of one thread (or of every thread), with their cost.

    Args:
        store: an open store.
        thread: the thread to meter; None for every thread.
        input_price: the price of a million input tokens.
        output_price: the price of a million output tokens.
    """
    for name, value in (("input_price", input_price), ("output_price", output_price)):
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigurationError(f"{name} must be a number >= 0, got {value!r}")
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for ask in await store.calls(thread):
        total = totals[ask.thread]
        total[0] += 1
        total[1] += ask.input_tokens
        total[2] += ask.output_tokens
    rows = tuple(
        ThreadUsage(
            thread=name,
            calls=calls,
            input_tokens=inp,
            output_tokens=out,
            cost=price(inp, out, input_price=input_price, output_price=output_price),
        )
        for name, (calls, inp, out) in sorted(totals.items())
    )
    inp, out = sum(r.input_tokens for r in rows), sum(r.output_tokens for r in rows)
    return Usage(
        threads=rows,
        calls=sum(r.calls for r in rows),
        input_tokens=inp,
        output_tokens=out,
        cost=price(inp, out, input_price=input_price, output_price=output_price),
        input_price=input_price,
        output_price=output_price,
    )
