"""The Markdown report: targets first, then how it was measured, then every number."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .cache import EXPIRING, FOREVER
from .config import Config
from .corpora import Corpus
from .cost import Run
from .latency import Cuts, Load
from .readers import Readers
from .readers import section as readers_section
from .retrieval import FEW, Retrieval, table
from .scale import Scale
from .sections import pct as _pct
from .sections import scale as _scale
from .sections import speed as _speed
from .sections import table as _table
from .size import Size
from .size import section as size_section
from .speed import Throughput, ViewTime
from .startup import Startup
from .startup import report as startup_report
from .targets import Target


@dataclass(frozen=True, kw_only=True)
class Results:
    """Everything one run measured."""

    config: Config
    command: str
    corpora: Sequence[Corpus]
    skipped: dict[str, str]
    """Strategies and corpora that could not run here, and why."""
    runs: Sequence[Run]
    throughputs: Sequence[Throughput] = ()
    postgres: Sequence[Throughput] = ()
    """The throughput on PostgreSQL, when a server was given."""
    scale: Scale | None = None
    fill_checked: bool | None = None
    views: Sequence[ViewTime] = ()
    memory: float | None = None
    cuts: Cuts | None = None
    loads: Sequence[Load] = ()
    targets: Sequence[Target] = ()
    plots: dict[str, Path] = field(default_factory=dict)
    retrieval: Retrieval | None = None
    """Search against plain BM25, the recall block and search times (`retrieval`)."""
    readers: Sequence[Readers] = ()
    """`view()` and the event loop beside writers, and alone (`readers`)."""
    sizes: Sequence[Size] = ()
    """The store's size against its input, per corpus (`size`)."""
    startups: Sequence[Startup] = ()
    """The command's start-up, per command line."""
    seconds: float = 0.0
    load: float = 0.0
    """The machine's one-minute load average when the run started."""


def _budget(run: Run) -> str:
    return "-" if run.budget is None else f"{run.budget:,}"


def render(results: Results) -> str:
    c = results.config
    out = [
        "# chat-outline benchmarks",
        "",
        f"`{results.command}`: {results.seconds:.0f} s on {os.cpu_count()} cores (load "
        f"{results.load:.1f} at the start), Python {platform.python_version()}. Costs, recall "
        "and summarizer counts are deterministic; times depend on what else the machine runs.",
        "",
        "## Targets",
        "",
    ]
    out += _table(
        ["target", "verdict", "measured"],
        [[t.goal, "**met**" if t.met else "**missed**", t.numbers] for t in results.targets],
    )
    missed = [t for t in results.targets if not t.met]
    if missed:
        out += ["### Why the missed targets are missed", ""]
        said: set[str] = set()
        for t in missed:
            out.append(f"- **{t.goal}**: {t.why if t.why not in said else 'as above.'}")
            said.add(t.why)
        out.append("")
    if not results.runs:  # one benchmark run alone
        if results.scale is not None:
            alone = _scale(results.scale)
        else:
            alone = _retrieval(results) + size_section(results.sizes)
        return "\n".join(out + alone)

    out += [
        "## How it is measured",
        "",
        "- **A turn** is one message arriving: each strategy takes it and returns what its agent "
        "is sent now. Every message is rendered the same way for every strategy: the agent's "
        "own answers as their text, everyone else's messages and the tool steps as "
        "`author → to: text`; a prompt is a list of blocks (each message, a summary, the "
        "outline in blocks of lines), each tokenized on its own with `cl100k_base`, plus one "
        "separator token per block, which stands for the role a provider is sent with each "
        "(chat-outline's blocks are its view's parts without the role line that "
        "`prompt_text` writes; each outline block is framed as pydantic-ai's model adapters "
        "send it, as a summary of the earlier conversation, about 40 tokens a block).",
        "- **Prompt** and **peak**: a turn's prompt in tokens, on average and at its largest. "
        "A budget bounds the peak, give or take what a strategy keeps whole: the message that "
        "arrives last, and for chat-outline its newest `kept` messages and the tool steps after "
        "them (the synthetic chat's long tool results take it past its budget).",
        "- **Prefix**: the tokens shared with the previous turn's prompt. **OpenAI-style cache**: "
        "the prefix is read from the cache from 1,024 tokens on, in steps of 128. "
        "**Anthropic-style cache**: a prefix is written at each cache mark (from 1,024 tokens); a "
        "turn reads the longest written prefix that is still its own prefix and ends on one of its "
        "block boundaries within 20 blocks before one of its marks, and writes up to its last "
        "mark. Every strategy marks the end of its prompt and the end of its summary; chat-outline "
        "also marks the end of the outline's closed blocks (its view's cache points).",
        "- **Two worlds**: every cost table is given twice. *Caches that never expire*: the "
        "models above, an entry living for ever. *Caches that expire*: each turn is sent at its "
        "message's time and an entry unused for the provider's retention is gone "
        "(pydantic-ai's profiles: Anthropic's 5 minutes, its write 1.25x; OpenAI's GPT-5.6 and "
        "later, 30 minutes, with explicit breakpoints at the marks, up to 4, a write 1.25x); "
        "after a pause longer than that the floor is the whole prompt written again. The "
        "synthetic chat is human-paced (the agent within seconds, a person's reply within "
        "seconds to minutes, now and then hours or days later: `benchmarks.synthetic.PAUSES`); "
        "the datasets carry no times, and come one message a minute.",
        "- **chat-outline's prompt** is what `view()` builds for the conversation's agent, each "
        "of its parts one block: the outline's blocks of lines, then the tail with the agent's "
        "answers, its tool calls and results (the corpora's tool steps are the agent's own), and "
        "everyone else's messages.",
        f"- **Cost** in input-token equivalents: a cached token costs {c.prices.read}, a token "
        f"written to the cache {c.prices.write} (Anthropic-style only), any other 1. **Floor**: "
        f"{c.prices.read} x the prompt + the turn's new tokens, or after a pause longer than "
        "the provider's cache lives the whole prompt at its write price (each provider's own: "
        "Anthropic's entry is gone after 5 minutes, GPT-5.6's after 30).",
        f"- **Summarizers**: every strategy's is the same fake: a summary keeps "
        f"{c.behaviour.share:.0%} of the tokens it is asked to compress, at most "
        f"{c.behaviour.cap:,} tokens (and, for chat-outline, within the line limit it is told), "
        "names, numbers and ids first. Its input tokens are everything it is sent (instructions "
        "and prompt templates included). Its spend is priced beside the prompt: an input token "
        f"at {c.prices.summary_input}, an output token at {c.prices.summary_output} (a small "
        "model's prices against the agent's), and the cost per turn compared with the peers' "
        "is the prompt's plus the summarizer's.",
        f"- **Budgets** ({', '.join(f'{b:,}' for b in c.budgets)} tokens): chat-outline runs "
        "`HistorySettings.for_budget(budget)`, what a user gets for a budget: the tail grows to "
        "1/2 of the budget and is cut to 1/10 (but to at least 1,024 tokens with a folded "
        "outline, up to 1/4), the outline folds from 6/5 of it to 3/10 in bytes (three bytes "
        "to a token), each agent's step outline from 3/10 to 3/40, a line at most "
        "1/24 of the outline's bound (up to 512 bytes), and one message "
        "kept whole per 20,000 tokens (1 to 4); LangChain's middleware triggers at the "
        "budget and keeps a third, and so do pydantic-ai-harness's summarizing and sliding-window "
        "compactions (`max_tokens`, `keep_tokens`) and summarization-pydantic-ai; harness's "
        "tiered compaction targets the budget with its README's tiers; OpenAI's compaction "
        "compacts past the budget, Anthropic's past its default 150,000 tokens (its least is "
        "50,000, over every budget); the summary buffers (LangChain classic, LlamaIndex) keep two "
        "thirds whole; the rolling window keeps the budget. The full history has none. All count "
        "tokens with the same tokenizer; everything else is each library's default.",
        "- **Recall**: eight facts (codes, numbers, names, a date) are planted in the first tenth "
        "of every conversation; recall is the share whose exact value is in the last prompt. "
        "For chat-outline, *search* is the share the thread's search (ten hits) finds for "
        "the fact's words: in a hit's line, or in the message a level-0 hit names.",
        "",
        "## Corpora",
        "",
    ]
    out += _table(
        ["corpus", "conversations", "messages", "what"],
        [[k.name, len(k.conversations), f"{k.messages:,}", k.about] for k in results.corpora],
    )
    if results.skipped:
        out += ["Not run here:", ""]
        out += [f"- {name}: {reason}" for name, reason in results.skipped.items()] + [""]

    out += ["## 1. Cost and cache per turn", ""]
    for name, label in (("cost_per_turn", "Cost per turn"), ("cost_recall", "Cost against recall")):
        if name in results.plots:
            out += [f"![{label}]({results.plots[name].name})", ""]
    header = [
        "strategy",
        "budget",
        "prompt",
        "peak",
        "prefix",
        "OpenAI read",
        "Anthropic read",
        "Anthropic write",
        "cost OpenAI",
        "cost Anthropic",
        "x floor OpenAI / Anthropic",
        "summarizer",
        "total Anthropic",
        "calls/msg",
        "in/msg",
        "out/msg",
        "recall",
        "search",
    ]
    for expiring in (False, True):
        world = EXPIRING if expiring else FOREVER
        for corpus in results.corpora:
            runs = [r.world(expiring) for r in results.runs if r.corpus == corpus.name]
            out += [f"### {corpus.name}, {world.name}", ""]
            out += _table(header, [_row(r) for r in runs])
            chosen = [r for r in runs if r.budget in (c.reference, None)]
            out += [f"Where the cost over the floor comes from, at {c.reference:,} tokens:", ""]
            out += _table(
                [
                    "strategy",
                    "turns by kind (count, share of the cost over the floor, prefix kept)",
                ],
                [[r.strategy, _breakdown(r)] for r in chosen],
            )
    out += _notes(results)
    out += _speed(results)
    out += readers_section(results.readers)
    out += startup_report(results.startups, results.config.startup)
    out += _retrieval(results)
    out += size_section(results.sizes)
    return "\n".join(out)


def _retrieval(results: Results) -> list[str]:
    if results.retrieval is None:
        return []
    c = results.config
    out = [
        "## Retrieval: search against plain BM25",
        "",
        f"{c.questions} questions of each kind per conversation, each with the one message that "
        "answers it, worded unlike it: **forms** (three of its words, one or two in another "
        "form of their stem that English uses), **date** (one of its words and its day in "
        "words), **reply** (two words of a question, answered by the reply to it), the words "
        "of a forms or reply "
        f"question held together by at most {FEW} messages of the thread (a question "
        "hundreds of messages answer alike measures nothing); and **fact**: each of the "
        'eight facts planted in a conversation, asked by what it is called ("what was the booking '
        'code?"), answered by the message that settled it. Every conversation is spread over '
        "weeks (a message every 5 hours) and processed with the echo summarizer, tail 2,000 to "
        "6,000 tokens, outline 8,000 to 16,000 bytes. *search* is the thread's search; *BM25* "
        "rank-bm25's Okapi over the same messages, words lowercased, nothing stemmed; "
        "*ConversationSearch* pydantic-ai-harness's tool over what its StepPersistence stored "
        "(docs/benchmarks.md). The time "
        "is one thread's search (600 messages and the lines of their tree) in stores of "
        "threads like it; the recall block is what `view(..., recall=400)` would append for "
        "each question asked as the newest message.",
        "",
    ]
    return out + table(results.retrieval, _pct)


def _notes(results: Results) -> list[str]:
    c = results.config
    out = ["### Notes", ""]
    at = [r for r in results.runs if r.budget == c.reference]
    ours = [r for r in at if r.strategy == "chat-outline"]
    peer = {r.corpus: r for r in at if r.strategy == "langchain-middleware"}
    if ours:
        calls = "; ".join(
            f"{r.corpus}: {r.per_message('calls'):.2f} calls and "
            f"{r.per_message('input_tokens'):,.0f} input tokens per message"
            + (
                f" against the middleware's {peer[r.corpus].per_message('calls'):.3f} and "
                f"{peer[r.corpus].per_message('input_tokens'):,.0f}"
                if r.corpus in peer
                else ""
            )
            for r in ours
        )
        out.append(
            f"- **Summarizer work** at {c.reference:,} tokens: {calls}. chat-outline asks once "
            "for every message over the line limit that leaves the tail and once for every merge "
            "over it: many small calls. The middleware asks once per trigger for everything that "
            "leaves: few large ones."
        )
    out += [
        "- **LangChain's middleware** summarizes at most the last 4,000 tokens of what leaves "
        "(its default `trim_tokens_to_summarize`): when a trigger drops more than that, its "
        "previous summary is dropped too, with every fact it held.",
        "- **The cache models** read nothing under 1,024 tokens, so short prompts cost more "
        "than the floor whatever the strategy. With caches that expire, every strategy pays "
        "its whole prompt again after a pause longer than the cache lives, so the shorter "
        "prompt wins more there; `chat-outline-cold` cuts on such a turn (SPEC section 5).",
        "",
    ]
    return out


def _row(r: Run) -> list[object]:
    return [
        r.strategy,
        _budget(r),
        f"{r.mean('tokens'):,.0f}",
        f"{max(t.tokens for t in r.turns):,}",
        _pct(r.share("prefix")),
        _pct(r.share("openai_read")),
        _pct(r.share("anthropic_read")),
        _pct(r.share("anthropic_write")),
        f"{r.mean('openai_cost'):,.0f}",
        f"{r.mean('anthropic_cost'):,.0f}",
        f"{r.floor_ratio('openai_cost'):.2f} / {r.floor_ratio():.2f}",
        f"{r.summarizer:,.1f}",
        f"{r.total('anthropic_cost'):,.0f}",
        f"{r.per_message('calls'):.3f}",
        f"{r.per_message('input_tokens'):,.0f}",
        f"{r.per_message('output_tokens'):,.0f}",
        _pct(r.recall),
        _pct(r.search),
    ]


def _breakdown(r: Run) -> str:
    total = sum(excess for _, excess in r.breakdown.values()) or 1.0
    return ", ".join(
        f"{kind}: {n} ({excess / total:.0%}"
        + ("" if kind == "grow" else f", {r.kept(kind):.0%} of the prompt still cached")
        + ")"
        for kind, (n, excess) in sorted(r.breakdown.items())
    )
