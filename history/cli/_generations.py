"""`chat-outline rename` and `chat-outline reconsolidate`: an author's display name, and a
thread's lines asked again of a summarizer, each written as the next generation of the lines
it changes (docs/generations.md)."""

from __future__ import annotations

import argparse
import sys

import anyio

from ._options import (
    EXACT_THREAD_HELP,
    Commands,
    command,
    db_option,
    failures_option,
    json_option,
    positive,
)
from ._output import counted, print_json, say
from ._stores import must_exist


def register(commands: Commands) -> None:
    rename = command(
        commands, "rename", _rename, help="show an author under a name in every line and header"
    )
    rename.add_argument("author", help="the author as the messages have it (user, an id)")
    rename.add_argument("name", help="the name to show")
    rename.add_argument(
        "--thread", help=f"in this thread only (by default store-wide): {EXACT_THREAD_HELP}"
    )
    rename.add_argument(
        "--now",
        action="store_true",
        help="agents' outlines take it at once, not at the thread's next cut",
    )
    db_option(rename)
    json_option(rename)

    again = command(
        commands,
        "reconsolidate",
        _reconsolidate,
        help="ask a summarizer for a thread's lines again, as their next generation",
    )
    again.add_argument("thread", help=EXACT_THREAD_HELP)
    again.add_argument("label", nargs="?", help="the node (0+8); by default every outline line")
    again.add_argument(
        "--depth", type=positive, default=1, help="ask the lines N levels under it too (1)"
    )
    again.add_argument(
        "--fallbacks",
        action="store_true",
        help="ask the lines that fell back to a cut, and their parents",
    )
    again.add_argument(
        "--summarizer", required=True, help="the summarizer asked: a pydantic-ai model name"
    )
    again.add_argument(
        "--dry-run", action="store_true", help="print how many model calls it would make"
    )
    again.add_argument(
        "--now",
        action="store_true",
        help="agents' outlines take the new lines at once, not at the thread's next cut",
    )
    failures_option(again)
    db_option(again)
    json_option(again)


def _rename(args: argparse.Namespace) -> int:
    return anyio.run(_rename_author, args)


async def _rename_author(args: argparse.Namespace) -> int:
    from ..plugin import History
    from ..settings import HistorySettings
    from ._report import resolve

    must_exist(args.db)
    async with History(HistorySettings(summarizer="echo"), store=args.db, process=False) as h:
        thread = None if args.thread is None else await resolve(h.store, args.thread, exact=True)
        rewritten = await h.rename(args.author, args.name, thread=thread, now=args.now)
    if args.json:
        print_json(
            {
                "author": args.author,
                "name": args.name,
                "thread": thread,
                "rewritten": rewritten,
                "now": args.now,
            }
        )
        return 0
    where = "" if thread is None else f" in thread {thread!r}"
    lines = counted(rewritten, "line")
    print(f"{args.author!r} is shown as {args.name!r}{where}: {lines} rewritten")
    return 0


def _reconsolidate(args: argparse.Namespace) -> int:
    return anyio.run(_ask_again, args)


async def _ask_again(args: argparse.Namespace) -> int:
    from ._prompt import thread_as_built

    async with thread_as_built(args.db, args.thread) as (built, thread):
        done = await built.reconsolidate(
            thread,
            args.label,
            summarizer=args.summarizer,
            depth=args.depth,
            fallbacks=args.fallbacks,
            dry_run=args.dry_run,
            now=args.now,
            max_failures=args.max_failures,
        )
    if args.json:
        print_json(
            {
                "thread": thread,
                "dry_run": args.dry_run,
                "calls": done.calls,
                "asked": list(done.asked),
                "rewritten": done.rewritten,
            }
        )
        return 0
    asked = ", ".join(done.asked) or "none"
    if args.dry_run:
        print(f"{done.calls} model calls")
        say(f"thread {thread!r} would ask again: {asked}")
        return 0
    print(f"{done.calls} model calls, {done.rewritten} lines rewritten")
    say(f"thread {thread!r} asked again: {asked}")
    sys.stdout.flush()
    return 0
