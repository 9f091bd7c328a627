"""Reading conversation files into messages: the formats, how one is recognised, and the checks.

A file is read whole and checked before anything is written. `read` gives every record it could
turn into a message (or an erase) with where it came from, and every bad record with the reason,
so the command line can refuse the file, or skip what is bad, before the store is touched.

Formats:
    jsonl: the project's own (SPEC section 8): one message or `thread.deleted` event a line.
    chatgpt: a ChatGPT data export (`conversations.json`, or the zip as downloaded), one thread
        per conversation.
    pydantic-ai: a pydantic-ai message history (`ModelMessagesTypeAdapter` JSON), one thread.
    chat: a list of `{"role", "content"}` chat messages, one thread.

The one-thread formats take their thread from the file name, or from `thread=`. Their message
ids are made of the thread and the record's position in the file, so the same file always gives
the same ids and ingesting it again changes nothing, while a longer copy of the same chat only
adds its new messages.

In the other apps' formats an assistant's tool calls and their results are its steps, their
text the JSON the pydantic-ai hook writes (`{"tool_calls": [...]}`, `{"tool_returns": [...]}`),
so that a view sends them back as tool calls.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from .contract import Message
from .errors import ConfigurationError, InputError
from .limits import MAX_FILE, MAX_UNZIPPED, loads, read_at_most, read_file
from .trace import Event, parse_line

if TYPE_CHECKING:
    from .plugin import History
    from .store import Store

Format = Literal["jsonl", "chatgpt", "pydantic-ai", "chat"]
FORMATS: tuple[Format, ...] = get_args(Format)
ONE_THREAD: tuple[Format, ...] = ("pydantic-ai", "chat")
"""Formats that hold one conversation, whose thread is named by the file or `thread=`."""

SYNTHETIC_START = datetime(2000, 1, 1, tzinfo=UTC)
"""Messages that carry no time are dated from here, one second apart, in file order."""
EXPORT_PART = re.compile(r"(.*/)?conversations(-\d+)?\.json")
"""The files of a zipped ChatGPT export that hold its conversations."""
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
    """A Message, or `("thread.deleted", thread)`."""


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


def read(
    path: Path,
    *,
    format: Format | None = None,
    thread: str | None = None,
    data: bytes | None = None,
) -> Parsed:
    """Read and check one file. OSError when it cannot be read; InputError for a format that
    cannot be told, ConfigurationError for a `thread` given to a format that names its own.

    `data`, when given, is the file's content (standard input, say), `path` only its name.

    A zip is read as a ChatGPT data export: its `conversations.json` (or the numbered parts
    `conversations-000.json`, ...), a record's place prefixed with the part's name.
    """
    data = read_file(path) if data is None else data
    zipped = data.startswith(b"PK\x03\x04")
    chosen = format or ("chatgpt" if zipped else detect(data, path))
    if thread is not None and chosen not in ONE_THREAD:
        raise ConfigurationError(
            f"--thread applies to one-conversation formats ({', '.join(ONE_THREAD)}); "
            f"{str(path)!r} is {chosen!r}, whose records name their own threads"
        )
    reader = Reader()
    one = (thread if thread is not None else path.stem) if chosen in ONE_THREAD else None
    if zipped and chosen == "chatgpt":
        for name, part in _export(data, path):
            reader.prefix = f"{name}:"
            _json(part, chosen, path.stem, reader)
        reader.prefix = ""
    elif chosen == "jsonl":
        _jsonl(data, reader)
    else:
        _json(data, chosen, one or path.stem, reader)
    _check_ids(reader)
    return Parsed(
        path=path, format=chosen, records=tuple(reader.records), problems=tuple(reader.problems),
        thread=one, titles=reader.titles,
    )  # fmt: skip


def shared_threads(files: Sequence[Parsed]) -> None:
    """Refuse one-conversation files that would be read into the same thread: their messages
    would be taken for one conversation's, and their ids collide."""
    seen: dict[str, Path] = {}
    for parsed in files:
        if parsed.thread is None:
            continue
        first = seen.setdefault(parsed.thread, parsed.path)
        if first != parsed.path:
            raise ConfigurationError(
                f"{str(first)!r} and {str(parsed.path)!r} would both be thread "
                f"{parsed.thread!r}: ingest them one at a time, each with --thread NAME"
            )


def _json(data: bytes, format: Format, thread: str, reader: Reader) -> None:
    from . import chatgpt, formats

    try:
        value = loads(data)
    except UnicodeDecodeError as exc:
        reader.bad("1", f"not UTF-8: {exc}")
    except json.JSONDecodeError as exc:
        reader.bad(str(exc.lineno), f"not JSON: {exc.msg} (column {exc.colno})")
    except (ValueError, InputError) as exc:  # too deep; a number with too many digits
        reader.bad("$", f"not JSON that can be read: {exc}")
    else:
        if format == "chatgpt":
            chatgpt.chatgpt(value, reader)
        elif format == "chat":
            formats.chat(value, thread, reader)
        else:
            formats.pydantic_ai(value, thread, reader)


def _export(data: bytes, path: Path) -> Iterator[tuple[str, bytes]]:
    """The conversations of a zipped ChatGPT data export, in order, a part at a time.

    A part is refused past `MAX_FILE` bytes as the zip declares it and as it decompresses (a
    zip bomb declares a small size), all parts past `MAX_UNZIPPED` together.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            parts = sorted(
                (i for i in archive.infolist() if EXPORT_PART.fullmatch(i.filename)),
                key=lambda i: i.filename,
            )
            if not parts:
                raise InputError(
                    f"{str(path)!r} holds no conversations.json: is it a ChatGPT data export?"
                )
            total = 0
            for info in parts:
                where = f"{str(path)!r}: {info.filename!r}"
                if info.file_size > MAX_FILE:
                    raise InputError(f"{where} is {info.file_size:,} bytes unzipped, more than "
                                     f"the {MAX_FILE:,} read")  # fmt: skip
                with archive.open(info) as member:
                    part = read_at_most(member, MAX_FILE)
                if part is None:
                    raise InputError(f"{where} unzips to more than the {MAX_FILE:,} bytes read")
                total += len(part)
                if total > MAX_UNZIPPED:
                    raise InputError(
                        f"{str(path)!r} unzips to more than the {MAX_UNZIPPED:,} bytes read"
                    )
                yield info.filename, part
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError,
            EOFError, zlib.error) as exc:  # fmt: skip
        raise InputError(f"{str(path)!r} is not a zip that can be read: {exc}") from None


def detect(data: bytes, path: Path) -> Format:
    """The format of a file, told from its content (a `.jsonl` name settles it)."""
    if path.suffix.lower() == ".jsonl":
        return "jsonl"
    try:
        value = loads(data)
    except InputError as exc:
        raise InputError(f"{str(path)!r}: {exc}") from None
    except ValueError:  # not UTF-8, not JSON
        first = next((line for line in data.splitlines() if line.strip()), b"")
        if first.lstrip().startswith(b"{"):
            return "jsonl"
        raise InputError(
            f"cannot tell the format of {str(path)!r}: it is neither JSON nor JSON lines; "
            f"name it with --format ({', '.join(FORMATS)})"
        ) from None
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        value = value["messages"]
    sample = value if isinstance(value, Mapping) else next(iter(value or []), None)
    if isinstance(value, list) and sample is None:
        return "chat"  # an empty list holds nothing in any format
    if isinstance(sample, Mapping):
        if "mapping" in sample:
            return "chatgpt"
        if sample.get("kind") in ("request", "response") and "parts" in sample:
            return "pydantic-ai"
        if "role" in sample and isinstance(value, list):
            return "chat"
        if isinstance(value, Mapping) and ("thread" in value or "event" in value):
            return "jsonl"
    raise InputError(
        f"cannot tell the format of {str(path)!r}: not a JSON lines history, a ChatGPT export, "
        f"a pydantic-ai history or a list of chat messages; name it with --format "
        f"({', '.join(FORMATS)})"
    )


def _jsonl(data: bytes, reader: Reader) -> None:
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            reader.add(str(number), parse_line(raw))
        except InputError as exc:
            reader.bad(str(number), str(exc))


def _check_ids(reader: Reader) -> None:
    """Refuse an id used twice in one file with other content (within one life of its thread)."""
    seen: dict[str, tuple[Record, Message]] = {}
    kept: list[Record] = []
    for record in reader.records:
        event = record.event
        if not isinstance(event, Message):
            seen = {k: v for k, v in seen.items() if v[1].thread != event[1]}
        elif event.id in seen and seen[event.id][1].content != event.content:
            first = seen[event.id][0]
            reader.bad(record.where, f"id {event.id!r} is used at {first.where} with other content")
            continue
        else:
            seen.setdefault(event.id, (record, event))
        kept.append(record)
    reader.records = kept


@dataclass(kw_only=True)
class Tally:
    """What ingesting one file did."""

    new: int = 0
    """Messages stored."""
    known: int = 0
    """Messages already stored as they are (a redelivery changes nothing)."""
    erased: int = 0
    """Threads erased by `thread.deleted` records."""


async def conflicts(
    store: Store, files: Sequence[Parsed], *, advance: Callable[[], object] = lambda: None
) -> list[tuple[Path, Problem]]:
    """Records whose id the store, or an earlier record, holds with other content.

    Checked before anything is written, so that a conflict leaves the store as it was. A thread
    erased earlier in the run starts again, so the ids it held are free from there on.
    """
    found: list[tuple[Path, Problem]] = []
    seen: dict[str, Message] = {}
    erased: set[str] = set()
    for parsed in files:
        for record in parsed.records:
            advance()
            event = record.event
            if not isinstance(event, Message):
                erased.add(event[1])
                seen = {id: m for id, m in seen.items() if m.thread != event[1]}
                continue
            known = seen.get(event.id)
            if known is None:
                stored = await store.message(event.id)
                if stored is not None and stored.message.thread not in erased:
                    known = stored.message
            if known is not None and known.content != event.content:
                reason = (
                    f"id {event.id!r} is already stored with other content "
                    f"(thread {known.thread!r}); the stored message is kept"
                )
                found.append((parsed.path, Problem(where=record.where, reason=reason)))
                continue
            seen[event.id] = event
    return found


async def strays(store: Store, files: Sequence[Parsed]) -> dict[str, int]:
    """Per thread, the stored messages that a whole-conversation file no longer holds.

    A ChatGPT export, a pydantic-ai history or a chat list holds its whole conversation, so a
    stored message it lacks was on a branch since edited or regenerated away (the store keeps
    every message it was given; erasing the thread and ingesting again follows the new branch).
    """
    ids: dict[str, set[str]] = {}
    for parsed in files:
        if parsed.format == "jsonl":
            continue  # a log: it may hold only the newest messages
        for record in parsed.records:
            if isinstance(record.event, Message):
                ids.setdefault(record.event.thread, set()).add(record.event.id)
    found: dict[str, int] = {}
    for thread, held in ids.items():
        stored = await store.messages(thread, 0, 2**62)
        gone = sum(s.message.id not in held for s in stored)
        if gone:
            found[thread] = gone
    return found


async def name_threads(store: Store, parsed: Parsed) -> None:
    """Give the threads a file wrote their titles (a title renamed since is updated)."""
    written = {r.event.thread for r in parsed.records if isinstance(r.event, Message)}
    for thread, title in parsed.titles.items():
        if thread in written:
            await store.describe(thread, title=title)


async def store_all(
    history: History, parsed: Parsed, *, advance: Callable[[], object] = lambda: None
) -> Tally:
    """Hand a file's records to the plugin in order; `advance` is called after each."""
    tally = Tally()
    for record in parsed.records:
        event = record.event
        if isinstance(event, Message):
            if await history.message_created(event) is None:
                tally.known += 1
            else:
                tally.new += 1
        else:
            await history.thread_deleted(event[1])
            tally.erased += 1
        advance()
    return tally
