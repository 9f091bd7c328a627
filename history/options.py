"""The options several commands share: the store, the budgets, whole numbers, JSON output.

Kept apart from the commands so that building the parser imports nothing heavy: `--help`
and the read commands start without pydantic-ai, rich or the database drivers.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any, NoReturn

from .errors import ConfigurationError
from .settings import parse_pair


class Parser(argparse.ArgumentParser):
    """A parser whose mistakes are one line on stderr, exit status 2, like every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


DB_VARIABLE = "CHAT_OUTLINE_DB"
"""The environment variable naming the store of every command that takes `--db`."""


def db_option(parser: argparse.ArgumentParser, *, what: str = "a SQLite path or a URL") -> None:
    """`--db`: left None here, resolved by `store_of` once the arguments are parsed."""
    parser.add_argument(
        "--db",
        help=f"the store: {what} (${DB_VARIABLE}, else ./chat-outline.sqlite)",
    )


def store_of(given: str | None) -> str:
    """The store a command works on: `--db`, else $CHAT_OUTLINE_DB, else the default file."""
    if given:
        return given
    if os.environ.get(DB_VARIABLE):
        return os.environ[DB_VARIABLE]
    from .store import default_store

    return default_store()


def json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document (its keys: see the README)"
    )


def positive(text: str) -> int:
    """An argparse type: a whole number above 0."""
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"must be a whole number above 0, got {text!r}")
    return int(text)


def pair(name: str) -> Callable[[str], tuple[int, int]]:
    """An argparse type: `MIN,MAX`."""

    def read(text: str) -> tuple[int, int]:
        try:
            return parse_pair(text, name=name)
        except ConfigurationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return read


def budgets(parser: argparse.ArgumentParser) -> None:
    """The budget and summarizer options of the commands that build histories."""
    parser.add_argument("--line", type=int, help="a line's limit in bytes (512)")
    parser.add_argument("--tail", type=pair("--tail"), help="tail tokens MIN,MAX (16000,48000)")
    parser.add_argument(
        "--outline", type=pair("--outline"), help="outline bytes MIN,MAX (64000,128000)"
    )
    parser.add_argument("--kept", type=int, help="newest shared messages always kept whole (4)")
    parser.add_argument(
        "--no-cut-gap",
        dest="cut_gap",
        action="store_false",
        default=None,
        help="cut whenever the tail is over its maximum (the chapter's rule, SPEC version 1)",
    )
    parser.add_argument(
        "--steps",
        type=_steps,
        help="each agent's step outline in bytes MIN,MAX (16000,32000), or none: steps leave "
        "the tail without a line (SPEC version 1)",
    )
    parser.add_argument(
        "--summarizer", help="echo (default), scripted, or a pydantic-ai model name"
    )


NO_STEPS = "none"
"""`--steps none`, kept apart from an option not given (None) until the settings are built."""


def _steps(text: str) -> tuple[int, int] | str:
    if text.strip().lower() == NO_STEPS:
        return NO_STEPS
    return pair("--steps")(text)


def given_budgets(args: argparse.Namespace) -> dict[str, Any]:
    """The settings named on the command line: those of its options not left out."""
    from dataclasses import fields

    from .settings import HistorySettings

    given = {
        f.name: getattr(args, f.name)
        for f in fields(HistorySettings)
        if getattr(args, f.name, None) is not None
    }
    if given.get("steps") == NO_STEPS:
        given["steps"] = None
    return given


def rebuild_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="rebuild the threads built with other settings than the ones given",
    )
