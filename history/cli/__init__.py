"""The `chat-outline` command: the parser, `main`, and the list of commands.

Each command (or small family of commands) is a module here with a `register(commands)` that
adds its subcommands through `options.command`, naming the function that carries each out; the
modules are listed once, in `REGISTER`, in the order `--help` shows them. Building the parser
imports nothing heavy: each command loads rich, pydantic-ai or a driver when it runs.

Exit codes: 0 done; 1 the input has bad records, and nothing was written; 2 a mistake to fix
(a file that cannot be read, a format that cannot be told, a database that is not ours, a thread
that does not exist, settings that cannot work), each one line on stderr; 3 a rebuild refused
because it would call the model; 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from ..errors import HistoryError
from . import _carry as carry
from . import _demo as demo
from . import _erase as erase
from . import _generations as generations
from . import _ingest as ingest
from . import _prompt as prompt
from . import _rebuild as rebuild
from . import _retract as retract
from . import _serve as serve
from . import _simulate as simulate
from . import _stats as stats
from . import _threads as threads
from . import _worker as worker
from ._options import Commands, Parser
from ._stores import store_of

REGISTER: tuple[Callable[[Commands], None], ...] = (
    simulate.register,
    ingest.register,
    threads.register,
    prompt.register,
    erase.register,
    retract.register,
    generations.register,
    demo.register,
    rebuild.register,
    carry.register,
    stats.register,
    worker.register,
    serve.register,
)
"""Every command module, once: each adds its subcommands to the parser."""


def parser() -> argparse.ArgumentParser:
    top = Parser(
        prog="chat-outline",
        description="A chat history plugin: a tail, a summary tree and a bounded outline.",
    )
    top.add_argument("--version", action="version", version=f"chat-outline {__version__}")
    top.add_argument("--db", dest="top_db", metavar="DB", help="the store of the command after it")
    commands = top.add_subparsers(dest="command", required=True)
    for register in REGISTER:
        register(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    top = parser()
    args, unknown = top.parse_known_args(argv)
    own = _command_parser(top, args.command)
    if unknown:  # the command's options: its own help, not the top's
        own.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.top_db is not None:  # `chat-outline --db x threads`
        if "db" not in args:
            own.error("takes no --db")
        args.db = args.db or args.top_db
    if "db" in args and args.command != "demo":  # the demo's store is temporary unless named
        args.db = store_of(args.db)
    try:
        code: int = args.run(args)
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
    return code


def _command_parser(top: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of the command `name`."""
    (commands,) = (a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = commands.choices[name]
    return found
