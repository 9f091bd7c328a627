"""Metering: the summarizer's calls and tokens per thread, and what they cost.

Read from the recorded calls, so it covers every process that wrote the store. A call is one
conversation (one line asked for, with its follow-ups); its tokens are what the provider
reported. A call answered from pins is not recorded again and costs nothing. Prices are per
million tokens, in whatever currency the app bills in.

The plugin also reports each call to the host as it is committed: `History(on_ask=...)` is
called with every `Ask`, which carries its thread, its thread's space and its tokens (zero for
answers replayed from pins), so an app can bill it per space or user as it happens; `usage`
sums the recorded calls per space as well, by the space each thread is in now.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace

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
    space: str | None = None
    """The space the thread is in (`History.set_space`); None when it is in none."""
    fallbacks: int = 0
    """Its lines written as a cut while the summarizer failed (`Summary.fallback`), asked for
    again once it answers."""


@dataclass(frozen=True, kw_only=True)
class SpaceUsage:
    """The summarizer's calls over the threads of one space, and their cost."""

    space: str | None
    """None: the threads in no space."""
    threads: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost: float
    fallbacks: int


@dataclass(frozen=True, kw_only=True)
class Usage:
    """The summarizer's calls and tokens over some threads, and their cost."""

    threads: tuple[ThreadUsage, ...]
    """Per thread, sorted by thread; a thread with neither calls nor fallback lines is left
    out."""
    calls: int
    input_tokens: int
    output_tokens: int
    cost: float
    input_price: float | None
    """The price of a million input tokens the cost was computed with; None: each model's own
    (`models`)."""
    output_price: float | None
    """The price of a million output tokens; None: each model's own."""
    models: tuple[ModelUsage, ...] = ()
    """Per model, sorted; the cost leaves out the models with no price."""
    spaces: tuple[SpaceUsage, ...] = ()
    """Per space, sorted, the threads in no space last; a thread's calls count in the space it
    is in now (a thread moved takes its recorded calls along)."""


@dataclass(frozen=True, kw_only=True)
class ModelUsage:
    """One summarizer model's calls over some threads, at its price."""

    model: str
    """The model's name, as the settings named it (`openai:gpt-4.1-nano`)."""
    calls: int
    input_tokens: int
    output_tokens: int
    input_price: float | None
    """The price of a million input tokens; None when it is not known."""
    output_price: float | None
    cost: float | None
    """None when a price is not known."""


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
        input_price: the price of a million input tokens, for every model.
        output_price: the price of a million output tokens, for every model.
    """
    _check_prices(input_price=input_price, output_price=output_price, given=True)
    return await _metered(
        store, thread, lambda model: (input_price, output_price), input_price, output_price
    )


OFFLINE = ("echo", "scripted")
"""The summarizers that ship with the package: they cost nothing."""


def known_price(model: str) -> tuple[float, float] | None:
    """A model's price per million input and output tokens, from the price data pydantic-ai
    uses (`genai-prices`); None when it is not known. The offline summarizers cost nothing."""
    if model in OFFLINE:
        return (0.0, 0.0)
    from genai_prices import Usage as Tokens
    from genai_prices import calc_price

    provider, _, name = model.rpartition(":")
    tokens = Tokens(input_tokens=MILLION, output_tokens=MILLION)
    for given in ([provider] if provider else []) + [None]:
        try:
            found = calc_price(tokens, name, provider_id=given)
        except LookupError:
            continue
        return (float(found.input_price), float(found.output_price))
    return None


async def priced_usage(
    store: Store,
    thread: str | None = None,
    *,
    input_price: float | None = None,
    output_price: float | None = None,
) -> Usage:
    """The recorded calls of one thread (or of every thread), each model at its known price.

    A price given here replaces every model's; a model whose price is neither given nor known
    has a cost of None in `models`, and is left out of the threads' and the total cost.
    """
    _check_prices(input_price=input_price, output_price=output_price, given=False)

    def prices(model: str) -> tuple[float | None, float | None]:
        known = known_price(model) if input_price is None or output_price is None else None
        return (
            input_price if input_price is not None else None if known is None else known[0],
            output_price if output_price is not None else None if known is None else known[1],
        )

    return await _metered(store, thread, prices, input_price, output_price)


def _check_prices(*, given: bool, **prices: float | None) -> None:
    """ConfigurationError for a price that is not a number >= 0 (or None, unless `given`)."""
    for name, value in prices.items():
        if (value is not None or given) and (
            isinstance(value, bool) or not isinstance(value, int | float) or value < 0
        ):
            raise ConfigurationError(f"{name} must be a number >= 0, got {value!r}")


async def _metered(
    store: Store,
    thread: str | None,
    prices_of: Callable[[str], tuple[float | None, float | None]],
    input_price: float | None,
    output_price: float | None,
) -> Usage:
    """The usage of the calls the store counts (one read), each model at `prices_of(model)`."""
    tallies, fallbacks = await store.tallies(thread)
    counted: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for tally in tallies:
        # A model's key holds its name, then what else set it apart (its settings).
        sums = counted[(tally.thread, tally.model.split("\n", 1)[0])]
        sums[0] += tally.calls
        sums[1] += tally.input_tokens
        sums[2] += tally.output_tokens
    prices = {model: prices_of(model) for model in sorted({model for _, model in counted})}

    def cost(model: str, inp: int, out: int) -> float | None:
        i, o = prices[model]
        if i is None or o is None:
            return None
        return price(inp, out, input_price=i, output_price=o)

    per_thread: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0.0])
    per_model: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for (name, model), (calls, inp, out) in counted.items():
        row = per_thread[name]
        row[0], row[1], row[2] = row[0] + calls, row[1] + inp, row[2] + out
        row[3] += cost(model, inp, out) or 0.0
        total = per_model[model]
        total[0], total[1], total[2] = total[0] + calls, total[1] + inp, total[2] + out
    for name in fallbacks:  # a thread whose every ask failed: its lines, if no calls
        per_thread.setdefault(name, [0, 0, 0, 0.0])
    threads = tuple(
        ThreadUsage(
            thread=name,
            calls=int(c),
            input_tokens=int(i),
            output_tokens=int(o),
            cost=k,
            fallbacks=fallbacks.get(name, 0),
        )
        for name, (c, i, o, k) in sorted(per_thread.items())
    )
    threads, spaces = await _by_space(store, thread, threads)
    models = tuple(
        ModelUsage(
            model=model,
            calls=c,
            input_tokens=i,
            output_tokens=o,
            input_price=prices[model][0],
            output_price=prices[model][1],
            cost=cost(model, i, o),
        )
        for model, (c, i, o) in sorted(per_model.items())
    )
    return Usage(
        threads=threads,
        calls=sum(t.calls for t in threads),
        input_tokens=sum(t.input_tokens for t in threads),
        output_tokens=sum(t.output_tokens for t in threads),
        cost=sum(t.cost for t in threads),
        input_price=input_price,
        output_price=output_price,
        models=models,
        spaces=spaces,
    )


async def _by_space(
    store: Store, thread: str | None, rows: tuple[ThreadUsage, ...]
) -> tuple[tuple[ThreadUsage, ...], tuple[SpaceUsage, ...]]:
    """The rows, each with the space its thread is in, and their sums per space."""
    placed = {a.thread: a.space for a in await store.about(thread)}
    rows = tuple(replace(r, space=placed.get(r.thread)) for r in rows)
    groups: dict[str | None, list[ThreadUsage]] = defaultdict(list)
    for r in rows:
        groups[r.space].append(r)
    spaces = tuple(
        SpaceUsage(
            space=space,
            threads=len(group),
            calls=sum(r.calls for r in group),
            input_tokens=sum(r.input_tokens for r in group),
            output_tokens=sum(r.output_tokens for r in group),
            cost=sum(r.cost for r in group),
            fallbacks=sum(r.fallbacks for r in group),
        )
        for space, group in sorted(groups.items(), key=lambda g: (g[0] is None, g[0] or ""))
    )
    return rows, spaces
