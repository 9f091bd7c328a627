"""The project's own format (SPEC section 8): one message or `thread.deleted` event a line.

The simulate command reads the same lines, so both take them through `parse_line`.
"""

from __future__ import annotations

from .._limits import loads
from ..contract import Event, Message, ThreadDeleted
from ..errors import InputError
from ._records import Reader


def parse_line(raw: bytes) -> Event:
    """One JSONL line as a message or an event; anything else is an InputError saying why."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8: {exc}") from None
    try:
        value = loads(text)
    except InputError:
        raise
    except ValueError as exc:  # not JSON, or a number of over 4,300 digits
        raise InputError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InputError(f"not a JSON object: {text.strip()[:80]!r}")
    if "event" in value:
        if value["event"] != "thread.deleted":
            raise InputError(f"unknown event {value['event']!r}", field="event")
        thread = value.get("thread")
        if not isinstance(thread, str) or not thread:
            raise InputError(f"thread must be a non-empty string, got {thread!r}", field="thread")
        return ThreadDeleted(thread=thread)
    return Message.from_json(value)


def jsonl(data: bytes, reader: Reader) -> None:
    """Read every line, a bad one reported by its number; blank lines are skipped."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            reader.add(str(number), parse_line(raw))
        except InputError as exc:
            reader.bad(str(number), str(exc))
