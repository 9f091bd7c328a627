"""How search ranks what a store found: the same arithmetic for every store.

A store reads the candidates (its thread's rows holding any of the query's stems), the size of
the thread's corpus and the lengths of the messages around the candidates; `rank` does the
rest, so SQLite and PostgreSQL return the same hits in the same order.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..contract import Hit
from ..lines import label

K1 = 1.2
B = 0.75
WINDOW = 1
"""Messages on each side of a message that its window holds."""


@dataclass(frozen=True, kw_only=True)
class Row:
    """A candidate as the store read it: where it is, and how often it holds each query stem."""

    agent: str
    line: bool
    level: int
    index: int
    at: str
    length: int
    counts: Mapping[str, int]
    """The query stems it holds, with how often (the others left out)."""

    @property
    def key(self) -> Key:
        return (self.agent, self.line, self.level, self.index)


Key = tuple[str, bool, int, int]
"""A row of the index: agent, line or message, level, index."""
Position = tuple[str, int]
"""A message's place: its agent (`''` for shared) and its index."""


@dataclass(frozen=True, kw_only=True)
class Corpus:
    """How many rows of a kind (messages, or lines) the searched thread holds, and their terms."""

    rows: int
    terms: int

    @property
    def average(self) -> float:
        return self.terms / self.rows if self.rows else 0.0


@dataclass(frozen=True, kw_only=True)
class Place:
    """A message around the candidates: its length and when it was written."""

    length: int
    at: str


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


@dataclass(frozen=True, kw_only=True)
class Detail:
    """What a listed result shows, read once it is listed."""

    message: str | None
    since: str
    text: str


def around(rows: Iterable[Row]) -> set[Position]:
    """The messages whose lengths the windows of the candidates need (two either side)."""
    return {
        (row.agent, row.index + d)
        for row in rows
        if not row.line
        for d in range(-2 * WINDOW, 2 * WINDOW + 1)
        if row.index + d >= 0
    }


def rank(
    rows: Sequence[Row],
    stems: Mapping[str, tuple[str, ...]],
    *,
    messages: Corpus,
    lines: Corpus,
    places: Mapping[Position, Place],
    limit: int,
) -> list[Ranked]:
    """The results, best first: at most `limit` (see the module's docstring)."""
    found = [row for row in rows if row.counts]
    said = [row for row in found if not row.line]
    lengths = {place: p.length for place, p in places.items()}
    own = _normalized(_bm25([r.counts for r in said], [r.length for r in said], messages))
    scores = {(row.agent, row.index): score for row, score in zip(said, own, strict=True)}
    for place, score in _windows(said, messages, lengths).items():
        scores[place] = scores.get(place, 0.0) + score
    by_place = {(row.agent, row.index): row for row in said}
    ranked = []
    for place, score in scores.items():
        row = by_place.get(place)
        if row is not None:
            ranked.append(_ranked(row, score, stems))
        elif place in places:
            ranked.append(
                Ranked(
                    score=score,
                    key=(place[0], False, 0, place[1]),
                    at=places[place].at,
                    held=frozenset(),
                    terms=(),
                )
            )
    said_lines = [row for row in found if row.line]
    line_scores = _normalized(
        _bm25([r.counts for r in said_lines], [r.length for r in said_lines], lines)
    )
    ranked += [_ranked(r, s, stems) for r, s in zip(said_lines, line_scores, strict=True)]
    ranked.sort(key=_order)
    return _listed(ranked, limit)


def hits(ranked: Sequence[Ranked], details: Mapping[Key, Detail]) -> list[Hit]:
    """The results as hits, with what the store read of them (one erased meanwhile is left
    out)."""
    found = []
    for r in ranked:
        detail = details.get(r.key)
        if detail is None:
            continue
        agent, _, level, index = r.key
        found.append(
            Hit(
                label=label(level, index, agent=agent),
                level=level,
                index=index,
                text=detail.text,
                at=datetime.fromisoformat(r.at),
                message=detail.message,
                since=datetime.fromisoformat(detail.since),
                agent=agent,
                terms=r.terms,
                score=r.score,
            )
        )
    return found


def _ranked(row: Row, score: float, stems: Mapping[str, tuple[str, ...]]) -> Ranked:
    terms = tuple(word for stem in stems if stem in row.counts for word in stems[stem])
    return Ranked(score=score, key=row.key, at=row.at, held=frozenset(row.counts), terms=terms)


def _order(r: Ranked) -> tuple[float, float, int, int, bool, str]:
    agent, line, level, index = r.key
    return (-r.score, -datetime.fromisoformat(r.at).timestamp(), level, index, line, agent)


def _bm25(
    counts: Sequence[Mapping[str, int]], lengths: Sequence[int], corpus: Corpus
) -> list[float]:
    df: dict[str, int] = {}
    for held in counts:
        for stem in held:
            df[stem] = df.get(stem, 0) + 1
    return [
        _score(held, length, df, corpus.rows, corpus.average)
        for held, length in zip(counts, lengths, strict=True)
    ]


def _score(
    tf: Mapping[str, int], length: int, df: Mapping[str, int], n: int, average: float
) -> float:
    norm = K1 * (1 - B + B * length / average) if average else K1
    total = 0.0
    for stem in sorted(tf):
        idf = math.log(1 + (max(n - df[stem], 0) + 0.5) / (df[stem] + 0.5))
        total += idf * tf[stem] * (K1 + 1) / (tf[stem] + norm)
    return total


def _windows(
    said: Sequence[Row], corpus: Corpus, lengths: Mapping[Position, int]
) -> dict[Position, float]:
    """Each message's window score, against the best: BM25 of it with its neighbours as one
    text, among the windows of the thread's messages."""
    held = {(r.agent, r.index): r.counts for r in said}
    centres = sorted(
        {
            (agent, index + d)
            for agent, index in held
            for d in range(-WINDOW, WINDOW + 1)
            if (agent, index + d) in lengths
        }
    )
    windows: list[Mapping[str, int]] = []
    sizes: list[int] = []
    for agent, index in centres:
        tf: dict[str, int] = {}
        size = 0
        for d in range(-WINDOW, WINDOW + 1):
            place = (agent, index + d)
            size += lengths.get(place, 0)
            for stem, n in held.get(place, {}).items():
                tf[stem] = tf.get(stem, 0) + n
        windows.append(tf)
        sizes.append(size)
    wide = Corpus(rows=corpus.rows, terms=(2 * WINDOW + 1) * corpus.terms)
    scores = _normalized(_bm25(windows, sizes, wide))
    return dict(zip(centres, scores, strict=True))


def _normalized(scores: Sequence[float]) -> list[float]:
    best = max(scores, default=0.0)
    return [score / best if best > 0 else 0.0 for score in scores]


def _listed(ranked: Sequence[Ranked], limit: int) -> list[Ranked]:
    """Lines that add a stem, one per label, until `limit`."""
    listed: list[Ranked] = []
    covered: set[str] = set()
    labels: set[tuple[str, str]] = set()
    for r in ranked:
        agent, line, level, index = r.key
        name = (agent, label(level, index, agent=agent))
        if (line and not r.held - covered) or name in labels:
            continue
        covered |= r.held
        labels.add(name)
        listed.append(r)
        if len(listed) == limit:
            break
    return listed
