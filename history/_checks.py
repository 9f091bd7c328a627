"""The checks a contract type runs on its text fields: a string, valid UTF-8, no NUL; a name
(an id, a thread, an author) no longer than `MAX_NAME` bytes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NoReturn

from .errors import InputError

MAX_NAME = 1024
"""The most UTF-8 bytes of a message id, a thread id, an author and whom a message is to, on
every store. PostgreSQL indexes them in btrees whose rows hold at most about 2,700 bytes (a
thread and an author share the search rows' key): a longer id fails there ("index row size
exceeds btree maximum") while SQLite takes it, so an export of one store could not be loaded
into the other. Checked before anything is written, with the message."""


def name_text(field: str, value: object) -> str:
    """A text field that names something (see `MAX_NAME`)."""
    checked = text(field, value)
    if len(checked) * 4 > MAX_NAME and len(checked.encode("utf-8")) > MAX_NAME:
        raise InputError(
            f"{field} is {len(checked.encode('utf-8')):,} bytes of UTF-8, more than the "
            f"{MAX_NAME:,} a name may hold: {checked[:60]!r}...",
            field=field,
        )
    return checked


def space_name(value: object) -> str:
    """A thread's space (`About.space`): a name, not empty (an empty space would read as none)."""
    checked = name_text("space", value)
    if not checked:
        raise InputError(f"space must not be empty, got {checked!r}", field="space")
    return checked


def text(name: str, value: object) -> str:
    if not isinstance(value, str):
        wrong(name, value, "a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            f"{name} is not valid UTF-8 (a lone surrogate?): {value!r}", field=name
        ) from None
    if "\x00" in value:
        # PostgreSQL text cannot hold NUL: refused on every store, so stores carry the same.
        raise InputError(
            f"{name} holds a NUL character (at {value.index(chr(0))}), which not every store "
            "can hold",
            field=name,
        )
    return value


def required_text(value: Mapping[str, object], name: str) -> str:
    if name not in value:
        raise InputError(f"{name} is missing", field=name)
    return text(name, value[name])


def optional_text(name: str, value: object) -> str | None:
    return None if value is None else text(name, value)


def wrong(name: str, value: object, expected: str) -> NoReturn:
    raise InputError(f"{name} must be {expected}, got {value!r}", field=name)


# The arguments of the public functions and methods: a wrong type is an InputError naming the
# argument, not an AttributeError or an OverflowError from deep inside.

LARGEST = 2**63 - 1
"""The largest whole number a store holds (a seq, a position, a label's first message)."""


def argument_text(name: str, value: object, *, empty: bool = False) -> str:
    """A string argument (a thread, a query, a label); empty only when `empty` allows it."""
    if not isinstance(value, str):
        wrong(name, value, "a string")
    if not empty and not value:
        raise InputError(f"{name} must not be empty", field=name)
    return value


def optional_argument_text(name: str, value: object) -> str | None:
    """A string argument that may be None (an agent, a model)."""
    return None if value is None else argument_text(name, value, empty=True)


def whole(name: str, value: object, *, low: int = 0, high: int = LARGEST) -> int:
    """A whole-number argument from `low` to `high` (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        wrong(name, value, f"a whole number from {low:,} to {high:,}")
    return value


def flag(name: str, value: object) -> bool:
    """A True or False argument."""
    if not isinstance(value, bool):
        wrong(name, value, "True or False")
    return value
