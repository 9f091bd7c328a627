"""`rename`, `ingest --name`, `reconsolidate` and `zoom --generation`, run as a user runs them
(docs/generations.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ..conftest import run

DATA = Path(__file__).resolve().parents[1] / "data"
EXPORT = DATA / "chatgpt-export.json"
THREAD = "67a1c2d3-4e5f-8a9b-0c1d-2e3f4a5b6c7d"
USER = re.compile(r"(?<!\w)user(?!\w)")


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("HISTORY_TAIL", raising=False)
    monkeypatch.delenv("CHAT_OUTLINE_TAIL", raising=False)


def shown(capsys: pytest.CaptureFixture[str], db: Path) -> dict[str, object]:
    code, out, _ = run(capsys, "show", THREAD, "--db", db, "--json")
    assert code == 0
    found: dict[str, object] = json.loads(out)
    return found


def test_an_import_named_with_name_never_reads_the_role(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    ingest = ("ingest", EXPORT, "--tail", "40,80", "--line", "96", "--db", db)
    assert run(capsys, *ingest, "--name", "user=Ana")[0] == 0
    show = shown(capsys, db)
    nodes = show["nodes"]
    assert isinstance(nodes, list) and nodes
    assert all(not USER.search(n["text"]) for n in nodes)
    assert {n["generation"] for n in nodes} == {1}
    code, prompt, _ = run(capsys, "prompt", THREAD, "--db", db)
    assert code == 0 and "Ana: " in prompt and not re.search(r"(?m)^(\d+\+\d+\|)?user: ", prompt)
    code, hits, _ = run(capsys, "search", THREAD, "logo", "--db", db)
    assert code == 0 and "Ana: Here is my shop front" in hits and not USER.search(hits)
    code, old, _ = run(capsys, "zoom", THREAD, "0+1", "--generation", "0", "--db", db, "--json")
    assert code == 0
    assert json.loads(old)["text"].startswith("user: What time")
    assert json.loads(old)["generations"] == [0, 1]


def test_ingest_refuses_a_name_before_storing_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    for bad in ("nobody=Ana", "user=assistant"):
        code, _, err = run(capsys, "ingest", EXPORT, "--db", db, "--name", bad)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
    with pytest.raises(SystemExit) as stopped:
        run(capsys, "ingest", EXPORT, "--db", db, "--name", "user=")
    assert stopped.value.code == 2 and "a name must be" in capsys.readouterr().err
    assert run(capsys, "threads", "--db", db)[1].count(THREAD[:8]) == 0


def test_rename_then_its_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.sqlite"
    assert run(capsys, "ingest", EXPORT, "--tail", "40,80", "--db", db)[0] == 0
    code, out, _ = run(capsys, "rename", "user", "Ana", "--thread", THREAD, "--db", db)
    assert code == 0 and out.startswith("'user' is shown as 'Ana' in thread")
    for argv in (("user", ""), ("nobody", "Zoe"), ("user", "assistant")):
        code, out, err = run(capsys, "rename", *argv, "--db", db)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err


def test_reconsolidate_dry_run_counts_the_calls_it_makes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    argv = ("ingest", DATA.parent.parent / "examples" / "launch.jsonl", "--db", db)
    assert run(capsys, *argv, "--tail", "40,80", "--line", "64")[0] == 0
    again = ("reconsolidate", "t", "0+8", "--depth", "4", "--summarizer", "scripted", "--db", db)
    code, dry, _ = run(capsys, *again, "--dry-run")
    assert code == 0
    code, done, _ = run(capsys, *again)
    assert code == 0
    calls = int(dry.split()[0])
    assert calls > 0 and done.startswith(f"{calls} model calls, ")
    show = shown_thread(capsys, db, "t")
    assert any(n["generation"] == 1 and re.fullmatch(r"S[\d+]+", str(n["text"])) for n in show)


def shown_thread(
    capsys: pytest.CaptureFixture[str], db: Path, thread: str
) -> list[dict[str, object]]:
    code, out, _ = run(capsys, "show", thread, "--db", db, "--json")
    assert code == 0
    nodes: list[dict[str, object]] = json.loads(out)["nodes"]
    return nodes


@pytest.mark.slow
def test_reconsolidate_stops_with_one_line_when_the_summarizer_cannot_be_reached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "h.sqlite"
    argv = ("ingest", DATA.parent.parent / "examples" / "launch.jsonl", "--db", db)
    assert run(capsys, *argv, "--tail", "40,80", "--line", "64")[0] == 0
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = ("--summarizer", "openai:gpt-4.1-nano")
    again = ("reconsolidate", "t", "0+8", "--depth", "4", *model, "--db", db)
    code, out, err = run(capsys, *again, "--max-failures", "2")
    assert code == 2 and out == ""
    assert err.strip().splitlines()[-1].startswith("chat-outline: summarizer ")
    assert "failed 2 times; nothing was written" in err
    assert all(n["generation"] == 0 for n in shown_thread(capsys, db, "t"))
