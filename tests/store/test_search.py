"""Search, on every store: stems, dates, neighbours, lines that add words, the language; and
SQLite and PostgreSQL giving the same hits in the same order."""

from __future__ import annotations

import sqlite3
import unicodedata
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
import snowballstemmer
from hypothesis import example, given
from hypothesis import strategies as st

from history import ConfigurationError, History, HistorySettings, Summary
from history._languages import SIMPLE, languages
from history.contract import Stored
from history.lines import line_of
from history.rebuilding import rebuild
from history.store import Store, open_store
from history.store import _migrations as migrations
from history.store import _rows as store_rows
from history.store._queries import QUERIES as STATEMENTS
from history.store._search import indexing, ranking, terms
from history.store._search.rows import message_search_row

from ..chats import SMALL, ingest, long_chat
from ..conftest import START, exchange, message
from ..stores import run_sql, store_url
from .test_store import indexed, node, opened, processed, write

pytestmark = pytest.mark.anyio


async def test_words_are_found_by_their_stems(store: Store) -> None:
    await processed(store, message(0, "I was researching the venues"))
    await processed(store, message(1, "lunch at noon"))
    await processed(store, message(2, "We submitted the paper"))
    found = await store.search("t", "research venue", 10)
    assert (found[0].message, found[0].terms) == ("t-0", ("research", "venue"))
    assert (await store.search("t", "submitting", 1))[0].message == "t-2"


@pytest.mark.slow
@given(st.text(alphabet=st.sampled_from("ab1 2st_Éé\u0301ǅ٣nd-rdTH\u00b2→Å\u212bİ한")) | st.text())
@example("The 1st café opened on the 22ND, the ٣rd and ²nd are odd: ǅemal_4th.")
@example("plans → dates — “quotes” and 🙂, no accent")  # NFC and NFD already: only split
@example("the \u212bngström, x\u0301 and e\u0301: decomposed, or marked by hand")
@example("İstanbul 한국 1ST")  # lowercasing adds a mark; Hangul composes
def test_words_are_folded_alike_whatever_the_text(text: str) -> None:
    # Every text folded whole (accents off Latin letters, NFC, lowercase), then each word's
    # ordinal suffix cut: what the quicker paths for ASCII texts and for words must give.
    stripped = terms._LATIN_ACCENT.sub("", unicodedata.normalize("NFD", text))
    folded = unicodedata.normalize("NFC", stripped).lower()
    assert terms.words(text) == [terms._ordinal(w) for w in terms._WORD.findall(folded)]


@pytest.mark.slow
@given(
    st.text(alphabet=st.sampled_from("ab 1st→é")),
    st.datetimes(max_value=datetime(9000, 1, 1), timezones=st.timezones()),
    st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=3)),
)
def test_a_span_is_indexed_as_its_days_in_words_then_its_text(
    text: str, first: datetime, span: timedelta
) -> None:
    # The days' stems are kept per pair of days: what they must stay equal to.
    last = first + span
    days = dict.fromkeys([terms.date_words(first), terms.date_words(last)])
    expected = terms.terms(" ".join(days), "english") + terms.terms(text, "english")
    assert terms.indexed(text, first, last, "english") == expected


@pytest.mark.slow
@given(st.integers(min_value=0, max_value=10**30), st.sampled_from(languages()))
def test_no_stemmer_changes_a_number(number: int, language: str) -> None:
    # What lets the stemmer's cache pass numbers through without asking snowball.
    word = str(number)
    if language != SIMPLE:
        assert snowballstemmer.stemmer(language).stemWord(word) == word
    assert terms.stemmer(language)(word) == word


@given(st.lists(st.text(alphabet="ab1", min_size=1)))
def test_a_rows_terms_are_kept_each_between_spaces(stems: list[str]) -> None:
    assert terms.spaced(stems) == "".join(f" {stem} " for stem in stems)


async def test_a_message_is_found_by_its_day_in_words(store: Store) -> None:
    await processed(store, message(0, "we watched a film"))  # Sunday 1 November 2026
    late = message(1, "we watched a play")
    await processed(store, late.__class__(**{**late.__dict__, "at": START + timedelta(days=3)}))
    hits = await store.search("t", "what did we watch on the 4th of November?", 10)
    assert [(h.message, h.terms) for h in hits] == [
        ("t-1", ("watch", "4", "november")),
        ("t-0", ("watch", "november")),
    ]
    assert [h.message for h in await store.search("t", "sunday", 10)] == ["t-0", "t-1"]


async def test_a_short_reply_is_found_through_the_question_it_answers(store: Store) -> None:
    texts = ["Where shall we hold the offsite?", "The old mill.", "Coffee?", "Sure", "Tea", "ok"]
    for k, text in enumerate(texts):
        await processed(store, message(k, text))
    hits = await store.search("t", "offsite venue", 3)
    assert [(h.message, h.terms) for h in hits[:2]] == [("t-0", ("offsite",)), ("t-1", ())]
    assert len(hits) == 2  # nothing else holds or neighbours the word


async def test_a_message_holding_every_word_asked_outranks_shorter_ones_holding_fewer(
    store: Store,
) -> None:
    # "ferry" is the rarest word asked; the short messages hold it alone and the long one holds
    # it with the two common words asked too: every word asked weighs more than a short text.
    filler = " ".join(f"item{n}" for n in range(30))
    texts = [
        *(f"the invoice pricing note {n}" for n in range(8)),
        f"the ferry invoice pricing came in with {filler}",
        "the ferry left",
        "a ferry again",
    ]
    for k, text in enumerate(texts):
        await processed(store, message(k, text))
    hits = await store.search("t", "ferry invoice pricing", 2)
    assert [(h.message, h.terms) for h in hits] == [
        ("t-8", ("ferry", "invoice", "pricing")),
        ("t-9", ("ferry",)),
    ]


async def test_a_line_is_listed_only_when_it_adds_words(store: Store) -> None:
    for k, text in enumerate(["the venue is booked", "lunch at noon", "a", "b"]):
        await processed(store, message(k, text))
    await write(
        store,
        "t",
        [
            node("t", 1, 0, "Venue booked; lunch planned"),  # adds "planned"
            node("t", 2, 0, "Venue booked; lunch planned"),  # its ancestor, the same words
            node("t", 1, 1, "venue"),  # adds nothing
        ],
    )
    hits = await store.search("t", "venue lunch planning", 10)
    assert [(h.label, h.level, h.terms) for h in hits] == [
        ("0+1", 0, ("venue",)),
        ("1+1", 0, ("lunch",)),
        ("0+2", 1, ("venue", "lunch", "planning")),
        ("2+1", 0, ()),
    ]
    line = hits[2]
    assert (line.message, line.since, line.at, line.first, line.count) == (
        None,
        START,
        START + timedelta(minutes=0),
        0,
        2,
    )
    assert [h.label for h in await store.search("t", "venue lunch planning", 3)] == [
        "0+1",
        "1+1",
        "0+2",
    ]


async def test_a_line_is_found_by_the_days_it_covers(store: Store) -> None:
    for k in range(2):
        sent = message(k, f"text {k}")
        await processed(
            store, sent.__class__(**{**sent.__dict__, "at": START + timedelta(days=40 * k)})
        )
    line = Summary(
        thread="t",
        level=1,
        index=0,
        text="a summary",
        bytes=9,
        message=None,
        at=START + timedelta(days=40),
    )
    await write(store, "t", [line])
    hits = await store.search("t", "summary from december", 10)
    assert [(h.label, h.terms) for h in hits] == [
        ("1+1", ("december",)),
        ("0+2", ("summary", "december")),
        ("0+1", ()),
    ]
    assert (hits[1].since, hits[1].at) == (START, START + timedelta(days=40))


async def test_an_agent_search_finds_the_shared_rows_too(store: Store) -> None:
    await processed(store, message(0, "the venue is booked"))
    await processed(store, message(1, "a venue tool call", step=True))
    assert await store.search("t", "venue", 10, agent="north") == await store.search(
        "t", "venue", 10
    )
    assert [h.agent for h in await store.search("t", "venue", 10, agent="north")] == [""]


@pytest.mark.slow
async def test_the_language_is_the_stores_and_another_indexes_again(database: str) -> None:
    async with opened(database) as store:
        await processed(store, message(0, "I was researching"))
        assert store.language == "english"
    simple = open_store(database, search_language="simple")
    await simple.open()
    try:
        assert simple.language == "simple"
        assert await simple.search("t", "research", 10) == []
        assert len(await simple.search("t", "researching", 10)) == 1
    finally:
        await simple.close()
    async with opened(database) as store:  # no language given: the database's
        assert store.language == "simple"
        assert await store.search("t", "research", 10) == []
    english = open_store(database, search_language="english")
    await english.open()
    try:
        assert len(await english.search("t", "research", 10)) == 1
    finally:
        await english.close()


def test_an_unknown_language_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="search_language must be one of simple, "):
        HistorySettings(summarizer="echo", search_language="klingon")
    with pytest.raises(ConfigurationError, match="'klingon'"):
        open_store(":memory:", search_language="klingon")


QUERIES = ["venue budget", "trailer", "what did they settle about the price", "f3 pdf", "ok"]


@pytest.fixture
def both(tmp_path: Path) -> Iterator[list[str]]:
    """A fresh SQLite and a fresh PostgreSQL database."""
    with store_url("sqlite", tmp_path) as sqlite, store_url("postgresql", tmp_path) as postgresql:
        yield [sqlite, postgresql]


@pytest.mark.slow
@pytest.mark.parametrize("candidates", [ranking.CANDIDATES, 8])
async def test_sqlite_and_postgresql_give_the_same_hits_in_the_same_order(
    both: list[str], candidates: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranking, "CANDIDATES", candidates)  # 8: frequent words read in part
    chat = long_chat(240) + long_chat(60, thread="u", seed=3)
    settings = HistorySettings(summarizer="echo", **SMALL)
    found = []
    for url in both:
        await ingest(chat, settings, store=url)
        async with opened(url) as store:
            found.append(
                [
                    await store.search(t, q, 10, agent=agent)
                    for t in ("t", "u")
                    for q in QUERIES
                    for agent in (None, "north")  # north's steps too
                ]
            )
    assert found[0] == found[1]
    assert sum(len(hits) for hits in found[0]) > 40
    assert any(h.agent == "north" for hits in found[0] for h in hits)


@pytest.mark.slow
async def test_of_a_frequent_word_only_the_newest_rows_are_candidates(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k in range(80):  # the postings of the first 64 written, the newest waiting
        text = "the venue and the budget" if k == 3 else f"the venue {k}"
        await processed(store, message(k, text))
    everything = {h.message for h in await store.search("t", "venue", 100)}
    monkeypatch.setattr(ranking, "CANDIDATES", 4)
    hits = await store.search("t", "venue budget", 100)
    # Found by its rare word, and weighed with the frequent one too.
    assert (hits[0].message, hits[0].terms) == ("t-3", ("venue", "budget"))
    newest = {h.message for h in await store.search("t", "venue", 100)}
    # The newest four, whether their postings are written or wait (t-79 to t-64 wait), with
    # the neighbours their windows weigh.
    assert len(everything) == 80 and {f"t-{k}" for k in range(76, 80)} <= newest
    assert len(newest) < 10


@pytest.mark.slow
async def test_messages_holding_frequent_words_together_are_candidates_however_old(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k in range(80):  # the postings of the first 64 written, the newest waiting
        word = "venue" if k % 2 else "budget"
        text = "the invoice number is 4471" if k == 3 else f"the {word} number {k}"
        await processed(store, message(k, text))
    for k in range(80, 90):
        await processed(store, message(k, f"the invoice {k}"))
    monkeypatch.setattr(ranking, "CANDIDATES", 4)
    hits = await store.search("t", "what was the invoice number?", 10)
    # Each word is in more messages than are candidates, and only an old one holds both.
    assert ("t-3", ("invoice", "number")) in [(h.message, h.terms) for h in hits]


async def test_search_reads_one_threads_rows(store: Store) -> None:
    await processed(store, message(0, "the venue is booked"))
    for k in range(3):
        await processed(store, message(k, "the venue is booked", thread="other"))
    hits = await store.search("t", "venue", 10)
    assert [(h.message, h.score) for h in hits] == [("t-0", 2.0)]


async def found(store: Store) -> set[str | None]:
    """The messages found for the word "venue" (not those found beside them)."""
    return {h.message for h in await store.search("t", "venue", 20) if h.terms}


@pytest.mark.slow
async def test_a_message_is_indexed_by_the_commit_that_processes_it_once(database: str) -> None:
    settings = HistorySettings(summarizer="scripted", tail=(4_000, 8_000))
    chat = exchange([f"the venue {k}" for k in range(6)])
    async with History(settings, store=database) as history:  # the first half processed
        for m in chat[:6]:
            await history.message_created(m)
        await history.wait()
    async with History(settings, store=database, process=False) as history:
        for m in chat[6:]:
            await history.message_created(m)
        # Stored and not yet processed: in the tail the agent is sent, not yet searched.
        assert await found(history.store) == {"t-0", "t-2", "t-4"}
        records = await history.store.export_thread("t")
    assert records is not None
    async with opened(":memory:") as copy:  # a load indexes what its outline has processed
        await copy.load_records([records])
        assert await found(copy) == {"t-0", "t-2", "t-4"}
    async with History(settings, store=database) as history:  # catches up as it opens
        await history.wait()
        assert await found(history.store) == {f"t-{n}" for n in range(0, 12, 2)}
    # Each shared message once: the processed half was not indexed again.
    assert await anyio.to_thread.run_sync(indexed, database) == [("t", True, 12)]


POSTED = (
    "NOT EXISTS (SELECT 1 FROM search_pending AS p WHERE p.thread = search.thread "
    "AND p.agent = search.agent AND p.line = search.line AND p.level = search.level "
    "AND p.idx = search.idx)"
)
"""A search row's postings are written: its words wait no more."""


def unposted(database: str) -> int:
    """How many search rows wait for their postings."""
    return int(run_sql(database, f"SELECT count(*) FROM search WHERE NOT {POSTED}")[0][0])


@pytest.mark.slow
async def test_lines_are_posted_with_the_messages(database: str) -> None:
    # A line is a few dozen words: the lines written as messages leave the tail wait for the
    # next batch of messages' postings instead of starting batches of their own, and are
    # found while they wait.
    settings = HistorySettings(summarizer="scripted", tail=(60, 120))
    long = " ".join(["the venue holds two hundred seats"] * 20)

    async def count(where: str) -> int:
        found = await anyio.to_thread.run_sync(
            run_sql, database, f"SELECT count(*) FROM search WHERE {where}"
        )
        return int(found[0][0])

    async with History(settings, store=database) as history:
        for m in exchange([f"{long} {k}" for k in range(25)]):  # 50 messages, under a batch
            await history.message_created(m)
        await history.wait()
        assert await count(f"NOT {POSTED} AND line") > 40
        assert await count(POSTED) == 0
        [hit] = await history.store.search("t", "s8", 5)  # the scripted line of message 8
        assert (hit.label, hit.text) == ("8+1", "S8")
        for m in exchange([f"{long} {k}" for k in range(25, 40)], start=50):
            await history.message_created(m)
        await history.wait()
        assert [(h.label, h.text) for h in await history.store.search("t", "s8", 5)] == [
            ("8+1", "S8")
        ]
    # The batch that the 64th waiting message started took the lines with it.
    assert await count(f"NOT {POSTED} AND NOT line") < indexing.POSTED_TOGETHER
    assert await count(f"{POSTED} AND line") > 40


def test_a_batch_of_postings_grows_with_its_thread_up_to_a_bound() -> None:
    short = 150 * indexing.POSTED_TOGETHER  # terms of messages of a hundred and fifty words
    assert not indexing.due(1_000, indexing.POSTED_TOGETHER - 1, short)
    assert indexing.due(1_000, indexing.POSTED_TOGETHER, short)
    share = 40_000 // indexing.POSTED_SHARE  # a batch of a long thread is a share of it
    assert indexing.POSTED_TOGETHER < share < indexing.POSTED_MOST
    assert not indexing.due(40_000, share - 1, 100 * share)
    assert indexing.due(40_000, share, 100 * share)
    assert not indexing.due(10**9, indexing.POSTED_MOST - 1, 0)
    assert indexing.due(10**9, indexing.POSTED_MOST, 0)
    assert indexing.due(1_000, 3, indexing.POSTED_TERMS)  # long messages: the words bound them


@pytest.mark.slow
async def test_a_commit_writes_the_postings_when_due_for_its_threads_length(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Batches of at least 4 messages and a quarter of the thread, so that a short thread
    # shows its batches growing.
    monkeypatch.setattr(indexing, "POSTED_TOGETHER", 4)
    monkeypatch.setattr(indexing, "POSTED_SHARE", 4)
    settings = HistorySettings(summarizer="scripted", tail=(40_000, 80_000))
    waiting, batches = 0, []
    async with History(settings, store=database) as history:
        for length, m in enumerate(exchange([f"the venue {k}" for k in range(30)]), start=1):
            await history.message_created(m)
            await history.wait()  # one commit a message, nothing leaves the tail
            waiting += 1
            if indexing.due(length, waiting, 0):
                batches.append(waiting)
                waiting = 0
            assert await anyio.to_thread.run_sync(unposted, database) == waiting
    assert batches[0] == 4 and batches[-1] > 10


@pytest.mark.slow
async def test_long_messages_are_posted_before_a_batch_of_them_waits(database: str) -> None:
    settings = HistorySettings(summarizer="scripted", tail=(40_000, 80_000))
    long = " ".join(f"w{k}" for k in range(indexing.POSTED_TERMS // 8))  # 8 reach the bound
    async with History(settings, store=database) as history:
        for m in exchange([f"{long} venue{k}" for k in range(10)]):
            await history.message_created(m)
            await history.wait()
        first = await history.store.search("t", "venue0", 5)
        last = await history.store.search("t", "venue9", 5)
    assert 0 < await anyio.to_thread.run_sync(unposted, database) < 20 < indexing.POSTED_TOGETHER
    posted = await anyio.to_thread.run_sync(
        run_sql, database, f"SELECT idx, {POSTED} FROM search WHERE NOT line AND idx IN (0, 18)"
    )
    assert sorted((int(i), bool(p)) for i, p in posted) == [(0, True), (18, False)]
    assert (first[0].message, last[0].message) == ("t-0", "t-18")  # one posted, one waiting


@pytest.mark.slow
async def test_rows_waiting_for_their_postings_are_found_as_posted_ones(database: str) -> None:
    settings = HistorySettings(summarizer="scripted", tail=(40_000, 80_000))
    topics = ["venue", "budget", "flight", "hotel", "menu"]
    chat = exchange([f"the {topics[k % 5]} {k}, then the venue again" for k in range(40)])
    async with History(settings, store=database) as history:
        for m in chat:
            await history.message_created(m)
        await history.wait()
        hits = await history.store.search("t", "venue budget 12", 30)
        records = await history.store.export_thread("t")
    # 80 messages, no lines: a commit that left 64 or more waiting wrote their postings (how
    # many wait now depends on how the messages were batched, which follows the machine).
    assert await anyio.to_thread.run_sync(unposted, database) < indexing.POSTED_TOGETHER
    assert records is not None
    async with opened(":memory:") as copy:  # a load writes every row's postings
        await copy.load_records([records])
        assert await copy.search("t", "venue budget 12", 30) == hits
    assert {h.message for h in hits if "budget" in h.terms} == {f"t-{n}" for n in range(2, 80, 10)}


async def test_words_wait_beside_their_rows_and_go_with_them(database: str) -> None:
    """A row's words wait in `search_pending` until its postings are written, each beside its
    row, and go when their row goes (taken back, erased)."""
    settings = HistorySettings(summarizer="scripted", tail=(40_000, 80_000))

    def pending() -> set[tuple[Any, ...]]:
        found = run_sql(database, "SELECT thread, line, level, idx FROM search_pending")
        return {tuple(r) for r in found}

    def waiting() -> set[tuple[Any, ...]]:
        """The pending rows whose search row is there."""
        found = run_sql(
            database,
            "SELECT p.thread, p.line, p.level, p.idx FROM search_pending AS p JOIN search AS s "
            "ON s.thread = p.thread AND s.agent = p.agent AND s.line = p.line "
            "AND s.level = p.level AND s.idx = p.idx",
        )
        return {tuple(r) for r in found}

    async with History(settings, store=database) as history:
        for m in long_chat(30) + long_chat(12, thread="u", seed=4):
            await history.message_created(m)
        await history.wait()
        before = await anyio.to_thread.run_sync(pending)
        assert before and before == await anyio.to_thread.run_sync(waiting)
        taken = await history.retract("t", after=25)
        assert taken
        assert await history.thread_deleted("u")
    after = await anyio.to_thread.run_sync(pending)
    assert after == await anyio.to_thread.run_sync(waiting)
    assert {r[0] for r in after} == {"t"} and len(after) < len([r for r in before if r[0] == "t"])


def test_a_store_whose_triggers_wrote_the_postings_is_upgraded_and_searched(
    tmp_path: Path,
) -> None:
    path = tmp_path / "posted.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(migrations.MIGRATION_TABLE)
    for name, filename in migrations.MIGRATIONS:
        if name == "0016_search_posted":
            break
        for statement in migrations.statements(filename):
            db.execute(statement)
        db.execute("INSERT INTO migration VALUES (?, ?)", (name, "2026-11-01T00:00:00+00:00"))
    db.execute("INSERT INTO search_language VALUES ('english')")
    insert = STATEMENTS["insert_loaded_message"].sqlite
    for k, text in enumerate(["the venue is booked", "lunch at noon"]):
        sent = message(k, text)
        stored = Stored(message=sent, seq=k, index=k, weight=5)
        db.execute(insert.text, insert.args(store_rows.loaded_message_row(stored)))
        row = {**message_search_row(sent, k, "english"), "text": line_of(sent)}
        db.execute(  # as the store wrote it then: its trigger wrote the postings
            "INSERT INTO search (thread, agent, line, level, idx, message, since, at, text, "
            "words, length) VALUES (:thread, :agent, :line, :level, :idx, :message, :since, "
            ":at, :text, :words, :length)",
            row,
        )
    outline = STATEMENTS["new_outline"].sqlite
    db.execute(outline.text, outline.args({**store_rows.new_outline_row("t"), "position": 1}))
    db.close()

    async def search_it() -> list[tuple[str | None, tuple[str, ...]]]:
        async with opened(str(path)) as store:
            return [(h.message, h.terms) for h in await store.search("t", "venue", 10)]

    # Both steps since: postings in batches, and longer keys (the thread indexed again).
    assert anyio.run(search_it) == [("t-0", ("venue",)), ("t-1", ())]
    assert unposted(str(path)) == 0


@pytest.mark.slow
async def test_a_store_indexed_before_its_terms_were_numbered_is_indexed_again_as_it_opens(
    database: str,
) -> None:
    settings = HistorySettings(summarizer="scripted")
    async with History(settings, store=database) as history:
        for m in exchange(["the venue is booked", "lunch at noon"]):
            await history.message_created(m)
        await history.wait()
        expected = await history.store.search("t", "venue lunch", 10)
    assert [h.message for h in expected if h.terms] == ["t-0", "t-2"]
    # As a store of before left it: its index is made again, no words kept once the postings
    # are written.
    for sql in (
        "DELETE FROM migration WHERE name IN "
        "('0051_search_compact', '0075_search_pending', '0080_search_unflagged', "
        "'0090_search_packed')",
        "DROP TABLE search_word",
        "DROP TABLE search_pending",
    ):
        await anyio.to_thread.run_sync(run_sql, database, sql)
    async with opened(database) as store:
        assert await store.search("t", "venue lunch", 10) == expected
    waiting = await anyio.to_thread.run_sync(run_sql, database, "SELECT * FROM search_pending")
    assert waiting == []
    stems = await anyio.to_thread.run_sync(
        run_sql, database, "SELECT stem FROM search_word WHERE thread = 't' AND agent = ''"
    )
    assert {"venu", "lunch", "noon"} <= {stem for (stem,) in stems}


@pytest.mark.slow
async def test_a_threads_corpus_size_is_kept_as_its_rows_come_and_go(database: str) -> None:
    # What ranking weighs against is read from counts the triggers keep, not by counting.
    settings = HistorySettings(summarizer="scripted", **SMALL)
    chat = long_chat(120) + long_chat(40, thread="u", seed=3)
    await ingest(chat, settings, store=database)

    async def sizes() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The sizes kept, and the sizes counted from the rows."""
        kept = "SELECT thread, agent, line, count, terms FROM search_corpus"
        counted = (
            "SELECT thread, agent, line, count(*), sum(length) FROM search "
            "GROUP BY thread, agent, line"
        )
        found = [await anyio.to_thread.run_sync(run_sql, database, q) for q in (kept, counted)]
        return sorted(found[0]), sorted(found[1])

    kept, counted = await sizes()
    assert kept == counted and {row[0] for row in kept} == {"t", "u"}
    assert any(row[2] for row in kept)  # lines as well as messages
    async with opened(database) as store:
        await rebuild(store, "t", settings)  # its lines' rows deleted and written again
        kept, counted = await sizes()
        assert kept == counted
        await store.erase("u")
    kept, counted = await sizes()
    assert kept == counted and {row[0] for row in kept} == {"t"}


def test_a_stems_rarity_is_estimated_past_the_count_from_where_its_last_counted_row_is() -> None:
    # Messages: the 100th of a stem's postings at index 199 of 1,000: half hold it.
    assert ranking.estimate(199, 1_000, counted=100) == 500
    # Lines: about half of them come before level 1; the 100th at level 1, index 9.
    assert ranking.estimate(2**32 + 9, 1_000, counted=100) == round(100 * 1_000 / 510)
    # Never fewer than were counted, nor more than there are rows.
    assert ranking.estimate(5_000, 1_000, counted=100) == 100
    assert ranking.estimate(0, 1_000, counted=1) == 1_000


@pytest.mark.slow
async def test_a_common_stems_rarity_is_estimated_near_its_count(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "venue" in one message of four, "budget" in every other one; the first 64 messages are
    # posted (16 and 32 postings), the rest wait. With only the newest 8 of a stem's rows as
    # candidates, ranking takes its rarity from how many rows hold it: counted, or, past a
    # count of 10, estimated from where the 11th posting is, within a tenth of the count.
    for k in range(120):
        text = "the venue" if k % 4 == 1 else "the budget" if k % 2 == 0 else "lunch"
        await processed(store, message(k, f"{text} at noon"))
    given: list[dict[tuple[bool, str], int]] = []
    rank = ranking.rank

    def seen(*args: Any, **kwargs: Any) -> list[ranking.Ranked]:
        given.append(dict(kwargs["frequent"]))
        return rank(*args, **kwargs)

    monkeypatch.setattr(ranking, "rank", seen)
    monkeypatch.setattr(ranking, "CANDIDATES", 8)
    counted = [h.label for h in await store.search("t", "venue budget", 12)]
    monkeypatch.setattr(ranking, "COUNTED", 10)
    estimated = [h.label for h in await store.search("t", "venue budget", 12)]
    assert given[0] == {(False, "venu"): 30, (False, "budget"): 60}
    assert given[1].keys() == given[0].keys()
    assert all(abs(given[1][k] - n) <= n / 10 for k, n in given[0].items()), given
    assert estimated == counted
