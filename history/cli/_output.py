"""What the commands print, and where: the one place of chat-outline that prints.

Results go to stdout (rich for people, one JSON document with `--json`); notes, problems and
progress to stderr, so a pipe gets the result only.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich loads in the commands that draw
    from rich.console import Console

    from ..ingest import Problem


def out() -> Console:
    """A console on stdout."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def err() -> Console:
    """A console on stderr: progress and status."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def log_to_stderr() -> None:
    """Show the plugin's log (a summarizer retried, say) on stderr, for the commands that build."""
    from rich.logging import RichHandler

    root = logging.getLogger("history")
    if not root.handlers:
        root.addHandler(RichHandler(console=err(), show_time=False, show_path=False))


def print_json(value: object) -> None:
    """One JSON document on stdout: what `--json` prints."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


def counted(n: int, thing: str) -> str:
    """`1 thread`, `2 threads`."""
    return f"{n:,} {thing}{'' if n == 1 else 's'}"


def say(text: str) -> None:
    """A note on stderr, as the command's own line."""
    print(f"chat-outline: {text}", file=sys.stderr)


LISTED = 20
"""The most bad records listed; the rest are counted."""


def report_problems(problems: Sequence[tuple[Path, Problem]]) -> None:
    """The first `LISTED` bad records on stderr (its file, where in it, and why), then how many
    more there are: a binary file is not thousands of lines."""
    for path, problem in problems[:LISTED]:
        print(f"{path}:{problem.where}: {problem.reason}", file=sys.stderr)
    if len(problems) > LISTED:
        say(f"and {counted(len(problems) - LISTED, 'more bad record')}")
