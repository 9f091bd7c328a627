"""The Markdown report: targets first, then how it was measured, then every number."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from history.store import ranking

from .config import Config
from .corpora import Corpus
from .cost import Run
from .latency import CONCURRENCY, Cuts, Load
from .retrieval import Retrieval, table
from .scale import Scale
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
    startups: Sequence[Startup] = ()
    """The command's start-up, per command line."""
    seconds: float = 0.0
    load: float = 0.0
    """The machine's one-minute load average when the run started."""


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def _budget(run: Run) -> str:
    return "-" if run.budget is None else f"{run.budget:,}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


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
        alone = _scale(results.scale) if results.scale is not None else _retrieval(results)
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
        "also marks the end of the outline's closed blocks (its view's cache points). Cache "
        "lifetimes are not modelled.",
        "- **chat-outline's prompt** is what `view()` builds for the conversation's agent, each "
        "of its parts one block: the outline's blocks of lines, then the tail with the agent's "
        "answers, its tool calls and results (the corpora's tool steps are the agent's own), and "
        "everyone else's messages.",
        f"- **Cost** in input-token equivalents: a cached token costs {c.prices.read}, a token "
        f"written to the cache {c.prices.write} (Anthropic-style only), any other 1. **Floor**: "
        f"{c.prices.read} x the prompt + the turn's new tokens.",
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
        "budget and keeps a third; the summary buffers (LangChain classic, LlamaIndex) keep two "
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
    header = ["strategy", "budget", "prompt", "peak", "prefix", "OpenAI read", "Anthropic read",
              "Anthropic write", "cost OpenAI", "cost Anthropic", "x floor", "summarizer",
              "total Anthropic", "calls/msg", "in/msg", "out/msg", "recall", "search"]  # fmt: skip
    for corpus in results.corpora:
        runs = [r for r in results.runs if r.corpus == corpus.name]
        out += [f"### {corpus.name}", ""]
        out += _table(header, [_row(r) for r in runs])
        chosen = [r for r in runs if r.budget in (c.reference, None)]
        out += [f"Where the cost over the floor comes from, at {c.reference:,} tokens:", ""]
        out += _table(
            ["strategy", "turns by kind (count, share of the cost over the floor, prefix kept)"],
            [[r.strategy, _breakdown(r)] for r in chosen],
        )
    out += _notes(results)
    out += _speed(results)
    out += startup_report(results.startups, results.config.startup)
    out += _retrieval(results)
    return "\n".join(out)


def _retrieval(results: Results) -> list[str]:
    if results.retrieval is None:
        return []
    c = results.config
    out = [
        "## Retrieval: search against plain BM25",
        "",
        f"{c.questions} questions of each kind per conversation, each with the one message that "
        "answers it, worded unlike it: **forms** (three of its rarest words, one in another "
        "form of its stem), **date** (one of its words and its day in words), **reply** (the "
        "words of a question, answered by the reply to it). Every conversation is spread over "
        "weeks (a message every 5 hours) and processed with the echo summarizer, tail 2,000 to "
        "6,000 tokens, outline 8,000 to 16,000 bytes. *search* is the thread's search; *BM25* "
        "rank-bm25's Okapi over the same messages, words lowercased, nothing stemmed. The time "
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
        "than the floor whatever the strategy; entries never expire here, where a real cache "
        "lasts minutes unless it is hit.",
        "",
    ]
    return out


def _row(r: Run) -> list[object]:
    return [
        r.strategy, _budget(r), f"{r.mean('tokens'):,.0f}", f"{max(t.tokens for t in r.turns):,}",
        _pct(r.share("prefix")),
        _pct(r.share("openai_read")), _pct(r.share("anthropic_read")),
        _pct(r.share("anthropic_write")), f"{r.mean('openai_cost'):,.0f}",
        f"{r.mean('anthropic_cost'):,.0f}", f"{r.floor_ratio():.2f}", f"{r.summarizer:,.1f}",
        f"{r.total('anthropic_cost'):,.0f}",
        f"{r.per_message('calls'):.3f}", f"{r.per_message('input_tokens'):,.0f}",
        f"{r.per_message('output_tokens'):,.0f}", _pct(r.recall), _pct(r.search),
    ]  # fmt: skip


def _breakdown(r: Run) -> str:
    total = sum(excess for _, excess in r.breakdown.values()) or 1.0
    return ", ".join(
        f"{kind}: {n} ({excess / total:.0%}"
        + ("" if kind == "grow" else f", {r.kept(kind):.0%} of the prompt still cached")
        + ")"
        for kind, (n, excess) in sorted(r.breakdown.items())
    )


def _speed(results: Results) -> list[str]:
    c = results.config
    out = ["## 2. Speed of the plugin", ""]
    if "speed" in results.plots:
        out += [f"![Speed]({results.plots['speed'].name})", ""]
    if results.throughputs:
        out += [
            "Messages through `message_created` plus processing (defaults, offline `scripted` "
            "summarizer, a SQLite file), against aiosqlite storing the same rows into the same "
            "schema (WAL, `synchronous = NORMAL`): *raw* is each message's row and its search "
            "row, one autocommit INSERT each, and a thread's postings written by the store's "
            "own statements once they are due, as the plugin leaves them (the rows are "
            "made before the clock starts: no tokenizer, no stemming); "
            "*messages alone* is the message row by itself, one autocommit INSERT, the least a "
            "store can do. The ratio is the plugin's against *raw*. They take turns three "
            "times on fresh files; the medians are shown. All rows in one transaction, for "
            "scale.",
            "",
        ]
        header = ["threads", "messages", "plugin msg/s", "raw msg/s", "ratio",
                  "messages alone rows/s", "raw, one transaction"]  # fmt: skip
        out += _table(header, [_throughput_row(t) for t in results.throughputs])
    if results.postgres:
        out += [
            "The same on PostgreSQL (`--postgres`): the plugin on a fresh schema against asyncpg "
            "storing the same rows into the same schema the same way (each on a third of the "
            "messages).",
            "",
        ]
        out += _table(header, [_throughput_row(t) for t in results.postgres])
    if results.views:
        checked = (
            "not checked"
            if results.fill_checked is None
            else "identical to the plugin's"
            if results.fill_checked
            else "**different from the plugin's**"
        )
        out += [
            "`view()` (the outline row, its nodes and the tail read from the store and built "
            "into the agent's pydantic-ai messages; median of "
            f"{c.repeats}, the threads taking turns). The threads are filled by the real "
            "processor in memory and written in bulk; on the smallest one the tree and outline "
            "were checked: "
            f"{checked}.",
            "",
        ]
        out += _table(
            ["messages", "view (ms)", "outline lines", "prompt tokens"],
            [
                [f"{v.messages:,}", f"{v.seconds * 1000:.1f}", f"{v.lines:,}", f"{v.tokens:,}"]
                for v in results.views
            ],
        )
    if results.memory is not None:
        out += [
            f"Peak Python memory while the plugin takes and processes {c.memory:,} messages "
            f"(tracemalloc; SQLite's own cache not included): {results.memory:.1f} MiB.",
            "",
        ]
    if results.scale is not None:
        out += _scale(results.scale)
    out += ["## 3. Latency under a slow summarizer", ""]
    if results.cuts is not None:
        k = results.cuts
        out += [
            f"A summarizer that sleeps {k.delay * 1000:.0f} ms a call, a small tail so that "
            f"messages leave it often. One thread: {k.count} cuts, {k.asks:.1f} calls each; a cut "
            f"takes {k.median:.2f} s (median), {k.longest:.2f} s at most: its calls are made one "
            "after another.",
            "",
        ]
    if results.loads:
        out += [
            f"Many threads at once (the plugin allows {CONCURRENCY} calls in flight):",
            "",
        ]
        out += _table(
            ["threads", "messages", "calls", "seconds", "calls/s", "bound calls/s", "of bound"],
            [_load_row(x, c.delay) for x in results.loads],
        )
    return out


def _scale(scale: Scale) -> list[str]:
    one = next(i for i in scale.ingests if i.threads == 1)
    out = [
        "### The scale run",
        "",
        f"{one.messages:,} synthetic messages handed over {one.slice:,} at a time (each slice "
        "waited for until processed), into one thread and dealt over "
        + " and ".join(f"{i.threads:,}" for i in scale.ingests if i.threads > 1)
        + " threads; defaults, the offline `scripted` summarizer, a SQLite file. For each slice, "
        "the milliseconds of the process's CPU time a message (its threads, aiosqlite's "
        "included), then messages per second by the wall clock, which follows whatever else "
        f"the machine runs ({scale.seconds:.0f} s in all), and the lines asked of the "
        "summarizer per message (how much of the slice was cuts):",
        "",
    ]
    slices = max(len(i.rates) for i in scale.ingests)
    out += _table(
        ["threads", "", *(f"{(k + 1) * one.slice:,}" for k in range(slices)), "last / first"],
        [
            row
            for i in scale.ingests
            for row in (
                [f"{i.threads:,}", "CPU ms", *(f"{c:.2f}" for c in i.cpu), f"{i.growth:.2f}x"],
                ["", "msg/s", *(f"{r:,.0f}" for r in i.rates), f"{i.wall_growth:.2f}x"],
                ["", "lines asked/msg", *(f"{a:.2f}" for a in i.asks), ""],
            )
        ],
    )
    if scale.reads:
        out += [
            "Reads in the one thread as it grew (median CPU time of five, ms): `view()` for its "
            "agent, `zoom` into the outline's first line, `search` for two common words.",
            "",
        ]
        rows = [
            [f"{r.messages:,}", f"{r.view * 1000:.1f}", f"{r.zoom * 1000:.2f}",
             f"{r.search * 1000:.1f}", f"{r.lines:,}"]
            for r in scale.reads
        ]  # fmt: skip
        out += _table(["messages", "view", "zoom", "search", "outline lines"], rows)
        first, last = scale.reads[0], scale.reads[-1]
        out += [
            f"`view()` at {last.messages:,} messages took {last.view / first.view:.2f}x its time "
            f"at {first.messages:,}; `search` {last.search / first.search:.1f}x: a search ranks "
            "(bm25) the rows that hold its words, but of a word more than "
            f"{ranking.CANDIDATES:,} messages (or lines) hold only the newest "
            f"{ranking.CANDIDATES:,}, so its time stops growing once its words are that common.",
            "",
        ]
    out += [f"Peak resident memory of the process that ran it: {scale.peak_mib:,.0f} MiB.", ""]
    return out


def _throughput_row(t: Throughput) -> list[object]:
    return [
        t.threads, f"{t.messages:,}", f"{t.plugin:,.0f}", f"{t.raw:,.0f}", f"{t.ratio:.3f}",
        f"{t.raw_messages:,.0f}", f"{t.raw_batched:,.0f}",
    ]  # fmt: skip


def _load_row(x: Load, delay: float) -> list[object]:
    return [
        x.threads, x.messages, x.asks, f"{x.seconds:.1f}", f"{x.asks_per_second:.1f}",
        f"{x.bound(delay):.1f}", _pct(x.asks_per_second / x.bound(delay)),
    ]  # fmt: skip
