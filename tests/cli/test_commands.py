"""The inspecting commands and the demo, run as a user runs them: threads, show, prompt, zoom,
search, erase, demo. Clear errors, exit 2, and no traceback for a user's mistake."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from ..conftest import run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "launch.jsonl"


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables as wide as they need, whatever the terminal the tests run in."""
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("HISTORY_TAIL", raising=False)
    monkeypatch.delenv("CHAT_OUTLINE_TAIL", raising=False)


def rows(out: str) -> list[list[str]]:
    """The body rows of the rich tables in `out`, as lists of cells."""
    return [
        [c.strip() for c in line.strip().strip("│").split("│")]
        for line in out.splitlines()
        if line.startswith("│")
    ]


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A store holding the example chat with a small tail: thread `t`, twelve messages cut."""
    path = tmp_path / "h.sqlite"
    # The chapter's cut rule, which these figures were read against.
    assert run(capsys, "ingest", EXAMPLE, "--tail", "40,80", "--no-cut-gap", "--db", path)[0] == 0
    return path


def test_threads_shows_each_thread_with_its_figures(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = tmp_path / "support.json"
    chat.write_text('[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hey"}]')
    assert run(capsys, "ingest", chat, "--db", db)[0] == 0
    code, out, err = run(capsys, "threads", "--db", db)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"2 threads in {db}"
    assert rows(out) == [
        ["support", "2", "0", "0", "0", "0", "2", "14"],
        ["t", "16", "22", "4", "12", "526", "4", "58"],
    ]


def test_threads_on_an_empty_store_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty.json").write_text("[]")
    assert run(capsys, "ingest", tmp_path / "empty.json", "--db", tmp_path / "h.sqlite")[0] == 0
    assert run(capsys, "threads", "--db", tmp_path / "h.sqlite") == (
        0,
        f"no threads in '{tmp_path / 'h.sqlite'}'\n",
        "",
    )


def test_show_draws_the_tree_with_the_outline_marked_then_the_outline_and_the_tail(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "show", "t", "--db", db)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "t: 16 messages, 22 lines in 4 levels; ▶ marks the 12 lines of the outline"
    assert lines[1].startswith("├──         0+8  Ana → north: Plan the launch for December ⏎")
    tree = lines[1 : lines.index("")]
    assert "│   │   │   ├── ▶       0+1  Ana → north: Plan the launch for December" in tree
    assert len(tree) == 22
    assert sum("▶" in line for line in tree) == 12
    assert "outline: 12 lines, 526 bytes, for messages 0 to 11" in out
    assert ["11+1", "48", "2026-11-01T09:11", "north → Ana: You said: Ana: Let's say 49 euros"] in (
        rows(out)
    )
    assert "tail: 4 messages whole, 58 tokens" in out
    assert ["15", "14", "north → Ana: You said: Ana: Thanks"] in rows(out)


def test_show_depth_limits_the_levels_drawn(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", "t", "--depth", "1", "--db", db)
    assert code == 0
    # Each top node and one level under it, no deeper.
    assert [line[: line.find("Ana") + 3] for line in out.splitlines()[1:8]] == [
        "├──         0+8  Ana",
        "│   ├──         0+4  Ana",
        "│   └──         4+4  Ana",
        "└──         8+4  Ana",
        "    ├──         8+2  Ana",
        "    └──        10+2  Ana",
        "",  # line.find gave -1: the blank line after the tree
    ]


def test_a_thread_before_its_first_cut_has_no_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    assert run(capsys, "ingest", EXAMPLE, "--db", db)[0] == 0
    code, out, _ = run(capsys, "show", "t", "--db", db)
    assert code == 0
    assert out.splitlines()[:2] == [
        "t: 16 messages, 0 lines in 0 levels; ▶ marks the 0 lines of the outline",
        "└── no lines yet: the tail has never been cut",
    ]
    assert "outline: empty (never cut: agents are sent every message whole)" in out


def test_erase_deletes_a_thread_and_a_second_erase_finds_nothing(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "erase", "t", "--db", db) == (
        0,
        "erased thread 't': 16 messages and 22 lines\n",
        "",
    )
    assert run(capsys, "threads", "--db", db)[1] == f"no threads in '{db}'\n"
    assert run(capsys, "erase", "t", "--db", db) == (
        2,
        "",
        f"chat-outline: no thread 't' in '{db}'\n",
    )


@pytest.mark.parametrize("command", ["show", "erase", "prompt"])
def test_a_thread_that_does_not_exist_is_exit_2(
    db: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    assert run(capsys, command, "nope", "--db", db) == (
        2,
        "",
        f"chat-outline: no thread 'nope' in '{db}'\n",
    )


def test_a_store_that_is_missing_or_not_ours_is_exit_2_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.sqlite"
    code, _, err = run(capsys, "threads", "--db", missing)
    assert code == 2
    assert (
        err
        == f"chat-outline: no store at '{missing}': ingest a file first, or name one with --db\n"
    )
    assert not missing.exists()
    theirs = tmp_path / "theirs.sqlite"
    with sqlite3.connect(theirs) as connection:
        connection.execute("CREATE TABLE invoices (id INTEGER)")
    code, _, err = run(capsys, "show", "t", "--db", theirs)
    assert code == 2
    assert (
        err == f"chat-outline: '{theirs}' is not a chat-outline database (tables: ['invoices'])\n"
    )
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all, just notes\n" * 40)
    code, _, err = run(capsys, "ingest", EXAMPLE, "--db", text)
    assert code == 2
    assert err == f"chat-outline: cannot open the SQLite store '{text}': file is not a database\n"


def test_prompt_zoom_and_search_print_what_an_agent_reads(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "prompt", "t", "--db", db)
    assert code == 0
    assert out.startswith("[outline]\n0+1|Ana → north: Plan the launch for December\n")
    assert "11+1|north → Ana: You said: Ana: Let's say 49 euros\n" in out
    tokens, _, size = err.removesuffix(" bytes\n").partition(" tokens, ")
    assert int(tokens) > 0 and int(size) == len(out.encode())
    assert run(capsys, "zoom", "t", "0+2", "--db", db) == (
        0,
        "0+1|Ana → north: Plan the launch for December\n"
        "1+1|north → Ana: You said: Ana: Plan the launch for December\n",
        "",
    )
    code, out, _ = run(capsys, "search", "t", "49", "euros", "--limit", "2", "--db", db)
    first, second = out.splitlines()
    assert code == 0 and "Ana → north: Let's say 49 euros" in first
    assert first.split("|")[0] in ("10+1", "10+2", "8+4") and second.split("|")[0]
    assert run(capsys, "zoom", "t", "3+5", "--db", db)[0] == 2


def test_prompt_reads_without_processing(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = run(capsys, "threads", "--db", db)[1]
    assert run(capsys, "prompt", "t", "--db", db)[0] == 0
    assert run(capsys, "threads", "--db", db)[1] == before


@pytest.mark.slow
def test_the_demo_runs_offline_and_shows_a_deep_tree_an_outline_and_the_prompt(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, "demo")
    assert code == 0 and err.endswith(" bytes\n") and " tokens, " in err
    assert "A planning chat of 272 messages, ingested with a tail of 400 to 800 tokens" in out
    ((thread, messages, lines, depth, outline, *_),) = [r for r in rows(out) if r[0] == "launch"]
    assert (thread, messages) == ("launch", "272")
    assert int(depth) >= 6 and int(lines) > 272 and 2 <= int(outline) <= 16
    assert "launch: 272 messages" in out and "▶" in out and "outline: " in out
    assert "what north is sent now" in out and "0+128|Maya → north:" in out


@pytest.mark.slow
def test_the_demo_into_a_named_store_keeps_it_and_a_rerun_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "demo.sqlite"
    code, out, _ = run(capsys, "demo", "--db", db)
    assert code == 0 and "what north is sent now" in out
    first = rows(run(capsys, "threads", "--db", db)[1])
    assert run(capsys, "demo", "--db", db)[0] == 0
    assert rows(run(capsys, "threads", "--db", db)[1]) == first
    assert first[0][:2] == ["launch", "272"]


@pytest.mark.slow
def test_the_command_is_installed_and_its_demo_needs_no_network_or_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = subprocess.run(
        ["chat-outline", "demo", "--db", str(tmp_path / "demo.sqlite"), "--depth", "1"],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "120"},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "A planning chat of 272 messages" in result.stdout
    assert "Traceback" not in result.stderr


def test_a_worker_refuses_a_store_it_cannot_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "worker", "--db", ":memory:") == (
        2,
        "",
        "chat-outline: a worker shares a store with other processes, not ':memory:'\n",
    )
    missing = tmp_path / "typo.sqlite"
    code, out, err = run(capsys, "worker", "--db", missing)
    assert (code, out) == (2, "") and "no store at" in err and not missing.exists()
