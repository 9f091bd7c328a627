"""How search finds and ranks: the same reads and the same arithmetic for every store.

A store answers the reads of `Reads`: the postings of the query's terms in the thread, for one
agent at a time (`''`: the shared rows), and how many there are, the words of the rows still
waiting for theirs, the length and `at` of the rows ranking needs, the size of the
thread's corpus, and what the listed results show. `search` does the rest, so SQLite and
PostgreSQL return the same hits in the same order:

- A message scores by BM25 (k1 1.2, b 0.75; a stem's rarity among the thread's messages) of its
  own terms, plus the BM25 of its window (itself with the message before and after it, as one
  text), each divided by the best among the candidates: up to 2. So a short reply to a question
  is found through the question.
- A line scores by BM25 among the thread's lines, divided by the best line's: up to 1.
- Each BM25 is first multiplied by the share of the query's stems (those some candidate holds)
  that the row (or window) holds, Lucene's classic coordination factor: a message that holds
  every word asked outranks a shorter one that holds only the rarest, as a person who recalls
  three details of a message expects.
- The candidates are the rows holding a query stem; of a stem that more than `CANDIDATES`
  messages (or lines) hold, only the newest of them (lines from the highest level down), with
  its rarity taken from how many hold it and its counts read for every candidate; and, of two
  or more such stems, the newest `CANDIDATES` messages holding two of them or more, among each
  stem's newest `COUNTED` (so "the invoice number" is found however old, where "invoice" and
  "number" are each in hundreds of newer messages). So a search reads a bounded number of rows
  however long the thread grows, and is exact until a stem is that common. How many rows hold
  a stem is counted exactly up to `COUNTED`; of a stem more hold, it is estimated from how far
  into the thread's rows the one after its `COUNTED`th is (`estimate`), so that counting too
  reads a bounded number of rows.
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
from typing import Any, NamedTuple, Protocol, TypeVar

from ...contract import Hit
from ...lines import label
from . import terms as words

K1 = 1.2
B = 0.75
WINDOW = 1
"""Messages on each side of a message that its window holds."""
CANDIDATES = 500
"""Of a stem that more messages (or lines) than this hold, only the newest are candidates."""
COUNTED = 5_000
"""How many of a stem's postings are counted for its rarity; past that it is estimated."""


class Key(NamedTuple):
    """A row of the index."""

    agent: str
    """`''` for the shared rows."""
    line: bool
    """A line, or a message."""
    level: int
    index: int  # type: ignore[assignment]  # the row's index, in place of tuple.index


Position = tuple[str, int]
"""A message's place: its agent (`''` for shared) and its index. Only ever taken apart whole
(`for agent, index in ...`), and made for each of the windows' lookups, where a named tuple
would slow `rank` by a third."""
Counts = Mapping[str, int]
"""The query stems a row holds, with how often (the others left out)."""


class Place(NamedTuple):
    """A row ranking weighs."""

    length: int
    """Its length in terms."""
    at: str


class Posting(NamedTuple):
    """A posting looked for: a term, and the row (of one agent) that may hold it."""

    term: str
    line: bool
    level: int
    index: int  # type: ignore[assignment]  # the row's index, in place of tuple.index


class Candidate(NamedTuple):
    """A result as it is sorted, as a tuple: the best score, then the newest, the lower level
    and index, messages first; its key is unique, so the stems it holds are never compared."""

    minus_score: float
    minus_at: float
    """Minus its `at` as a POSIX timestamp."""
    level: int
    index: int  # type: ignore[assignment]  # the row's index, in place of tuple.index
    line: bool
    agent: str
    key: Key
    held: Counts
    """The query stems it holds, with how often."""


T = TypeVar("T")
Rows = Sequence[Sequence[Any]]
"""A read's rows, each in the order of its columns."""


class Reads(Protocol):
    """What a store reads for a search, in one snapshot of its thread."""

    async def unposted(self, agent: str) -> Sequence[Sequence[Any]]:
        """`line, level, idx, words, length, at` of one agent's rows whose postings are not
        written yet (the thread's rows only)."""

    async def frequencies(self, agent: str, terms: Sequence[str], *, cap: int) -> Rows:
        """`term, line, count, last`: how many postings each of the agent's terms has among
        messages and among lines, up to `cap + 1` (a term held nowhere may be left out); past
        `cap`, `last` is the key (`level * 2**32 + idx`) of the one after the `cap`th."""

    async def newest(
        self, agent: str, term: str, *, line: bool, cap: int
    ) -> Sequence[Sequence[Any]]:
        """What `postings` reads, for one term among messages or lines: its newest `cap`
        postings only (lines from the highest level down)."""

    async def together(
        self, agent: str, terms: Sequence[str], *, cap: int, limit: int
    ) -> Sequence[int]:
        """The indexes of the agent's messages holding two or more of `terms`, among each
        term's newest `cap` postings, newest first, up to `limit`."""

    async def held(self, agent: str, keys: Sequence[Posting]) -> Rows:
        """`term, line, level, idx, n` of the agent's postings at `keys` that exist."""

    async def postings(self, agent: str, terms: Sequence[str]) -> Sequence[Sequence[Any]]:
        """`term, line, level, idx, n, length, at` of the postings of one agent's terms, with
        the length and `at` of their rows (the thread's rows only)."""

    async def places(self, agent: str, indexes: Sequence[int]) -> Sequence[Sequence[Any]]:
        """`idx, length, at` of one agent's messages at `indexes`."""

    async def corpora(self, agent: str) -> Sequence[Sequence[Any]]:
        """`line, count, sum(length)` of the thread's rows of one agent."""

    async def details(self, keys: Sequence[Key]) -> Sequence[Sequence[Any]]:
        """`agent, line, level, idx, message, since, text` of the thread's rows at `keys` (a
        message's text is its line, `line_of`)."""


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
    reads: Reads, query: str, limit: int, *, language: str, agent: str | None
) -> list[Hit]:
    """The thread's hits for `query`, best first: at most `limit` (see the module's docstring);
    with `agent`, that agent's steps and step lines are searched beside the shared rows."""
    stems = words.query_terms(query, language)
    if not stems or limit <= 0:
        return []
    agents = ("", agent) if agent else ("",)
    counts: dict[Key, dict[str, int]] = {}
    places: dict[Key, Place] = {}
    frequent: dict[str, set[tuple[bool, str]]] = {}
    holding: Counter[tuple[bool, str]] = Counter()
    waiting: dict[str, list[Match]] = {}
    sized = {a: await reads.corpora(a) for a in agents}
    for a in agents:
        frequent[a], sizes, waiting[a] = await _gather(
            reads, a, stems, counts, places, corpora(sized[a])
        )
        holding.update(sizes)
    if not counts:
        return []
    for a in agents:
        indexes = wanted(counts, a) - {k.index for k in places if k.agent == a and not k.line}
        for index, length, at in await reads.places(a, sorted(indexes)) if indexes else []:
            places[Key(a, False, 0, index)] = Place(length, at)
        partly = {stem for _, stem in frequent[a]}
        await _fill(reads, a, partly, waiting[a], counts, places)
    messages, lines = corpora([row for a in agents for row in sized[a]])
    # A stem read in part for any agent: its rarity from how many rows of every agent hold it.
    capped = set().union(*frequent.values())
    ranked = rank(
        counts,
        places,
        stems,
        messages=messages,
        lines=lines,
        limit=limit,
        frequent={k: holding[k] for k in capped},
    )
    read = await reads.details([r.key for r in ranked]) if ranked else []
    details = {Key(a, bool(line), level, i): row for a, line, level, i, *row in read}
    return [_hit(r, *details[r.key]) for r in ranked if r.key in details]


class Match(NamedTuple):
    """A row holding a keyed term."""

    term: str
    line: bool
    """A line, or a message."""
    level: int
    index: int  # type: ignore[assignment]  # the row's index, in place of tuple.index
    occurrences: int
    """How often it holds the term."""
    length: int
    """The row's length in terms."""
    at: str


class Unposted(NamedTuple):
    """A row waiting for its postings, as `Reads.unposted` reads it."""

    line: bool
    level: int
    index: int  # type: ignore[assignment]  # the row's index, in place of tuple.index
    words: str
    """Its terms, spaced (`terms.spaced`)."""
    length: int
    at: str


async def _gather(
    reads: Reads,
    agent: str,
    stems: Mapping[str, tuple[str, ...]],
    counts: dict[Key, dict[str, int]],
    places: dict[Key, Place],
    sizes_of: tuple[Corpus, Corpus],
) -> tuple[set[tuple[bool, str]], dict[tuple[bool, str], int], list[Match]]:
    """Read the agent's candidates into `counts` and `places`: every row holding a query stem,
    except that of a stem more than `CANDIDATES` messages (or lines) hold, only the newest are
    read (lines from the highest level down). Returns those frequent stems (lines or not), how
    many of the agent's rows hold each stem (estimated past `COUNTED` from `sizes_of`, its
    messages' and lines' corpora), and the matches among the rows waiting for postings."""
    keyed = list(stems)
    # The rows that wait for their postings first: one posted in between is read twice,
    # alike, and none is missed.
    unposted = [Unposted._make(row) for row in await reads.unposted(agent)]
    waiting: list[Match] = [
        Match(term, bool(row.line), row.level, row.index, n, row.length, row.at)
        for row in unposted
        for term in keyed
        if (n := row.words.count(f" {term} "))  # terms are spaced ` a  b `: counted whole, apart
    ]
    sizes = Counter((m.term, m.line) for m in waiting)
    posted_rows = [
        sizes_of[line].rows - sum(row.line == line for row in unposted) for line in (0, 1)
    ]
    for t, line, n, last in await reads.frequencies(agent, keyed, cap=COUNTED):
        if last is not None:  # more than COUNTED: estimated from the one after the last counted
            n = estimate(last, posted_rows[line], COUNTED + 1)
        if n:
            sizes[t, bool(line)] += n
    frequent = {(t, line) for (t, line), n in sizes.items() if n > CANDIDATES}
    partly = {t for t, _ in frequent}
    found = [m for m in waiting if (m.term, m.line) not in frequent]
    whole = [t for t in keyed if t not in partly]
    found += [_match(r) for r in await reads.postings(agent, whole)] if whole else []
    for t in partly:
        for line in (False, True):
            mine = [m for m in waiting if (m.term, m.line) == (t, line)]
            posted = sizes[t, line] - len(mine)
            if (t, line) in frequent:  # the newest, waiting or posted
                newest = mine + await _newest(reads, agent, t, line, CANDIDATES)
                found += sorted(newest, key=lambda m: (m.level, m.index), reverse=True)[:CANDIDATES]
            elif posted:  # all of them (those waiting are found already)
                found += await _newest(reads, agent, t, line, posted)
    for m in found:
        key = Key(agent, m.line, m.level, m.index)
        counts.setdefault(key, {})[m.term] = m.occurrences
        places[key] = Place(m.length, m.at)
    # Messages holding common stems together are candidates too, however old: a question's
    # words are each in many messages, and together in the one it asks about.
    common = sorted(t for t, line in frequent if not line)
    if len(common) >= 2:
        for index in await reads.together(agent, common, cap=COUNTED, limit=CANDIDATES):
            counts.setdefault(Key(agent, False, 0, index), {})
    held = {(line, t): n for (t, line), n in sizes.items()}
    return {(line, t) for t, line in frequent}, held, waiting


def estimate(last: int, rows: int, counted: int) -> int:
    """How many of `rows` (posted) hold a stem whose `counted`th posting in the key's order is
    `last` (`level * 2**32 + idx`): its share of the rows up to it, over all (at least
    `counted`). Messages are all at level 0; about half of a tree's lines are at level 0, a
    quarter at level 1, ..., so about `rows * (1 - 2**-L)` lines come before level L."""
    level, index = divmod(last, 2**32)
    before = rows * (1 - 2.0**-level) + index + 1
    return min(rows, max(counted, round(counted * rows / before)))


async def _newest(reads: Reads, agent: str, term: str, line: bool, cap: int) -> list[Match]:
    return [_match(r) for r in await reads.newest(agent, term, line=line, cap=cap)]


def _match(row: Sequence[Any]) -> Match:
    term, line, level, index, n, length, at = row
    return Match(term, bool(line), level, index, n, length, at)


async def _fill(
    reads: Reads,
    agent: str,
    stems: set[str],
    waiting: Sequence[Match],
    counts: dict[Key, dict[str, int]],
    places: Mapping[Key, Place],
) -> None:
    """Give the agent's candidates and the neighbours their windows weigh their counts of the
    frequent `stems`, whose rows were read only in part: those not read already."""
    missing = [
        Posting(stem, k.line, k.level, k.index)
        for k in sorted(places)
        if k.agent == agent
        for stem in sorted(stems)
        if stem not in counts.get(k, {})
    ]
    if not missing:
        return
    found = [_match((*r, 0, "")) for r in await reads.held(agent, missing)]
    found += [m for m in waiting if m.term in stems]
    for m in found:
        key = Key(agent, m.line, m.level, m.index)
        if key in places:
            counts.setdefault(key, {})[m.term] = m.occurrences


def wanted(counts: Mapping[Key, Counts], agent: str) -> set[int]:
    """The indexes of the agent's messages that the windows of its candidates weigh (two either
    side of a message)."""
    return {
        k.index + d
        for k in counts
        if k.agent == agent and not k.line
        for d in range(-2 * WINDOW, 2 * WINDOW + 1)
        if k.index + d >= 0
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
    frequent: Mapping[tuple[bool, str], int] | None = None,
) -> list[Ranked]:
    """The results, best first: at most `limit` (see the module's docstring). `frequent` are
    the stems whose rows were read only in part, by whether they are lines, with how many rows
    hold them: their rarity is taken from these counts."""
    known = frequent or {}
    said = {(k.agent, k.index): c for k, c in counts.items() if not k.line}
    lengths = {(k.agent, k.index): p.length for k, p in places.items() if not k.line}
    held = {stem: n for (line, stem), n in known.items() if not line}
    scores = _bm25(said, lengths, messages, held)
    # A window holds a stem when one of its messages does: at most three times as many.
    spread = {stem: min(messages.rows, (2 * WINDOW + 1) * n) for stem, n in held.items()}
    for position, score in _windows(said, messages, lengths, spread).items():
        scores[position] = scores.get(position, 0.0) + score
    found = {k: c for k, c in counts.items() if k.line}
    length = {k: places[k].length for k in found}
    stamps = {p.at: -datetime.fromisoformat(p.at).timestamp() for p in places.values()}
    empty: Counts = {}
    # Sorted as tuples: score, then the newest, the lower level and index, messages first.
    ranked: list[Candidate] = [
        Candidate(
            -score, stamps[places[k].at], 0, index, False, agent, k, said.get((agent, index), empty)
        )
        for (agent, index), score in scores.items()
        for k in [Key(agent, False, 0, index)]
    ]
    ranked += [
        Candidate(-score, stamps[places[k].at], k.level, k.index, True, k.agent, k, found[k])
        for k, score in _bm25(
            found, length, lines, {stem: n for (line, stem), n in known.items() if line}
        ).items()
    ]
    ranked.sort()
    return [
        Ranked(
            score=-r.minus_score,
            key=r.key,
            at=places[r.key].at,
            held=frozenset(r.held),
            terms=tuple(word for stem in stems if stem in r.held for word in stems[stem]),
        )
        for r in _listed(ranked, limit)
    ]


def _hit(r: Ranked, message: str | None, since: str, text: str) -> Hit:
    key = r.key
    return Hit(
        label=label(key.level, key.index, agent=key.agent),
        level=key.level,
        index=key.index,
        text=text,
        at=datetime.fromisoformat(r.at),
        message=message,
        since=datetime.fromisoformat(since),
        agent=key.agent,
        terms=r.terms,
        score=r.score,
    )


def _bm25(
    counts: Mapping[T, Counts],
    lengths: Mapping[T, int],
    corpus: Corpus,
    known: Mapping[str, int] | None = None,
) -> dict[T, float]:
    """Each row's BM25 against the corpus (a stem's rarity: among the rows given, or as `known`
    says), times the share of the query's stems found here that the row holds (Lucene's
    classic coordination factor), divided by the best."""
    df: dict[str, int] = {}
    for held in counts.values():
        for stem in held:
            df[stem] = df.get(stem, 0) + 1
    found = len(df)
    df.update((stem, n) for stem, n in (known or {}).items() if stem in df)
    n, average = corpus.rows, corpus.average
    idf = {stem: math.log(1 + (max(n - d, 0) + 0.5) / (d + 0.5)) for stem, d in df.items()}
    scores = {}
    for row, held in counts.items():
        norm = K1 * (1 - B + B * lengths[row] / average) if average else K1
        total = 0.0
        for stem in sorted(held):
            total += idf[stem] * held[stem] * (K1 + 1) / (held[stem] + norm)
        scores[row] = total * len(held) / found if found else 0.0
    best = max(scores.values(), default=0.0)
    return {row: score / best if best > 0 else 0.0 for row, score in scores.items()}


def _windows(
    said: Mapping[Position, Counts],
    corpus: Corpus,
    lengths: Mapping[Position, int],
    known: Mapping[str, int],
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
    return _bm25(windows, sizes, wide, known)


def _listed(ranked: Sequence[Candidate], limit: int) -> list[Candidate]:
    """Lines that add a stem, one per label, until `limit`."""
    listed: list[Candidate] = []
    covered: set[str] = set()
    labels: set[tuple[str, str]] = set()
    for r in ranked:
        name = (r.agent, label(r.level, r.index, agent=r.agent))
        if (r.line and covered.issuperset(r.held)) or name in labels:
            continue
        covered.update(r.held)
        labels.add(name)
        listed.append(r)
        if len(listed) == limit:
            break
    return listed
