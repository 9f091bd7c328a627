"""What reading a file gives, and what every format's parser shares while it walks one.

Light on purpose: the command line lists the formats in its `--help`, so this module imports
only the contract and the errors (the parsers, which need pydantic-ai, load when a file is read).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal, get_args

from ..contract import Event, File, Message
from ..errors import InputError

Format = Literal["jsonl", "chatgpt", "pydantic-ai", "chat"]
FORMATS: tuple[Format, ...] = get_args(Format)
ONE_THREAD: tuple[Format, ...] = ("pydantic-ai", "chat")
"""Formats that hold one conversation, whose thread is named by the file or `thread=`."""

SYNTHETIC_START = datetime(2000, 1, 1, tzinfo=UTC)
"""Messages that carry no time are dated from here, one second apart, in file order."""
SKIPPED_ROLES = ("system", "developer")
"""Instructions to a model, not part of the conversation people see."""
USER, ASSISTANT = "user", "assistant"
"""The authors of other apps' messages, as the pydantic-ai hook names them."""


@dataclass(frozen=True, kw_only=True)
class Record:
    """A message or an erase read from a file, with where it was found."""

    where: str
    """A line number (`12`) or a JSON path (`$[3].mapping["a1"]`)."""
    event: Event
    """A Message, or a ThreadDeleted."""


@dataclass(frozen=True, kw_only=True)
class Problem:
    """A record that cannot be ingested, and why."""

    where: str
    """A line number or a JSON path, as in Record."""
    reason: str
    """Why it was refused, naming the offending value."""


class Below(InputError):
    """A bad record found below the place being read: `keys` lead from there to it."""

    def __init__(self, keys: tuple[int | str, ...], message: str) -> None:
        super().__init__(message)
        self.keys = keys


@dataclass(frozen=True, kw_only=True)
class Parsed:
    """What one file holds: the records to write, in order, and the bad ones."""

    path: Path
    format: Format
    """The format it was read as: named, or told from its content."""
    records: tuple[Record, ...]
    """What can be written, in file order."""
    problems: tuple[Problem, ...]
    """What cannot, in file order: one per bad record."""
    thread: str | None = None
    """The thread a one-conversation file is read into (its name, or `thread=`)."""
    titles: Mapping[str, str] = field(default_factory=dict)
    """The titles the file gives its threads (a ChatGPT conversation's)."""

    @property
    def messages(self) -> int:
        return sum(isinstance(r.event, Message) for r in self.records)


class Reader:
    """Collects records and problems while a format's parser walks a file."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.problems: list[Problem] = []
        self.titles: dict[str, str] = {}
        self.prefix = ""
        """Put before every place: the part of a zip being read."""

    def add(self, where: str, event: Event) -> None:
        self.records.append(Record(where=self.prefix + where, event=event))

    def bad(self, where: str, reason: str) -> None:
        self.problems.append(Problem(where=self.prefix + where, reason=reason))

    def title(self, thread: str, title: str) -> None:
        self.titles[thread] = title


Said = tuple[str, str, bool, tuple[File, ...], datetime | None]
"""What one record of another app says: `(author, text, step, files, time the file states)`."""


def path_of(*keys: int | str) -> str:
    """A JSON path: `$[3].mapping["a-1"].message`."""
    parts = ["$"]
    for key in keys:
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            parts.append(f".{key}")
        else:
            parts.append(f"[{json.dumps(key, ensure_ascii=False)}]")
    return "".join(parts)


def synthetic_at(position: int) -> datetime:
    return SYNTHETIC_START + timedelta(seconds=position)
