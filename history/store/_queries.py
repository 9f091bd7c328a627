"""The store's named queries, read once from `collections/queries.sql`.

`queries.sql` holds every statement as an entry: a `-- name: NAME` line, comment lines that say
what it is for, then the SQL, with named parameters (`:thread`). `queries.postgresql.sql` holds
only the entries whose PostgreSQL text differs (as procrastinate keeps its queries); the others
serve both databases. Each entry is turned into each dialect's placeholders here, once: SQLite's
`?1, ?2, ...` and PostgreSQL's `$1, $2, ...`, a name used twice being one parameter. A `:` or `?`
inside a string literal, a quoted name or a comment is left alone, and so is a `::` cast.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Dialect = Literal["sqlite", "postgresql"]
COLLECTIONS = Path(__file__).resolve().parent.parent / "collections"

_TOKENS = re.compile(
    r"""
    (?P<skip>'(?:[^']|'')*'          # a string literal ('' inside it is a quote)
      | "(?:[^"]|"")*"               # a quoted name
      | --[^\n]*                     # a comment to the end of the line
      | /\*.*?\*/                    # a block comment
      | ::                           # a cast
    )
    | :(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE | re.DOTALL,
)
_MARKS: dict[Dialect, str] = {"sqlite": "?{}", "postgresql": "${}"}


@dataclass(frozen=True, kw_only=True)
class Statement:
    """One entry in one dialect: its text with positional placeholders, and their names."""

    text: str
    names: tuple[str, ...]
    """The parameter of each placeholder: `?1` or `$1` is `names[0]`."""

    def args(self, params: Mapping[str, Any]) -> tuple[Any, ...]:
        """The positional arguments for `params`; those the statement does not use are left
        out, so one set of parameters can serve both dialects' texts."""
        try:
            return tuple(params[name] for name in self.names)
        except KeyError as exc:
            raise TypeError(f"no value for the parameter {exc.args[0]!r} of {self.text!r}") from exc


@dataclass(frozen=True, kw_only=True)
class Query:
    """A named entry, in both dialects."""

    name: str
    doc: str
    sqlite: Statement
    postgresql: Statement

    def __getitem__(self, dialect: Dialect) -> Statement:
        return self.sqlite if dialect == "sqlite" else self.postgresql


def compile_named(sql: str, dialect: Dialect) -> Statement:
    """`sql` with its `:name` parameters as the dialect's numbered placeholders."""
    names: list[str] = []

    def mark(found: re.Match[str]) -> str:
        name = found["name"]
        if name is None:
            return found[0]
        if name not in names:
            names.append(name)
        return _MARKS[dialect].format(names.index(name) + 1)

    return Statement(text=_TOKENS.sub(mark, sql), names=tuple(names))


def parse(text: str) -> dict[str, tuple[str, str]]:
    """The entries of a queries file: each name with its doc (its leading comment) and SQL."""
    entries: dict[str, tuple[str, str]] = {}
    for chunk in re.split(r"^-- name: *", text, flags=re.MULTILINE)[1:]:
        head, _, body = chunk.partition("\n")
        name = head.strip()
        if name in entries:
            raise ValueError(f"the query {name!r} is named twice")
        lines = body.strip().splitlines()
        doc = []
        while lines and lines[0].startswith("--"):
            doc.append(lines.pop(0).removeprefix("--").strip())
        sql = "\n".join(lines).strip().removesuffix(";").strip()
        if not sql:
            raise ValueError(f"the query {name!r} has no SQL")
        entries[name] = (" ".join(doc), sql)
    return entries


def load(shared: str, postgresql: str) -> dict[str, Query]:
    """Every entry of `shared`, with `postgresql`'s text where it has the entry."""
    common, variants = parse(shared), parse(postgresql)
    unknown = variants.keys() - common.keys()
    if unknown:
        raise ValueError(f"PostgreSQL variants of queries that do not exist: {sorted(unknown)}")
    return {
        name: Query(
            name=name,
            doc=doc,
            sqlite=compile_named(sql, "sqlite"),
            postgresql=compile_named(variants.get(name, (doc, sql))[1], "postgresql"),
        )
        for name, (doc, sql) in common.items()
    }


QUERIES = load(
    (COLLECTIONS / "queries.sql").read_text(encoding="utf-8"),
    (COLLECTIONS / "queries.postgresql.sql").read_text(encoding="utf-8"),
)
"""Every statement the store runs, by name."""
