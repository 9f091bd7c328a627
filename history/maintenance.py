"""The commands that look after a store and its pinned calls: rebuild, export, load and stats.

    chat-outline rebuild THREAD [--allow-model-calls] [--dry-run] [--force] [--db PATH] [budgets]
    chat-outline export [THREAD] --out FILE [--db PATH]
    chat-outline load FILE [--db PATH]
    chat-outline stats [--thread T] [--input-price P] [--output-price P] [--json] [--db PATH]

`history.cli` registers them and hands them their parsed arguments; errors are raised as
`HistoryError`s, which the command line prints. A refused rebuild exits with status 3.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import anyio

from .errors import InputError, NotFoundError, RebuildRefused, UnpinnedError
from .options import Parser, db_option, given_budgets, json_option
from .report import resolve

if TYPE_CHECKING:
    from .carry import Exported
    from .settings import HistorySettings
    from .store import Store
    from .store.records import ThreadRecords

COMMANDS = ("rebuild", "export", "load", "stats")
REFUSED = 3
"""The exit status of a rebuild refused because it would call the model."""


def add_commands(
    commands: argparse._SubParsersAction[Parser],
    *,
    budgets: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add the four commands; `budgets` adds the `--line`, `--tail`, ... options."""
    rebuild = commands.add_parser(
        "rebuild",
        help="rebuild a thread's tree and outline from its messages, replaying recorded calls",
    )
    rebuild.add_argument("thread")
    rebuild.add_argument(
        "--allow-model-calls",
        action="store_true",
        help="ask the model for lines that no recorded call answers (refused otherwise)",
    )
    rebuild.add_argument(
        "--dry-run", action="store_true", help="count what the rebuild would do; change nothing"
    )
    rebuild.add_argument(
        "--force",
        action="store_true",
        help="rebuild even when it leaves summarized messages without a line (a larger tail)",
    )
    db_option(rebuild)
    budgets(rebuild)

    export = commands.add_parser(
        "export", help="write a thread (or every thread) with its lines and calls to JSONL"
    )
    export.add_argument("thread", nargs="?", help="the thread (every thread when left out)")
    export.add_argument("--out", required=True, help="the JSONL file to write, or - for stdout")
    db_option(export)

    load = commands.add_parser(
        "load", help="load an export into a store; what it holds already is skipped"
    )
    load.add_argument("file", type=Path, help="an export (JSONL), or - for standard input")
    db_option(load)

    stats = commands.add_parser("stats", help="the summarizer's calls, tokens and cost per thread")
    stats.add_argument("--thread", help="one thread only")
    stats.add_argument(
        "--input-price",
        type=_price,
        help="price of a million input tokens, for every model (each model's known price)",
    )
    stats.add_argument(
        "--output-price", type=_price,
        help="price of a million output tokens, for every model (each model's known price)",
    )  # fmt: skip
    json_option(stats)
    db_option(stats)


def run(
    args: argparse.Namespace, settings_of: Callable[[argparse.Namespace], HistorySettings]
) -> int:
    """Run one of the commands; its exit status."""
    if args.command == "load":
        records = _read(args.file)
        return anyio.run(_load, args.db, records)
    _must_exist(args.db)
    if args.command == "rebuild":
        settings = settings_of(args)
        try:
            return anyio.run(_rebuild, args, settings)
        except (UnpinnedError, RebuildRefused) as exc:
            print(f"chat-outline: {exc}", file=sys.stderr)
            return REFUSED
    if args.command == "export":
        return _export(args)
    return anyio.run(_stats, args)


def _price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"a price must be a number >= 0, got {text!r}")
    return value


def _must_exist(where: str) -> None:
    """Refuse a SQLite path with no file, rather than create an empty store there."""
    if "://" not in where and where != ":memory:" and not Path(where).exists():
        raise NotFoundError(f"no store at {where!r} (give its path with --db)")


@asynccontextmanager
async def _opened(
    where: str, *, create: bool = True, read_only: bool = False
) -> AsyncIterator[Store]:
    from .store import open_store

    store = open_store(where, create=create, read_only=read_only)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def _rebuild(args: argparse.Namespace, settings: HistorySettings) -> int:
    """With the settings the thread was built with, but those the options give."""
    from .rebuild import rebuild
    from .settings import built_with, differences, listed

    async with _opened(args.db, create=False) as store:
        thread = await resolve(store, args.thread)
        record = next((a.settings for a in await store.about(thread) if a.settings), None)
        if record is not None:
            settings = built_with(record, settings).with_changes(**given_budgets(args))
        done = await rebuild(
            store,
            thread,
            settings,
            allow_model_calls=args.allow_model_calls,
            dry_run=args.dry_run,
            force=args.force,
        )
    verb = "would rebuild" if args.dry_run else "rebuilt"
    calls = "would make" if args.dry_run else "made"
    changed = differences(record, settings) if record is not None else {}
    if record is None:
        how = f"with {listed(_budgets_of(settings))} (no settings were recorded for it)"
    elif changed:
        now = listed({name: new for name, (_, new) in changed.items()})
        was = listed({name: old for name, (old, _) in changed.items()})
        how = f"with {now} (built with {was})"
    else:
        how = "with the settings it was built with"
    print(
        f"{verb} thread {done.thread!r} {how} from {done.messages} messages: {done.summaries} "
        f"lines in the tree, {len(done.outline.lines)} in the outline ({done.outline.bytes} "
        f"bytes); {done.asks} lines asked, {done.replayed} answers replayed, {calls} "
        f"{done.model_calls} model calls"
    )
    return 0


def _budgets_of(settings: HistorySettings) -> dict[str, object]:
    return {"line": settings.line, "tail": settings.tail, "outline": settings.outline,
            "kept": settings.kept}  # fmt: skip


def _export(args: argparse.Namespace) -> int:
    from .carry import export

    async def to(out: TextIO) -> Exported:
        async with _opened(args.db, read_only=True) as store:
            thread = None if args.thread is None else await resolve(store, args.thread)
            return await export(store, out, thread)

    if args.out == "-":
        try:
            done = anyio.run(to, sys.stdout)
        except BrokenPipeError:  # the reader stopped early (`| head`): not an error of ours
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    else:
        try:
            done = _write_aside(Path(args.out), to)
        except OSError as exc:
            raise InputError(f"cannot write {args.out!r}: {exc.strerror or exc}") from None
    print(f"exported {done.threads} thread(s), {done.records} records", file=sys.stderr)
    return 0


def _write_aside(target: Path, write: Callable[[TextIO], Awaitable[Exported]]) -> Exported:
    """Write a new file aside, then move it into place: a failed export leaves no partial file.

    The file aside is created afresh (`O_EXCL`, an unpredictable name, in the target's
    directory so the move is atomic): nothing planted there beforehand, a symbolic link say,
    is ever followed or written to.
    """
    fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            done = anyio.run(write, out)
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
    return done


def _read(path: Path) -> list[ThreadRecords]:
    from .carry import read_records
    from .limits import lines_of

    if str(path) == "-":
        return read_records(lines_of(sys.stdin.buffer, name="<stdin>"), source="<stdin>")
    try:
        with path.open("rb") as source:
            return read_records(lines_of(source, name=str(path)), source=str(path))
    except OSError as exc:
        raise InputError(f"cannot read {str(path)!r}: {exc.strerror}") from None


async def _load(where: str, records: list[ThreadRecords]) -> int:
    async with _opened(where) as store:
        done = await store.load_records(records)
    print(
        f"loaded {done.threads} thread(s): {done.written} records written, {done.skipped} "
        "already stored"
    )
    return 0


async def _stats(args: argparse.Namespace) -> int:
    from .metering import priced_usage

    async with _opened(args.db, read_only=True) as store:
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

    table = Table(title="summarizer calls")
    for column in ("thread", "calls", "input tokens", "output tokens", "cost"):
        table.add_column(column, justify="left" if column == "thread" else "right")
    for row in meter.threads:
        table.add_row(
            row.thread, f"{row.calls:,}", f"{row.input_tokens:,}", f"{row.output_tokens:,}",
            f"{row.cost:,.4f}",
        )  # fmt: skip
    table.add_section()
    table.add_row(
        "total", f"{meter.calls:,}", f"{meter.input_tokens:,}", f"{meter.output_tokens:,}",
        f"{meter.cost:,.4f}", style="bold",
    )  # fmt: skip
    models = Table(title="per model (prices per million tokens)")
    for column in ("model", "calls", "input tokens", "output tokens", "input", "output", "cost"):
        models.add_column(column, justify="left" if column == "model" else "right")
    for m in meter.models:
        models.add_row(
            m.model, f"{m.calls:,}", f"{m.input_tokens:,}", f"{m.output_tokens:,}",
            _money(m.input_price), _money(m.output_price), _money(m.cost),
        )  # fmt: skip
    console = Console()
    console.print(table)
    if meter.models:
        console.print(models)
    return 0


def _money(value: float | None) -> str:
    return "?" if value is None else f"{value:,.4f}"
