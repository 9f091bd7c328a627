"""Cost and cache, per turn: every strategy on the same conversations, at several budgets.

A turn is one message arriving: the strategy takes it and returns what its agent is sent now,
and the turn is measured against the strategy's previous prompt (`cache.Meter`), twice: with
caches that never expire, and with caches that expire at the message's time. At the end of
each conversation, its recall is the share of its planted facts whose exact value is still in
the prompt (and, for chat-outline, the share its search finds).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .cache import EXPIRING, Meter, Prices, Prompt, Turn, count
from .corpora import Corpus
from .fakes import Behaviour, Usage
from .strategies import UNBUDGETED, Factory, Setup, block

log = logging.getLogger(__name__)


FLOORS = {"anthropic_cost": "floor", "openai_cost": "openai_floor"}
"""The floor each cost is measured against."""


@dataclass(frozen=True, kw_only=True)
class Run:
    """One strategy at one budget over every conversation of a corpus."""

    corpus: str
    strategy: str
    budget: int | None
    """None for the full history, which has no budget."""
    turns: tuple[Turn, ...]
    """Every turn of every conversation, in order, with caches that never expire."""
    expiring: tuple[Turn, ...]
    """The same turns with caches that expire (`cache.EXPIRING`), at their messages' times."""
    first: int
    """How many of `turns` belong to the corpus's first conversation."""
    usage: Usage
    recall: float
    """The mean over conversations of the share of facts still in the last prompt."""
    search: float | None
    """The same for what the strategy's search finds; None without a search."""
    seconds: float
    kinds: tuple[str, ...]
    """What each turn did to the prompt: `grow` (it only grew) or `break` (it did not);
    chat-outline tells `cut`, `cut short` and `fold` apart."""
    summarizer: float = 0.0
    """The summarizer's spend per turn, in the same input-token equivalents as the prompt."""

    def world(self, expiring: bool) -> Run:
        """This run as measured with caches that expire (or never do)."""
        return replace(self, turns=self.expiring) if expiring else self

    @property
    def breakdown(self) -> dict[str, tuple[int, float]]:
        """Each kind of turn: how many, and their cost over the floor, summed."""
        out: dict[str, tuple[int, float]] = {}
        for kind, t in zip(self.kinds, self.turns, strict=True):
            n, excess = out.get(kind, (0, 0.0))
            out[kind] = (n + 1, excess + t.anthropic_cost - t.floor)
        return out

    def kept(self, kind: str) -> float:
        """At turns of `kind`, the mean share of the previous prompt still read as a prefix."""
        shares = [
            b.prefix / a.tokens
            for k, a, b in zip(self.kinds[1:], self.turns[:-1], self.turns[1:], strict=True)
            if k == kind and a.tokens
        ]
        return sum(shares) / len(shares) if shares else 0.0

    def mean(self, attribute: str) -> float:
        return float(sum(getattr(t, attribute) for t in self.turns)) / max(len(self.turns), 1)

    def total(self, attribute: str) -> float:
        """A prompt cost per turn (`attribute`) with the summarizer's spend beside it."""
        return self.mean(attribute) + self.summarizer

    def share(self, attribute: str) -> float:
        """`attribute` summed over turns, as a share of the prompt tokens."""
        total = sum(t.tokens for t in self.turns)
        return float(sum(getattr(t, attribute) for t in self.turns)) / max(total, 1)

    def per_message(self, attribute: str) -> float:
        return float(getattr(self.usage, attribute)) / max(len(self.turns), 1)

    def floor_ratio(self, attribute: str = "anthropic_cost") -> float:
        """Mean cost over mean floor, the floor of the cost's provider."""
        cost = float(sum(getattr(t, attribute) for t in self.turns))
        return cost / max(self.mean(FLOORS[attribute]) * len(self.turns), 1e-9)


async def run_one(
    corpus: Corpus,
    name: str,
    factory: Factory,
    budget: int | None,
    *,
    behaviour: Behaviour,
    prices: Prices,
) -> Run:
    started = time.perf_counter()
    turns: list[Turn] = []
    expiring: list[Turn] = []
    usage = Usage()
    recalls: list[float] = []
    searches: list[float] = []
    first = 0
    kinds: list[str] = []
    own = False
    for conversation in corpus.conversations:
        setup = Setup(budget=budget or 0, conversation=conversation, behaviour=behaviour)
        strategy = factory(setup)
        own = getattr(strategy, "own_model", False)
        meter, timed = Meter(prices=prices), Meter(prices=prices, world=EXPIRING)
        await strategy.start()
        try:
            prompt, before = Prompt(blocks=()), 0
            for message in conversation.messages:
                prompt = await strategy.add(message)
                new = count(block(message, conversation.agent)) + 1
                turn = meter.measure(prompt, new)
                turns.append(turn)
                expiring.append(timed.measure(prompt, new, message.at))
                kinds.append(strategy.kind or ("grow" if turn.prefix >= before else "break"))
                before = turn.tokens
            text, facts = prompt.text, conversation.facts
            recalls.append(sum(f.value in text for f in facts) / max(len(facts), 1))
            found = await strategy.found(facts)
            if found is not None:
                searches.append(found)
        finally:
            await strategy.stop()
        first = first or len(turns)
        usage.calls += strategy.usage.calls
        usage.input_tokens += strategy.usage.input_tokens
        usage.output_tokens += strategy.usage.output_tokens
    run = Run(
        corpus=corpus.name,
        strategy=name,
        budget=budget,
        turns=tuple(turns),
        expiring=tuple(expiring),
        first=first,
        usage=usage,
        recall=sum(recalls) / max(len(recalls), 1),
        search=sum(searches) / len(searches) if searches else None,
        seconds=time.perf_counter() - started,
        kinds=tuple(kinds),
        summarizer=_spend(usage, prices, own=own) / max(len(turns), 1),
    )
    log.info(
        "%s / %s / %s: %d turns, mean cost %.0f, recall %.2f (%.1fs)",
        corpus.name,
        name,
        budget,
        len(turns),
        run.mean("anthropic_cost"),
        run.recall,
        run.seconds,
    )
    return run


def _spend(usage: Usage, prices: Prices, *, own: bool) -> float:
    """The summarizer's spend: a small model's, or the conversation's own (`own_model`), whose
    input is the prompt it just cached."""
    if own:
        return usage.input_tokens * prices.read + usage.output_tokens * prices.own_output
    return usage.input_tokens * prices.summary_input + usage.output_tokens * prices.summary_output


async def run_all(
    corpora: Sequence[Corpus],
    strategies: dict[str, Factory],
    budgets: Sequence[int],
    *,
    behaviour: Behaviour,
    prices: Prices,
) -> list[Run]:
    """Every strategy at every budget (the full history once) on every corpus."""
    runs = []
    for corpus in corpora:
        for name, factory in strategies.items():
            for budget in [None] if name in UNBUDGETED else budgets:
                runs.append(
                    await run_one(corpus, name, factory, budget, behaviour=behaviour, prices=prices)
                )
    return runs
