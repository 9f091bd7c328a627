"""Reading one file whole: its format told or named, parsed, and its ids checked.

The parsers of the other apps' formats need pydantic-ai (for its message types and the tool
steps), so they are imported when a file in one of those formats is read, not with this module:
the command line imports the package for its `--help`, which must stay fast.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from .._limits import MAX_FILE, MAX_UNZIPPED, loads, read_at_most, read_file, without_bom
from ..contract import Message
from ..errors import ConfigurationError, InputError
from ._jsonl import jsonl
from ._records import FORMATS, ONE_THREAD, Format, Parsed, Reader, Record

EXPORT_PART = re.compile(r"(.*/)?conversations(-\d+)?\.json")
"""The files of a zipped ChatGPT export that hold its conversations."""


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
    data = without_bom(read_file(path) if data is None else data)
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
        jsonl(data, reader)
    else:
        _json(data, chosen, one or path.stem, reader)
    _check_ids(reader)
    return Parsed(
        path=path,
        format=chosen,
        records=tuple(reader.records),
        problems=tuple(reader.problems),
        thread=one,
        titles=reader.titles,
    )


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
    from . import _chat, _chatgpt, _pydantic_ai  # pydantic-ai: loaded when needed

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
            _chatgpt.chatgpt(value, reader)
        elif format == "chat":
            _chat.chat(value, thread, reader)
        else:
            _pydantic_ai.pydantic_ai(value, thread, reader)


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
                    raise InputError(
                        f"{where} is {info.file_size:,} bytes unzipped, more than "
                        f"the {MAX_FILE:,} read"
                    )
                with archive.open(info) as member:
                    part = read_at_most(member, MAX_FILE)
                if part is None:
                    raise InputError(f"{where} unzips to more than the {MAX_FILE:,} bytes read")
                total += len(part)
                if total > MAX_UNZIPPED:
                    raise InputError(
                        f"{str(path)!r} unzips to more than the {MAX_UNZIPPED:,} bytes read"
                    )
                yield info.filename, without_bom(part)
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        NotImplementedError,
        RuntimeError,
        EOFError,
        zlib.error,
    ) as exc:
        raise InputError(f"{str(path)!r} is not a zip that can be read: {exc}") from None


def detect(data: bytes, path: Path) -> Format:
    """The format of a file, told from its content (a `.jsonl` name settles it)."""
    if path.suffix.lower() == ".jsonl":
        return "jsonl"
    try:
        value = loads(data)
    except InputError as exc:
        raise InputError(f"{str(path)!r}: {exc}") from None
    except ValueError as exc:  # not UTF-8, not JSON
        first = next((line for line in data.splitlines() if line.strip()), b"")
        if first.lstrip().startswith(b"{"):
            return "jsonl"
        if first.lstrip().startswith(b"["):
            raise InputError(
                f"{str(path)!r} starts as JSON but does not parse ({exc}): is it cut short?"
            ) from None
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


def _check_ids(reader: Reader) -> None:
    """Refuse an id used twice in one file with other content (within one life of its thread)."""
    seen: dict[str, tuple[Record, Message]] = {}
    kept: list[Record] = []
    for record in reader.records:
        event = record.event
        if not isinstance(event, Message):
            seen = {k: v for k, v in seen.items() if v[1].thread != event.thread}
        elif event.id in seen and seen[event.id][1].content != event.content:
            first = seen[event.id][0]
            reader.bad(record.where, f"id {event.id!r} is used at {first.where} with other content")
            continue
        else:
            seen.setdefault(event.id, (record, event))
        kept.append(record)
    reader.records = kept
