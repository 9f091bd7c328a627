"""Search's reads (`ranking.Reads`) in SQL: one statement each, run in the caller's
transaction, their rows handed to `ranking` as tuples in the order of its columns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from .. import _rows as rows
from .._adapter import Transaction
from . import ranking


@dataclass(frozen=True, kw_only=True)
class SearchReads:
    """Search's reads (`ranking.Reads`) of one thread, in the caller's snapshot; their rows as
    `ranking` takes them, in the order of its columns."""

    tx: Transaction
    thread: str

    async def unposted(self, agent: str) -> list[tuple[Any, ...]]:
        found = await self.tx.fetch("search_unposted", thread=self.thread, agent=agent)
        return _columns(found, "line", "level", "idx", "words", "length", "at")

    async def frequencies(
        self, agent: str, terms: Sequence[str], *, cap: int
    ) -> list[tuple[Any, ...]]:
        found = await self.tx.fetch(
            "search_frequencies", thread=self.thread, agent=agent, terms=list(terms), cap=cap
        )
        return _columns(found, "term", "line", "count", "last")

    async def newest(self, agent: str, term: str, *, line: bool, cap: int) -> list[tuple[Any, ...]]:
        found = await self.tx.fetch(
            "search_newest", thread=self.thread, agent=agent, term=term, line=line, cap=cap
        )
        return _columns(found, "term", "line", "level", "idx", "n", "length", "at")

    async def together(
        self, agent: str, terms: Sequence[str], *, cap: int, limit: int
    ) -> list[int]:
        found = await self.tx.fetch(
            "search_together",
            thread=self.thread,
            agent=agent,
            terms=list(terms),
            cap=cap,
            limit=limit,
        )
        return [r["idx"] for r in found]

    async def held(self, agent: str, keys: Sequence[ranking.Posting]) -> list[tuple[Any, ...]]:
        found = await self.tx.fetch(
            "search_held",
            thread=self.thread,
            agent=agent,
            keys=[list(key) for key in keys],
            key_terms=[k.term for k in keys],
            key_lines=[k.line for k in keys],
            key_levels=[k.level for k in keys],
            key_indexes=[k.index for k in keys],
        )
        return _columns(found, "term", "line", "level", "idx", "n")

    async def postings(self, agent: str, terms: Sequence[str]) -> list[tuple[Any, ...]]:
        found = await self.tx.fetch(
            "search_postings", terms=list(terms), thread=self.thread, agent=agent
        )
        return _columns(found, "term", "line", "level", "idx", "n", "length", "at")

    async def places(self, agent: str, indexes: Sequence[int]) -> list[tuple[Any, ...]]:
        found = await self.tx.fetch(
            "search_places", indexes=list(indexes), thread=self.thread, agent=agent
        )
        return _columns(found, "idx", "length", "at")

    async def corpora(self, agent: str) -> list[tuple[Any, ...]]:
        found = await self.tx.fetch("search_corpora", thread=self.thread, agent=agent)
        return _columns(found, "line", "count", "terms")

    async def details(self, keys: Sequence[ranking.Key]) -> list[tuple[Any, ...]]:
        found = await self.tx.fetch(
            "search_details",
            thread=self.thread,
            keys=[list(key) for key in keys],
            key_agents=[k.agent for k in keys],
            key_lines=[k.line for k in keys],
            key_levels=[k.level for k in keys],
            key_indexes=[k.index for k in keys],
        )
        return [
            (
                r["agent"],
                r["line"],
                r["level"],
                r["idx"],
                r["message"],
                r["since"],
                r["summary"] if r["line"] else rows.message_line(r, self.thread),
            )
            for r in found
        ]


def _columns(found: Sequence[rows.Row], *columns: str) -> list[tuple[Any, ...]]:
    """The rows' `columns` (two or more), by name: a tenth of a search was spent here when
    each row's tuple was built in Python."""
    return list(map(itemgetter(*columns), found))
