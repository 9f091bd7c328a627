"""Zoom and search reach what the outline only summarizes, down to the message itself."""

from __future__ import annotations

import anyio
import pytest

from history import ConfigurationError, File, NotFoundError, prompt_text, search, view, zoom

from ..conftest import Opener, Settings, exchange, message
from ..stores import run_sql

pytestmark = pytest.mark.anyio

FILLER = [
    "Let us talk about the venue {k}.",
    "The trailer cut {k} is ready for review by the team.",
    "Guest list draft number {k} is shared.",
]


@pytest.mark.slow
async def test_a_price_settled_early_stays_in_reach(open_history: Opener, database: str) -> None:
    texts = ["We need a plan for the launch.", "We settled the price: 4,200 EUR per seat, final."]
    texts += [FILLER[k % 3].format(k=k) for k in range(150)]
    settings: Settings = {"summarizer": "echo", "tail": (200, 400), "outline": (1000, 2000)}
    async with open_history(store=database, **settings) as run:
        await run.send(*exchange(texts))
        outline = await run.history.outline("t")
        sent = await view(run.history, "t", agent="north")
        path, label = [], "0+256"
        while True:
            path.append(label)
            opened = await zoom(run.history, "t", label)
            if opened.message is not None:
                break
            label = next(line.label for line in opened.lines if "4,200" in line.text)
        hits = await search(run.history, "t", "what did we settle about the price?")
    assert outline is not None and outline.boundary == 287  # far past the tail
    assert "4,200 EUR per seat" not in prompt_text(sent).split("[user]")[1]  # not in the tail
    assert prompt_text(sent).startswith(
        "[outline]\n0+256|Ana → north: We need a plan for the launch. north → Ana: ok "
        "Ana → north: We settled the price: 4,200 EUR per seat, final. north → Ana: ok"
    )
    assert path == ["0+256", "0+128", "0+64", "0+32", "0+16", "0+8", "0+4", "2+2", "2+1"]
    assert opened.text == (
        "2+1|Ana → north, 2026-11-01T09:02:00+00:00:\n"
        "We settled the price: 4,200 EUR per seat, final."
    )
    assert (hits[0].label, hits[0].message) == ("2+1", "t-2")


async def test_a_line_opens_into_the_two_lines_under_it(open_history: Opener) -> None:
    async with open_history(tail=(30, 60), kept=2) as run:
        await run.send(*exchange(["Plan the launch", "We need a trailer", *["x"] * 6]))
        opened = await zoom(run.history, "t", "0+4")
        leaf = await zoom(run.history, "t", " 1+1 ")
    assert opened.text == (
        "0+2|Ana → north: Plan the launch north → Ana: ok\n"
        "2+2|Ana → north: We need a trailer north → Ana: ok"
    )
    assert [(n.level, n.index) for n in opened.lines] == [(1, 0), (1, 1)]
    assert (leaf.label, leaf.message and leaf.message.id) == ("1+1", "t-1")
    assert leaf.text == "1+1|north → Ana, 2026-11-01T09:01:00+00:00:\nok"


async def test_a_message_still_whole_can_be_zoomed(open_history: Opener) -> None:
    async with open_history(tail=(1000, 2000)) as run:
        await run.send(*exchange(["hello", "the venue is booked"]))
        opened = await zoom(run.history, "t", "2+1")
    assert opened.message is not None and opened.message.text == "the venue is booked"


async def test_a_long_message_is_read_in_pages(open_history: Opener) -> None:
    text = "".join(f"{k:04d}" for k in range(60))  # 240 bytes
    async with open_history(tail=(1000, 2000)) as run:
        await run.send(message(0, text, files=()))
        first = await zoom(run.history, "t", "0+1", page_bytes=100)
        last = await zoom(run.history, "t", "0+1", page=3, page_bytes=100)
        with pytest.raises(
            NotFoundError, match=r"message '0\+1' has 3 page\(s\); there is no page 4"
        ):
            await zoom(run.history, "t", "0+1", page=4, page_bytes=100)
    assert (first.page, first.pages) == (1, 3)
    assert first.text == (
        f"0+1|Ana → north, 2026-11-01T09:00:00+00:00:\n{text[:100]}\n"
        '[page 1 of 3: zoom("0+1", page=2) reads on]'
    )
    assert last.text == f"0+1|Ana → north, 2026-11-01T09:00:00+00:00:\n{text[200:]}"


@pytest.mark.parametrize(
    ("label", "error"),
    [
        ("price", r"'price' is not a label: a label is first\+count"),
        ("0+3", r"no line '0\+3' in thread 't': a line covers a power of two"),
        ("2+4", r"no line '2\+4' in thread 't': a line covers a power of two"),
        ("0+64", r"no line '0\+64' in thread 't': use a label from the outline or from search"),
        ("99+1", r"no message '99\+1' in thread 't': use a label from the outline or from search"),
    ],
)
async def test_a_label_that_is_not_a_node_is_refused_clearly(
    open_history: Opener, label: str, error: str
) -> None:
    async with open_history(tail=(30, 60)) as run:
        await run.send(*exchange(["a", "b", "c", "d"]))
        with pytest.raises(NotFoundError, match=error):
            await zoom(run.history, "t", label)


async def test_search_ranks_by_relevance_then_recency(open_history: Opener, database: str) -> None:
    async with open_history(tail=(1000, 2000), store=database) as run:
        await run.send(
            message(0, "the venue is booked"),
            message(1, "lunch at noon"),
            message(2, "the venue is booked"),
            message(3, "venue venue venue, the venue"),
            message(4, "the venue", thread="other"),
        )
        hits = await search(run.history, "t", "Venue?")
        nothing = await search(run.history, "t", "?!")
    # Then message 1, which holds no venue but sits between two: found through its neighbours.
    assert [(h.label, h.message) for h in hits] == [
        ("3+1", "t-3"),
        ("2+1", "t-2"),
        ("0+1", "t-0"),
        ("1+1", "t-1"),
    ]
    assert hits[1].text == "Ana → north: the venue is booked"
    assert nothing == []


async def test_search_finds_lines_once_per_label(open_history: Opener, database: str) -> None:
    settings: Settings = {"summarizer": "scripted", "tail": (30, 60), "line": 64, "kept": 2}
    async with open_history(store=database, **settings) as run:
        long = "the budget for the stage lights, " * 3
        await run.send(*exchange([long, "anything else", "more", "and more", "the end"]))
        hits = await search(run.history, "t", "budget", limit=5)
    # Message 0's own line is "S0" (scripted): the message is found, then its neighbour.
    assert [(h.label, h.level, h.message) for h in hits] == [("0+1", 0, "t-0"), ("1+1", 0, "t-1")]


async def test_search_forgets_an_erased_thread(open_history: Opener, database: str) -> None:
    async with open_history(tail=(30, 60), store=database) as run:
        await run.send(*exchange(["the venue is booked", "a", "b", "c"]))
        assert [h.label for h in await search(run.history, "t", "venue")] == ["0+1", "1+1"]
        await run.history.thread_deleted("t")
        assert await search(run.history, "t", "venue") == []


UNINDEXED = {
    "sqlite": [
        "DROP TABLE search_pending",
        "DROP TABLE search",
        "DROP TABLE search_term",
        "DROP TABLE search_word",
        "DROP TABLE search_language",
    ],
    "postgresql": [
        "DROP TABLE search_pending",
        "DROP TABLE search",
        "DROP TABLE search_term",
        "DROP TABLE search_word",
        "DROP TABLE search_language",
        "DROP FUNCTION search_terms(TEXT)",
    ],
}
"""How to take a database back to before search."""


@pytest.mark.slow
async def test_an_older_database_is_indexed_when_opened(
    open_history: Opener, database: str
) -> None:
    pdf = File(name="plan.pdf", mime="application/pdf", size=10)
    sent = exchange(["the venue is booked", "a", "b"])
    sent += [message(6, "a venue tool call", step=True), message(7, "the\nvenue", files=(pdf,))]
    async with open_history(tail=(30, 60), store=database) as run:
        await run.send(*sent)
        expected = await search(run.history, "t", "venue plan")
    kind = "postgresql" if database.startswith("postgresql://") else "sqlite"
    forget = (
        "DELETE FROM migration "
        "WHERE name IN ('0005_search', '0012_search2', '0013_search_gin', '0015_search_terms', "
        "'0016_search_posted', '0051_search_compact', '0075_search_pending', "
        "'0080_search_unflagged', '0090_search_packed')"
    )
    for statement in [*UNINDEXED[kind], forget]:
        await anyio.to_thread.run_sync(run_sql, database, statement)
    async with open_history(tail=(30, 60), store=database) as run:
        hits = await search(run.history, "t", "venue plan")
    assert hits == expected
    assert [(h.label, h.level, h.text, h.terms) for h in hits] == [
        ("6+1", 0, "Ana → north: the venue [plan.pdf]", ("venue", "plan")),
        ("5+1", 0, "north → Ana: ok", ()),  # the reply before it, through its neighbour
        ("0+1", 0, "Ana → north: the venue is booked", ("venue",)),
        ("1+1", 0, "north → Ana: ok", ()),
    ]


async def test_recall_appends_the_best_hits_for_the_newest_message_after_the_tail(
    open_history: Opener,
) -> None:
    texts = ["We need a plan for the launch.", "We settled the price: 4,200 EUR per seat, final."]
    texts += [FILLER[k % 3].format(k=k) for k in range(40)] + ["What price did we settle on?"]
    async with open_history(summarizer="echo", tail=(200, 400), outline=(1000, 2000)) as run:
        await run.send(*exchange(texts)[:-1])  # the question is the newest message
        plain = await view(run.history, "t", agent="north")
        recalled = await view(run.history, "t", agent="north", recall=60)
        tight = await view(run.history, "t", agent="north", recall=10)
        with pytest.raises(ConfigurationError, match="recall must be a whole number"):
            await view(run.history, "t", agent="north", recall=-1)
    before, after = prompt_text(plain), prompt_text(recalled)
    assert after.startswith(before)  # the cached prefix is the view without recall
    assert after[len(before) :] == (
        "[user]\nEarlier in this conversation, found for the newest message (label|text):\n"
        "2+1|Ana → north: We settled the price: 4,200 EUR per seat, final.\n"
        "3+1|north → Ana: ok\n1+1|north → Ana: ok\n"  # the messages around it
    )
    assert prompt_text(tight) == before  # not even one hit fits
