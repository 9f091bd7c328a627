"""The benchmark's pydantic-ai peers, its timed corpora and its caches that expire.

Each peer runs its library's own capability class through the hook pydantic-ai calls; the
peers that need an optional package are skipped when it is not installed.
"""

from __future__ import annotations

import importlib.util
import itertools
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic_ai.messages import CompactionPart, ModelRequest

from benchmarks import corpora, synthetic
from benchmarks.cache import EXPIRING, Meter, Prompt, count
from benchmarks.fakes import Behaviour
from benchmarks.strategies import Setup, available

pytestmark = pytest.mark.anyio

HEAD = " ".join(f"word{k}" for k in range(700))  # well over 1,024 tokens


def test_a_cache_expires_after_the_providers_retention_and_bills_its_write_premium() -> None:
    meter = Meter(world=EXPIRING)
    start = corpora.START
    size = count(HEAD) + 1
    first = meter.measure(Prompt(blocks=(HEAD,), marks=(1,)), new=size, at=start)
    assert first.anthropic_write == size and first.anthropic_cost == pytest.approx(1.25 * size)
    assert first.openai_cost == pytest.approx(1.25 * size)  # GPT-5.6: a breakpoint's write
    warm = meter.measure(
        Prompt(blocks=(HEAD, "a"), marks=(2,)), new=2, at=start + timedelta(minutes=4)
    )
    assert warm.anthropic_read == size and warm.openai_read == size
    # Six minutes later: Anthropic's 5-minute entry is gone, OpenAI's 30-minute one is not.
    later = start + timedelta(minutes=10)
    cold = meter.measure(Prompt(blocks=(HEAD, "a", "b"), marks=(3,)), new=2, at=later)
    assert cold.anthropic_read == 0 and cold.anthropic_write == cold.tokens
    assert cold.openai_read == warm.tokens
    assert cold.floor == pytest.approx(1.25 * cold.tokens)  # all of it written again
    # OpenAI's floor is its own: its entry lives on, so only the new tokens are paid in full.
    assert cold.openai_floor == pytest.approx(0.1 * cold.tokens + 2)
    days = meter.measure(
        Prompt(blocks=(HEAD, "a", "b"), marks=(3,)), new=0, at=later + timedelta(days=1)
    )
    assert days.openai_read == 0 and days.anthropic_read == 0
    assert days.openai_floor == pytest.approx(1.25 * days.tokens) == days.floor
    # An entry read is refreshed: read every four minutes, it never expires.
    again = Meter(world=EXPIRING)
    for k in range(5):
        turn = again.measure(
            Prompt(blocks=(HEAD,), marks=(1,)), new=0, at=start + timedelta(minutes=4 * k)
        )
    assert turn.anthropic_read == size


def test_the_synthetic_chat_is_human_paced_and_the_datasets_one_a_minute() -> None:
    conversation = corpora.synthetic_corpus(600).conversations[0]
    ms = conversation.messages
    gaps = [(b.at - a.at).total_seconds() for a, b in itertools.pairwise(ms)]
    assert all(g > 0 for g in gaps)
    assert sum(g < 60 for g in gaps) > len(gaps) / 2  # mostly bursts of seconds
    assert any(300 < g < 3_600 for g in gaps) and any(g > 86_400 for g in gaps)
    agent = [g for g, m in zip(gaps, ms[1:], strict=False) if m.author == conversation.agent]
    assert max(agent) <= 40  # the agent answers and calls its tools within seconds
    assert abs(sum(share for share, _, _ in synthetic.PAUSES) - 1.0) < 1e-9
    drafts = [corpora.Draft(author=a, text=f"m{k}") for k, a in enumerate(["Ana", "Ben"] * 10)]
    plain = corpora.conversation("d", drafts, seed=1, agent="Ben").messages
    assert {(b.at - a.at) for a, b in itertools.pairwise(plain)} == {timedelta(minutes=1)}


def _setup(budget: int, messages: int = 120) -> Setup:
    conversation = corpora.synthetic_corpus(messages).conversations[0]
    return Setup(budget=budget, conversation=conversation, behaviour=Behaviour())


async def _feed(name: str, setup: Setup) -> tuple[object, list[Prompt]]:
    strategies, missing = available()
    if name in missing:
        pytest.skip(missing[name])
    strategy = strategies[name](setup)
    await strategy.start()
    prompts = [await strategy.add(m) for m in setup.conversation.messages]
    await strategy.stop()
    return strategy, prompts


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["harness-summarizing", "harness-summarizing-whole", "harness-tiered"]
)
async def test_harness_compactions_keep_their_summary_in_the_history(name: str) -> None:
    """harness writes its compaction back into the run's messages: the stored history starts
    with a `CompactionPart` summary, and the prompt is that history."""
    strategy, prompts = await _feed(name, _setup(3_000))
    assert strategy.usage.calls > 0  # type: ignore[attr-defined]
    stored = strategy.messages  # type: ignore[attr-defined]
    summaries = [
        m
        for m in stored
        if isinstance(m, ModelRequest) and any(isinstance(p, CompactionPart) for p in m.parts)
    ]
    assert len(summaries) == 1
    assert len(stored) < len(_setup(3_000).conversation.messages)
    assert max(sum(count(b) + 1 for b in p.blocks) for p in prompts[-20:]) < 3_000 + 2_000


async def test_the_sliding_window_drops_without_a_summary() -> None:
    strategy, prompts = await _feed("harness-sliding-window", _setup(3_000))
    assert strategy.usage.calls == 0  # type: ignore[attr-defined]
    assert len(prompts[-1].blocks) < len(_setup(3_000).conversation.messages)


@pytest.mark.slow
async def test_summarization_pydantic_ai_summarizes_the_whole_history_on_every_request() -> None:
    """Its capability replaces the request's messages only, which pydantic-ai does not write
    back: the history stays whole, and each request past the trigger is summarized again."""
    setup = _setup(3_000)
    strategy, prompts = await _feed("summarization-pydantic-ai", setup)
    assert len(strategy.messages) == len(setup.conversation.messages)  # type: ignore[attr-defined]
    over = sum(len(p.blocks) < k + 1 for k, p in enumerate(prompts))
    assert strategy.usage.calls == over > 1  # type: ignore[attr-defined]


async def test_the_providers_compactions_trigger_where_their_capabilities_say() -> None:
    setup = _setup(3_000)
    openai, prompts = await _feed("openai-compaction", setup)
    assert openai.threshold == 3_000 and openai.usage.calls > 0  # type: ignore[attr-defined]
    assert all(sum(count(b) + 1 for b in p.blocks) < 3_000 + 2_500 for p in prompts)
    anthropic, _ = await _feed("anthropic-compaction", replace(setup, budget=0))
    assert anthropic.threshold == 150_000 and anthropic.usage.calls == 0  # type: ignore[attr-defined]


def test_peers_are_named_with_their_installed_libraries() -> None:
    strategies, missing = available()
    for name, module in (
        ("harness-tiered", "pydantic_ai_harness"),
        ("summarization-pydantic-ai", "pydantic_ai_summarization"),
    ):
        assert (name in strategies) == (importlib.util.find_spec(module) is not None)
        assert (name in missing) != (name in strategies)


async def test_conversation_search_finds_a_planted_fact_by_its_value(tmp_path: Path) -> None:
    """harness's tool over what `StepPersistence` stored: its excerpts name the messages."""
    pytest.importorskip("pydantic_ai_harness")
    from benchmarks import retrieval
    from benchmarks.harness_search import HarnessSearch

    corpus = corpora.synthetic_corpus(200)
    thread = retrieval.spread(corpus)[0]
    found = HarnessSearch(tmp_path / "harness.sqlite")
    await found.persist(thread, agent=corpus.conversations[0].agent)
    for fact in corpus.conversations[0].facts[:3]:
        planted = next(m.id for m in thread if fact.value in m.text)
        assert await found.rank("synthetic", fact.value, planted, 10) == 0
    assert await found.top("synthetic", "zzzunheardofword", 10) == []
    # A person's messages in a row are one stored message: what the tool counts.
    held = found.threads["synthetic"]
    assert sum(map(len, held)) <= len(thread) and any(len(ids) > 1 for ids in held)
