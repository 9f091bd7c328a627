"""The options several commands share (the store, the budgets, whole numbers, JSON output) and
the one way a command is added to the parser.

Kept apart from the commands' work so that building the parser imports nothing heavy: `--help`
and the read commands start without pydantic-ai, rich or the database drivers.
"""

from __future__ import annotations

import argparse
import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeAlias

from ..errors import ConfigurationError
from ..settings import budgeted, parse_pair

if TYPE_CHECKING:
    from ..settings import HistorySettings


class Parser(argparse.ArgumentParser):
    """A parser whose mistakes are one line on stderr, exit status 2, like every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


Commands: TypeAlias = "argparse._SubParsersAction[Parser]"
"""The `chat-outline` parser's subcommands, which each command module adds itself to."""
Run: TypeAlias = Callable[[argparse.Namespace], int]
"""What carries out a command once its arguments are parsed: its exit status."""


THREAD_HELP = "a thread's id, or its title or a part of it (case aside)"
"""The THREAD of a command that only reads it: a title it holds is enough, if only one does."""
EXACT_THREAD_HELP = "a thread's id, or its whole title exactly"
"""The THREAD of a command that changes or deletes it: nothing looser than the exact name."""


def command(commands: Commands, name: str, run: Run, **kwargs: Any) -> Parser:
    """Add the subcommand `name`, carried out by `run`; `kwargs` go to its parser (`help`...)."""
    parser = commands.add_parser(name, **kwargs)
    parser.set_defaults(run=run)
    return parser


def db_option(parser: argparse.ArgumentParser, *, what: str = "a SQLite path or a URL") -> None:
    """`--db`: left None here, resolved by `stores.store_of` once the arguments are parsed."""
    from ._stores import DB_VARIABLE

    parser.add_argument(
        "--db",
        help=f"the store: {what} (${DB_VARIABLE}, else ./chat-outline.sqlite)",
    )


def json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document (its keys: see the README)"
    )


def rebuild_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="rebuild the threads built with other settings than the ones given",
    )


MAX_FAILURES = 5
"""Summarizer failures in a row a command that builds histories takes before it gives up."""


def failures_option(parser: argparse.ArgumentParser) -> None:
    """`--max-failures N`: the commands that ask the summarizer stop with an error after N
    transient failures in a row (at once on a refused key or an unknown model); see
    `storing.fail_fast`."""
    parser.add_argument(
        "--max-failures",
        type=positive,
        default=MAX_FAILURES,
        metavar="N",
        help="stop after N summarizer failures in a row, keeping what was stored (5); a "
        "refused key or an unknown model stops at once",
    )


def positive(text: str) -> int:
    """An argparse type: a whole number above 0."""
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"must be a whole number above 0, got {text!r}")
    return int(text)


def seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0 (`300`, `1.5`)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text!r}")
    return value


def pair(name: str) -> Callable[[str], tuple[int, int]]:
    """An argparse type: `MIN,MAX`."""

    def read(text: str) -> tuple[int, int]:
        try:
            return parse_pair(text, name=name)
        except ConfigurationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return read


class _NotGiven(enum.Enum):
    NOT_GIVEN = enum.auto()


NOT_GIVEN: Final = _NotGiven.NOT_GIVEN
"""The value of a budget option left out. Not None: `--steps none` gives None, a setting."""


def budgets(parser: argparse.ArgumentParser) -> None:
    """The budget and summarizer options of the commands that build histories."""
    parser.set_defaults(**dict.fromkeys(_BUDGETS, NOT_GIVEN))
    parser.add_argument(
        "--budget",
        type=int,
        metavar="TOKENS",
        help="settings for a prompt of about TOKENS (HistorySettings.for_budget): the tail, "
        "outlines, line and kept; the other options beside it win",
    )
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
        help="cut whenever the tail is over its maximum (the chapter's rule, SPEC version 1)",
    )
    parser.add_argument(
        "--steps",
        type=_steps,
        help="each agent's step outline in bytes MIN,MAX (16000,32000), or none: steps leave "
        "the tail without a line (SPEC version 1)",
    )
    parser.add_argument(
        "--cold",
        type=seconds,
        metavar="SECONDS",
        help="cut the tail, once over its minimum, when a message comes more than SECONDS after "
        "the one before it: the provider's prompt cache is gone then (SPEC version 3; off)",
    )
    parser.add_argument(
        "--summarizer", help="echo (default), scripted, or a pydantic-ai model name"
    )


_BUDGETS = ("line", "tail", "outline", "kept", "cut_gap", "cold", "steps", "summarizer")
"""The settings the budget options name (their `dest`s)."""


def _steps(text: str) -> tuple[int, int] | None:
    if text.strip().lower() == "none":
        return None
    return pair("--steps")(text)


def given_budgets(args: argparse.Namespace) -> dict[str, Any]:
    """The settings named on the command line: those of its options not left out, over those
    `--budget` stands for."""
    named = {
        name: value
        for name in _BUDGETS
        if (value := getattr(args, name, NOT_GIVEN)) is not NOT_GIVEN
    }
    tokens = getattr(args, "budget", None)
    if tokens is None:
        return named
    return budgeted(tokens) | named


def settings_of(args: argparse.Namespace) -> HistorySettings:
    """The settings a command builds with: its options, over the environment and the defaults."""
    from ..settings import settings_from_env

    return settings_from_env(**given_budgets(args))
