"""The statements whose plans are checked (`test_plans.py`), with arguments to plan them with.

Each statement run per message, view, zoom or search must cost the same at a thread's 100th
message as at its millionth: a primary-key lookup, a range of an index whose prefix is the
thread, or a max() read from the end of such an index; never a scan of the thread. A new such
statement is listed in `PLANNED`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from history.store._queries import QUERIES


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
    postgresql_key: tuple[str, ...] | None = None
    """Its `key` on PostgreSQL, when it is not `key`: a term's postings are packed 64 to a row
    there, keyed by their `bucket` (`idx / 64`)."""
    sorts: bool = False
    """It sorts what it reads, a batch its index bounds: SQLite's temporary B-tree is allowed."""


def _planned(
    name: str,
    key: tuple[str, ...] = (),
    *,
    arrays: dict[str, list[Any]] | None = None,
    sorts: bool = False,
    postgresql_key: tuple[str, ...] | None = None,
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
        postgresql_key=postgresql_key,
        sorts=sorts,
    )


_MESSAGE: dict[str, Any] = {
    "id": "m",
    "thread": "t",
    "step": False,
    "author": "a",
    "to": "",
    "text": "x",
    "at": "2026-01-01T00:00:00+00:00",
    "files": "[]",
    "weight": 1,
    "native": None,
}
_OUTLINE: dict[str, Any] = {
    "bytes": 0,
    "boundary": 0,
    "since": None,
    "cut_at": None,
    "gone": None,
    "tail_start": 0,
    "tokens": 0,
    "draining": False,
    "position": 1,
    "floor": 0,
    "lines": None,
    "steps": None,
}

PLANNED: dict[str, Planned] = {
    "insert message": _planned("insert_message", **_MESSAGE),
    "message": _planned("message", ("id",), id="m"),
    "any message": _planned("any_message", ("thread",), thread="t"),
    "outline": _planned("outline", ("thread",), thread="t"),
    "messages after": _planned("messages_after", ("thread", "seq"), thread="t", after=0, limit=10),
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
    "unposted": _planned("unposted", ("thread", "agent", "line", "level", "idx"), thread="t"),
    "post search": _planned("post_search", ("thread", "stem"), sorts=True, thread="t"),
    "unpend": _planned("unpend", ("thread",), thread="t"),
    "post words": _planned("post_words", ("thread",), sorts=True, thread="t"),
    # Here and in "unposted", each waiting row's search row by its whole key: joined as tables,
    # PostgreSQL without statistics read every row of the thread's and looked each up among the
    # waiting ones (20 s a search at 8,000 messages, where autovacuum is off).
    "search unposted": _planned(
        "search_unposted", ("thread", "agent", "line", "level", "idx"), thread="t", agent=""
    ),
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
        postgresql_key=("word", "line", "level", "bucket"),
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
        postgresql_key=("word", "line", "level", "bucket"),
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
