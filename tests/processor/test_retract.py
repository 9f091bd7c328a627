"""Taking back a thread's newest messages while they are whole in its tail: `History.retract`,
`Store.retract` on both databases, and `chat-outline retract`."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from history import InputError, Outline, RetractRefused, Store
from history.cli import main

from ..conftest import Opener, Settings, exchange, message
from ..workers import write_jsonl

pytestmark = pytest.mark.anyio

CHAT = exchange([f"point {k} " * 6 for k in range(10)])
"""Twenty messages that cut a tail of (40, 80) tokens several times."""
TAIL = (40, 80)
TURN = exchange(["one more question about the price"], start=20)
"""A turn that only joins the tail after CHAT: the one taken back."""
PACED = [replace(m, at=m.at + timedelta(minutes=10 * (k // 5))) for k, m in enumerate(CHAT)]
"""CHAT with a pause of ten minutes after every fifth message: a cold cut there."""
LONG = [message(n, f"word{n} " * (12 + n % 7)) for n in range(20)]
"""Twenty messages from one person, three of which are more than a tail of (40, 80) tokens: the
kept messages stop a cut often."""
LATER = exchange([f"later {k} " * 6 for k in range(6)], start=40)


def state(outline: Outline | None) -> Outline:
    """An outline without what differs between two stores (its epoch, its commits)."""
    assert outline is not None
    return replace(outline, epoch="", version=0)


@pytest.mark.slow
async def test_taking_back_a_turn_leaves_the_thread_as_if_it_was_never_sent(
    open_history: Opener, database: str, tmp_path: Path
) -> None:
    async with open_history(store=tmp_path / "never.sqlite", tail=TAIL) as never:
        await never.send(*CHAT)
        expected = state(await never.history.outline("t"))
        await never.send(*LATER)
        expected_later = state(await never.history.outline("t"))
        expected_lines = await never.history.store.summaries("t")
    async with open_history(store=database, tail=TAIL) as run:
        await run.send(*CHAT, *TURN)
        sent = await run.history.outline("t")
        assert sent is not None and sent.position == 21 and sent.tail_start < 20  # whole
        gone = await run.history.retract("t", after=19)
        assert [s.message for s in gone] == TURN
        assert state(await run.history.outline("t")) == expected
        assert [s.seq for s in await run.history.messages("t")] == list(range(20))
        assert await run.history.store.search("t", "price", 10) == []  # its search rows too
        assert await run.history.retract("t", after=19) == []  # nothing after it now
        await run.send(*LATER)  # the same seqs again
        assert state(await run.history.outline("t")) == expected_later
        assert await run.history.store.summaries("t") == expected_lines
        assert [h.message for h in await run.history.store.search("t", "later", 50)]


async def test_messages_a_line_stands_for_are_refused_and_nothing_changes(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database, tail=TAIL) as run:
        await run.send(*CHAT)
        before = await run.history.outline("t")
        assert before is not None and before.boundary > 2
        with pytest.raises(RetractRefused, match="'t-1' has left the tail of thread 't'"):
            await run.history.retract("t", after=0)
        assert await run.history.outline("t") == before
        assert len(await run.history.messages("t")) == len(CHAT)


async def test_a_cut_tried_at_a_message_refuses_it(open_history: Opener) -> None:
    """The kept messages stopped the cut (nothing left the tail, no line), but the cut gap's
    floor moved: the outline from before it cannot be told, so it is refused."""
    big = [message(n, f"word{n} " * 30) for n in range(3)]
    async with open_history(tail=TAIL, kept=4) as run:
        await run.send(*big)
        outline = await run.history.outline("t")
        assert outline is not None and outline.boundary == 0 and outline.floor > 0
        with pytest.raises(RetractRefused, match="a cut was tried at message 't-2'"):
            await run.history.retract("t", after=1)


async def test_unprocessed_messages_are_taken_back_and_the_rest_processed(
    open_history: Opener, tmp_path: Path
) -> None:
    store = tmp_path / "shared.sqlite"
    async with open_history(store=store, tail=TAIL, plugin={"process": False}) as app:
        await app.send(*CHAT[:4])
        gone = await app.history.retract("t", after=1)
        assert [s.message.id for s in gone] == ["t-2", "t-3"]
        outline = await app.history.outline("t")
        assert outline is not None and outline.position == -1
    async with open_history(store=store, tail=TAIL) as worker:
        await worker.history.wait()
        outline = await worker.history.outline("t")
        assert outline is not None and [i.id for i in outline.tail] == ["t-0", "t-1"]
        assert await worker.history.retract("t", after=-1) != []  # the whole thread
        assert await worker.history.outline("t") is None
        assert await worker.history.store.threads() == []
        await worker.send(*CHAT[:2])  # a thread of that id starts again
        again = await worker.history.outline("t")
        assert again is not None and again.position == 1


async def test_a_batch_in_flight_is_redone_without_what_was_taken_back(
    open_history: Opener, tmp_path: Path
) -> None:
    """The cut of message 2 waits for the summarizer when message 2 is taken back: the batch
    commits nothing, and the thread is processed again without it."""
    gate, asked = anyio.Event(), anyio.Event()

    async def summarizer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.set()
        await gate.wait()
        return ModelResponse(parts=[TextPart("a line")])

    chat = [message(0, "long " * 200), message(1, "short"), message(2, "big " * 100)]
    async with open_history(store=tmp_path / "never.sqlite", tail=(100, 300), kept=1) as never:
        await never.send(*chat[:2])
        expected = state(await never.history.outline("t"))
    async with open_history(model=FunctionModel(summarizer), tail=(100, 300), kept=1) as run:
        for m in chat:
            await run.history.message_created(m)
        await asked.wait()  # message 2's cut asks for message 0's line
        gone = await run.history.retract("t", after=1)
        gate.set()
        await run.history.wait()
        assert [s.message.id for s in gone] == ["t-2"]
        assert state(await run.history.outline("t")) == expected
        assert await run.history.store.summaries("t") == []


async def test_retract_checks_its_arguments(open_history: Opener) -> None:
    async with open_history(tail=TAIL) as run:
        await run.send(*CHAT[:2])
        for wrong in (-2, True, "1", 1.0):
            with pytest.raises(InputError, match="after must be a message's seq"):
                await run.history.retract("t", after=wrong)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="thread must be a non-empty string"):
            await run.history.retract("", after=0)
        assert await run.history.retract("nobody", after=-1) == []


async def test_a_store_retracts_only_over_the_outline_and_newest_message_it_was_given(
    store: Store,
) -> None:
    for m in CHAT[:3]:
        await store.add(m, 5)
    outline = await store.outline("t")
    assert outline is not None
    gone = await store.messages_after("t", 0, 10)
    stale = replace(outline, version=outline.version + 1)
    assert not await store.retract(stale, outline, gone)  # the outline moved meanwhile
    assert not await store.retract(outline, outline, gone[:1])  # not the newest
    assert len(await store.messages_after("t", -1, 10)) == 3  # nothing was deleted
    assert await store.retract(outline, outline, gone)
    assert [s.seq for s in await store.messages_after("t", -1, 10)] == [0]
    after = await store.outline("t")
    assert after is not None and after.version == outline.version + 1
    again = await store.add(CHAT[1], 5)
    assert again is not None and again.seq == 1 and again.index == 1


def test_the_retract_command_takes_back_and_refuses_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "h.sqlite")
    chat = tmp_path / "chat.jsonl"
    write_jsonl(chat, CHAT + TURN)
    assert main(["ingest", str(chat), "--tail", "40,80", "--db", db]) == 0
    capsys.readouterr()
    assert main(["retract", "t", "--after", "19", "--db", db, "--json"]) == 0
    taken = json.loads(capsys.readouterr().out)
    assert taken == {
        "thread": "t",
        "retracted": [{"seq": 20, "id": "t-20"}, {"seq": 21, "id": "t-21"}],
    }
    assert main(["retract", "t", "--after", "0", "--db", db]) == 2
    assert "has left the tail" in capsys.readouterr().err


async def test_messages_processed_and_not_yet_committed_are_processed_again(
    open_history: Opener,
) -> None:
    """The thread's newest messages wait, processed, for a later commit when two are taken
    back: the two before them are processed again from the store and committed."""
    async with open_history(tail=TAIL) as run:
        for m in CHAT[:4]:
            await run.history.message_created(m)
        await anyio.sleep(0.1)  # processed, waiting for more before their commit
        gone = await run.history.retract("t", after=1)
        await run.history.wait()
        outline = await run.history.outline("t")
    assert [s.message.id for s in gone] == ["t-2", "t-3"]
    assert outline is not None and [i.id for i in outline.tail] == ["t-0", "t-1"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings",
    [
        {"tail": TAIL},
        {"tail": TAIL, "kept": 1, "cold": 300.0},
        {"tail": TAIL, "cut_gap": False},
        {"tail": TAIL, "kept": 3},
    ],
)
async def test_whatever_is_taken_back_is_as_if_never_sent_or_refused(
    open_history: Opener, tmp_path: Path, settings: Settings
) -> None:
    """Every split of the chat: the newest one to three messages taken back leave the outline
    (and, the chat going on, the lines) of the chat that never had them, or are refused."""
    taken = refused = 0
    chat = PACED if settings.get("cold") else LONG if settings.get("kept") == 3 else CHAT
    for n in range(3, len(chat) + 1, 2):
        for k in (1, 2, 3):
            async with open_history(store=tmp_path / f"r{n}-{k}.sqlite", **settings) as run:
                await run.send(*chat[:n])
                try:
                    await run.history.retract("t", after=n - k - 1)
                except RetractRefused:
                    refused += 1
                    continue
                taken += 1
                await run.send(*LATER)
                got = state(await run.history.outline("t"))
                lines = await run.history.store.summaries("t")
            async with open_history(store=tmp_path / f"n{n}-{k}.sqlite", **settings) as never:
                await never.send(*chat[: n - k], *LATER)
                assert got == state(await never.history.outline("t")), (n, k)
                assert lines == await never.history.store.summaries("t"), (n, k)
    assert taken >= 2 and refused >= 2, (taken, refused)


@pytest.mark.slow
async def test_a_tool_step_taken_back_leaves_its_agents_steps_and_search(
    open_history: Opener, database: str
) -> None:
    step = message(4, "price_lookup returned 49 euros", author="north", to="", step=True)
    async with open_history(store=database, tail=(200, 400)) as run:
        await run.send(*CHAT[:4], step)
        assert await run.history.store.search("t", "euros", 5, agent="north") != []
        gone = await run.history.retract("t", after=3)
        assert [s.message.id for s in gone] == ["t-4"]
        assert await run.history.store.search("t", "euros", 5, agent="north") == []
        again = await run.history.message_created(replace(step, id="t-5"))
        assert again is not None and (again.seq, again.step_index) == (4, 0)


def test_the_retract_command_judges_with_the_settings_the_thread_was_built_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its cut was tried at message 2 with the thread's tail of (40, 80) tokens (the kept
    messages stopped it): refused, though the default tail would never have tried it."""
    db, chat = str(tmp_path / "h.sqlite"), tmp_path / "big.jsonl"
    big = [message(n, f"word{n} " * 30) for n in range(3)]
    write_jsonl(chat, big)
    assert main(["ingest", str(chat), "--tail", "40,80", "--kept", "4", "--db", db]) == 0
    capsys.readouterr()
    assert main(["retract", "t", "--after", "1", "--db", db]) == 2
    assert "a cut was tried at message 't-2'" in capsys.readouterr().err
