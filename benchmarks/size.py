"""The size of a store against what it holds: each corpus written as the project's JSONL, stored
and processed with the offline `echo` summarizer, then measured table by table.

A table's bytes are its pages and its indexes' (SQLite's `dbstat` virtual table, after the log
is copied into the file; PostgreSQL's `pg_total_relation_size`, which counts its indexes and
TOAST). The ratio is the store's bytes (the SQLite file; the schema's relations) over the JSONL's.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from history.contract import Message
from history.plugin import History
from history.settings import HistorySettings

from .corpora import Corpus
from .sections import table
from .targets import Target

log = logging.getLogger(__name__)

LIMIT = 5.0
"""A store is at most this many times the JSONL it was ingested from."""


@dataclass(frozen=True, kw_only=True)
class Size:
    """One corpus stored once."""

    corpus: str
    messages: int
    jsonl: int
    """Bytes of the corpus as the project's JSONL."""
    store: int
    """Bytes of the store that holds it, processed."""
    tables: tuple[tuple[str, int], ...]
    """Each table's bytes with its indexes', largest first."""
    kind: Literal["sqlite", "postgresql"] = "sqlite"

    @property
    def ratio(self) -> float:
        return self.store / self.jsonl if self.jsonl else 0.0


def jsonl_line(message: Message) -> str:
    """A message as one line of the project's JSONL (SPEC section 8)."""
    return json.dumps(message.to_json(), ensure_ascii=False) + "\n"


def write_jsonl(corpus: Corpus, path: Path) -> int:
    """Write the corpus's messages as JSONL; its size in bytes."""
    with path.open("w", encoding="utf-8") as f:
        for conversation in corpus.conversations:
            f.writelines(map(jsonl_line, conversation.messages))
    return path.stat().st_size


async def ingest(corpus: Corpus, store: str) -> None:
    """Store and process every message of the corpus, as `chat-outline ingest` does."""
    async with History(HistorySettings(summarizer="echo"), store=store) as history:
        for conversation in corpus.conversations:
            for message in conversation.messages:
                await history.message_created(message)
        await history.wait()


def sqlite_tables(path: Path) -> dict[str, int]:
    """Each table's bytes with its indexes' (an FTS5 table's shadow tables count as its own),
    the log copied into the file first."""
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        owner = dict(db.execute("SELECT name, tbl_name FROM sqlite_master"))
        found: dict[str, int] = defaultdict(int)
        for name, size in db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            found[owner.get(name, name)] += size
    return dict(found)


async def postgres_tables(url: str) -> dict[str, int]:
    """Each table's bytes in the URL's schema, its indexes and TOAST counted."""
    import asyncpg

    db = await asyncpg.connect(url)
    try:
        found = await db.fetch(
            "SELECT tablename, pg_total_relation_size(format('%I.%I', schemaname, tablename)) "
            "AS size FROM pg_tables WHERE schemaname = current_schema()"
        )
    finally:
        await db.close()
    return {row["tablename"]: row["size"] for row in found}


def _size(corpus: Corpus, jsonl: int, tables: dict[str, int], store: int, kind: str) -> Size:
    ranked = tuple(sorted(tables.items(), key=lambda t: (-t[1], t[0])))
    return Size(
        corpus=corpus.name,
        messages=corpus.messages,
        jsonl=jsonl,
        store=store,
        tables=ranked,
        kind="postgresql" if kind == "postgresql" else "sqlite",
    )


async def measure(
    corpora: Sequence[Corpus], folder: Path, *, postgres: str | None = None
) -> list[Size]:
    """Each corpus stored in a fresh SQLite file (and a fresh PostgreSQL schema when given)."""
    from .speed import postgres_schema

    found = []
    for corpus in corpora:
        jsonl = write_jsonl(corpus, folder / f"{corpus.name}.jsonl")
        path = folder / f"{corpus.name}-size.sqlite"
        log.info("store size: %s, %d messages", corpus.name, corpus.messages)
        await ingest(corpus, str(path))
        tables = sqlite_tables(path)
        found.append(_size(corpus, jsonl, tables, path.stat().st_size, "sqlite"))
        if postgres:
            async with postgres_schema(postgres) as url:
                await ingest(corpus, url)
                tables = await postgres_tables(url)
            found.append(_size(corpus, jsonl, tables, sum(tables.values()), "postgresql"))
    return found


SHOWN = ("message", "summary", "call", "search", "search_term", "search_word")
"""The tables given a column of their own; the rest are summed in `other`."""


def section(sizes: Sequence[Size]) -> list[str]:
    """The report's section: bytes of store per byte of input, per table."""
    if not sizes:
        return []
    out = [
        "## Store size",
        "",
        "Each corpus written as the project's JSONL, then stored and processed with the offline "
        "`echo` summarizer and the default settings; a table's share is its bytes (its indexes "
        "counted) per byte of JSONL. SQLite: the file's pages by `dbstat`, after a checkpoint; "
        "PostgreSQL: `pg_total_relation_size` of each table of the schema.",
        "",
    ]
    header = ["corpus", "store", "messages", "JSONL", "store bytes", "x input", *SHOWN, "other"]
    rows = []
    for s in sizes:
        tables = dict(s.tables)
        other = sum(size for name, size in tables.items() if name not in SHOWN)
        rows.append(
            [
                s.corpus,
                s.kind,
                f"{s.messages:,}",
                f"{s.jsonl:,}",
                f"{s.store:,}",
                f"{s.ratio:.2f}",
                *(f"{tables.get(name, 0) / s.jsonl:.2f}" for name in SHOWN),
                f"{other / s.jsonl:.2f}",
            ]
        )
    return out + table(header, rows)


def target(sizes: Sequence[Size], *, limit: float = LIMIT) -> Target:
    """Every store at most `limit` times its JSONL."""
    worst = max(sizes, key=lambda s: s.ratio)
    numbers = "; ".join(f"{s.corpus} ({s.kind}) {s.ratio:.2f}x" for s in sizes)
    return Target(
        goal=f"a store is at most {limit:g}x the JSONL it was ingested from (offline summarizer)",
        met=all(s.ratio <= limit for s in sizes),
        numbers=numbers,
        why=f"{worst.corpus} ({worst.kind}): largest tables "
        + ", ".join(f"{name} {size / worst.jsonl:.2f}x" for name, size in worst.tables[:3]),
    )
