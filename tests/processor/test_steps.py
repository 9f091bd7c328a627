"""SPEC version 2: the cut gap, and a step tree for each agent (sections 5 and 6a)."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from history import History, HistorySettings, InputError, Message
from history.carry import export, read_records
from history.lines import line_of, node_id
from history.rebuilding import rebuild
from history.store import _migrations as migrations
from history.store import open_store

from ..conftest import START, Opener, kinds, message

pytestmark = pytest.mark.anyio

TOOL = "The search returned: " + "flight LH 440 to Lisbon at 09:15, gate B12. " * 4  # > 96 bytes


def step(n: int, text: str, *, agent: str = "north", thread: str = "t") -> Message:
    return message(n, text, thread=thread, author=agent, to="", step=True)


def chat(steps: int, *, agent: str = "north", start: int = 0) -> list[Message]:
    """Ana asks, the agent runs `steps` tool steps, then answers."""
    out = [message(start, "Find me a flight", to=agent)]
    out += [step(start + 1 + k, f"{TOOL} #{k}", agent=agent) for k in range(steps)]
    out.append(message(start + 1 + steps, "Done: LH 440", author=agent, to="Ana"))
    return out


async def test_a_step_that_leaves_gets_a_line_in_its_agents_tree(open_history: Opener) -> None:
    async with open_history(line=96, tail=(100, 300), kept=1, steps=(500, 1000)) as run:
        await run.send(*chat(4), *chat(4, start=6))
        nodes = await run.history.store.summaries("t")
        outline = await run.history.outline("t")
        assert outline is not None

    steps = [n for n in nodes if n.agent]
    assert {n.agent for n in steps} == {"north"}
    # Scripted answers T{j} for step j and T{a}+{2n} for a merge of its step lines.
    assert [(n.level, n.index, n.text) for n in steps][:4] == [
        (0, 0, "T0"),
        (0, 1, "T1"),
        (0, 2, "T2"),
        (0, 3, "T3"),
    ]
    # Short answers join up the tree without a call.
    assert {(n.level, n.index): n.text for n in steps}[(2, 0)] == "T0\nT1\nT2\nT3"
    assert steps[0].label == "s0+1" and node_id("t", 0, 0, agent=steps[0].agent) == "t:north:s0:0"
    assert next(n for n in steps if n.level == 2).label == "s0+4"
    # The shared tree numbers shared messages only: no step took an index.
    assert all(
        n.message is None or n.message.endswith(("-0", "-5", "-6"))
        for n in nodes
        if not n.agent and n.level == 0
    )
    north = outline.steps["north"]
    assert north.boundary == sum(1 for n in steps if n.level == 0)
    assert north.bytes == sum(size + 1 for _, _, size, _ in north.lines)
    # Step lines never count toward the shared outline.
    assert outline.bytes == sum(size + 1 for _, _, size, _ in outline.lines)

    tasks = [a.prompts[0] for a in run.asks if a.agent]
    assert tasks[0].startswith(
        "Compaction: compress step 0 of north into one line of at most 96 bytes (about 13 "
        "words), no longer than this ruler:\n" + "-" * 96 + "\n<input>\nnorth: The search"
    )
    # The <chat> block of step 1 holds step 0's line.
    assert "\n<chat>\nT0\n</chat>\n<input>\n" in tasks[1]


async def test_a_merge_of_long_step_lines_asks_with_the_step_task(open_history: Opener) -> None:
    async with open_history(
        summarizer="echo", line=96, tail=(100, 300), kept=1, steps=(500, 1000)
    ) as run:
        await run.send(*chat(4), *chat(4, start=6))
    merges = [a for a in run.asks if a.agent and a.level == 1]
    assert (
        merges[0]
        .prompts[0]
        .startswith(
            "Compaction: merge step lines 0+1 and 1+1 of north, adjacent, into one line of at most "
            "96 bytes"
        )
    )
    assert (merges[0].level, merges[0].index) == (1, 0)


async def test_scripted_answers_a_step_merge_with_its_label() -> None:
    from history.processors.summarize import merge_task
    from history.summarizer import Scripted

    task = merge_task("t", 1, 3, "a\nb", 64, agent="north")
    assert task.prompt.startswith("Compaction: merge step lines 4+2 and 6+2 of north, adjacent")
    reply = await Scripted().reply(task, [task.prompt], [])
    assert reply.text == "T4+4"


async def test_a_short_step_is_its_own_line_and_pairs_join_without_a_call(
    open_history: Opener,
) -> None:
    async with open_history(line=512, tail=(20, 40), kept=1) as run:
        await run.send(*[step(n, f"ran {n}") for n in range(6)], message(6, "hi"))
        steps = [n for n in await run.history.store.summaries("t") if n.agent]
    assert run.asks == []
    level0 = [n for n in steps if n.level == 0]
    assert [n.text for n in level0] == [line_of(step(n, f"ran {n}")) for n in range(len(level0))]
    assert {(n.level, n.index): n.text for n in steps}[(1, 0)] == "north: ran 0\nnorth: ran 1"


async def test_each_agent_has_its_own_tree_and_outline(open_history: Opener) -> None:
    both = [step(0, "north looked", agent="north"), step(1, "south looked", agent="south")]
    both += [step(2, "north again", agent="north"), message(3, "x" * 200), message(4, "y")]
    async with open_history(tail=(20, 40), kept=1) as run:
        await run.send(*both)
        steps = [n for n in await run.history.store.summaries("t") if n.agent]
        outline = await run.history.outline("t")
        assert outline is not None
    assert [(n.agent, n.index, n.message) for n in steps if n.level == 0] == [
        ("north", 0, "t-0"),
        ("north", 1, "t-2"),
        ("south", 0, "t-1"),
    ]
    assert sorted(outline.steps) == ["north", "south"]
    assert outline.steps["south"].boundary == 1 and outline.steps["north"].boundary == 2


async def test_a_step_outline_folds_within_its_own_bounds(open_history: Opener) -> None:
    async with open_history(line=64, tail=(20, 40), kept=1, steps=(60, 120)) as run:
        await run.send(*[step(n, f"tool call number {n}") for n in range(16)], message(16, "hi"))
        outline = await run.history.outline("t")
        assert outline is not None
    north = outline.steps["north"]
    assert north.bytes <= 120 and any(level > 0 for level, *_ in north.lines)
    assert north.bytes == sum(size + 1 for _, _, size, _ in north.lines)
    assert outline.lines == [] and outline.bytes == 0  # nothing of it in the shared outline


async def test_without_step_trees_steps_leave_without_a_line(open_history: Opener) -> None:
    async with open_history(line=96, tail=(100, 300), kept=1, steps=None) as run:
        await run.send(*chat(4), *chat(4, start=6))
        nodes = await run.history.store.summaries("t")
        outline = await run.history.outline("t")
        assert outline is not None
    assert [n for n in nodes if n.agent] == [] and outline.steps == {}
    assert all(not a.agent for a in run.asks)


async def test_a_step_without_an_author_is_refused(open_history: Opener) -> None:
    async with open_history() as run:
        with pytest.raises(InputError) as refused:
            await run.history.message_created(step(0, "orphan", agent=""))
        assert refused.value.field == "author"
        assert await run.history.store.message("t-0") is None


async def test_the_cut_gap_waits_for_the_tail_to_grow_again(
    open_history: Opener, tmp_path: Path
) -> None:
    # Each message weighs 30 tokens or so, and two kept messages outweigh tail[0] = 40: without
    # the gap every message past the maximum cuts; with it, a cut waits for another 40 tokens.
    said = [message(n, f"message number {n} " + "word " * 15) for n in range(12)]
    cuts: dict[bool, int] = {}
    for gap in (False, True):
        async with open_history(
            summarizer="echo",
            tail=(40, 80),
            kept=2,
            cut_gap=gap,
            store=tmp_path / f"gap-{gap}.sqlite",
        ) as run:
            moves, before = 0, None
            for m in said:
                await run.send(m)
                outline = await run.history.outline("t")
                assert outline is not None
                if outline.cut_at != before:
                    moves, before = moves + 1, outline.cut_at
            cuts[gap] = moves
            assert outline is not None
            floor = outline.floor
    assert cuts[True] < cuts[False]
    assert floor > 40  # the tokens the last cut's kept messages held


async def test_simulate_prints_the_step_trees(tmp_path: Path) -> None:
    from history._trace import simulate

    lines = [json.dumps(m.to_json()).encode() for m in chat(4) + chat(4, start=6)]
    settings = HistorySettings(summarizer="scripted", line=96, tail=(100, 300), kept=1)
    trace = await simulate(lines, settings)
    (outline,) = trace["outlines"]
    assert list(outline["steps"]) == ["north"]
    assert {"lines", "bytes", "boundary", "draining"} == set(outline["steps"]["north"])
    assert [(s["agent"], s["level"], s["index"]) for s in trace["steps"]][:2] == [
        ("north", 0, 0),
        ("north", 0, 1),
    ]
    v1 = await simulate(lines, settings.with_changes(steps=None, cut_gap=False))
    assert v1["steps"] == [] and v1["outlines"][0]["steps"] == {}


@pytest.mark.slow
async def test_step_trees_are_carried_and_rebuilt_identically(
    database: str, tmp_path: Path
) -> None:
    settings = HistorySettings(summarizer="scripted", line=96, tail=(100, 300), kept=1)
    async with History(settings, store=database, pause=0.0) as history:
        for m in chat(5) + chat(5, start=7):
            await history.message_created(m)
        await history.wait()
        dump = tmp_path / "dump.jsonl"
        with dump.open("w", encoding="utf-8") as out:
            await export(history.store, out)
        before = await history.store.export_thread("t")
        done = await rebuild(history.store, "t", settings)
        after = await history.store.export_thread("t")
    assert done.model_calls == 0 and before is not None and after is not None
    assert after.summaries == before.summaries and any(n.agent for n in after.summaries)
    assert after.outline is not None and before.outline is not None
    assert after.outline.steps == before.outline.steps

    records = read_records(dump.read_text(encoding="utf-8").splitlines())
    (loaded,) = records
    assert loaded.outline is not None and loaded.outline.steps == before.outline.steps
    assert [s.step_index for s in loaded.messages if s.message.step] == list(range(5)) * 1 + [
        5,
        6,
        7,
        8,
        9,
    ]
    target = open_store(tmp_path / "copy.sqlite")
    await target.open()
    try:
        await target.load_records(records)
        again = await target.load_records(records)  # idempotent
        copied = await target.export_thread("t")
    finally:
        await target.close()
    assert again.written == 0
    assert copied is not None and copied.summaries == before.summaries


async def test_erasing_a_thread_erases_its_step_trees(open_history: Opener) -> None:
    async with open_history(line=96, tail=(100, 300), kept=1) as run:
        await run.send(*chat(4), *chat(4, start=6))
        assert any(n.agent for n in await run.history.store.summaries("t"))
        await run.history.thread_deleted("t")
        assert await run.history.store.summaries("t") == []
        assert await run.history.store.calls("t") == []


async def test_a_version_1_store_opens_and_carries_on(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    _version_1_store(path)
    settings = HistorySettings(summarizer="scripted", line=96, tail=(100, 300), kept=1)
    async with History(settings, store=path, pause=0.0) as history:
        before = await history.outline("t")
        assert before is not None and before.floor == 0 and before.steps == {}
        for m in chat(3, start=10) + chat(3, start=15) + chat(3, start=20):
            await history.message_created(m)
        await history.wait()
        outline = await history.outline("t")
        assert outline is not None
        nodes = await history.store.summaries("t")
        first = await history.store.message("t-1")
    assert first is not None and first.step_index == 0  # numbered by the migration
    north = outline.steps["north"]
    # The two steps that left under version 1 keep no line; the boundary counts them.
    assert north.lines[0][1] >= 2 and north.boundary == north.lines[-1][1] + 1
    assert not any(n.agent and n.index < 2 and n.level == 0 for n in nodes)


def _version_1_store(path: Path) -> None:
    """A store as version 1 left it: two of north's steps already left the tail unlined."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(migrations.MIGRATION_TABLE)
    for name, filename in migrations.MIGRATIONS[:5]:
        for statement in migrations.statements(filename):
            db.execute(statement)
        db.execute("INSERT INTO migration VALUES (?, ?)", (name, "2026-11-01T00:00:00+00:00"))
    at = [(START + timedelta(minutes=n)).isoformat() for n in range(4)]
    rows = [
        ("t-0", 0, 0, "Ana", "north", "Find me a flight", at[0], False),
        ("t-1", 1, None, "north", "", TOOL, at[1], True),
        ("t-2", 2, None, "north", "", TOOL, at[2], True),
        ("t-3", 3, 1, "north", "Ana", "Done", at[3], False),
    ]
    for id, seq, idx, author, to, text, when, is_step in rows:
        db.execute(
            'INSERT INTO message (id, thread, seq, idx, author, "to", text, at, step, files, '
            "weight) VALUES (?, 't', ?, ?, ?, ?, ?, ?, ?, '[]', 20)",
            (id, seq, idx, author, to, text, when, is_step),
        )
    line = "Ana → north: Find me a flight"
    size = len(line.encode())
    db.execute("INSERT INTO summary VALUES ('t', 0, 0, ?, ?, 't-0', ?)", (line, size, at[0]))
    db.execute(
        "INSERT INTO outline VALUES ('t', 'e', ?, ?, 1, ?, ?, ?, 3, 20, 0, 3, 1)",
        (json.dumps([[0, 0, size, at[0]]]), size + 1, at[3], at[3], at[2]),
    )
    db.close()


async def test_only_its_agent_is_sent_and_can_open_a_step_outline(open_history: Opener) -> None:
    from pydantic_ai.messages import CompactionPart, ModelRequest

    from history import NotFoundError, view, zoom

    async with open_history(summarizer="echo", line=96, tail=(100, 300), kept=1) as run:
        await run.send(*chat(4), *chat(4, start=6))
        seen: dict[str | None, list[str | None]] = {}
        for who in ("north", "south", None):
            messages = await view(run.history, "t", agent=who)
            head = messages[0]
            assert isinstance(head, ModelRequest)
            seen[who] = [p.content for p in head.parts if isinstance(p, CompactionPart)]
        whole = await zoom(run.history, "t", "s0+1", agent="north")
        pair = await zoom(run.history, "t", "s0+2", agent="north")
        with pytest.raises(NotFoundError, match="step label"):
            await zoom(run.history, "t", "s0+1")
        with pytest.raises(NotFoundError):
            await zoom(run.history, "t", "s0+1", agent="south")

    # The shared outline, then north's step outline: nobody else's view holds it.
    assert len(seen["north"]) == 2 and seen["north"][0] == seen["south"][0] == seen[None][0]
    steps = seen["north"][1]
    assert steps is not None and steps.startswith("s0+")
    assert len(seen["south"]) == len(seen[None]) == 1
    assert whole.message is not None and whole.message.text == f"{TOOL} #0"
    assert [n.label for n in pair.lines] == ["s0+1", "s1+1"]


async def test_a_mark_ends_the_shared_outline_when_a_step_outline_follows(
    open_history: Opener,
) -> None:
    """A cut that appends a shared line changes what follows the shared outline, so the mark
    that holds from fold to fold must sit after the shared outline's closed blocks, even when
    none of its blocks is partial."""
    from history import view

    async with open_history(summarizer="echo", line=96, tail=(100, 300), kept=1) as run:
        await run.send(*chat(4), *chat(4, start=6))
        outline = await run.history.outline("t")
        assert outline is not None and outline.steps["north"].lines
        sent = await view(run.history, "t", agent="north", block_lines=len(outline.lines))
    parts = kinds(sent[0])
    outlines = parts[: parts.index("user-prompt")]  # north's step outline is two blocks
    assert outlines == ["compaction", "mark", "compaction", "compaction", "mark"]


@pytest.mark.slow
async def test_an_agent_finds_an_early_tool_result_by_search_and_zoom(
    database: str, tmp_path: Path
) -> None:
    from history import search, zoom

    settings = HistorySettings(summarizer="echo", line=96, tail=(100, 300), kept=1)
    early = step(1, "The weather service says: Lisbon, 23 degrees and sunny on Friday")
    said = [message(0, "What is the weather in Lisbon?", to="north"), early]
    said += [step(n, f"{TOOL} #{n}") for n in range(2, 30)]
    # Enough said after the steps for the tail to outgrow its floor and cut them out.
    said += [message(n, f"and then {n} " + "word " * 40, author="north") for n in range(30, 40)]
    async with History(settings, store=database, pause=0.0) as history:
        for m in said:
            await history.message_created(m)
        await history.wait()
        outline = await history.outline("t")
        hits = await search(history, "t", "weather Lisbon sunny", agent="north")
        others = await search(history, "t", "sunny degrees", agent="south")
        nobody = await search(history, "t", "sunny degrees")
        assert outline is not None and outline.steps["north"].boundary > 1  # it left the tail
        first = next(h for h in hits if h.agent == "north" and h.label == "s0+1")
        opened = await zoom(history, "t", first.label, agent="north")
    assert opened.message is not None and opened.message.text == early.text
    assert all(h.agent != "north" for h in others + nobody)  # nobody else finds north's steps


async def test_a_store_indexed_again_keeps_each_agents_steps_searchable(
    database: str,
) -> None:
    from history import search

    settings = HistorySettings(summarizer="echo", line=96, tail=(100, 300), kept=1)
    said = [message(0, "What is the weather in Lisbon?", to="north")]
    said.append(step(1, "The weather service says: Lisbon, sunny on Friday"))
    async with History(settings, store=database, pause=0.0) as history:
        for m in said:
            await history.message_created(m)
        await history.wait()
    # Another search language indexes the whole store again, steps included.
    again = settings.with_changes(search_language="simple")
    async with History(again, store=database, pause=0.0) as history:
        hits = await search(history, "t", "sunny", agent="north")
    assert [(h.agent, h.label) for h in hits] == [("north", "s0+1")]
