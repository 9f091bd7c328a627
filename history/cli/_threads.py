"""`chat-outline threads` and `chat-outline show THREAD`: a store's threads at a glance, and one
thread's summary tree, outline and tail. Both read only."""

from __future__ import annotations

import argparse
import dataclasses

import anyio

from ._options import THREAD_HELP, Commands, command, db_option, json_option, positive
from ._output import counted, out, print_json
from ._stores import must_exist, opened


def register(commands: Commands) -> None:
    threads = command(commands, "threads", _threads, help="every thread with its figures")
    threads.add_argument(
        "--match", metavar="TEXT", help="only the threads whose id or title holds TEXT"
    )
    db_option(threads)
    json_option(threads)

    show = command(commands, "show", _show, help="a thread's summary tree, outline and tail")
    show.add_argument("thread", help=THREAD_HELP)
    show.add_argument("--depth", type=positive, help="levels drawn under each top node (all)")
    db_option(show)
    json_option(show)


def _threads(args: argparse.Namespace) -> int:
    return anyio.run(_list, args)


async def _list(args: argparse.Namespace) -> int:
    from . import _report as report

    must_exist(args.db)
    async with opened(args.db, read_only=True) as store:
        # A snapshot without its tree each (the outline and the tail), and the fallback lines
        # counted in one read: a listing reads no tree.
        snapshots = [s for t in await store.threads() if (s := await store.snapshot(t))]
        fallen = await store.fallbacks()
    figures = [report.figures(s) for s in snapshots]
    fallbacks = {f.thread: fallen.get(f.thread, 0) for f in figures}
    if args.match is not None:
        figures = [f for f in figures if report.matches(f, args.match)]
    if args.json:
        listed = [dataclasses.asdict(f) | {"fallbacks": fallbacks[f.thread]} for f in figures]
        print_json({"store": args.db, "threads": listed})
    elif not figures:
        matching = f" matching {args.match!r}" if args.match is not None else ""
        print(f"no threads{matching} in {args.db!r}")
    else:
        print(f"{counted(len(figures), 'thread')} in {args.db}")
        out().print(report.threads_table(figures, fallbacks))
    return 0


def _show(args: argparse.Namespace) -> int:
    return anyio.run(_draw, args)


async def _draw(args: argparse.Namespace) -> int:
    from . import _report as report

    must_exist(args.db)
    async with opened(args.db, read_only=True) as store:
        snap = await report.snapshot(store, await report.resolve(store, args.thread))
    if args.json:
        print_json(report.show_json(snap))
    else:
        out().print(report.show(snap, depth=args.depth))
    return 0
