"""`chat-outline simulate FILE --json`: the trace, bad lines on stderr, settings from the env."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from history import ConfigurationError, HistorySettings, settings_from_env
from history.cli import main

GOOD = {
    "id": "1",
    "thread": "t",
    "author": "Ana",
    "to": "north",
    "text": "hi",
    "at": "2026-11-01T10:00:00+01:00",
}


def run(
    tmp_path: Path, lines: list[bytes], capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[dict[str, Any], str]:
    """The trace `simulate --json` prints for `lines`, and what it said on stderr."""
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert main(["simulate", str(path), "--json", *args]) == 0
    out, err = capsys.readouterr()
    trace: dict[str, Any] = json.loads(out)
    return trace, err


def test_bad_lines_are_reported_with_their_number_and_leave_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        json.dumps(GOOD).encode(),
        b"\xff\xfe not utf-8",
        b"[1, 2]",
        b"{not json",
        json.dumps({"event": "thread.archived", "thread": "t"}).encode(),
        json.dumps({**GOOD, "id": "2", "at": "2026-11-01T10:00:00"}).encode(),
        json.dumps({**GOOD, "id": "3", "text": "\\ud800"}).encode().replace(b"\\\\", b"\\"),
        json.dumps({**GOOD, "text": "edited"}).encode(),
        json.dumps({**GOOD, "id": "4", "files": [{"name": "a", "size": True}]}).encode(),
        json.dumps({**GOOD, "id": "5", "step": "no"}).encode(),
    ]
    trace, err = run(tmp_path, lines, capsys)
    reported = [line.split(":")[1] for line in err.splitlines()]
    assert reported == ["2", "3", "4", "5", "6", "7", "8", "9", "10"]
    assert "not UTF-8" in err and "unknown event 'thread.archived'" in err
    assert "already stored with other content" in err and "files.size" in err
    (outline,) = trace["outlines"]
    assert [t[0] for t in outline["tail"]] == ["1"]
    assert trace["asks"] == [] and trace["summaries"] == []


def test_a_deleted_thread_leaves_the_trace_but_its_asks_stay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = "word " * 40
    lines = [
        json.dumps(
            {**GOOD, "id": str(k), "text": long, "at": f"2026-11-01T10:{k:02d}:00Z"}
        ).encode()
        for k in range(4)
    ]
    lines.append(json.dumps({"event": "thread.deleted", "thread": "t"}).encode())
    lines.append(json.dumps({**GOOD, "thread": "u"}).encode())
    trace, _ = run(tmp_path, lines, capsys, "--line", "64", "--tail", "10,20", "--kept", "1")
    assert [a["thread"] for a in trace["asks"]] == ["t"] * 4  # three lines and a merge
    assert trace["summaries"] == []
    assert [o["thread"] for o in trace["outlines"]] == ["u"]
    (outline,) = trace["outlines"]
    assert outline["lines"] == [] and outline["gone"] is None and outline["since"]


def test_history_tail_sets_the_default_and_an_explicit_tail_beats_it() -> None:
    assert settings_from_env({"HISTORY_TAIL": "40,80"}).tail == (40, 80)
    assert settings_from_env({"HISTORY_TAIL": "40,80"}, tail=(5, 9)).tail == (5, 9)
    assert settings_from_env({}).tail == (16_000, 48_000)
    with pytest.raises(ConfigurationError, match="HISTORY_TAIL"):
        settings_from_env({"HISTORY_TAIL": "40"})


def test_a_setting_given_as_none_is_given_not_left_out() -> None:
    assert settings_from_env({}, steps=None).steps is None
    assert settings_from_env({}).steps == (16_000, 32_000)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"summarizer": ""}, "summarizer"),
        ({"tail": (80, 40)}, "tail"),
        ({"tail": (40, 40)}, "tail"),
        ({"outline": (10, 5)}, "outline"),
        ({"line": 63}, "at least 64"),
        ({"kept": 0}, "kept"),
        ({"tries": -1}, "tries"),
        ({"tail": (0, 10)}, r"tail\[0\]"),
        ({"line": True}, "line"),
        ({"outline": (1, 2, 3)}, "outline"),
        ({"cold": 0}, "cold must be a positive number of seconds"),
        ({"cold": -5.0}, "cold"),
        ({"cold": True}, "cold"),
        ({"cold": "300"}, "cold"),
        ({"cold": float("nan")}, "cold"),
        ({"cold": float("inf")}, "cold"),
    ],
)
def test_settings_that_cannot_work_are_refused(changes: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        HistorySettings(**{"summarizer": "echo", **changes})  # type: ignore[arg-type]


def test_a_bad_tail_flag_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["simulate", str(tmp_path / "x.jsonl"), "--tail", "40"])
    assert exited.value.code == 2
    assert "--tail must be two whole numbers" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["0", "-1", "soon", "nan"])
def test_a_bad_cold_flag_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["simulate", str(tmp_path / "x.jsonl"), "--cold", text])
    assert exited.value.code == 2
    assert f"--cold: must be a number of seconds above 0, got {text!r}" in capsys.readouterr().err


def test_an_unreadable_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
