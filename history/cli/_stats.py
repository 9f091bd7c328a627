"""`chat-outline stats`: the summarizer's recorded calls, tokens and cost, per thread and per
model, priced by each model's known price or the prices given."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

import anyio

from ._options import THREAD_HELP, Commands, command, db_option, json_option
from ._stores import must_exist, opened


def register(commands: Commands) -> None:
    stats = command(
        commands, "stats", _run, help="the summarizer's calls, tokens and cost per thread"
    )
    stats.add_argument("--thread", help=f"one thread only: {THREAD_HELP}")
    stats.add_argument(
        "--by",
        choices=("thread", "space"),
        default="thread",
        help="one row per thread (with its space and fallback lines), or per space",
    )
    stats.add_argument(
        "--input-price",
        type=_price,
        help="price of a million input tokens, for every model (each model's known price)",
    )
    stats.add_argument(
        "--output-price",
        type=_price,
        help="price of a million output tokens, for every model (each model's known price)",
    )
    json_option(stats)
    db_option(stats)


def _price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"a price must be a number >= 0, got {text!r}")
    return value


def _run(args: argparse.Namespace) -> int:
    must_exist(args.db)
    return anyio.run(_stats, args)


async def _stats(args: argparse.Namespace) -> int:
    from ..metering import SpaceUsage, priced_usage
    from ._report import resolve

    async with opened(args.db, create=True, read_only=True) as store:
        thread = None if args.thread is None else await resolve(store, args.thread)
        meter = await priced_usage(
            store, thread, input_price=args.input_price, output_price=args.output_price
        )
    unpriced = [m.model for m in meter.models if m.cost is None]
    if unpriced:
        print(
            f"chat-outline: no known price for {', '.join(map(repr, unpriced))}: its calls are "
            "left out of the cost (give --input-price and --output-price)",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(asdict(meter)))
        return 0
    from rich.console import Console
    from rich.table import Table

    by_space = args.by == "space"
    first = ("space", "threads") if by_space else ("thread", "space")
    table = Table(title="summarizer calls" + (" per space" if by_space else ""))
    for column in (*first, "calls", "input tokens", "output tokens", "cost", "fallback lines"):
        table.add_column(column, justify="left" if column in ("thread", "space") else "right")
    rows = meter.spaces if by_space else meter.threads
    for row in rows:
        named = (
            (_space(row.space), f"{row.threads:,}")
            if isinstance(row, SpaceUsage)
            else (row.thread, _space(row.space))
        )
        table.add_row(
            *named,
            f"{row.calls:,}",
            f"{row.input_tokens:,}",
            f"{row.output_tokens:,}",
            f"{row.cost:,.4f}",
            f"{row.fallbacks:,}",
        )
    table.add_section()
    table.add_row(
        "total",
        f"{len(meter.threads):,}" if by_space else "",
        f"{meter.calls:,}",
        f"{meter.input_tokens:,}",
        f"{meter.output_tokens:,}",
        f"{meter.cost:,.4f}",
        f"{sum(r.fallbacks for r in meter.threads):,}",
        style="bold",
    )
    models = Table(title="per model (prices per million tokens)")
    for column in ("model", "calls", "input tokens", "output tokens", "input", "output", "cost"):
        models.add_column(column, justify="left" if column == "model" else "right")
    for m in meter.models:
        models.add_row(
            m.model,
            f"{m.calls:,}",
            f"{m.input_tokens:,}",
            f"{m.output_tokens:,}",
            _money(m.input_price),
            _money(m.output_price),
            _money(m.cost),
        )
    console = Console()
    console.print(table)
    if meter.models:
        console.print(models)
    return 0


def _space(space: str | None) -> str:
    return "(none)" if space is None else space


def _money(value: float | None) -> str:
    return "?" if value is None else f"{value:,.4f}"
