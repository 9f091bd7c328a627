"""The statements a store runs for every message, view, zoom and search, in one place.

Each must cost the same at a thread's 100th message as at its millionth: a primary-key lookup,
a range of an index whose prefix is the thread, or a max() read from the end of such an index;
never a scan of the thread. `tests/test_plans.py` asks each database for its plan of every
statement in `PLANNED` and fails on a scan. They are written with `?` (SQLite's style);
`rows.numbered` turns them into PostgreSQL's `$1, $2, ...`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .rows import (
    DETAIL_COLUMNS,
    INSERT_MESSAGE,
    MESSAGE_COLUMNS,
    OUTLINE_COLUMNS,
    SUMMARY_COLUMNS,
    insert,
)

MESSAGE = f"SELECT {MESSAGE_COLUMNS} FROM message WHERE id = ?"
"""A message by its id."""
ANY_MESSAGE = "SELECT 1 FROM message WHERE thread = ? LIMIT 1"
"""Whether a thread has messages (an outline row lost to a crash is made again)."""
OUTLINE = f"SELECT {OUTLINE_COLUMNS} FROM outline WHERE thread = ?"
OUTLINE_POSTGRESQL = f"""
SELECT {OUTLINE_COLUMNS},
       (SELECT coalesce(json_agg(json_build_array(id, weight, at, step, seq) ORDER BY seq), '[]')
        FROM message
        WHERE message.thread = outline.thread AND seq >= tail_start AND seq <= position) AS tail
FROM outline WHERE thread = $1
"""
"""A thread's outline with its tail as JSON (PostgreSQL): one statement, so one snapshot and one
round trip."""
NEW_OUTLINE = f"{insert('outline', OUTLINE_COLUMNS)} ON CONFLICT (thread) DO NOTHING"
"""A thread's outline row, made with its first message."""
TAIL = (
    "SELECT id, weight, at, step, seq FROM message "
    "WHERE thread = ? AND seq >= ? AND seq <= ? ORDER BY seq"
)
"""The outline's tail: its messages from `tail_start` to `position`."""
PENDING = f"SELECT {MESSAGE_COLUMNS} FROM message WHERE thread = ? AND seq > ? ORDER BY seq LIMIT ?"
"""The thread's messages after a seq, in order, a page at a time."""
MESSAGES = (
    f"SELECT {MESSAGE_COLUMNS} FROM message WHERE thread = ? AND seq >= ? AND seq <= ? ORDER BY seq"
)
NATIVES = (
    "SELECT id, native FROM message WHERE thread = ? AND seq > ? AND native IS NOT NULL "
    "ORDER BY seq"
)
"""The provider's forms of the thread's messages from the tail on (the view sends them); in seq
order, so that PostgreSQL reads the range of (thread, seq), not the thread by (thread, idx)."""
SUMMARY = (
    f"SELECT {SUMMARY_COLUMNS} FROM summary "
    "WHERE thread = ? AND agent = ? AND level = ? AND idx = ?"
)
"""A node by its key (agent `''`: the shared tree)."""
_NODE_COLUMNS = ", ".join(f"s.{column}" for column in SUMMARY_COLUMNS.split(", "))
NODES = (
    f"SELECT {_NODE_COLUMNS} FROM json_each(?) AS k CROSS JOIN summary AS s "
    "ON s.thread = ? AND s.agent = ? AND s.level = json_extract(k.value, '$[0]') "
    "AND s.idx = json_extract(k.value, '$[1]')"
)
"""An outline's nodes (SQLite): a JSON list of `[level, idx]` keys, then the thread and the
agent (`''`: the shared tree), each node looked up by its key."""
NODES_POSTGRESQL = (
    f"SELECT {_NODE_COLUMNS} FROM unnest($3::integer[], $4::bigint[]) AS k (level, idx) "
    "CROSS JOIN LATERAL (SELECT * FROM summary "
    "WHERE thread = $1 AND agent = $2 AND level = k.level AND idx = k.idx LIMIT 1) AS s"
)
"""The same on PostgreSQL: the thread, the agent, the levels ($3) and indexes ($4) as arrays. A
key is unique; its `LIMIT 1` also keeps the planner from reading the thread's nodes for a join
instead."""
UPDATE_OUTLINE = (
    "UPDATE outline SET {assignments}, version = version + 1 "
    "WHERE thread = ? AND epoch = ? AND version = ?"
)
"""A commit: the outline moves on if it is still the version the batch started from."""
INSERT_SUMMARY = insert("summary", SUMMARY_COLUMNS)
NEXT_CALL = "SELECT coalesce(max(n), -1) + 1 FROM call WHERE thread = ?"
"""The thread's next call number, read from the end of the (thread, n) index."""

SEARCH_POSTINGS = (
    "SELECT t.term, t.line, t.level, t.idx, t.n, s.length, s.at "
    "FROM json_each(?) AS k CROSS JOIN search_term AS t ON t.term = k.value "
    "CROSS JOIN search AS s INDEXED BY search_place ON s.thread = ? AND s.agent = ? "
    "AND s.line = t.line AND s.level = t.level AND s.idx = t.idx"
)
"""Search: the postings of one agent's keyed terms (a JSON list, then the thread and the agent),
each a range of the primary key, with the length and `at` of their rows from `search_place`
(a row of another thread whose key a term shares is not the thread's: left out)."""
SEARCH_POSTINGS_POSTGRESQL = """
SELECT t.term, t.line, t.level, t.idx, t.n, s.length, s.at
FROM search_term AS t CROSS JOIN LATERAL (
    SELECT length, at FROM search
    WHERE thread = $2 AND agent = $3 AND line = t.line AND level = t.level AND idx = t.idx LIMIT 1
) AS s
WHERE t.term = ANY($1::text[])
"""
SEARCH_PLACES = (
    "SELECT s.idx, s.length, s.at FROM json_each(?) AS k "
    "CROSS JOIN search AS s INDEXED BY search_place ON s.thread = ? AND s.agent = ? "
    "AND s.line = 0 AND s.level = 0 AND s.idx = k.value"
)
"""Search: the length and `at` of one agent's messages by index (a JSON list, then the thread
and the agent), from the `search_place` index alone: the neighbours that windows weigh."""
SEARCH_PLACES_POSTGRESQL = """
SELECT s.idx, s.length, s.at FROM unnest($3::bigint[]) AS k (idx) CROSS JOIN LATERAL (
    SELECT idx, length, at FROM search
    WHERE thread = $1 AND agent = $2 AND NOT line AND level = 0 AND idx = k.idx LIMIT 1
) AS s
"""
SEARCH_CORPORA = (
    "SELECT line, count(*), sum(length) FROM search WHERE thread = ? AND agent = ? GROUP BY line"
)
"""Search: how many rows and terms the thread holds of one agent (`''`: the shared rows),
messages and lines apart, in the index's order."""
_SEARCH_DETAILS = ", ".join(f"s.{column}" for column in DETAIL_COLUMNS.split(", "))
SEARCH_DETAILS = (
    f"SELECT {_SEARCH_DETAILS} FROM json_each(?) AS k CROSS JOIN search AS s "
    "ON s.thread = ? AND s.agent = json_extract(k.value, '$[0]') "
    "AND s.line = json_extract(k.value, '$[1]') "
    "AND s.level = json_extract(k.value, '$[2]') AND s.idx = json_extract(k.value, '$[3]')"
)
"""Search: what the listed results show, by their keys (a JSON list of `[agent, line, level,
idx]`, then the thread)."""
SEARCH_DETAILS_POSTGRESQL = f"""
SELECT {_SEARCH_DETAILS}
FROM unnest($2::text[], $3::boolean[], $4::integer[], $5::bigint[]) AS k (agent, line, level, idx)
CROSS JOIN LATERAL (
    SELECT * FROM search
    WHERE thread = $1 AND agent = k.agent AND line = k.line AND level = k.level AND idx = k.idx
    LIMIT 1
) AS s
"""


@dataclass(frozen=True, kw_only=True)
class Planned:
    """A statement whose plan is checked, with arguments to plan it with."""

    sql: str
    args: tuple[Any, ...]
    key: tuple[str, ...] = ()
    """Columns that must all be in the index condition: a lookup by key, not by thread."""
    postgresql: str | None = None
    """Its PostgreSQL text, when it is not `rows.numbered(sql)`."""
    postgresql_args: tuple[Any, ...] | None = None
    """Its PostgreSQL arguments, when they are not `args`."""


_MESSAGE_ARGS = ("m", "t", "t", False, "t", "a", "", "x", "2026-01-01T00:00:00+00:00", False,
                 "[]", 1, True, "t", "a", None)  # fmt: skip

PLANNED: dict[str, Planned] = {
    "insert message": Planned(sql=INSERT_MESSAGE, args=_MESSAGE_ARGS),
    "message": Planned(sql=MESSAGE, args=("m",), key=("id",)),
    "any message": Planned(sql=ANY_MESSAGE, args=("t",), key=("thread",)),
    "outline": Planned(sql=OUTLINE, args=("t",), key=("thread",), postgresql=OUTLINE_POSTGRESQL),
    "tail": Planned(sql=TAIL, args=("t", 0, 10), key=("thread", "seq")),
    "pending": Planned(sql=PENDING, args=("t", 0, 10), key=("thread", "seq")),
    "messages": Planned(sql=MESSAGES, args=("t", 0, 10), key=("thread", "seq")),
    "natives": Planned(sql=NATIVES, args=("t", 0), key=("thread", "seq")),
    "summary": Planned(sql=SUMMARY, args=("t", "", 0, 1), key=("thread", "agent", "level", "idx")),
    "nodes": Planned(
        sql=NODES,
        args=("[[0, 1], [1, 0]]", "t", ""),
        key=("thread", "agent", "level", "idx"),
        postgresql=NODES_POSTGRESQL,
        postgresql_args=("t", "", [0, 1], [1, 0]),
    ),
    "update outline": Planned(
        sql=UPDATE_OUTLINE.format(assignments="position = ?"),
        args=(1, "t", "e", 0),
        key=("thread",),
    ),
    "next call": Planned(sql=NEXT_CALL, args=("t",), key=("thread",)),
    "search postings": Planned(
        sql=SEARCH_POSTINGS,
        args=('["k1venue", "k1plan"]', "t", ""),
        key=("term",),
        postgresql=SEARCH_POSTINGS_POSTGRESQL,
        postgresql_args=(["k1venue", "k1plan"], "t", ""),
    ),
    "search places": Planned(
        sql=SEARCH_PLACES,
        args=("[1, 2, 3]", "t", ""),
        key=("thread", "agent", "line", "level", "idx"),
        postgresql=SEARCH_PLACES_POSTGRESQL,
        postgresql_args=("t", "", [1, 2, 3]),
    ),
    "search corpora": Planned(sql=SEARCH_CORPORA, args=("t", ""), key=("thread", "agent")),
    "search details": Planned(
        sql=SEARCH_DETAILS,
        args=('[["", false, 0, 1], ["", true, 1, 0]]', "t"),
        key=("thread", "agent", "line", "level", "idx"),
        postgresql=SEARCH_DETAILS_POSTGRESQL,
        postgresql_args=("t", ["", ""], [False, True], [0, 1], [1, 0]),
    ),
}
"""Every statement run per message, per view, per zoom and per search, by name."""
