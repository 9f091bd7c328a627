"""The commands that fill a store and look into it: ingest, threads, show, prompt, zoom, search,
erase and demo.

Exit codes: 0 done; 1 the input has bad records, and nothing was written; 2 a mistake to fix
(a file that cannot be read, a format that cannot be told, a database that is not ours, a thread
that does not exist, settings that cannot work).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from .contract import format_at
from .errors import ConfigurationError, InputError, StoreError
from .ingest import FORMATS
from .options import db_option, given_budgets, json_option, positive, rebuild_option
from .settings import HistorySettings

if TYPE_CHECKING:  # rich, pydantic-ai and the drivers load in the commands that use them
    from rich.console import Console

    from .budgets import Plan
    from .ingest import Parsed, Problem
    from .plugin import History
    from .store import Store

NAMES = ("ingest", "threads", "show", "prompt", "zoom", "search", "erase", "demo")
STDIN = Path("<stdin>")
"""The path a file read from standard input (`-`) is reported under."""

Budgets = Callable[[argparse.ArgumentParser], None]
SettingsOf = Callable[[argparse.Namespace], HistorySettings]


def register(commands: Any, *, budgets: Budgets) -> None:
    """Add the commands to the `chat-outline` parser's subcommands."""
    from .demo import register_demo

    db = db_option

    ingest = commands.add_parser(
        "ingest", help="read conversation files into a store, then build their histories"
    )
    ingest.add_argument(
        "files", type=Path, nargs="+", metavar="FILE",
        help="a JSONL history, a ChatGPT export (conversations.json, or its zip), "
        "a pydantic-ai message history, or a list of chat messages; - reads standard input",
    )  # fmt: skip
    ingest.add_argument("--format", choices=FORMATS, help="the files' format (told by default)")
    ingest.add_argument("--thread", help="the thread of a one-conversation file (its name)")
    ingest.add_argument(
        "--skip-bad", action="store_true", help="ingest the good records when some are bad"
    )
    db(ingest)
    budgets(ingest)
    rebuild_option(ingest)

    threads = commands.add_parser("threads", help="every thread with its figures")
    threads.add_argument(
        "--match", metavar="TEXT", help="only the threads whose id or title holds TEXT"
    )
    db(threads)
    json_option(threads)

    show = commands.add_parser("show", help="a thread's summary tree, outline and tail")
    show.add_argument("thread")
    show.add_argument("--depth", type=positive, help="levels drawn under each top node (all)")
    db(show)
    json_option(show)

    prompt = commands.add_parser("prompt", help="exactly what an agent of the thread is sent")
    prompt.add_argument("thread")
    prompt.add_argument(
        "--agent",
        help="whose view: its messages are its own turns (by default the thread's agent, when it "
        "has one; '' for nobody's)",
    )
    prompt.add_argument(
        "--model",
        help="also show the request this model's provider would receive (openai:gpt-5.6, "
        "openai-chat:gpt-4.1-mini, anthropic:claude-sonnet-4-5), recorded offline: its JSON "
        "body on stdout, its tokens, cache marks and cached prefix on stderr",
    )
    db(prompt)
    json_option(prompt)

    zoom = commands.add_parser("zoom", help="open a line into the two under it, or a message")
    zoom.add_argument("thread")
    zoom.add_argument("label", help="a node's label, such as 0+8, or a message's, such as 12+1")
    zoom.add_argument("--page", type=positive, default=1, help="the page of a long message (1)")
    zoom.add_argument(
        "--agent", default="", help="whose step tree a step label (s4+2) opens: that agent's"
    )
    db(zoom)
    json_option(zoom)

    search = commands.add_parser("search", help="the lines and messages that hold some words")
    search.add_argument("thread")
    search.add_argument("words", nargs="+")
    search.add_argument("--limit", type=positive, default=10, help="the most results shown (10)")
    search.add_argument(
        "--agent", default="", help="also search this agent's own steps and step lines"
    )
    db(search)
    json_option(search)

    erase = commands.add_parser("erase", help="delete a thread: its messages, lines and outline")
    erase.add_argument("thread")
    db(erase)

    register_demo(commands, budgets=budgets)


def run(args: argparse.Namespace, settings_of: SettingsOf) -> int:
    """Run one of the commands in NAMES; errors reach the caller, which reports them."""
    if args.command == "ingest":
        _log_to_stderr()
        return _ingest(args, settings_of(args))
    if args.command == "demo":
        from .demo import run_demo

        _log_to_stderr()
        return run_demo(args, settings_of)
    if args.command in ("prompt", "zoom", "search"):
        return anyio.run(_read_side, args)
    return int(anyio.run(_inspect, args))


def out() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def err() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _log_to_stderr() -> None:
    from rich.logging import RichHandler

    root = logging.getLogger("history")
    if not root.handlers:
        root.addHandler(RichHandler(console=err(), show_time=False, show_path=False))


def print_json(value: object) -> None:
    """One JSON document on stdout: what `--json` prints."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


@asynccontextmanager
async def opened(db: str, *, read_only: bool = False) -> AsyncIterator[Store]:
    """An existing store (it is never created here), read only when told."""
    from .store import open_store

    _must_exist(db)
    store = open_store(db, create=False, read_only=read_only)
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
    from .ingest import ONE_THREAD, read, shared_threads
    from .limits import MAX_FILE, read_at_most

    console = err()
    files = []
    if sum(str(path) == "-" for path in args.files) > 1:
        raise ConfigurationError("standard input (-) can be read only once in one ingest")
    for path in args.files:
        if str(path) == "-":
            data = read_at_most(sys.stdin.buffer, MAX_FILE)
            if data is None:
                raise InputError(f"standard input holds more than the {MAX_FILE:,} bytes read")
            parsed = read(STDIN, data=data, format=args.format, thread=args.thread)
            if parsed.format in ONE_THREAD and args.thread is None:
                raise ConfigurationError(
                    f"standard input holds one {parsed.format!r} conversation and has no file "
                    "name to call its thread: name it with --thread"
                )
            files.append(parsed)
            continue
        with console.status(f"reading {path}") if console.is_terminal else nullcontext():
            files.append(read(path, format=args.format, thread=args.thread))
    shared_threads(files)
    if not _problems(files, skip=args.skip_bad):
        return 1
    return anyio.run(_store_files, files, settings, args)


async def _store_files(files: Sequence[Parsed], settings: HistorySettings, args: Any) -> int:
    from .budgets import plan_run

    plan = await plan_run(args.db, files, settings, given_budgets(args), rebuild=args.rebuild)
    return await write_files(files, plan, args.db, args.skip_bad)


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
    print(f"chat-outline: {text}", file=sys.stderr)


async def write_files(
    files: Sequence[Parsed], plan: Plan, db: str, skip: bool, *, quiet: bool = False
) -> int:
    """Check the records against the store, write them with a progress bar, wait for processing,
    then rebuild the threads the plan names (their settings changed by the options given)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .ingest.writing import conflicts, name_threads, store_all, strays
    from .plugin import History

    console = err()
    bars = Progress(
        TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console, transient=True,
        disable=quiet or not console.is_terminal,
    )  # fmt: skip
    total = sum(len(f.records) for f in files)
    settings = plan.settings
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
                f"(edited or regenerated since?); to follow the file's branch: chat-outline "
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
                await name_threads(history.store, good)
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
    if plan.rebuild:
        await _rebuild_changed(plan, db)
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


async def _rebuild_changed(plan: Plan, db: str) -> None:
    """Rebuild the threads whose recorded settings the options given change, as told to."""
    from .rebuild import rebuild
    from .settings import listed

    async with opened(db) as store:
        for thread, changed in plan.rebuild.items():
            done = await rebuild(store, thread, plan.settings, allow_model_calls=True, force=True)
            was = listed({name: old for name, (old, _) in changed.items()})
            now = listed({name: new for name, (_, new) in changed.items()})
            _say(
                f"rebuilt thread {thread!r} with {now} (it was built with {was}): "
                f"{done.summaries} lines, {done.replayed} answers replayed, {done.model_calls} "
                "model calls"
            )


# threads, show, erase


async def _inspect(args: argparse.Namespace) -> int:
    from . import report

    async with opened(args.db, read_only=args.command != "erase") as store:
        if args.command == "threads":
            names = await store.threads()
            figures = [(await report.snapshot(store, t)).figures for t in names]
            if args.match is not None:
                figures = [f for f in figures if report.matches(f, args.match)]
            if args.json:
                print_json({"store": args.db, "threads": [dataclasses.asdict(f) for f in figures]})
            elif not figures:
                matching = f" matching {args.match!r}" if args.match is not None else ""
                print(f"no threads{matching} in {args.db!r}")
            else:
                print(f"{len(figures)} threads in {args.db}")
                out().print(report.threads_table(figures))
        elif args.command == "show":
            snap = await report.snapshot(store, await report.resolve(store, args.thread))
            if args.json:
                print_json(report.show_json(snap))
            else:
                out().print(report.show(snap, depth=args.depth))
        else:
            from .processors.erase import erase

            thread = await report.resolve(store, args.thread)
            snap = await report.snapshot(store, thread)
            await erase(store, thread)
            f = snap.figures
            print(f"erased thread {thread!r}: {f.messages} messages and {f.nodes} lines")
    return 0


# prompt, zoom, search: the read side


async def _read_side(args: argparse.Namespace) -> int:
    """Read only: what is stored and not yet processed is sent whole, as an agent gets it.

    Nothing is summarized, so no budget applies and no summarizer is named: the offline one
    stands in, never asked."""
    from . import report
    from .plugin import History
    from .store import open_store
    from .view import search, zoom

    _must_exist(args.db)
    settings = HistorySettings(summarizer="echo")
    store = open_store(args.db, create=False, read_only=True)
    async with History(settings, store=store, process=False) as history:
        thread = await report.resolve(history.store, args.thread)
        if args.command == "prompt":
            agent = (
                (args.agent or None)
                if args.agent is not None
                else (await only_agent(history, thread))
            )
            await print_prompt(history, thread, agent=agent, as_json=args.json, model=args.model)
        elif args.command == "zoom":
            opened = await zoom(
                history, thread, args.label, agent=args.agent or None, page=args.page
            )
            if args.json:
                print_json({
                    "thread": thread, "label": opened.label, "level": opened.level,
                    "index": opened.index, "page": opened.page, "pages": opened.pages,
                    "lines": [{"label": n.label, "text": n.text} for n in opened.lines],
                    "message": None if opened.message is None else opened.message.id,
                    "text": opened.text,
                })  # fmt: skip
            else:
                sys.stdout.write(f"{opened.text}\n")
        else:
            query = " ".join(args.words)
            hits = await search(history, thread, query, limit=args.limit, agent=args.agent or None)
            if args.json:
                print_json({"thread": thread, "query": query, "hits": [
                    {"label": h.label, "level": h.level, "index": h.index, "text": h.text,
                     "at": format_at(h.at), "message": h.message} for h in hits
                ]})  # fmt: skip
                return 0
            if not hits:
                _say("nothing found")
            sys.stdout.write("".join(f"{hit.label}|{hit.text}\n" for hit in hits))
    return 0


async def only_agent(history: History, thread: str) -> str | None:
    """The agent whose view `prompt` shows when none is named: the one author of the messages
    sent whole that makes tool steps or is called `assistant`; None when there are none or
    several (those are named on stderr)."""
    from .ingest import ASSISTANT
    from .report import sent_whole

    outline = await history.outline(thread)
    whole = await sent_whole(history.store, outline) if outline is not None else ()
    agents = sorted(
        {s.message.author for s in whole if s.message.step or s.message.author == ASSISTANT}
    )
    if len(agents) > 1:
        _say(f"thread {thread!r} has agents {', '.join(agents)}: showing nobody's view "
             "(name one with --agent)")  # fmt: skip
    return agents[0] if len(agents) == 1 else None


async def print_prompt(
    history: History,
    thread: str,
    *,
    agent: str | None,
    as_json: bool = False,
    model: str | None = None,
) -> None:
    """The prompt on stdout exactly as sent; its size on stderr, so a pipe gets the prompt only.

    With `model`, the request body that model's provider would receive instead, and its figures.
    """
    from .view import render_view

    result = await render_view(history, thread, agent=agent, model=model)
    request = result.request
    if as_json:
        shown: dict[str, object] = {"thread": thread, "agent": agent, "text": result.text,
                                    "tokens": result.tokens, "bytes": result.bytes}  # fmt: skip
        if request is not None:
            m = request.measured
            shown["request"] = {
                "model": m.model, "tokens": m.tokens, "bytes": m.bytes, "marks": m.marks,
                "max_marks": m.max_marks, "cached": m.cached, "minimum": m.minimum,
                "reaches": m.reaches, "body": request.body,
            }  # fmt: skip
        print_json(shown)
        return
    if request is not None:
        sys.stdout.write(json.dumps(request.body, ensure_ascii=False, indent=2) + "\n")
        sys.stdout.flush()
        print(request.measured.summary(), file=sys.stderr)
        return
    sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
    sys.stdout.flush()
    print(f"{result.tokens} tokens, {result.bytes} bytes", file=sys.stderr)
