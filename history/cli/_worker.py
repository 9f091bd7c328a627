"""`chat-outline worker`: process the threads of a shared store until stopped."""

from __future__ import annotations

import argparse
import json

import anyio

from ..errors import ConfigurationError
from ._options import Commands, budgets, command, db_option, settings_of


def register(commands: Commands) -> None:
    worker = command(
        commands,
        "worker",
        _worker,
        help="process the threads of a shared store until stopped (SIGTERM, SIGINT)",
    )
    db_option(worker, what="a postgresql:// URL, or a SQLite file the app shares on this machine")
    worker.add_argument("--poll", type=float, default=1.0, help="seconds between looks (1)")
    worker.add_argument(
        "--grace", type=float, default=10.0, help="seconds to finish batches on a stop (10)"
    )
    worker.add_argument("--concurrency", type=int, default=8, help="summarizer calls at once (8)")
    worker.add_argument("--threads", type=int, default=16, help="threads worked on at once (16)")
    worker.add_argument("--json", action="store_true", help="print the counters as JSON on exit")
    worker.add_argument(
        "--adopt-settings",
        action="store_true",
        help="threads built with other settings go on with these (by default they are refused)",
    )
    budgets(worker)


def _worker(args: argparse.Namespace) -> int:
    import dataclasses
    import logging

    from .._worker import serve
    from ..plugin import History
    from ._stores import must_exist

    if args.db == ":memory:":
        raise ConfigurationError("a worker shares a store with other processes, not ':memory:'")
    must_exist(args.db)  # a SQLite file the app made: not an empty store of a mistyped path
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    history = History(
        settings_of(args),
        store=args.db,
        concurrency=args.concurrency,
        process=False,
        adopt_settings=args.adopt_settings,
    )
    anyio.run(lambda: serve(history, poll=args.poll, grace=args.grace, threads=args.threads))
    counters = dataclasses.asdict(history.counters)
    if args.json:
        print(json.dumps(counters))
    else:
        from ._storing import health_line

        line = ", ".join(f"{name} {value}" for name, value in counters.items())
        print(line + health_line(history.health()))
    return 0
