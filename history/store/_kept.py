"""Rows of display names and generations (docs/generations.md), to data and back."""

from __future__ import annotations

from .._generated import Generation, Name
from ._rows import Params, Row


def generation_row(g: Generation) -> Params:
    return {
        "thread": g.thread,
        "agent": g.agent,
        "level": g.level,
        "idx": g.index,
        "generation": g.generation,
        "text": g.text,
        "bytes": g.bytes,
        "form": g.form,
        "fallback": int(g.fallback),
        "made": g.made,
    }


def generation_from_row(row: Row) -> Generation:
    return Generation(
        thread=row["thread"],
        agent=row["agent"],
        level=row["level"],
        index=row["idx"],
        generation=row["generation"],
        text=row["text"],
        bytes=row["bytes"],
        form=row["form"],
        fallback=bool(row["fallback"]),
        made=row["made"],
    )


def name_from_row(row: Row) -> Name:
    return Name(thread=row["thread"], author=row["author"], name=row["name"])
