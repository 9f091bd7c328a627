"""The commands that fill a store and look into it: ingest, threads, show, prompt, zoom, search,
erase and demo.

Exit codes: 0 done; 1 the input has bad records, and nothing was written; 2 a mistake to fix
(a file that cannot be read, a format that cannot be told, a database that is not ours, a thread
that does not exist, settings that cannot work).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import report
from .errors import NotFoundError, StoreError
from .ingest import FORMATS, Parsed, Problem, conflicts, read, store_all, strays
from .plugin import History
from .processors.erase import erase
from .settings import HistorySettings
from .store import Store, open_store
from .view import render_view, search, zoom

NAMES = ("ingest", "threads", "show", "prompt", "zoom", "search", "erase", "demo")
DEFAULT_DB = "chat-history.sqlite"

Budgets = Callable[[argparse.ArgumentParser], None]
SettingsOf = Callable[[argparse.Namespace], HistorySettings]


def positive(text: str) -> int:
    """An argparse type: a whole number above 0."""
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"must be a whole number above 0, got {text!r}")
    return int(text)


def db_option(parser: argparse.ArgumentParser, default: str | None = DEFAULT_DB) -> None:
    parser.add_argument("--db", default=default, help=f"the store: a SQLite path ({DEFAULT_DB})")


def register(commands: Any, *, budgets: Budgets) -> None:
    """Add the commands to the `chat-history` parser's subcommands."""
    from .demo import register_demo

    db = db_option

    ingest = commands.add_parser(
        "ingest", help="read conversation files into a store, then build their histories"
    )
    ingest.add_argument(
        "files", type=Path, nargs="+", metavar="FILE",
        help="a JSONL history, a ChatGPT export (conversations.json, or its zip), "
        "a pydantic-ai message history, or a list of chat messages",
    )  # fmt: skip
    ingest.add_argument("--format", choices=FORMATS, help="the files' format (told by default)")
    ingest.add_argument("--thread", help="the thread of a one-conversation file (its name)")
    ingest.add_argument(
        "--skip-bad", action="store_true", help="ingest the good records when some are bad"
    )
    db(ingest)
    budgets(ingest)

    threads = commands.add_parser("threads", help="every thread with its figures")
    db(threads)

    show = commands.add_parser("show", help="a thread's summary tree, outline and tail")
    show.add_argument("thread")
    show.add_argument("--depth", type=positive, help="levels drawn under each top node (all)")
    db(show)

    prompt = commands.add_parser("prompt", help="exactly what an agent of the thread is sent")
    prompt.add_argument("thread")
    prompt.add_argument("--agent", help="whose view: its messages are its own turns (nobody's)")
    db(prompt)
    budgets(prompt)

    zoom = commands.add_parser("zoom", help="open a line into the two under it, or a message")
    zoom.add_argument("thread")
    zoom.add_argument("label", help="a node's label, such as 0+8, or a message's, such as 12+1")
    zoom.add_argument("--page", type=positive, default=1, help="the page of a long message (1)")
    db(zoom)
    budgets(zoom)

    search = commands.add_parser("search", help="the lines and messages that hold some words")
    search.add_argument("thread")
    search.add_argument("words", nargs="+")
    search.add_argument("--limit", type=positive, default=10, help="the most results shown (10)")
    db(search)
    budgets(search)

    erase = commands.add_parser("erase", help="delete a thread: its messages, lines and outline")
    erase.add_argument("thread")
    db(erase)

    register_demo(commands, budgets=budgets)


def run(args: argparse.Namespace, settings_of: SettingsOf) -> int:
    """Run one of the commands in NAMES; errors reach the caller, which reports them."""
    _log_to_stderr()
    if args.command == "ingest":
        return _ingest(args, settings_of(args))
    if args.command == "demo":
        from .demo import run_demo

        return run_demo(args, settings_of)
    if args.command in ("prompt", "zoom", "search"):
        return anyio.run(_read_side, args, settings_of(args))
    return int(anyio.run(_inspect, args))


def out() -> Console:
    return Console(highlight=False, soft_wrap=False)


def err() -> Console:
    return Console(stderr=True, highlight=False)


def _log_to_stderr() -> None:
    root = logging.getLogger("history")
    if not root.handlers:
        root.addHandler(RichHandler(console=err(), show_time=False, show_path=False))


@asynccontextmanager
async def opened(db: str) -> AsyncIterator[Store]:
    """An existing store, opened for reading (it is never created here)."""
    _must_exist(db)
    store = open_store(db)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def _must_exist(db: str) -> None:
    if "://" not in db and db != ":memory:" and not Path(db).exists():
        raise StoreError(f"no store at {db!r}: ingest a file first, or name one with --db")


# ingest


def _ingest(args: argparse.Namespace, settings: HistorySettings) -> int:
    console = err()
    files = []
    for path in args.files:
        with console.status(f"reading {path}") if console.is_terminal else nullcontext():
            files.append(read(path, format=args.format, thread=args.thread))
    if not _problems(files, skip=args.skip_bad):
        return 1
    return anyio.run(write_files, files, settings, args.db, args.skip_bad)


def _problems(files: Sequence[Parsed], *, skip: bool) -> bool:
    """Report the bad records; True when the rest may be written."""
    problems = [(f.path, p) for f in files for p in f.problems]
    _report(problems)
    if problems and not skip:
        _say(
            f"{len(problems)} bad record(s): nothing was written "
            "(fix them, or pass --skip-bad to ingest the rest)"
        )
        return False
    if problems:
        _say(f"skipped {len(problems)} bad record(s)")
    return True


def _report(problems: Sequence[tuple[Path, Problem]]) -> None:
    for path, problem in problems:
        print(f"{path}:{problem.where}: {problem.reason}", file=sys.stderr)


def _say(text: str) -> None:
    print(f"chat-history: {text}", file=sys.stderr)


async def write_files(
    files: Sequence[Parsed], settings: HistorySettings, db: str, skip: bool, *, quiet: bool = False
) -> int:
    """Check the records against the store, write them with a progress bar, wait for processing."""
    console = err()
    bars = Progress(
        TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console, transient=True,
        disable=quiet or not console.is_terminal,
    )  # fmt: skip
    total = sum(len(f.records) for f in files)
    async with History(settings, store=db) as history:
        with bars:
            task = bars.add_task("checking", total=total)
            clashes = await conflicts(history.store, files, advance=lambda: bars.advance(task))
            bars.remove_task(task)
        _report(clashes)
        if clashes and not skip:
            _say(f"{len(clashes)} bad record(s): nothing was written")
            return 1
        for thread, gone in (await strays(history.store, files)).items():
            _say(
                f"thread {thread!r} holds {gone} stored message(s) this file no longer has "
                f"(edited or regenerated since?); to follow the file's branch: chat-history "
                f"erase {thread} --db {db}, then ingest it again"
            )
        bad = {(path, problem.where) for path, problem in clashes}
        tallies = []
        with bars:
            task = bars.add_task("storing", total=total)
            for parsed in files:
                records = tuple(r for r in parsed.records if (parsed.path, r.where) not in bad)
                good = dataclasses.replace(parsed, records=records)
                tallies.append(await store_all(history, good, advance=lambda: bars.advance(task)))
            new = sum(t.new for t in tallies)
            work = bars.add_task("summarizing", total=new)
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    while True:
                        bars.update(work, completed=min(history.counters.processed, new))
                        await anyio.sleep(0.1)

                group.start_soon(watch)
                await history.wait()
                group.cancel_scope.cancel()
        threads = len(await history.store.threads())
    if quiet:
        return 0
    for parsed, tally in zip(files, tallies, strict=True):
        erased = f", {tally.erased} thread erases" if tally.erased else ""
        print(
            f"{parsed.path} ({parsed.format}): {parsed.messages} messages, {tally.new} new, "
            f"{tally.known} already stored{erased}"
        )
    c = history.counters
    print(
        f"{db}: {threads} threads; {c.processed} messages processed, {c.asks} lines asked of "
        f"{settings.summarizer!r}"
    )
    return 0


# threads, show, erase


async def _inspect(args: argparse.Namespace) -> int:
    async with opened(args.db) as store:
        if args.command == "threads":
            names = await store.threads()
            if not names:
                print(f"no threads in {args.db!r}")
                return 0
            figures = [(await report.snapshot(store, t)).figures for t in names]
            print(f"{len(names)} threads in {args.db}")
            out().print(report.threads_table(figures))
        elif args.command == "show":
            snap = await report.snapshot(store, args.thread)
            out().print(report.show(snap, depth=args.depth))
        else:
            snap = await report.snapshot(store, args.thread)
            await erase(store, args.thread)
            f = snap.figures
            print(f"erased thread {args.thread!r}: {f.messages} messages and {f.nodes} lines")
    return 0


# prompt, zoom, search: the read side


async def _read_side(args: argparse.Namespace, settings: HistorySettings) -> int:
    """Read only: what is stored and not yet processed is sent whole, as an agent gets it."""
    _must_exist(args.db)
    async with History(settings, store=args.db, process=False) as history:
        if await history.outline(args.thread) is None:
            raise NotFoundError(f"no thread {args.thread!r} in {args.db!r}")
        if args.command == "prompt":
            await print_prompt(history, args.thread, agent=args.agent)
        elif args.command == "zoom":
            opened = await zoom(history, args.thread, args.label, page=args.page)
            sys.stdout.write(f"{opened.text}\n")
        else:
            hits = await search(history, args.thread, " ".join(args.words), limit=args.limit)
            if not hits:
                _say("nothing found")
            sys.stdout.write("".join(f"{hit.label}|{hit.text}\n" for hit in hits))
    return 0


async def print_prompt(history: History, thread: str, *, agent: str | None) -> None:
    """The prompt on stdout exactly as sent; its size on stderr, so a pipe gets the prompt only."""
    result = await render_view(history, thread, agent=agent)
    sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
    sys.stdout.flush()
    print(f"{result.tokens} tokens, {result.bytes} bytes", file=sys.stderr)
