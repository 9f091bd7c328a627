"""A thread's title: kept from a ChatGPT export, shown, matched, and taken for the thread's id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from history.contract import About
from history.store import Store

from ..conftest import message, run

DATA = Path(__file__).parents[1] / "data"
EXPORT = DATA / "chatgpt-export.json"
CAFE = "67a1c2d3-4e5f-8a9b-0c1d-2e3f4a5b6c7d"
MENU = "67a1c2d3-0000-8a9b-0c1d-2e3f4a5b6c7e"


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "h.sqlite"
    assert run(capsys, "ingest", EXPORT, "--db", path, "--tail", "40,80", "--kept", "1")[0] == 0
    return path


def test_threads_shows_each_conversation_with_its_title_and_matches_on_it(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = run(capsys, "threads", "--db", db)
    assert code == 0
    assert out.splitlines()[0] == f"2 threads in {db}"
    cells = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert cells == ["Menu prices", MENU, "Café opening hours & a logo", CAFE]
    code, out, _ = run(capsys, "threads", "--match", "CAFÉ", "--db", db)
    assert code == 0 and out.splitlines()[0] == f"1 thread in {db}"
    assert CAFE in out and MENU not in out
    assert run(capsys, "threads", "--match", "67a1c2d3-0000", "--db", db)[1].count("Menu") == 1
    assert run(capsys, "threads", "--match", "tea", "--db", db)[1] == (
        f"no threads matching 'tea' in '{db}'\n"
    )


def test_a_title_names_its_thread_wherever_a_thread_is_named(
    db: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "show", "menu prices", "--db", db)
    assert code == 0
    assert out.splitlines()[0].startswith(f"{MENU} “Menu prices”: 2 messages")
    code, out, _ = run(capsys, "prompt", "Café opening hours & a logo", "--db", db)
    assert code == 0 and "Sales grew every week" in out
    code, out, _ = run(capsys, "search", "opening hours", "Sundays", "--db", db)
    assert code == 0 and "Sundays" in out
    assert "Is €3.20 a fair price" in run(capsys, "zoom", "menu", "0+1", "--db", db)[1]
    assert run(capsys, "stats", "--thread", "Menu prices", "--db", db)[0] == 0
    exported = tmp_path / "menu.jsonl"
    assert run(capsys, "export", "Menu prices", "--out", exported, "--db", db)[0] == 0
    threads = {json.loads(x).get("thread") for x in exported.read_text().splitlines()}
    assert threads == {None, MENU}
    code, out, _ = run(capsys, "erase", "Menu prices", "--db", db)
    assert (code, out) == (0, f"erased thread {MENU!r}: 2 messages and 0 lines\n")
    assert run(capsys, "show", "Menu prices", "--db", db)[2] == (
        f"chat-outline: no thread 'Menu prices' in {str(db)!r}\n"
    )


def test_a_title_that_names_several_threads_is_refused_with_the_candidates(
    db: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    export = json.loads(EXPORT.read_text(encoding="utf-8"))
    again = {**export[1], "id": "second-menu", "conversation_id": "second-menu"}
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps([again]), encoding="utf-8")
    assert run(capsys, "ingest", source, "--db", db)[0] == 0
    code, out, err = run(capsys, "show", "menu prices", "--db", db)
    assert (code, out) == (2, "")
    assert err == (
        f"chat-outline: 'menu prices' names 2 threads by their titles: {MENU} (Menu prices); "
        "second-menu (Menu prices); give its id\n"
    )
    assert run(capsys, "show", "second-menu", "--db", db)[0] == 0


@pytest.mark.anyio
async def test_a_store_keeps_a_threads_title_and_settings_until_it_is_erased(
    store: Store,
) -> None:
    await store.add(message(0, "hello"), 5)
    assert await store.about("t") == []
    await store.describe("t", title="Launch plan")
    await store.describe("t", settings='{"line": 512}')
    await store.describe("t", title="Launch plan, v2")
    await store.describe("u", title="Other")
    assert await store.about("t") == [
        About(thread="t", title="Launch plan, v2", settings='{"line": 512}')
    ]
    assert [a.thread for a in await store.about()] == ["t", "u"]
    assert await store.erase("t")
    assert await store.about("t") == []


def test_a_title_and_settings_travel_with_an_export(
    db: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    exported, other = tmp_path / "all.jsonl", tmp_path / "other.sqlite"
    assert run(capsys, "export", "--out", exported, "--db", db)[0] == 0
    first = json.loads(exported.read_text(encoding="utf-8").splitlines()[1])
    assert (first["kind"], first["thread"], first["title"]) == ("thread", MENU, "Menu prices")
    assert json.loads(first["settings"])["tail"] == [40, 80]
    assert run(capsys, "load", exported, "--db", other)[0] == 0
    code, out, _ = run(capsys, "show", "Menu prices", "--db", other, "--json")
    assert code == 0
    shown = json.loads(out)
    assert (shown["thread"], shown["title"], shown["settings"]["kept"]) == (MENU, "Menu prices", 1)
    code, out, _ = run(capsys, "rebuild", "Café opening hours & a logo", "--db", other)
    assert code == 0 and "with the settings it was built with" in out
