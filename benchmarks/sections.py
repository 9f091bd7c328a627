"""The report's sections on the plugin's speed and latency, and the Markdown every section
writes its tables with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from history.store._search import ranking

from .latency import CONCURRENCY, Load
from .scale import Scale
from .speed import Throughput

if TYPE_CHECKING:
    from .report import Results


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def speed(results: Results) -> list[str]:
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
        header = [
            "threads",
            "messages",
            "plugin msg/s",
            "raw msg/s",
            "ratio",
            "messages alone rows/s",
            "raw, one transaction",
        ]
        out += table(header, [_throughput_row(t) for t in results.throughputs])
    if results.postgres:
        out += [
            "The same on PostgreSQL (`--postgres`): the plugin on a fresh schema against asyncpg "
            "storing the same rows into the same schema the same way (each on a third of the "
            "messages).",
            "",
        ]
        out += table(header, [_throughput_row(t) for t in results.postgres])
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
        out += table(
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
        out += scale(results.scale)
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
        out += table(
            ["threads", "messages", "calls", "seconds", "calls/s", "bound calls/s", "of bound"],
            [_load_row(x, c.delay) for x in results.loads],
        )
    return out


def scale(scale: Scale) -> list[str]:
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
    out += table(
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
            [
                f"{r.messages:,}",
                f"{r.view * 1000:.1f}",
                f"{r.zoom * 1000:.2f}",
                f"{r.search * 1000:.1f}",
                f"{r.lines:,}",
            ]
            for r in scale.reads
        ]
        out += table(["messages", "view", "zoom", "search", "outline lines"], rows)
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
        t.threads,
        f"{t.messages:,}",
        f"{t.plugin:,.0f}",
        f"{t.raw:,.0f}",
        f"{t.ratio:.3f}",
        f"{t.raw_messages:,.0f}",
        f"{t.raw_batched:,.0f}",
    ]


def _load_row(x: Load, delay: float) -> list[object]:
    return [
        x.threads,
        x.messages,
        x.asks,
        f"{x.seconds:.1f}",
        f"{x.asks_per_second:.1f}",
        f"{x.bound(delay):.1f}",
        pct(x.asks_per_second / x.bound(delay)),
    ]
