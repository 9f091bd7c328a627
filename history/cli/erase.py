"""`chat-outline erase THREAD`: delete a thread, its messages, lines, outline and calls."""

from __future__ import annotations

import argparse

import anyio

from .options import Commands, command, db_option
from .stores import must_exist, opened


def register(commands: Commands) -> None:
    erase = command(
        commands, "erase", _erase, help="delete a thread: its messages, lines and outline"
    )
    erase.add_argument("thread")
    db_option(erase)


def _erase(args: argparse.Namespace) -> int:
    return anyio.run(_erase_thread, args)


async def _erase_thread(args: argparse.Namespace) -> int:
    from . import report

    must_exist(args.db)
    async with opened(args.db) as store:
        thread = await report.resolve(store, args.thread)
        snap = await report.snapshot(store, thread)
        await store.erase(thread)
    f = report.figures(snap)
    print(f"erased thread {thread!r}: {f.messages} messages and {f.nodes} lines")
    return 0
