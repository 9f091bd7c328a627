"""The smaller snags of a first hour: one prefix for the environment, the project's name in
exports, errors that name the real cause, a bounded list of bad records, each command's own
help, `--db` before the command, grammar, and a search that says which hits hold the words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from history.cli import main
from history.settings import settings_from_env

from .. import stores

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "launch.jsonl"


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("HISTORY_TAIL", "CHAT_OUTLINE_TAIL", "CHAT_OUTLINE_DB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit:  # the parser's mistakes
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_one_prefix_for_the_environment_the_old_names_still_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert settings_from_env({"CHAT_OUTLINE_TAIL": "40,80"}).tail == (40, 80)
    assert settings_from_env({"HISTORY_TAIL": "10,20"}).tail == (10, 20)
    both = {"CHAT_OUTLINE_TAIL": "40,80", "HISTORY_TAIL": "10,20"}
    assert settings_from_env(both).tail == (40, 80)
    monkeypatch.setenv("CHAT_OUTLINE_TEST_POSTGRES", "postgresql://new@host/db")
    monkeypatch.setenv("HISTORY_TEST_POSTGRES", "postgresql://old@host/db")
    assert stores.postgres_server() == "postgresql://new@host/db"
    monkeypatch.delenv("CHAT_OUTLINE_TEST_POSTGRES")
    assert stores.postgres_server() == "postgresql://old@host/db"
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'export CHAT_OUTLINE_TEST_POSTGRES="${CHAT_OUTLINE_TEST_POSTGRES:-${HISTORY_TEST' in ci


def test_exports_say_chat_outline_and_old_exports_still_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "ingest", EXAMPLE, "--db", "h.sqlite")[0] == 0
    assert run(capsys, "export", "--out", "all.jsonl", "--db", "h.sqlite")[0] == 0
    lines = (tmp_path / "all.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "chat-outline"
    old = [lines[0].replace('"chat-outline"', '"chat-history"'), *lines[1:]]
    (tmp_path / "old.jsonl").write_text("\n".join(old) + "\n")
    assert run(capsys, "load", "old.jsonl", "--db", "other.sqlite")[0] == 0
    code, _, err = run(capsys, "load", EXAMPLE, "--db", "other.sqlite")
    assert code == 2 and "not a chat-outline record" in err


def test_truncated_json_is_called_cut_short(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = json.dumps([{"role": "user", "content": "Shall we price it at 49 euros?"}] * 3)
    (tmp_path / "chat.json").write_text(whole[: len(whole) // 2])
    code, _, err = run(capsys, "ingest", "chat.json", "--db", "h.sqlite")
    assert code == 2 and "starts as JSON but does not parse" in err and "cut short" in err


def test_a_directory_as_the_store_is_named_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["threads"], ["ingest", str(EXAMPLE)]):
        code, _, err = run(capsys, *argv, "--db", tmp_path)
        assert code == 2 and f"{str(tmp_path)!r} is a directory" in err, argv


def test_at_most_twenty_bad_records_are_listed_then_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "noise.bin").write_bytes(b"\x00\xff garbage\n" * 500)
    code, _, err = run(capsys, "ingest", "noise.bin", "--format", "jsonl", "--db", "h.sqlite")
    lines = err.splitlines()
    assert code == 1 and len(lines) == 22
    assert lines[20] == "chat-outline: and 480 more bad records"
    assert lines[21].startswith("chat-outline: 500 bad record(s): nothing was written")


def test_an_option_mistake_points_to_the_commands_own_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "ingest", "x.jsonl", "--no-such-option")
    assert code == 2
    assert err == (
        "chat-outline ingest: unrecognized arguments: --no-such-option "
        "(see chat-outline ingest --help)\n"
    )


def test_db_before_the_command_names_its_store(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "ingest", EXAMPLE, "--db", "h.sqlite")[0] == 0
    code, out, _ = run(capsys, "--db", "h.sqlite", "threads")
    assert code == 0 and out.startswith("1 thread in h.sqlite\n")  # one thread, not "threads"
    code, _, err = run(capsys, "--db", "h.sqlite", "simulate", EXAMPLE)
    assert code == 2 and err.startswith("chat-outline simulate: takes no --db")


def test_a_search_says_which_hits_are_only_next_to_the_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        {
            "id": f"m{n}",
            "thread": "t",
            "author": author,
            "to": to,
            "text": text,
            "at": f"2026-01-01T00:00:{n:02}Z",
        }
        for n, (author, to, text) in enumerate(
            [
                ("Ana", "north", "Plan the launch"),
                ("north", "Ana", "ok"),
                ("Ana", "north", "We need a trailer"),
                ("north", "Ana", "ok"),
            ]
        )
    ]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run(capsys, "ingest", "t.jsonl", "--db", "h.sqlite")[0] == 0
    code, out, _ = run(capsys, "search", "t", "trailer", "--db", "h.sqlite", "--json")
    hits = json.loads(out)["hits"]
    assert code == 0 and hits[0]["terms"] == ["trailer"] and hits[1]["terms"] == []
    code, out, _ = run(capsys, "search", "t", "trailer", "--db", "h.sqlite")
    shown = out.splitlines()
    assert shown[0] == "2+1|Ana → north: We need a trailer"
    assert all(line.endswith("(next to a hit: it holds none of the words)") for line in shown[1:])
