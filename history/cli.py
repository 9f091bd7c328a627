"""The `chat-outline` command. The only module that prints."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from . import __version__
from .errors import ConfigurationError, HistoryError
from .options import Parser, db_option, given_budgets, store_of
from .options import budgets as _budgets

if TYPE_CHECKING:
    from .settings import HistorySettings


def parser() -> argparse.ArgumentParser:
    top = Parser(
        prog="chat-outline",
        description="A chat history plugin: a tail, a summary tree and a bounded outline.",
    )
    top.add_argument("--version", action="version", version=f"chat-outline {__version__}")
    commands = top.add_subparsers(dest="command", required=True)
    simulate = commands.add_parser(
        "simulate", help="run the plugin on a fresh store over a JSONL file and print the trace"
    )
    simulate.add_argument("file", type=Path)
    simulate.add_argument("--json", action="store_true", help="print the trace as JSON")
    _budgets(simulate)
    from .commands import register

    register(commands, budgets=_budgets)
    _maintenance_commands(commands)
    _worker_parser(commands)
    return top


def settings_of(args: argparse.Namespace) -> HistorySettings:
    from .settings import settings_from_env

    given = given_budgets(args)
    settings = settings_from_env(**given)
    # `--steps none` is an explicit None, which reading the environment takes as not given.
    no_steps = "steps" in given and given["steps"] is None
    return settings.with_changes(steps=None) if no_steps else settings


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if "db" in args and args.command != "demo":  # the demo's store is temporary unless named
        args.db = store_of(args.db)
    try:
        if args.command == "simulate":
            return _simulate(args)
        from . import commands

        if args.command in commands.NAMES:
            return commands.run(args, settings_of)
        if args.command in _MAINTENANCE:
            return _maintenance(args)
        if args.command == "worker":
            return _worker(args)
    except HistoryError as exc:
        print(f"chat-outline: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file or database named on the command line cannot be used
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"chat-outline: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("chat-outline: interrupted; what was stored is kept", file=sys.stderr)
        return 130
    return 0


# The rebuild, export, load and stats commands: pinned calls, carried between stores.
_MAINTENANCE = ("rebuild", "export", "load", "stats")


def _maintenance_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    from .maintenance import add_commands

    add_commands(commands, budgets=_budgets)


def _maintenance(args: argparse.Namespace) -> int:
    from .maintenance import run

    return run(args, settings_of)


def _simulate(args: argparse.Namespace) -> int:
    from .limits import read_file
    from .trace import simulate

    settings = settings_of(args)
    try:
        data = read_file(args.file)
    except OSError as exc:
        print(f"chat-outline: cannot read {str(args.file)!r}: {exc.strerror}", file=sys.stderr)
        return 2

    def report(number: int, reason: str) -> None:
        print(f"{args.file}:{number}: {reason}", file=sys.stderr)

    trace = anyio.run(lambda: simulate(data.split(b"\n"), settings, report=report))
    print(json.dumps(trace, ensure_ascii=False, indent=None if args.json else 2))
    return 0


def _worker_parser(commands: argparse._SubParsersAction[Parser]) -> None:
    worker = commands.add_parser(
        "worker", help="process the threads of a shared store until stopped (SIGTERM, SIGINT)"
    )
    db_option(worker, what="a postgresql:// URL")
    worker.add_argument("--poll", type=float, default=1.0, help="seconds between looks (1)")
    worker.add_argument(
        "--grace", type=float, default=10.0, help="seconds to finish batches on a stop (10)"
    )
    worker.add_argument("--concurrency", type=int, default=8, help="summarizer calls at once (8)")
    worker.add_argument("--threads", type=int, default=16, help="threads worked on at once (16)")
    worker.add_argument("--json", action="store_true", help="print the counters as JSON on exit")
    _budgets(worker)


def _worker(args: argparse.Namespace) -> int:
    import dataclasses
    import logging

    from .plugin import History
    from .worker import serve

    if not args.db.startswith(("postgresql://", "postgres://")):
        # SQLite has no lock that other processes see: the app's History processes the threads.
        raise ConfigurationError(f"a worker shares threads through PostgreSQL, not {args.db!r}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    history = History(settings_of(args), store=args.db, concurrency=args.concurrency, process=False)
    anyio.run(lambda: serve(history, poll=args.poll, grace=args.grace, threads=args.threads))
    counters = dataclasses.asdict(history.counters)
    if args.json:
        print(json.dumps(counters))
    else:
        print(", ".join(f"{name} {value}" for name, value in counters.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
