"""`chat-outline retract THREAD --after SEQ`: take back a thread's newest messages while they are
whole in its tail (`History.retract`), with the settings the thread was built with."""

from __future__ import annotations

import argparse

import anyio

from ._options import EXACT_THREAD_HELP, Commands, command, db_option, json_option
from ._output import counted, print_json


def register(commands: Commands) -> None:
    retract = command(
        commands,
        "retract",
        _retract,
        help="take back a thread's newest messages while they are whole in its tail",
    )
    retract.add_argument("thread", help=EXACT_THREAD_HELP)
    retract.add_argument(
        "--after",
        type=int,
        required=True,
        metavar="SEQ",
        help="take back every message after this seq (-1: all of them)",
    )
    db_option(retract)
    json_option(retract)


def _retract(args: argparse.Namespace) -> int:
    return anyio.run(_take_back, args)


async def _take_back(args: argparse.Namespace) -> int:
    from ._prompt import thread_as_built

    async with thread_as_built(args.db, args.thread) as (built, thread):
        gone = await built.retract(thread, after=args.after)
    if args.json:
        print_json(
            {"thread": thread, "retracted": [{"seq": s.seq, "id": s.message.id} for s in gone]}
        )
    elif not gone:
        print(f"thread {thread!r} has no message after seq {args.after}")
    else:
        print(
            f"took back {counted(len(gone), 'message')} of thread {thread!r}: seq {gone[0].seq} on"
        )
    return 0
