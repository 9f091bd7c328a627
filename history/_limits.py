"""Bounds on what is read from a file, so that a hostile or broken one is refused in bounded
memory and time, with one clear line, before it is parsed.

- a file read whole (`ingest`, `simulate`): `MAX_FILE` bytes; its size is checked before it is
  read, and a pipe or a device is read no further than the bound;
- a part of a zipped ChatGPT export: `MAX_FILE` bytes as the zip declares it and as it
  decompresses (read a block at a time), and `MAX_UNZIPPED` for all its parts together;
- a line of an export (`load` reads one line at a time): `MAX_LINE` bytes;
- JSON nesting: `MAX_DEPTH` levels, checked on the text before it is parsed (deeper, Python's
  parser and whatever walks the result would run out of stack).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .errors import InputError

MAX_FILE = 256 * 2**20
"""256 MiB: the largest file read whole, or part of a zip (parsed, it takes several times it)."""
MAX_UNZIPPED = 1024 * 2**20
"""1 GiB: the parts of one zip, decompressed, together."""
MAX_LINE = 64 * 2**20
"""64 MiB: the longest line of an export."""
MAX_DEPTH = 100
"""The deepest JSON nesting read: a conversation is a handful of levels deep."""

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_PAIR = re.compile(rb"\[\]|\{\}")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def read_file(path: Path, *, limit: int = MAX_FILE) -> bytes:
    """A file's bytes; InputError when it holds more than `limit`. OSError as `open` raises it."""
    with path.open("rb") as source:
        size = path.stat().st_size
        if size > limit:
            raise InputError(f"{str(path)!r} is {size:,} bytes, more than the {limit:,} read")
        data = read_at_most(source, limit)
    if data is None:
        raise InputError(f"{str(path)!r} holds more than the {limit:,} bytes read")
    return data


def read_at_most(source: IO[bytes], limit: int) -> bytes | None:
    """Everything `source` holds, or None as soon as it holds more than `limit` bytes."""
    data = source.read(limit + 1)
    return None if len(data) > limit else data


BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte-order mark some editors and Windows tools put first in a file."""


def without_bom(data: bytes) -> bytes:
    """`data` without a leading UTF-8 byte-order mark: every input format accepts one (only
    there: one inside the text is the text's)."""
    return data[len(BOM) :] if data.startswith(BOM) else data


def lines_of(source: IO[bytes], *, name: str, limit: int = MAX_LINE) -> Iterator[bytes]:
    """The lines of `source`, each read no further than `limit` bytes: a longer one (a file
    with no line breaks, say) is an InputError naming its place."""
    number = 0
    while line := source.readline(limit + 1):
        number += 1
        if len(line) > limit:
            raise InputError(f"{name}:{number}: a line longer than the {limit:,} bytes read")
        yield line


def check_depth(data: bytes) -> None:
    """Refuse JSON text nested deeper than `MAX_DEPTH`, without parsing it.

    Strings are left out, then each round strips the innermost pairs of brackets: JSON nested
    `MAX_DEPTH` deep holds none after that many rounds. Invalid JSON is left to the parser.
    """
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return  # too few brackets to be too deep: the common short line
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    for _ in range(MAX_DEPTH):
        brackets, found = _PAIR.subn(b"", brackets)
        if not found:
            return
    if _PAIR.search(brackets):
        raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels")


def loads(data: bytes | str) -> Any:
    """Parse JSON text nested no deeper than `MAX_DEPTH` (else an InputError). ValueError, as
    `json` raises it, for text that is not JSON (a number of over 4,300 digits included)."""
    check_depth(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    try:
        return json.loads(data)
    except RecursionError:
        raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
