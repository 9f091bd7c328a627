"""Retrieval: does search put the message that answers a question near the top?

Questions are generated over the benchmark's conversations, each with the one message that
holds its answer, worded unlike that message so that matching its words as they are is not
enough:

- `forms`: three of the message's words, drawn among those other messages hold too (not its
  rarest), one or two of them in another English form of the same stem ("researching" for
  "researched", "hotel" for "hotels"; `wordfreq` says which forms English uses);
- `date`: one of its words and its day named in words, in one of several ways ("what was said
  about the invoice on Tuesday, February 3rd, 2026?"), the word being in a few other messages
  too;
- `reply`: two words of a question someone asked, drawn at random, the answer being the reply
  to it (which holds none of them);
- `fact`: each fact planted in a conversation (`corpora.Fact`), asked by what it is called
  ("what was the booking code?"), the answer being the message that settled it.

The words of a `forms` or a `reply` question, at most one of them a number, are held together
by at most `FEW` messages of the thread, as a person asks who recalls a detail: a question that
hundreds of messages answer alike (three common words of a chat made from a few templates)
measures nothing.

Each conversation is spread over weeks (a message every few hours), stored and processed with
the echo summarizer and budgets that make the tree deep (tail 2,000 to 6,000 tokens, outline
8,000 to 16,000 bytes), all in one store. `search` is the thread's search
(`history.agent.lookup`); the baseline is a plain BM25 (`rank-bm25`'s Okapi, words lowercased,
no stemming) over the same messages. A question is answered at k when the answer's label is
among the first k hits.

The time per query is measured on stores of 1k, 10k and 100k messages made of 600-message
threads (with the lines of their trees), searching one thread.
"""

from __future__ import annotations

import logging
import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from history import search
from history._languages import DEFAULT_LANGUAGE
from history.agent.lookup import recall_block
from history.contract import Message, Stored, Summary
from history.lines import cut, line_of, one_line
from history.plugin import History
from history.settings import HistorySettings
from history.store import open_store
from history.store._records import ThreadRecords
from history.store._search import terms

from .corpora import START, Conversation, Corpus
from .speed import postgres_schema
from .targets import Target

if TYPE_CHECKING:
    from .harness_search import HarnessSearch

log = logging.getLogger(__name__)

KINDS = ("forms", "date", "reply", "fact")
PEER = "conversation-search"
"""pydantic-ai-harness's `ConversationSearch` (`harness_search`), where it is installed."""
DEPTHS = (1, 5, 10)
SETTINGS = HistorySettings(summarizer="echo", tail=(2_000, 6_000), outline=(8_000, 16_000))
SPACING = timedelta(hours=5)
"""Time between two messages: a long chat over weeks, a few messages a day."""
FEW = 3
"""At most this many messages of the thread hold all the words a `forms` or `reply` question
asks: the answer is one of a few, as a person who recalls a detail asks for it."""
TRIES = 200
"""Draws of a question's words before a message is passed over for that kind."""
THREAD = 600
"""Messages per thread in the timing stores."""
RECALL = 400
"""Tokens of the recall block measured."""


@dataclass(frozen=True, kw_only=True)
class Question:
    thread: str
    kind: str
    text: str
    answer: str
    """The id of the message that holds the answer."""


@dataclass(frozen=True, kw_only=True)
class Score:
    """How often one method put the answer in its first 1, 5 and 10 hits."""

    corpus: str
    kind: str
    method: str
    questions: int
    found: tuple[float, ...]
    """Recall at each of `DEPTHS`."""


@dataclass(frozen=True, kw_only=True)
class Timing:
    messages: int
    """Messages in the store."""
    thread: int
    """Messages in the thread searched."""
    median_ms: float
    p90_ms: float
    cpu_ms: float = 0.0
    """Mean CPU time of this process a query (with SQLite, all of it; with PostgreSQL, the
    client's): the wall clock follows the machine's load, this does not."""
    database: str = "sqlite"


@dataclass(frozen=True, kw_only=True)
class Recall:
    """What the view's recall block costs and brings, per question asked as the newest message."""

    corpus: str
    budget: int
    tokens: float
    """Mean tokens the block adds to the prompt."""
    holds: float
    """Share of questions whose answer is in the block."""
    ms: float
    """Mean time to make the block."""


@dataclass(frozen=True, kw_only=True)
class Retrieval:
    scores: tuple[Score, ...]
    timings: tuple[Timing, ...]
    recalls: tuple[Recall, ...]


def spread(corpus: Corpus) -> list[list[Message]]:
    """Each conversation's shared messages, a message every `SPACING`."""
    return [
        [
            replace(m, at=START + k * SPACING)
            for k, m in enumerate(m for m in c.messages if not m.step)
        ]
        for c in corpus.conversations
    ]


def questions(thread: list[Message], rng: random.Random, per_kind: int) -> list[Question]:
    """Up to `per_kind` questions of each kind over one thread.

    The words asked are drawn at random among those another message holds too (a word no other
    message holds would find its message by itself), but together held by at most `FEW`
    messages, one or two of them asked in another English form where they have one; a date is
    named in one of several ways.
    """
    words = [[w for w in terms.words(line_of(m)) if _content(w)] for m in thread]
    stem = terms.stemmer(DEFAULT_LANGUAGE)
    held: dict[str, set[int]] = {}
    for k, ws in enumerate(words):
        for s in {stem(w) for w in ws}:
            held.setdefault(s, set()).add(k)
    df = {s: len(ks) for s, ks in held.items()}

    def telling(count: int, among: list[str]) -> list[str] | None:
        """`count` words drawn from `among`, at most one of them a number, whose stems are
        held together by at most `FEW` messages (a question that many messages answer alike
        tells nothing)."""
        for _ in range(TRIES):
            if len(among) < count:
                return None
            picked = rng.sample(among, count)
            numbers = sum(w.isdigit() for w in picked)
            if numbers <= 1 and len(set.intersection(*(held[stem(w)] for w in picked))) <= FEW:
                return picked
        return None

    found: list[Question] = []
    order = list(range(len(thread)))
    rng.shuffle(order)
    made = Counter[str]()
    for k in order:
        m, ws = thread[k], words[k]
        shared = sorted(
            (w for w in dict.fromkeys(ws) if df[stem(w)] >= 2), key=lambda w: (df[stem(w)], w)
        )
        picked = telling(3, shared) if made["forms"] < per_kind and len(shared) >= 4 else None
        if picked is not None:
            changed = rng.sample(range(3), rng.randint(1, 2))
            picked = [_other_form(w) if n in changed else w for n, w in enumerate(picked)]
            if any(w not in ws for w in picked):
                found.append(_question(m, "forms", f"what was said about {' '.join(picked)}?"))
                made["forms"] += 1
                continue
        common = [w for w in shared if df[stem(w)] <= 8]
        if made["date"] < per_kind and common:
            when = _named(m, rng)
            text = f"what was said about {rng.choice(common)} on {when}?"
            found.append(_question(m, "date", text))
            made["date"] += 1
            continue
        reply = thread[k + 1] if k + 1 < len(thread) else None
        if (
            made["reply"] < per_kind
            and reply is not None
            and reply.author != m.author
            and m.text.rstrip().endswith("?")
        ):
            answer_stems = {stem(w) for w in words[k + 1]}
            asked = telling(2, [w for w in shared if stem(w) not in answer_stems])
            if asked is not None:
                text = " ".join(asked)
                found.append(_question(reply, "reply", f"what was the answer about {text}?"))
                made["reply"] += 1
    return found


def fact_questions(conversation: Conversation, thread: list[Message]) -> list[Question]:
    """A question for each fact planted in `conversation`, answered by the message that
    settled it."""
    found = []
    for fact in conversation.facts:
        said = f"the {fact.cue} is {fact.value}"
        settled = next(m for m in thread if said in m.text)
        found.append(_question(settled, "fact", f"what was the {fact.cue}?"))
    return found


def _named(m: Message, rng: random.Random) -> str:
    """The message's day in words, in one of the ways people write a date."""
    day, month, year, weekday = terms.date_words(m.at).split()
    th = (
        {"1": "st", "2": "nd", "3": "rd"}.get(day[-1], "th")
        if day not in ("11", "12", "13")
        else "th"
    )
    return rng.choice(
        [
            f"{weekday.title()} {day} {month.title()} {year}",
            f"{weekday.title()}, {month.title()} {day}{th}, {year}",
            f"the {day}{th} of {month.title()} {year}, a {weekday.title()}",
        ]
    )


def _question(m: Message, kind: str, text: str) -> Question:
    return Question(thread=m.thread, kind=kind, text=text, answer=m.id)


def _content(word: str) -> bool:
    """A word a person would ask with: not a stop word, nor too short to tell anything (a
    number counts, as "the 300 hours")."""
    if word.isdigit():
        return len(word) >= 2
    return word.isalpha() and len(word) >= 4 and word not in terms.STOP_WORDS


SUFFIXES = ("ing", "ed", "es", "s", "er", "ly", "ion", "ions", "ment", "ation")
COMMON = 3.0
"""A form is asked only when English uses it at least once in a million words (`wordfreq`'s
Zipf scale): "reviewing" for "review", never "priyaing" for "priya"."""


def _other_form(word: str) -> str:
    """Another English word with the same stem, when a suffix makes one; else the word itself."""
    from wordfreq import zipf_frequency

    stem = terms.stemmer(DEFAULT_LANGUAGE)
    bases = [word] + [word[: -len(s)] for s in SUFFIXES if word.endswith(s)]
    bases += [b + "e" for b in bases[1:]]
    for base in bases:
        for suffix in ("", *SUFFIXES):
            form = base + suffix
            if (
                form != word
                and len(form) > 2
                and stem(form) == stem(word)
                and zipf_frequency(form, "en") >= COMMON
            ):
                return form
    return word


class Baseline:
    """Plain BM25 over a thread's messages: lowercased words, no stemming, no dates."""

    def __init__(self, thread: Sequence[Message]) -> None:
        from rank_bm25 import BM25Okapi

        self.ids = [m.id for m in thread]
        self.bm25 = BM25Okapi([_plain(line_of(m)) for m in thread])

    def top(self, query: str, k: int) -> list[str]:
        scores = self.bm25.get_scores(_plain(query))
        order = sorted(range(len(self.ids)), key=lambda n: -scores[n])
        return [self.ids[n] for n in order[:k] if scores[n] > 0]


def _plain(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


async def scores(
    corpora: Sequence[Corpus], folder: Path, *, per_kind: int, seed: int = 11
) -> tuple[list[Score], list[Recall]]:
    """Recall at 1, 5 and 10 of search and of the baseline, by corpus and kind of question;
    and what the view's recall block adds for the same questions."""
    found: list[Score] = []
    recalls: list[Recall] = []
    for corpus in corpora:
        threads = spread(corpus)
        rng = random.Random(seed)
        asked = [q for thread in threads for q in questions(thread, rng, per_kind)]
        asked += [
            q
            for conversation, thread in zip(corpus.conversations, threads, strict=True)
            for q in fact_questions(conversation, thread)
        ]
        path = folder / f"retrieval-{corpus.name}.sqlite"
        log.info("retrieval: %s, %d questions", corpus.name, len(asked))
        async with History(SETTINGS, store=str(path), pause=0.0) as history:
            for thread in threads:
                for m in thread:
                    await history.message_created(m)
            await history.wait()
            index = {m.id: k for thread in threads for k, m in enumerate(thread)}
            baselines = {t[0].thread: Baseline(t) for t in threads if t}
            ranks: dict[tuple[str, str], list[int | None]] = {}
            harness = await _harness(corpus, threads, folder)
            for q in asked:
                if harness is not None:
                    peer = await harness.rank(q.thread, q.text, q.answer, max(DEPTHS))
                    ranks.setdefault((q.kind, PEER), []).append(peer)
                hits = await search(history, q.thread, q.text, limit=max(DEPTHS))
                labels = [h.index for h in hits if h.level == 0]
                ours = labels.index(index[q.answer]) if index[q.answer] in labels else None
                plain = baselines[q.thread].top(q.text, max(DEPTHS))
                theirs = plain.index(q.answer) if q.answer in plain else None
                ranks.setdefault((q.kind, "search"), []).append(ours)
                ranks.setdefault((q.kind, "bm25"), []).append(theirs)
            recalls.append(await _recall(history, corpus.name, asked, index))
        for kind in (*KINDS, "all"):
            for method in ("search", "bm25", PEER):
                got = [
                    r
                    for (k, m), rs in ranks.items()
                    if m == method and kind in (k, "all")
                    for r in rs
                ]
                if got:
                    found.append(
                        Score(
                            corpus=corpus.name,
                            kind=kind,
                            method=method,
                            questions=len(got),
                            found=tuple(
                                sum(r is not None and r < d for r in got) / len(got) for d in DEPTHS
                            ),
                        )
                    )
    return found, recalls


async def _harness(
    corpus: Corpus, threads: list[list[Message]], folder: Path
) -> HarnessSearch | None:
    """harness's `ConversationSearch` over the corpus's threads, persisted by `StepPersistence`
    (None when pydantic-ai-harness is not installed)."""
    try:
        from .harness_search import HarnessSearch
    except ImportError:
        return None
    found = HarnessSearch(folder / f"harness-{corpus.name}.sqlite")
    for thread, conversation in zip(threads, corpus.conversations, strict=True):
        if thread:
            await found.persist(thread, agent=conversation.agent)
    return found


async def _recall(
    history: History, corpus: str, asked: Sequence[Question], index: dict[str, int]
) -> Recall:
    """The recall block each question would bring as the newest message of its thread."""
    spent, held, took = [], 0, 0.0
    for q in asked:
        outline = await history.outline(q.thread)
        whole = outline.boundary if outline is not None else 0
        started = time.perf_counter()
        block = await recall_block(
            history, q.thread, q.text, agent="assistant", budget=RECALL, whole=whole
        )
        took += time.perf_counter() - started
        spent.append(len(block) and terms_tokens(block, history))
        held += any(line.startswith(f"{index[q.answer]}+1|") for line in block.splitlines())
    n = max(len(asked), 1)
    return Recall(
        corpus=corpus, budget=RECALL, tokens=sum(spent) / n, holds=held / n, ms=1000 * took / n
    )


def terms_tokens(text: str, history: History) -> int:
    from history.processors.weight import tokens

    return tokens(text, history.settings.encoding)


async def timings(
    sizes: Sequence[int],
    texts: Sequence[Message],
    folder: Path,
    *,
    queries: int,
    seed: int = 5,
    postgres: str | None = None,
) -> list[Timing]:
    """Search time per query in stores of `sizes` messages, in threads of `THREAD`: on SQLite,
    and on PostgreSQL too given a server (each store in a new schema, dropped afterwards)."""
    found = []
    for total in sizes:
        found.append(
            await _timing(str(folder / f"timing-{total}.sqlite"), total, texts, queries, seed)
        )
        if postgres is not None:
            async with postgres_schema(postgres) as url:
                found.append(await _timing(url, total, texts, queries, seed, database="postgresql"))
    return found


async def _timing(
    url: str,
    total: int,
    texts: Sequence[Message],
    queries: int,
    seed: int,
    *,
    database: str = "sqlite",
) -> Timing:
    """The same threads and queries (by `seed`) timed in one store."""
    rng = random.Random(seed)
    store = open_store(url)
    await store.open()
    try:
        batch = []
        for n in range(0, total, THREAD):
            count = min(THREAD, total - n)
            batch.append(_records(f"timed-{n // THREAD}", texts, count, rng))
            if len(batch) == 10:
                await store.load_records(batch)
                batch = []
        if batch:
            await store.load_records(batch)
        asked = [
            " ".join(
                rng.sample([w for w in terms.words(m.text) if _content(w)] or ["x"], 1)
                + rng.sample(terms.words(m.text) or ["x"], 1)
            )
            for m in rng.sample(list(texts), queries)
        ]
        for query in asked[:5]:  # warm the caches
            await store.search("timed-0", query, 10)
        times, cpu = [], 0.0
        for query in asked:
            started, used = time.perf_counter(), time.process_time()
            await store.search("timed-0", query, 10)
            times.append(1000 * (time.perf_counter() - started))
            cpu += 1000 * (time.process_time() - used)
    finally:
        await store.close()
    times.sort()
    log.info(
        "search at %d messages on %s: %.1f ms a query", total, database, times[len(times) // 2]
    )
    return Timing(
        messages=total,
        thread=min(THREAD, total),
        median_ms=statistics.median(times),
        p90_ms=times[int(0.9 * (len(times) - 1))],
        cpu_ms=cpu / len(times),
        database=database,
    )


def _records(
    thread: str, texts: Sequence[Message], count: int, rng: random.Random
) -> ThreadRecords:
    """A thread of `count` messages drawn from `texts`, with every line of its tree (each the
    lines under it joined, cut to 512 bytes, as the echo summarizer writes them)."""
    picked = [texts[rng.randrange(len(texts))] for _ in range(count)]
    messages = [
        Stored(
            message=replace(m, id=f"{thread}-{k}", thread=thread, at=START + k * SPACING),
            seq=k,
            index=k,
            weight=1,
        )
        for k, m in enumerate(picked)
    ]
    level = [_leaf(s) for s in messages]
    nodes = list(level)
    while len(level) > 1:
        level = [_merge(level[k], level[k + 1]) for k in range(0, len(level) - 1, 2)]
        nodes += level
    return ThreadRecords(thread=thread, messages=tuple(messages), summaries=tuple(nodes))


def _leaf(s: Stored) -> Summary:
    text = cut(line_of(s.message), 512) if len(line_of(s.message)) > 500 else line_of(s.message)
    return Summary(
        thread=s.message.thread,
        level=0,
        index=s.index or 0,
        text=text,
        bytes=len(text.encode()),
        message=s.message.id,
        at=s.message.at,
    )


def _merge(a: Summary, b: Summary) -> Summary:
    joined = one_line(f"{a.text} {b.text}")
    text = cut(joined, 512) if len(joined.encode()) > 512 else joined
    return Summary(
        thread=a.thread,
        level=a.level + 1,
        index=a.index // 2,
        text=text,
        bytes=len(text.encode()),
        message=None,
        at=b.at,
    )


async def run(
    corpora: Sequence[Corpus],
    folder: Path,
    *,
    questions: int,
    sizes: Sequence[int],
    queries: int,
    postgres: str | None = None,
) -> Retrieval:
    """Every retrieval measure: recall by corpus and kind, the recall block, search times (on
    PostgreSQL too given a server)."""
    found, recalls = await scores(corpora, folder, per_kind=questions)
    texts = [m for corpus in corpora for thread in spread(corpus) for m in thread]
    times = (
        await timings(sizes, texts, folder, queries=queries, postgres=postgres)
        if texts and sizes
        else []
    )
    return Retrieval(scores=tuple(found), timings=tuple(times), recalls=tuple(recalls))


def targets(retrieval: Retrieval, *, real: Sequence[str]) -> list[Target]:
    """The issue's targets: on real chats, the answer in the top 10 for 75% of questions and
    first for 33%; a query on a 600-message thread in a store of ten such in 10 ms."""
    found = []
    mixed = [s for s in retrieval.scores if s.kind == "all" and s.corpus in real]
    ours = [s for s in mixed if s.method == "search"]
    if ours:
        total = sum(s.questions for s in ours)
        top1 = sum(s.found[0] * s.questions for s in ours) / total
        top10 = sum(s.found[-1] * s.questions for s in ours) / total
        plain = [s for s in mixed if s.method == "bm25"]
        base10 = sum(s.found[-1] * s.questions for s in plain) / max(total, 1)
        found.append(
            Target(
                goal="search on real chats: the answer in the top 10 for 75% of questions, "
                "first for 33%",
                met=top10 >= 0.75 and top1 >= 0.33,
                numbers=f"top 10: {top10:.0%}, top 1: {top1:.0%} over {total} questions "
                f"(plain BM25: {base10:.0%} in the top 10)",
                why="The questions this benchmark makes are its own, worded unlike their "
                "answers; the misses are mostly replies found only through their neighbours, "
                "which rank below messages that hold the words.",
            )
        )
    found += _against_peer(retrieval)
    store = [t for t in retrieval.timings if t.messages >= 10 * THREAD]
    if store:
        first = [t for t in store if t.messages == store[0].messages]
        found.append(
            Target(
                goal="search: at most 10 ms a query on a 600-message thread in a store of ten "
                "such threads or more, on each store",
                met=all(t.median_ms <= 10 for t in first),
                numbers="; ".join(
                    f"{t.database}: {t.median_ms:.1f} ms median ({t.p90_ms:.1f} ms p90, "
                    f"{t.cpu_ms:.1f} ms CPU) at {t.messages:,} messages"
                    for t in first
                ),
                why="A query reads the postings of its words in its thread (a common word has "
                "many) and ranks them in Python, so both stores agree; the wall clock also "
                "follows the machine's load, which the CPU time does not.",
            )
        )
    return found


def _against_peer(retrieval: Retrieval, *, lead: float = 0.15) -> list[Target]:
    """search at least `lead` more often in the top 10 than harness's `ConversationSearch`, on
    every corpus, over all its questions."""
    mixed = {(s.corpus, s.method): s for s in retrieval.scores if s.kind == "all"}
    pairs = [
        (c, s, mixed[(c, PEER)])
        for (c, m), s in mixed.items()
        if m == "search" and (c, PEER) in mixed
    ]
    if not pairs:
        return []
    leads = [(c, ours.found[-1], theirs.found[-1]) for c, ours, theirs in pairs]
    short = [c for c, a, b in leads if a - b < lead]
    by = {(s.corpus, s.kind, s.method): s.found[-1] for s in retrieval.scores}
    kinds = "; ".join(
        f"on {c}, by kind, "
        + ", ".join(
            f"{kind} {by[(c, kind, 'search')]:.0%} against {by[(c, kind, PEER)]:.0%}"
            for kind in KINDS
            if (c, kind, PEER) in by and (c, kind, "search") in by
        )
        for c in short
    )
    return [
        Target(
            goal=f"search: the answer in the top 10 at least {lead:.0%} points more often than "
            "pydantic-ai-harness's ConversationSearch, on every corpus (the generated "
            "questions and the planted facts)",
            met=not short,
            numbers="; ".join(f"{c}: {a:.0%} against {b:.0%}" for c, a, b in leads),
            why=f"{kinds}. ConversationSearch ranks the words as they are (no stems, no dates, "
            "no neighbours): search leads where a question's words are other forms of the "
            "message's, name its day, or are the question it answers. The two are level where "
            "both find the message (a planted fact asked by the words that settled it) or "
            "neither does (the synthetic chat's replies, long template text that does not "
            "answer the question before it).",
        )
    ]


def table(retrieval: Retrieval, pct: Callable[[float], str]) -> list[str]:
    """The report's section."""
    out = [
        "| corpus | questions | kind | search top 1 / 5 / 10 | BM25 top 1 / 5 / 10 | "
        "ConversationSearch top 1 / 5 / 10 |",
        "|---|---|---|---|---|---|",
    ]
    by = {(s.corpus, s.kind, s.method): s for s in retrieval.scores}
    for corpus, kind, method in by:
        if method != "search":
            continue
        row = [corpus, str(by[(corpus, kind, "search")].questions), kind]
        for name in ("search", "bm25", PEER):
            score = by.get((corpus, kind, name))
            row.append(" / ".join(pct(f) for f in score.found) if score else "-")
        out.append("| " + " | ".join(row) + " |")
    out += [
        "",
        "| store | thread | database | median ms a query | p90 ms | CPU ms |",
        "|---|---|---|---|---|---|",
    ]
    out += [
        f"| {t.messages:,} messages | {t.thread} | {t.database} | {t.median_ms:.1f} | "
        f"{t.p90_ms:.1f} | {t.cpu_ms:.1f} |"
        for t in retrieval.timings
    ]
    out += [
        "",
        "| corpus | recall budget | tokens added a turn | answer in the block | ms |",
        "|---|---|---|---|---|",
    ]
    out += [
        f"| {r.corpus} | {r.budget} | {r.tokens:.0f} | {pct(r.holds)} | {r.ms:.1f} |"
        for r in retrieval.recalls
    ]
    return [*out, ""]
