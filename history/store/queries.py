"""The store's named queries, read once from `collections/queries.sql`, and the ones checked
for their plans.

`queries.sql` holds every statement as an entry: a `-- name: NAME` line, comment lines that say
what it is for, then the SQL, with named parameters (`:thread`). `queries.postgresql.sql` holds
only the entries whose PostgreSQL text differs (as procrastinate keeps its queries); the others
serve both databases. Each entry is turned into each dialect's placeholders here, once: SQLite's
`?1, ?2, ...` and PostgreSQL's `$1, $2, ...`, a name used twice being one parameter. A `:` or `?`
inside a string literal, a quoted name or a comment is left alone, and so is a `::` cast.

Each statement of `PLANNED` must cost the same at a thread's 100th message as at its millionth: a
primary-key lookup, a range of an index whose prefix is the thread, or a max() read from the end
of such an index; never a scan of the thread. `tests/store/test_plans.py` asks each database for its
plan of every one of them and fails on a scan.
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


@dataclass(frozen=True, kw_only=True)
class Planned:
    """A statement whose plan is checked, with arguments to plan it with."""

    sql: str
    args: tuple[Any, ...]
    key: tuple[str, ...] = ()
    """Columns that must all be in the index condition: a lookup by key, not by thread."""
    postgresql: str | None = None
    """Its PostgreSQL text, when it is not `sql`."""
    postgresql_args: tuple[Any, ...] | None = None
    """Its PostgreSQL arguments, when they are not `args`."""
    sorts: bool = False
    """It sorts what it reads, a batch its index bounds: SQLite's temporary B-tree is allowed."""


def _planned(
    name: str,
    key: tuple[str, ...] = (),
    *,
    arrays: dict[str, list[Any]] | None = None,
    sorts: bool = False,
    **params: Any,
) -> Planned:
    """The entry `name` with `params`; a list is given as JSON for SQLite, and as an array
    (`arrays`) for PostgreSQL."""
    query = QUERIES[name]
    return Planned(
        sql=query.sqlite.text,
        args=query.sqlite.args(params),
        key=key,
        postgresql=query.postgresql.text,
        postgresql_args=query.postgresql.args({**params, **(arrays or {})}),
        sorts=sorts,
    )


_MESSAGE: dict[str, Any] = {
    "id": "m", "thread": "t", "step": False, "author": "a", "to": "", "text": "x",
    "at": "2026-01-01T00:00:00+00:00", "files": "[]", "weight": 1, "native": None,
}  # fmt: skip
_OUTLINE: dict[str, Any] = {
    "bytes": 0, "boundary": 0, "since": None, "cut_at": None, "gone": None, "tail_start": 0,
    "tokens": 0, "draining": False, "position": 1, "floor": 0, "lines": None, "steps": None,
}  # fmt: skip

PLANNED: dict[str, Planned] = {
    "insert message": _planned("insert_message", **_MESSAGE),
    "message": _planned("message", ("id",), id="m"),
    "any message": _planned("any_message", ("thread",), thread="t"),
    "outline": _planned("outline", ("thread",), thread="t"),
    "pending": _planned("pending", ("thread", "seq"), thread="t", after=0, limit=10),
    "messages": _planned("messages", ("thread", "seq"), thread="t", first=0, last=10),
    "natives": _planned("natives", ("thread", "seq"), thread="t", after=0),
    "tail": _planned("tail", ("thread", "seq"), thread="t", first=0),
    "about": _planned("about", ("thread",), thread="t"),
    "summaries": _planned("summaries", ("thread",), thread="t"),
    "summary": _planned(
        "summary", ("thread", "agent", "level", "idx"), thread="t", agent="", level=0, index=1
    ),
    "nodes": _planned(
        "nodes",
        ("thread", "agent", "level", "idx"),
        thread="t",
        agent="",
        keys="[[0, 1], [1, 0]]",
        arrays={"levels": [0, 1], "indexes": [1, 0]},
    ),
    "update outline": _planned(
        "update_outline", ("thread",), **_OUTLINE, thread="t", epoch="e", version=0
    ),
    "next call": _planned("next_call", ("thread",), thread="t"),
    "unposted": _planned("unposted", ("thread",), thread="t"),
    "post search": _planned("post_search", ("thread", "stem"), sorts=True, thread="t"),
    "mark posted": _planned("mark_posted", ("thread",), thread="t"),
    "unpend": _planned("unpend", ("thread",), thread="t"),
    "post words": _planned("post_words", ("thread",), sorts=True, thread="t"),
    "search unposted": _planned("search_unposted", ("thread", "agent"), thread="t", agent=""),
    "search postings": _planned(
        "search_postings",
        ("word",),
        terms='["venue", "plan"]',
        arrays={"terms": ["venue", "plan"]},
        thread="t",
        agent="",
    ),
    "search frequencies": _planned(
        "search_frequencies",
        ("word", "line"),
        terms='["venue", "plan"]',
        arrays={"terms": ["venue", "plan"]},
        thread="t",
        agent="",
        cap=50,
    ),
    "search newest": _planned(
        "search_newest", ("word", "line"), thread="t", agent="", term="venue", line=False, cap=9
    ),
    "search together": _planned(
        "search_together",
        ("word", "line", "level"),
        sorts=True,
        terms='["venue", "plan"]',
        arrays={"terms": ["venue", "plan"]},
        thread="t",
        agent="",
        cap=50,
        limit=9,
    ),
    "search held": _planned(
        "search_held",
        ("word", "line", "level", "idx"),
        thread="t",
        agent="",
        keys='[["venue", false, 0, 1], ["plan", true, 1, 0]]',
        arrays={
            "key_terms": ["venue", "plan"],
            "key_lines": [False, True],
            "key_levels": [0, 1],
            "key_indexes": [1, 0],
        },
    ),
    "search places": _planned(
        "search_places",
        ("thread", "agent", "line", "level", "idx"),
        indexes="[1, 2, 3]",
        arrays={"indexes": [1, 2, 3]},
        thread="t",
        agent="",
    ),
    "unpost": _planned(
        "unpost",
        ("word", "line", "level", "idx"),
        thread="t",
        agent="",
        line=False,
        level=0,
        idx=1,
        stems='["venue", "plan"]',
        arrays={"stems": ["venue", "plan"]},
    ),
    "line texts": _planned(
        "line_texts",
        ("thread", "agent", "level", "idx"),
        thread="t",
        keys='[["", 0, 1], ["", 1, 0]]',
        arrays={"key_agents": ["", ""], "key_levels": [0, 1], "key_indexes": [1, 0]},
    ),
    "moves": _planned("moves", ("thread",), thread="t"),
    "weights": _planned("weights", ("thread", "seq"), thread="t", last=10),
    "search corpora": _planned("search_corpora", ("thread", "agent"), thread="t", agent=""),
    "search details": _planned(
        "search_details",
        ("thread", "agent", "line", "level", "idx"),
        thread="t",
        keys='[["", false, 0, 1], ["", true, 1, 0]]',
        arrays={
            "key_agents": ["", ""],
            "key_lines": [False, True],
            "key_levels": [0, 1],
            "key_indexes": [1, 0],
        },
    ),
    # Names and generations (docs/generations.md): read by every view, search and commit.
    "thread names": _planned("thread_names", ("thread",), thread="t"),
    "generation shown": _planned("generation_shown", ("thread",), thread="t"),
    "show generations": _planned("show_generations", ("thread",), thread="t"),
    "node generations": _planned(
        "node_generations",
        ("thread", "agent", "level", "idx"),
        thread="t",
        agent="",
        keys="[[0, 1], [1, 0]]",
        arrays={"levels": [0, 1], "indexes": [1, 0]},
        upto=3,
    ),
}
"""Every statement run per message, per view, per zoom and per search, by name."""
