"""The chapter's own checks (seed 002, "Check it" and "Run it").

With `cut_gap=False` (the chapter's cut rule) they give the chapter's numbers as printed, bar
the weights (SPEC section 10); with the cut gap, the figures SPEC section 10 gives for it.
"""

from __future__ import annotations

from collections import Counter

import pytest

from history.lines import line_of

from ..conftest import Opener, exchange, message

pytestmark = pytest.mark.anyio

LONG = "We should plan the launch carefully. " * 20  # over 512 bytes


async def test_two_exchanges_call_nothing(open_history: Opener) -> None:
    async with open_history(tail=(25, 50)) as run:
        await run.send(*exchange(["Plan the launch", "We need a trailer"]))
        outline = await run.history.outline("t")
        assert outline is not None
        assert run.asks == []
        assert outline.lines == [] and outline.cut_at is None
        assert [t.id for t in outline.tail] == ["t-0", "t-1", "t-2", "t-3"]
        assert await run.history.store.summaries() == []


@pytest.mark.parametrize("cut_gap", [False, True])
async def test_past_the_tail_long_messages_are_compressed_and_ok_is_its_own_line(
    open_history: Opener, cut_gap: bool
) -> None:
    async with open_history(tail=(25, 50), cut_gap=cut_gap) as run:
        await run.send(*exchange([LONG] * 4))
        nodes = {(s.level, s.index): s.text for s in await run.history.store.summaries()}
        outline = await run.history.outline("t")
        assert outline is not None

    # The chapter: the newest four shared messages are kept. With the gap, the cut that the
    # kept messages stopped above 25 tokens leaves the next message waiting for another 25.
    assert outline.boundary == (3 if cut_gap else 4)
    assert [(a.level, a.index, a.line) for a in run.asks] == [(0, 0, "S0"), (0, 2, "S2")]
    assert nodes[(0, 0)] == "S0"
    assert nodes[(0, 1)] == "north → Ana: ok"
    # The first pair is joined without a call, and so is the pair above it.
    assert nodes[(1, 0)] == "S0\nnorth → Ana: ok"
    if not cut_gap:
        assert nodes[(2, 0)] == "S0\nnorth → Ana: ok\nS2\nnorth → Ana: ok"
    assert (
        run.asks[0]
        .prompts[0]
        .startswith(
            "Compaction: compress message 0 into one line of at most 512 bytes (about 70 words), "
            "no longer than this ruler:\n" + "-" * 512 + "\n<input>\nAna → north: We should plan"
        )
    )


async def test_erasing_a_chat_erases_its_lines(open_history: Opener) -> None:
    async with open_history(tail=(25, 50)) as run:
        await run.send(*exchange([LONG] * 4), *exchange(["elsewhere"] * 4, thread="u"))
        assert {s.thread for s in await run.history.store.summaries()} == {"t", "u"}
        assert await run.history.thread_deleted("t")
        assert {s.thread for s in await run.history.store.summaries()} == {"u"}
        assert await run.history.outline("t") is None
        assert await run.history.store.calls("t") == []
        assert await run.history.store.message("t-0") is None
        # A later message with the same thread id starts a new thread.
        await run.send(message(0, "again"))
        outline = await run.history.outline("t")
        assert outline is not None
        assert [t.id for t in outline.tail] == ["t-0"] and outline.boundary == 0


@pytest.mark.parametrize(("cut_gap", "left"), [(False, 12), (True, 11)])
async def test_run_it_short_messages_build_the_tree_by_joins_alone(
    open_history: Opener, cut_gap: bool, left: int
) -> None:
    said = [
        "Plan the launch for December",
        "We need a trailer",
        "And a landing page",
        "Who writes the copy?",
        "What about the price?",
        "Let's say 49 euros",
        "Ship it on the 12th",
        "Thanks",
    ]
    messages = []
    for k, text in enumerate(said):
        messages.append(message(2 * k, text))
        messages.append(message(2 * k + 1, f"You said: Ana: {text}", author="north", to="Ana"))
    async with open_history(summarizer="echo", tail=(40, 80), cut_gap=cut_gap) as run:
        await run.send(*messages)
        nodes = await run.history.store.summaries()
        outline = await run.history.outline("t")
        assert outline is not None

    assert run.asks == []
    assert outline.boundary == left  # SPEC section 10: 12/6/3/1 lines, 11/5/2/1 with the gap
    levels = Counter(s.level for s in nodes)
    assert levels == {0: left, 1: left // 2, 2: left // 4, 3: left // 8}
    assert [s.text for s in nodes if s.level == 0] == [line_of(m) for m in messages[:left]]
    top = next(s for s in nodes if s.level == 3)
    assert top.text == "\n".join(line_of(m) for m in messages[:8])
