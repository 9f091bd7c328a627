"""The rebuild, export, load and stats commands, run as a user runs them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest

from history import HistorySettings
from history.cli import main

from ..chats import SMALL, ingest, long_chat

pytestmark = pytest.mark.slow

BUDGETS = ["--line", "96", "--tail", "80,240", "--outline", "300,700", "--kept", "2"]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of two threads written by `echo` with small budgets."""
    path = tmp_path_factory.mktemp("written") / "chat-outline.sqlite"
    settings = HistorySettings(summarizer="echo", **SMALL)
    chat = long_chat(150) + long_chat(60, thread="u", seed=4)
    anyio.run(lambda: ingest(chat, settings, store=str(path)))
    return path


@pytest.fixture
def db(written: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the written store, for one test; the environment's tail does not apply."""
    monkeypatch.delenv("HISTORY_TAIL", raising=False)
    return Path(shutil.copy(written, tmp_path / written.name))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err


def test_export_load_and_rebuild_carry_a_store_without_model_calls(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump, other = tmp_path / "dump.jsonl", str(tmp_path / "other.sqlite")
    status, _, err = run(capsys, "export", "--out", str(dump), "--db", str(db))
    assert status == 0 and err.startswith("exported 2 thread(s), ")
    records = len(dump.read_text(encoding="utf-8").splitlines()) - 1

    assert run(capsys, "load", str(dump), "--db", other) == (
        0,
        f"loaded 2 thread(s): {records} records written, 0 already stored\n",
        "",
    )
    assert run(capsys, "load", str(dump), "--db", other)[1] == (
        f"loaded 2 thread(s): 0 records written, {records} already stored\n"
    )
    status, out, _ = run(capsys, "rebuild", "t", "--db", other, *BUDGETS)
    assert status == 0 and out.endswith("made 0 model calls\n")

    status, out, _ = run(capsys, "export", "u", "--out", "-", "--db", other)
    assert status == 0 and all(json.loads(line)["kind"] for line in out.splitlines())
    assert {json.loads(line).get("thread") for line in out.splitlines()} == {None, "u"}


def test_a_rebuild_that_needs_the_model_is_refused_unless_allowed(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    smaller = [
        "--db",
        str(db),
        "--line",
        "80",
        "--tail",
        "80,240",
        "--outline",
        "300,700",
        "--kept",
        "2",
    ]
    status, out, _ = run(capsys, "rebuild", "t", "--dry-run", *smaller)
    assert status == 0 and out.startswith(
        "would rebuild thread 't' with line 80 (built with line 96) from 150 messages"
    )
    calls = int(out.rsplit("would make ", 1)[1].split()[0])
    assert calls > 0

    status, out, err = run(capsys, "rebuild", "t", *smaller)
    assert (status, out) == (3, "")
    assert err.startswith(f"chat-outline: rebuilding thread 't' would make {calls} model calls")

    status, out, _ = run(capsys, "rebuild", "t", "--allow-model-calls", *smaller)
    assert status == 0 and out.endswith(f"made {calls} model calls\n")


def test_stats_show_calls_tokens_and_cost_per_thread(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "stats", "--db", str(db), "--json", "--input-price", "0.5")
    meter = json.loads(out)
    assert status == 0 and [t["thread"] for t in meter["threads"]] == ["t", "u"]
    assert meter["calls"] == sum(t["calls"] for t in meter["threads"]) > 0
    assert meter["input_price"] == 0.5 and meter["cost"] == 0.0  # echo reports no tokens

    status, out, _ = run(capsys, "stats", "--db", str(db))
    assert status == 0 and "summarizer calls" in out and "total" in out
    assert run(capsys, "stats", "--db", str(db), "--thread", "u", "--json")[1].count('"u"') == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["stats", "--db", "missing.sqlite"], "no store at 'missing.sqlite'"),
        (["rebuild", "nope"], "no thread 'nope' in 'chat-outline.sqlite'"),
        (["export", "nope", "--out", "x.jsonl"], "no thread 'nope' in 'chat-outline.sqlite'"),
        (["stats", "--thread", "nope"], "no thread 'nope' in 'chat-outline.sqlite'"),
        (["load", "absent.jsonl"], "cannot read 'absent.jsonl': No such file"),
        (["load", "bad.jsonl"], "bad.jsonl:1: not a chat-outline record"),
    ],
)
def test_a_mistake_is_a_message_and_a_status_never_a_traceback(
    db: Path,
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(db.parent)
    Path("bad.jsonl").write_text('{"kind": "summary"}\n', encoding="utf-8")
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, "")
    assert err.startswith(f"chat-outline: {message}")
    assert not Path("x.jsonl").exists() and not Path(".x.jsonl.partial").exists()
