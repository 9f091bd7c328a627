"""The checks a contract type runs on its text fields: a string, valid UTF-8, no NUL."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NoReturn

from .errors import InputError


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
