"""The cost targets' verdicts and their reasons: where a peer costs less than chat-outline, the
report names the peer and says why, from the measured parts of the cost per turn; and the
cost benchmark runs alone, on the budgets and corpora named."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from benchmarks.__main__ import main, parser, run_cost
from benchmarks.cache import EXPIRING, Meter, Prompt, count
from benchmarks.config import QUICK
from benchmarks.corpora import START
from benchmarks.cost import Run
from benchmarks.fakes import Usage
from benchmarks.targets import cheapest, cold, parts, peer_wins

HEAD = " ".join(f"word{k}" for k in range(700))  # over 1,024 tokens: cached


def measured(
    strategy: str, prompts: list[Prompt], *, gap: timedelta, summarizer: float = 0.0
) -> Run:
    """A run of `prompts`, one turn every `gap`, with caches that expire."""
    meter = Meter(world=EXPIRING)
    turns = tuple(
        meter.measure(
            p, new=sum(count(b) + 1 for b in p.blocks[-1 if k else 0 :]), at=START + k * gap
        )
        for k, p in enumerate(prompts)
    )
    return Run(
        corpus="synthetic",
        strategy=strategy,
        budget=8_000,
        turns=turns,
        expiring=turns,
        first=len(turns),
        usage=Usage(calls=len(turns)),
        recall=0.0,
        search=None,
        seconds=0.0,
        kinds=("grow",) * len(turns),
        summarizer=summarizer,
    )


def growing(head: str, n: int) -> list[Prompt]:
    """A prompt that only grows, one short message a turn."""
    return [
        Prompt(blocks=(head, *(f"message {j}" for j in range(k + 1))), marks=(k + 2,))
        for k in range(n)
    ]


def test_a_peer_with_a_smaller_prompt_is_named_with_why_it_wins() -> None:
    ours = measured("chat-outline", growing(HEAD + " " + HEAD, 12), gap=timedelta(minutes=10))
    peer = measured("harness-sliding-window", growing(HEAD, 12), gap=timedelta(minutes=10))
    target = cheapest([ours, peer], reference=8_000, world=", with caches that expire")
    assert not target.met and "harness-sliding-window's" in target.numbers
    assert "with the cold cut" not in target.numbers  # no cold control ran
    cold = replace(peer, strategy="chat-outline-cold")
    with_cold = cheapest([ours, peer, cold], reference=8_000).numbers
    assert "(Anthropic-style, 1.98x; with the cold cut, chat-outline-cold: 1,784, 1.00x)" in (
        with_cold
    )
    assert with_cold.count("with the cold cut") == 1  # the OpenAI control did not run
    assert target.why.startswith("Where a peer wins: harness-sliding-window on synthetic at")
    why = peer_wins(ours, peer, "anthropic_cost")
    assert "the gap is its prompt's size: its prompt is smaller" in why
    assert "after each of the 11 pauses that outlast the cache" in why  # every turn but the first
    assert f"{peer.mean('tokens'):,.0f} tokens on average" in why
    floor, over, _ = parts(ours, "anthropic_cost")
    assert floor + over == pytest.approx(ours.mean("anthropic_cost"))


def test_a_peer_whose_summarizer_costs_less_is_named_for_it() -> None:
    ours = measured("chat-outline", growing(HEAD, 6), gap=timedelta(seconds=30), summarizer=500)
    peer = measured("langchain-middleware", growing(HEAD, 6), gap=timedelta(seconds=30))
    assert "the gap is the summarizer: chat-outline's summarizer is asked 1.00 times" in (
        peer_wins(ours, peer, "openai_cost")
    )
    assert cheapest([peer, ours], reference=8_000).why.count("langchain-middleware on") == 2


def test_openai_is_measured_against_its_own_floor() -> None:
    """Ten minutes apart Anthropic's cache is gone and GPT-5.6's is not: the same prompts are
    near OpenAI's floor and at Anthropic's."""
    run = measured("chat-outline", growing(HEAD, 8), gap=timedelta(minutes=10))
    assert all(t.cold for t in run.turns[1:])
    assert 1.0 <= run.floor_ratio("anthropic_cost") < 1.2
    assert run.mean("openai_floor") < run.mean("floor") / 5
    assert 1.0 <= run.floor_ratio("openai_cost") < 1.2


def test_the_cold_target_holds_the_aim_at_16000_tokens() -> None:
    def at(budget: int, strategy: str, head: str) -> Run:
        run = measured(strategy, growing(head, 4), gap=timedelta(minutes=10))
        return replace(run, budget=budget)

    plain = [at(b, "chat-outline", HEAD + " " + HEAD) for b in (8_000, 16_000)]
    shorter = [at(b, "chat-outline-cold", HEAD) for b in (8_000, 16_000)]
    target = cold([*plain, *shorter])
    assert target.met and "synthetic at 16,000: 0.5" in target.numbers and not target.why
    # 5% lower at 16,000 tokens is lower, but short of the aim: missed, saying what changed.
    nearly = replace(shorter[1], strategy="chat-outline-cold", summarizer=0.0)
    nearly = replace(
        nearly, summarizer=plain[1].total("anthropic_cost") * 0.95 - nearly.mean("anthropic_cost")
    )
    target = cold([*plain, shorter[0], nearly])
    assert not target.met and "synthetic at 16,000: 0.950x" in target.numbers
    assert "synthetic at 16,000: with the cold cut its prompt's size" in target.why
    # At GPT-5.6's lifetime, judged on OpenAI's cost: ten minutes is no pause past it, and
    # the shorter prompt is still cheaper.
    openai = [replace(r, strategy="chat-outline-cold-openai") for r in shorter]
    target = cold([*plain, *openai], strategy="chat-outline-cold-openai")
    assert target.goal.endswith("(caches that expire, OpenAI-style)")
    assert target.met and "synthetic at 16,000: 0.5" in target.numbers


def test_the_cost_benchmark_runs_alone_on_the_budgets_and_corpora_named(tmp_path: Path) -> None:
    args = parser().parse_args(
        ["--only", "cost", "--budgets", "2000,6000", "--corpora", "synthetic"]
    )
    assert (args.only, args.budgets, args.corpora) == ("cost", (2_000, 6_000), ("synthetic",))
    for bad in ("16k", "0,4000", ""):
        with pytest.raises(SystemExit):
            parser().parse_args(["--budgets", bad])
    with pytest.raises(SystemExit, match="unknown corpus 'reddit'"):
        main(["--only", "cost", "--corpora", "synthetic,reddit", "--out", str(tmp_path)])


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_cost_benchmark_alone_writes_its_tables_and_targets(tmp_path: Path) -> None:
    config = replace(QUICK, synthetic=80, chitchat=0, sharegpt=0, budgets=(2_000,), reference=2_000)
    results = await run_cost(config, tmp_path, command="python -m benchmarks --only cost")
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert {c.name for c in results.corpora} == {"synthetic"}
    assert {r.budget for r in results.runs} <= {2_000, None}
    assert "### synthetic, caches that expire" in report and "## Retrieval" not in report
    goals = [t.goal for t in results.targets]
    assert any("with caches that expire" in g for g in goals)
    assert any(g.startswith("the cold cut") for g in goals)
    assert all(t.met or t.why for t in results.targets)


def test_each_planted_fact_is_asked_and_answered_by_the_message_that_settled_it() -> None:
    from benchmarks import corpora, retrieval

    corpus = corpora.synthetic_corpus(300)
    conversation, thread = corpus.conversations[0], retrieval.spread(corpus)[0]
    asked = retrieval.fact_questions(conversation, thread)
    by_id = {m.id: m for m in thread}
    assert len(asked) == len(conversation.facts) == 8
    for q, fact in zip(asked, conversation.facts, strict=True):
        assert q.kind == "fact" and q.text == f"what was the {fact.cue}?"
        assert fact.value in by_id[q.answer].text and fact.value not in q.text


def test_the_lead_over_conversation_search_names_the_kinds_where_it_is_short() -> None:
    from benchmarks.retrieval import PEER, Retrieval, Score, targets

    def score(corpus: str, kind: str, method: str, top10: float) -> Score:
        return Score(corpus=corpus, kind=kind, method=method, questions=10, found=(0, 0, top10))

    scores = [
        score("chitchat", "all", "search", 0.8),
        score("chitchat", "all", PEER, 0.4),
        score("synthetic", "all", "search", 0.3),
        score("synthetic", "all", PEER, 0.2),
        score("synthetic", "forms", "search", 0.2),
        score("synthetic", "forms", PEER, 0.0),
        score("synthetic", "fact", "search", 1.0),
        score("synthetic", "fact", PEER, 1.0),
    ]
    lead = targets(Retrieval(scores=tuple(scores), timings=(), recalls=()), real=())[0]
    assert not lead.met and lead.numbers == "chitchat: 80% against 40%; synthetic: 30% against 20%"
    assert lead.why.startswith("on synthetic, by kind, forms 20% against 0%, fact 100% against")
    assert "chitchat" not in lead.why
