"""Every command that prints takes `--json` and prints one JSON document on stdout: the commands
that write (ingest, export, load, erase, rebuild, retract), the demo and serve."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from history.cli import main, parser

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "launch.jsonl"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """The one JSON document the command prints on stdout."""
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A store holding the example chat as thread `t`."""
    path = str(tmp_path / "h.sqlite")
    assert main(["ingest", str(EXAMPLE), "--tail", "40,80", "--db", path]) == 0
    return path


def test_every_command_takes_json() -> None:
    (commands,) = (a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    without = [
        name
        for name, command in commands.choices.items()
        if not any("--json" in a.option_strings for a in command._actions)
    ]
    assert without == []


def test_ingest_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "h.sqlite")
    done = run(capsys, "ingest", str(EXAMPLE), "--tail", "40,80", "--db", path)
    assert done["store"] == path and done["threads"] == 1 and done["summarizer"] == "echo"
    (file,) = done["files"]
    assert file["file"] == str(EXAMPLE) and file["new"] == file["messages"] > 0
    assert done["processed"] == file["messages"] and file["known"] == file["erased"] == 0
    again = run(capsys, "ingest", str(EXAMPLE), "--db", path)
    assert again["files"][0]["known"] == file["messages"] and again["processed"] == 0


def test_export_and_load_json(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "t.jsonl")
    exported = run(capsys, "export", "t", "--out", out, "--db", db)
    assert exported == {
        "out": out,
        "threads": 1,
        "records": len(Path(out).read_text().splitlines()),
    }
    other = str(tmp_path / "other.sqlite")
    loaded = run(capsys, "load", out, "--db", other)
    assert loaded["store"] == other and loaded["threads"] == 1 and loaded["skipped"] == 0
    assert loaded["written"] == exported["records"] - 1  # all but the export's header
    assert run(capsys, "load", out, "--db", other)["written"] == 0
    assert main(["export", "--out", "-", "--db", db, "--json"]) == 2  # stdout is the export's
    assert "write the export to a file" in capsys.readouterr().err


def test_erase_json(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    figures = run(capsys, "threads", "--db", db)["threads"][0]
    erased = run(capsys, "erase", "t", "--db", db)
    assert erased == {"thread": "t", "messages": figures["messages"], "lines": figures["nodes"]}


def test_rebuild_json(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    same = run(capsys, "rebuild", "t", "--db", db)
    assert same["thread"] == "t" and same["recorded"] and same["changed"] == {}
    assert same["model_calls"] == 0 and same["dry_run"] is False and same["nodes"] > 0
    bigger = run(capsys, "rebuild", "t", "--tail", "60,120", "--dry-run", "--db", db)
    assert bigger["changed"] == {"tail": {"was": [40, 80], "now": [60, 120]}}
    assert bigger["dry_run"] is True


@pytest.mark.slow
def test_demo_json_is_show_and_prompt_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "demo.sqlite")
    demo = run(capsys, "demo", "--db", path)
    assert demo["store"] == path
    assert demo["show"] == run(capsys, "show", "launch", "--db", path)
    assert demo["prompt"] == run(capsys, "prompt", "launch", "--agent", "north", "--db", path)
    assert run(capsys, "demo")["store"] is None  # a temporary store


def test_serve_json_gives_its_address(
    db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", lambda self: None)
    assert run(capsys, "serve", "--port", "9999", "--db", db) == {
        "store": db,
        "url": "http://127.0.0.1:9999/",
    }
