"""`chat-outline ingest FILE...`: read conversation files into a store, then build their
histories; and `write_files`, which `demo` shares.

Every file is read and checked before anything is written: a bad record exits with status 1
and nothing written, unless `--skip-bad`. A thread keeps the settings it was first built with
(see `plan`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ..errors import ConfigurationError, InputError
from ..ingest import FORMATS
from ._naming import author_name, check_names, give_names
from ._options import (
    MAX_FAILURES,
    Commands,
    budgets,
    command,
    db_option,
    failures_option,
    given_budgets,
    json_option,
    rebuild_option,
    settings_of,
)
from ._output import counted, err, log_to_stderr, print_json, report_problems, say
from ._stores import opened

if TYPE_CHECKING:
    from ..ingest import Parsed
    from ..settings import HistorySettings
    from ._plan import Plan

STDIN = Path("<stdin>")
"""The path a file read from standard input (`-`) is reported under."""


def register(commands: Commands) -> None:
    ingest = command(
        commands,
        "ingest",
        _ingest,
        help="read conversation files into a store, then build their histories",
    )
    ingest.add_argument(
        "files",
        type=Path,
        nargs="+",
        metavar="FILE",
        help="a JSONL history, a ChatGPT export (conversations.json, or its zip), "
        "a pydantic-ai message history, or a list of chat messages; - reads standard input",
    )
    ingest.add_argument("--format", choices=FORMATS, help="the files' format (told by default)")
    ingest.add_argument("--thread", help="the thread of a one-conversation file (its name)")
    ingest.add_argument(
        "--skip-bad", action="store_true", help="ingest the good records when some are bad"
    )
    ingest.add_argument(
        "--name",
        dest="names",
        action="append",
        type=author_name,
        default=[],
        metavar="AUTHOR=NAME",
        help="show AUTHOR (a role such as user) as NAME in every line and header; repeatable",
    )
    db_option(ingest)
    json_option(ingest)
    budgets(ingest)
    rebuild_option(ingest)
    failures_option(ingest)


def _ingest(args: argparse.Namespace) -> int:
    from .._limits import MAX_FILE, read_at_most
    from ..ingest import ONE_THREAD, read, shared_threads

    log_to_stderr()
    settings = settings_of(args)
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
    from ._storing import until_sigterm

    return anyio.run(until_sigterm, lambda: _store_files(files, settings, args))


async def _store_files(
    files: Sequence[Parsed], settings: HistorySettings, args: argparse.Namespace
) -> int:
    from ._plan import plan_run

    plan = await plan_run(args.db, files, settings, given_budgets(args), rebuild=args.rebuild)
    if args.names:
        await check_names(args.db, files, args.names)
    code = await write_files(
        files, plan, args.db, args.skip_bad, as_json=args.json, max_failures=args.max_failures
    )
    if code == 0 and args.names:
        await give_names(args.db, args.names)
    return code


def _problems(files: Sequence[Parsed], *, skip: bool) -> bool:
    """Report the bad records; True when the rest may be written."""
    problems = [(f.path, p) for f in files for p in f.problems]
    report_problems(problems)
    if problems and not skip:
        say(
            f"{len(problems)} bad record(s): nothing was written "
            "(fix them, or pass --skip-bad to ingest the rest)"
        )
        return False
    if problems:
        say(f"skipped {len(problems)} bad record(s)")
    return True


async def write_files(
    files: Sequence[Parsed],
    plan: Plan,
    db: str,
    skip: bool,
    *,
    quiet: bool = False,
    as_json: bool = False,
    max_failures: int = MAX_FAILURES,
) -> int:
    """Check the records against the store, write them with a progress bar, wait for processing,
    then rebuild the threads the plan names (their settings changed by the options given); what
    was done on stdout (`as_json`: one JSON document) unless `quiet`.

    A summarizer that is down (a refused key, an unknown model, `max_failures` failures in a
    row) stops it with a SummarizerError, what was stored kept and pending."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..plugin import History
    from ._storing import (
        check_up,
        conflicts,
        fail_fast,
        health_line,
        name_threads,
        store_all,
        strays,
    )

    console = err()
    bars = Progress(
        TextColumn("{task.description:<12}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=quiet or not console.is_terminal,
    )
    total = sum(len(f.records) for f in files)
    settings = plan.settings
    # The threads the plan rebuilds take the settings given (`history._adopting`).
    async with History(
        settings, store=db, adopt_settings=bool(plan.rebuild), **fail_fast(max_failures)
    ) as history:
        with bars:
            task = bars.add_task("checking", total=total)
            clashes = await conflicts(history.store, files, advance=lambda: bars.advance(task))
            bars.remove_task(task)
        report_problems(clashes)
        if clashes and not skip:
            say(f"{len(clashes)} bad record(s): nothing was written")
            return 1
        for thread, gone in (await strays(history.store, files)).items():
            say(
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
        check_up(history)
        threads = len(await history.store.threads())
    if plan.rebuild:
        await _rebuild_changed(plan, db)
    c = history.counters
    if quiet:
        return 0
    if as_json:
        print_json(
            {
                "store": db,
                "files": [
                    {
                        "file": str(parsed.path),
                        "format": parsed.format,
                        "messages": parsed.messages,
                        "new": tally.new,
                        "known": tally.known,
                        "erased": tally.erased,
                    }
                    for parsed, tally in zip(files, tallies, strict=True)
                ],
                "threads": threads,
                "processed": c.processed,
                "asked": c.asks,
                "summarizer": settings.summarizer,
            }
        )
        return 0
    for parsed, tally in zip(files, tallies, strict=True):
        erased = f", {counted(tally.erased, 'thread erase')}" if tally.erased else ""
        print(
            f"{parsed.path} ({parsed.format}): {counted(parsed.messages, 'message')}, "
            f"{tally.new} new, "
            f"{tally.known} already stored{erased}"
        )
    print(
        f"{db}: {counted(threads, 'thread')}; {counted(c.processed, 'message')} processed, "
        f"{counted(c.asks, 'line')} asked of "
        f"{settings.summarizer!r}{health_line(history.health())}"
    )
    return 0


async def _rebuild_changed(plan: Plan, db: str) -> None:
    """Rebuild the threads whose recorded settings the options given change, as told to."""
    from ..rebuilding import rebuild
    from ..settings import listed

    async with opened(db) as store:
        for thread, changed in plan.rebuild.items():
            done = await rebuild(store, thread, plan.settings, allow_model_calls=True, force=True)
            was = listed({name: old for name, (old, _) in changed.items()})
            now = listed({name: new for name, (_, new) in changed.items()})
            say(
                f"rebuilt thread {thread!r} with {now} (it was built with {was}): "
                f"{done.summaries} lines, {done.replayed} answers replayed, {done.model_calls} "
                "model calls"
            )
