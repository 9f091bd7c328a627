"""Metering: the summarizer's calls and tokens per thread, priced, and reported to the host."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from history import ConfigurationError, History, HistorySettings, ThreadUsage
from history.contract import Ask
from history.metering import usage
from history.rebuilding import rebuild
from history.store import open_store
from history.store.sqlite import SQLiteStore

from ..chats import SMALL, Fickle, ingest, long_chat
from ..conftest import exchange

pytestmark = pytest.mark.anyio
FICKLE = HistorySettings(summarizer="fickle", **SMALL)


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(
        parts=[TextPart(content="Ana asked north about the launch")],
        usage=RequestUsage(input_tokens=120, output_tokens=8),
    )


async def test_each_model_call_is_reported_to_the_host_with_its_thread_and_tokens(
    tmp_path: Path,
) -> None:
    settings = HistorySettings(summarizer="any", line=64, tail=(20, 60), kept=1)
    seen: list[Ask] = []
    model = FunctionModel(answer)
    async with History(settings, store=tmp_path / "h.sqlite", model=model, on_ask=seen.append) as h:
        for m in exchange(["a long question about the launch plan " * 3] * 3, thread="space-1"):
            await h.message_created(m)
        await h.wait()
        meter = await h.usage(input_price=2.0, output_price=10.0)
    assert seen and {(a.thread, a.input_tokens, a.output_tokens) for a in seen} == {
        ("space-1", 120, 8)
    }
    assert meter.threads == (
        ThreadUsage(
            thread="space-1",
            calls=len(seen),
            input_tokens=120 * len(seen),
            output_tokens=8 * len(seen),
            cost=(120 * 2.0 + 8 * 10.0) * len(seen) / 1_000_000,
        ),
    )


@pytest.mark.slow
async def test_usage_sums_the_recorded_calls_per_thread_and_prices_them(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    asks = await ingest(
        long_chat(150) + long_chat(80, thread="u", seed=2), FICKLE, store=str(path), model=Fickle(1)
    )
    store = SQLiteStore(str(path))
    await store.open()
    try:
        meter = await usage(store, input_price=0.15, output_price=0.6)
        assert [t.thread for t in meter.threads] == ["t", "u"]
        for row in meter.threads:
            mine = [a for a in asks if a.thread == row.thread]
            tokens = (sum(a.input_tokens for a in mine), sum(a.output_tokens for a in mine))
            assert (row.calls, row.input_tokens, row.output_tokens) == (len(mine), *tokens)
            assert row.cost == pytest.approx((tokens[0] * 0.15 + tokens[1] * 0.6) / 1e6)
        assert meter.calls == len(asks) and meter.input_tokens == sum(a.input_tokens for a in asks)
        assert meter.cost == pytest.approx(sum(t.cost for t in meter.threads))
        cut = sum(s.fallback for s in await store.summaries("u"))
        assert cut  # Fickle's asks that kept failing: their lines are counted too
        assert (await usage(store, "u")).threads == (
            ThreadUsage(
                thread="u",
                calls=meter.threads[1].calls,
                input_tokens=meter.threads[1].input_tokens,
                output_tokens=meter.threads[1].output_tokens,
                cost=0.0,
                fallbacks=cut,
            ),
        )

        # Replayed answers cost nothing and are not recorded again.
        await rebuild(store, "t", FICKLE, model=Fickle(2))
        assert await usage(store, input_price=0.15, output_price=0.6) == meter
        with pytest.raises(ConfigurationError, match="input_price must be a number >= 0, got -1"):
            await usage(store, input_price=-1)
    finally:
        await store.close()


@pytest.mark.slow
async def test_the_store_counts_calls_per_model_and_fallback_lines_in_one_read(
    database: str,
) -> None:
    """What `usage` and `stats` read: counts, the same on every store, not the calls whole."""
    asks = await ingest(
        long_chat(60) + long_chat(40, thread="u", seed=2), FICKLE, store=database, model=Fickle(1)
    )
    store = open_store(database)
    await store.open()
    try:
        tallies, fallbacks = await store.tallies()
        assert sorted((t.thread, t.calls, t.input_tokens, t.output_tokens) for t in tallies) == [
            (
                name,
                sum(a.thread == name for a in asks),
                sum(a.input_tokens for a in asks if a.thread == name),
                sum(a.output_tokens for a in asks if a.thread == name),
            )
            for name in ("t", "u")
        ]
        assert {t.model.split("\n")[0] for t in tallies} == {"fickle"}
        lines = {name: sum(s.fallback for s in await store.summaries(name)) for name in "tu"}
        assert fallbacks == {name: n for name, n in lines.items() if n} and fallbacks
        assert await store.tallies("u") == (
            [t for t in tallies if t.thread == "u"],
            {k: n for k, n in fallbacks.items() if k == "u"},
        )
        assert await store.tallies("nobody") == ([], {})
        assert await store.fallbacks() == fallbacks
        assert await store.fallbacks("u") == {k: n for k, n in fallbacks.items() if k == "u"}
        assert await store.fallbacks("nobody") == {}
    finally:
        await store.close()
