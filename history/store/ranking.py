"""How search finds and ranks: the same reads and the same arithmetic for every store.

A store answers four reads (`Reads`): the postings of the query's terms (each term keyed by
the thread and agent, so they are the thread's own), the length and `at` of the rows ranking
needs, the size of the thread's corpus, and what the listed results show. `search` does the
rest, so SQLite and PostgreSQL return the same hits in the same order:

- A message scores by BM25 (k1 1.2, b 0.75; a stem's rarity among the thread's messages) of its
  own terms, plus the BM25 of its window (itself with the message before and after it, as one
  text), each divided by the best among the candidates: up to 2. So a short reply to a question
  is found through the question.
- A line scores by BM25 among the thread's lines, divided by the best line's: up to 1.
- Better scores first, then the newest, then the lower level, the lower index, messages first.
  A line is listed only when it holds a query stem that no hit listed before it holds (so a
  line never comes with an ancestor or a message that says the same), one hit per label, and
  `limit` counts what is listed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from .. import terms as words
from ..contract import Hit
from ..lines import label

K1 = 1.2
B = 0.75
WINDOW = 1
"""Messages on each side of a message that its window holds."""

Key = tuple[str, bool, int, int]
"""A row of the index: agent, line or message, level, index."""
Position = tuple[str, int]
"""A message's place: its agent (`''` for shared) and its index."""
Counts = Mapping[str, int]
"""The query stems a row holds, with how often (the others left out)."""
Place = tuple[int, str]
"""A row ranking weighs: its length in terms and its `at`."""
Entry = tuple[float, float, int, int, bool, str, Key, Counts]
"""A result as it is sorted: minus its score, minus its time, its level, index, whether it is a
line, its agent; then its key and the stems it holds."""
T = TypeVar("T")


class Reads(Protocol):
    """What a store reads for a search, in one snapshot of its thread."""

    async def unposted(self, agent: str) -> Sequence[Sequence[Any]]:
        """`line, level, idx, words, length, at` of one agent's rows whose postings are not
        written yet (the thread's rows only)."""

    async def postings(self, agent: str, terms: Sequence[str]) -> Sequence[Sequence[Any]]:
        """`term, line, level, idx, n, length, at` of the postings of one agent's keyed terms,
        with the length and `at` of their rows (the thread's rows only)."""

    async def places(self, agent: str, indexes: Sequence[int]) -> Sequence[Sequence[Any]]:
        """`idx, length, at` of one agent's messages at `indexes`."""

    async def corpora(self, agent: str) -> Sequence[Sequence[Any]]:
        """`line, count, sum(length)` of the thread's rows of one agent."""

    async def details(self, keys: Sequence[Key]) -> Sequence[Sequence[Any]]:
        """`agent, line, level, idx, message, since, text` of the thread's rows at `keys`."""


@dataclass(frozen=True, kw_only=True)
class Corpus:
    """How many rows of a kind (messages, or lines) the searched thread holds, and their terms."""

    rows: int
    terms: int

    @property
    def average(self) -> float:
        return self.terms / self.rows if self.rows else 0.0


@dataclass(frozen=True, kw_only=True)
class Ranked:
    """A result, to be read whole once it is listed."""

    score: float
    key: Key
    at: str
    held: frozenset[str]
    """The query stems it holds (none for a message found through its neighbours alone)."""
    terms: tuple[str, ...]
    """The query's words that gave them."""


async def search(
    reads: Reads, thread: str, query: str, limit: int, *, language: str, agent: str | None
) -> list[Hit]:
    """The thread's hits for `query`, best first: at most `limit` (see the module's docstring);
    with `agent`, that agent's steps and step lines are searched beside the shared rows."""
    stems = words.query_terms(query, language)
    if not stems or limit <= 0:
        return []
    agents = ("", agent) if agent else ("",)
    counts: dict[Key, dict[str, int]] = {}
    places: dict[Key, Place] = {}
    for a in agents:
        keyed = {words.key(thread, a) + stem: stem for stem in stems}
        # The rows that wait for their postings first: one posted in between is read twice,
        # alike, and none is missed.
        found: list[Sequence[Any]] = [
            (term, line, level, index, n, length, at)
            for line, level, index, held, length, at in await reads.unposted(a)
            for term, n in Counter(held.split()).items()
            if term in keyed
        ]
        found += await reads.postings(a, list(keyed))
        for term, line, level, index, n, length, at in found:
            key = (a, bool(line), level, index)
            counts.setdefault(key, {})[keyed[term]] = n
            places[key] = (length, at)
    if not counts:
        return []
    for a in agents:
        indexes = wanted(counts, a) - {k[3] for k in places if k[0] == a and not k[1]}
        for index, length, at in await reads.places(a, sorted(indexes)) if indexes else []:
            places[(a, False, 0, index)] = (length, at)
    messages, lines = corpora([row for a in agents for row in await reads.corpora(a)])
    ranked = rank(counts, places, stems, messages=messages, lines=lines, limit=limit)
    read = await reads.details([r.key for r in ranked]) if ranked else []
    details = {(a, bool(line), level, i): row for a, line, level, i, *row in read}
    return [_hit(r, *details[r.key]) for r in ranked if r.key in details]


def wanted(counts: Mapping[Key, Counts], agent: str) -> set[int]:
    """The indexes of the agent's messages that the windows of its candidates weigh (two either
    side of a message)."""
    return {
        index + d
        for a, line, _, index in counts
        if a == agent and not line
        for d in range(-2 * WINDOW, 2 * WINDOW + 1)
        if index + d >= 0
    }


def corpora(found: Sequence[Sequence[Any]]) -> tuple[Corpus, Corpus]:
    """The messages' and the lines' corpus from `line, count, sum(length)` rows."""
    sizes: dict[bool, Corpus] = {}
    for line, n, total in found:
        before = sizes.get(bool(line), Corpus(rows=0, terms=0))
        sizes[bool(line)] = Corpus(rows=before.rows + n, terms=before.terms + int(total or 0))
    empty = Corpus(rows=0, terms=0)
    return sizes.get(False, empty), sizes.get(True, empty)


def rank(
    counts: Mapping[Key, Counts],
    places: Mapping[Key, Place],
    stems: Mapping[str, tuple[str, ...]],
    *,
    messages: Corpus,
    lines: Corpus,
    limit: int,
) -> list[Ranked]:
    """The results, best first: at most `limit` (see the module's docstring)."""
    said = {(k[0], k[3]): c for k, c in counts.items() if not k[1]}
    lengths = {(k[0], k[3]): p[0] for k, p in places.items() if not k[1]}
    scores = _bm25(said, lengths, messages)
    for position, score in _windows(said, messages, lengths).items():
        scores[position] = scores.get(position, 0.0) + score
    found = {k: c for k, c in counts.items() if k[1]}
    length = {k: places[k][0] for k in found}
    stamps = {at: -datetime.fromisoformat(at).timestamp() for _, at in places.values()}
    empty: Counts = {}
    # Sorted as tuples: score, then the newest, the lower level and index, messages first.
    ranked: list[Entry] = [
        (-score, stamps[places[k][1]], 0, index, False, agent, k, said.get((agent, index), empty))
        for (agent, index), score in scores.items()
        for k in [(agent, False, 0, index)]
    ]
    ranked += [
        (-score, stamps[places[k][1]], k[2], k[3], True, k[0], k, found[k])
        for k, score in _bm25(found, length, lines).items()
    ]
    ranked.sort()
    return [
        Ranked(
            score=-r[0], key=r[6], at=places[r[6]][1], held=frozenset(r[7]),
            terms=tuple(word for stem in stems if stem in r[7] for word in stems[stem]),
        )
        for r in _listed(ranked, limit)
    ]  # fmt: skip


def _hit(r: Ranked, message: str | None, since: str, text: str) -> Hit:
    agent, _, level, index = r.key
    return Hit(
        label=label(level, index, agent=agent),
        level=level,
        index=index,
        text=text,
        at=datetime.fromisoformat(r.at),
        message=message,
        since=datetime.fromisoformat(since),
        agent=agent,
        terms=r.terms,
        score=r.score,
    )


def _bm25(counts: Mapping[T, Counts], lengths: Mapping[T, int], corpus: Corpus) -> dict[T, float]:
    """Each row's BM25 against the corpus (a stem's rarity: among the rows given), divided by
    the best."""
    df: dict[str, int] = {}
    for held in counts.values():
        for stem in held:
            df[stem] = df.get(stem, 0) + 1
    n, average = corpus.rows, corpus.average
    idf = {stem: math.log(1 + (max(n - d, 0) + 0.5) / (d + 0.5)) for stem, d in df.items()}
    scores = {}
    for row, held in counts.items():
        norm = K1 * (1 - B + B * lengths[row] / average) if average else K1
        total = 0.0
        for stem in sorted(held):
            total += idf[stem] * held[stem] * (K1 + 1) / (held[stem] + norm)
        scores[row] = total
    best = max(scores.values(), default=0.0)
    return {row: score / best if best > 0 else 0.0 for row, score in scores.items()}


def _windows(
    said: Mapping[Position, Counts], corpus: Corpus, lengths: Mapping[Position, int]
) -> dict[Position, float]:
    """Each message's window score, against the best: BM25 of it with its neighbours as one
    text, among the windows of the thread's messages."""
    around = range(-WINDOW, WINDOW + 1)
    centres = {(a, i + d) for a, i in said for d in around if (a, i + d) in lengths}
    windows: dict[Position, dict[str, int]] = {}
    sizes: dict[Position, int] = {}
    for agent, index in centres:
        tf: dict[str, int] = {}
        size = 0
        for d in around:
            size += lengths.get((agent, index + d), 0)
            for stem, n in said.get((agent, index + d), {}).items():
                tf[stem] = tf.get(stem, 0) + n
        windows[(agent, index)] = tf
        sizes[(agent, index)] = size
    wide = Corpus(rows=corpus.rows, terms=(2 * WINDOW + 1) * corpus.terms)
    return _bm25(windows, sizes, wide)


def _listed(ranked: Sequence[Entry], limit: int) -> list[Entry]:
    """Lines that add a stem, one per label, until `limit`."""
    listed: list[Entry] = []
    covered: set[str] = set()
    labels: set[tuple[str, str]] = set()
    for r in ranked:
        agent, line, level, index = r[6]
        name = (agent, label(level, index, agent=agent))
        if (line and covered.issuperset(r[7])) or name in labels:
            continue
        covered.update(r[7])
        labels.add(name)
        listed.append(r)
        if len(listed) == limit:
            break
    return listed
