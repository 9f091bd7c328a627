"""Spaces: the app puts a thread in a space; its calls are reported and metered by space."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from history import InputError, SpaceConflict
from history.carry import export, load
from history.cli import main
from history.contract import About, Reply, Task
from history.metering import SpaceUsage, priced_usage, usage
from history.processors.weight import weight
from history.store import Store, open_store

from ..conftest import Opener, exchange, message

pytestmark = pytest.mark.anyio
LONG = "a long question about the launch plan and its budget " * 4


async def test_a_store_keeps_a_threads_space_beside_its_title_until_it_is_erased(
    store: Store,
) -> None:
    await store.add(message(0, "hello"), 5)
    await store.describe("t", title="Launch plan", space="acme")
    await store.describe("t", settings='{"line": 512}')  # leaves the space as it is
    assert await store.about("t") == [
        About(thread="t", title="Launch plan", settings='{"line": 512}', space="acme")
    ]
    await store.describe("t", space="globex")
    await store.describe("u", space="acme")
    assert [(a.thread, a.title, a.space) for a in await store.about()] == [
        ("t", "Launch plan", "globex"),
        ("u", None, "acme"),
    ]
    assert await store.erase("t")
    assert await store.about("t") == []


async def test_the_first_message_naming_a_space_places_its_thread_and_another_is_refused(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database, tail=(20, 60), kept=1) as run:
        history = run.history
        await history.message_created(message(0, "hello"), space="acme")
        await history.message_created(message(1, "no space named"))
        await history.message_created(message(2, "the same space"), space="acme")
        with pytest.raises(
            SpaceConflict, match="thread 't' is in space 'acme', the message names 'globex'"
        ):
            await history.message_created(message(3, "billed elsewhere"), space="globex")
        assert [s.message.id for s in await history.store.messages("t", 0, 9)] == [
            "t-0",
            "t-1",
            "t-2",
        ]
        with pytest.raises(InputError, match="space must not be empty"):
            await history.message_created(message(3, "x"), space="")
        await history.set_space("t", "globex")
        await history.message_created(message(3, "billed elsewhere"), space="globex")
        with pytest.raises(InputError, match="space must be a string, got 7"):
            await history.set_space("t", 7)  # type: ignore[arg-type]
        assert (await history.store.about("t"))[0].space == "globex"


async def test_each_ask_carries_its_threads_space_and_usage_groups_by_it(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database, line=64, tail=(20, 60), kept=1) as run:
        history = run.history
        for m in exchange([LONG] * 3, thread="a"):
            await history.message_created(m, space="acme")
        for m in exchange([LONG] * 2, thread="b"):
            await history.message_created(m, space="globex")
        for m in exchange([LONG] * 2, thread="c"):
            await history.message_created(m)
        await history.wait()
        asks = list(run.asks)
        meter = await history.usage()
        priced = await priced_usage(history.store)
        only_b = await usage(history.store, "b")
    assert {a.thread: a.space for a in asks} == {"a": "acme", "b": "globex", "c": None}
    assert [(t.thread, t.space) for t in meter.threads] == [
        ("a", "acme"),
        ("b", "globex"),
        ("c", None),
    ]
    count = {t: sum(a.thread == t for a in asks) for t in "abc"}
    assert [(s.space, s.threads, s.calls) for s in meter.spaces] == [
        ("acme", 1, count["a"]),
        ("globex", 1, count["b"]),
        (None, 1, count["c"]),
    ]
    assert sum(s.calls for s in meter.spaces) == meter.calls == len(asks)
    assert [(s.space, s.calls) for s in priced.spaces] == [(s.space, s.calls) for s in meter.spaces]
    assert only_b.spaces == (
        SpaceUsage(
            space="globex",
            threads=1,
            calls=count["b"],
            input_tokens=0,
            output_tokens=0,
            cost=0.0,
            fallbacks=0,
        ),
    )


async def test_a_moved_thread_is_reported_in_its_new_space(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database, line=64, tail=(20, 60), kept=1) as run:
        for m in exchange([LONG] * 2):
            await run.history.message_created(m, space="acme")
        await run.history.wait()
        before = len(run.asks)
        await run.history.set_space("t", "globex")
        await run.send(*exchange([LONG] * 2, start=4))
        spaces = [a.space for a in run.asks]
        meter = await run.history.usage()
    assert before and spaces[:before] == ["acme"] * before
    assert len(spaces) > before and set(spaces[before:]) == {"globex"}
    assert [(s.space, s.calls) for s in meter.spaces] == [("globex", len(spaces))]


async def test_a_thread_moved_while_it_is_processed_is_reported_in_its_new_space_at_once(
    open_history: Opener, database: str
) -> None:
    async with open_history(store=database, line=64, tail=(20, 60), kept=1) as run:
        asked_once = anyio.Event()
        run.history.subscribe(lambda ask: asked_once.set())
        for m in exchange([LONG] * 3):
            await run.history.message_created(m, space="acme")
        await asked_once.wait()  # processing, its claim held while it waits for more messages
        await run.history.set_space("t", "globex")
        asked = len(run.asks)
        await run.send(*exchange([LONG] * 3, start=6))
    assert run.asks[-1].space == "globex" and len(run.asks) > asked


async def test_a_threads_space_travels_with_its_export_and_older_exports_load(
    store: Store, database: str, tmp_path: Path
) -> None:
    for m in (message(0, "hello"), message(0, "hello", thread="u")):
        await store.add(m, weight(m, "cl100k_base"))
    await store.describe("t", title="Launch plan", space="acme")
    await store.describe("u", title="No space")
    out = tmp_path / "all.jsonl"
    with out.open("w", encoding="utf-8") as f:
        await export(store, f)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    thread_lines = {r["thread"]: r for r in lines if r["kind"] == "thread"}
    assert thread_lines["t"]["space"] == "acme"
    assert "space" not in thread_lines["u"]  # written only when set: as before spaces

    other = open_store(str(tmp_path / "other.sqlite"))
    await other.open()
    try:
        with out.open(encoding="utf-8") as f:
            await load(other, f)
        assert [(a.thread, a.space) for a in await other.about()] == [("t", "acme"), ("u", None)]
    finally:
        await other.close()

    bad = out.read_text(encoding="utf-8").replace('"space":"acme"', '"space":""')
    assert bad != out.read_text(encoding="utf-8")
    await store.erase("t")
    with pytest.raises(InputError, match="space must not be empty"):
        await load(store, bad.splitlines())
    assert await store.about("t") == []  # refused whole: nothing written


class Broken:
    name = "broken"

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        raise RuntimeError("always down")


def test_stats_shows_calls_per_space_and_each_threads_fallback_lines(
    open_history: Opener,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    db = tmp_path / "h.sqlite"

    async def fill() -> None:
        async with open_history(store=db, line=64, tail=(20, 60), kept=1) as run:
            for m in exchange([LONG] * 3, thread="a"):
                await run.history.message_created(m, space="acme")
            for m in exchange([LONG] * 2, thread="b"):
                await run.history.message_created(m)
            await run.history.wait()
        async with open_history(store=db, model=Broken(), line=64, tail=(1, 2), kept=1) as run:
            await run.send(*(message(n, LONG, thread="f") for n in range(3)))
            await run.history.set_space("f", "acme")

    anyio.run(fill)
    assert main(["stats", "--by", "space", "--json", "--db", str(db)]) == 0
    meter = json.loads(capsys.readouterr().out)
    fallbacks = {t["thread"]: t["fallbacks"] for t in meter["threads"]}
    assert fallbacks["a"] == fallbacks["b"] == 0 and fallbacks["f"] > 0
    assert [(t["thread"], t["space"]) for t in meter["threads"]] == [
        ("a", "acme"),
        ("b", None),
        ("f", "acme"),
    ]
    acme, none = meter["spaces"]
    assert (acme["space"], acme["threads"], acme["fallbacks"]) == ("acme", 2, fallbacks["f"])
    assert (none["space"], none["threads"], none["fallbacks"]) == (None, 1, 0)
    assert acme["calls"] + none["calls"] == meter["calls"]

    assert main(["stats", "--by", "space", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "summarizer calls per space" in out and "fallback lines" in out
    rows = [line for line in out.splitlines() if "acme" in line or "(none)" in line]
    assert len(rows) == 2 and f"{fallbacks['f']}" in rows[0].split("│")[-2]
    assert main(["stats", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert [line.split("│")[2].strip() for line in out.splitlines() if "│ f " in line] == ["acme"]
