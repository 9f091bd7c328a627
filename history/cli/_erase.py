"""`chat-outline erase THREAD`: delete a thread, its messages, lines, outline and calls."""

from __future__ import annotations

import argparse

import anyio

from ._options import EXACT_THREAD_HELP, Commands, command, db_option, json_option
from ._output import print_json
from ._stores import must_exist, opened


def register(commands: Commands) -> None:
    erase = command(
        commands, "erase", _erase, help="delete a thread: its messages, lines and outline"
    )
    erase.add_argument("thread", help=EXACT_THREAD_HELP)
    db_option(erase)
    json_option(erase)


def _erase(args: argparse.Namespace) -> int:
    return anyio.run(_erase_thread, args)


async def _erase_thread(args: argparse.Namespace) -> int:
    from . import _report as report

    must_exist(args.db)
    async with opened(args.db) as store:
        thread = await report.resolve(store, args.thread, exact=True)
        snap = await report.snapshot(store, thread)
        await store.erase(thread)
    f = report.figures(snap)
    if args.json:
        print_json({"thread": thread, "messages": f.messages, "lines": f.nodes})
        return 0
    print(f"erased thread {thread!r}: {f.messages} messages and {f.nodes} lines")
    return 0
