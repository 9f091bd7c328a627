"""`--cold SECONDS` on the commands that build threads: simulate cuts at the pause with it and
not without it, and demo records it with the thread's settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from history.cli import _demo as demo

from ..conftest import run
from ..processor.test_budgets import paused


def test_simulate_cuts_at_a_pause_past_cold_and_not_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = paused(tmp_path)  # an hour's pause before the eleventh message
    options = ("--tail", "100,400", "--json")
    code, warm, _ = run(capsys, "simulate", chat, *options)
    assert code == 0
    code, cold, _ = run(capsys, "simulate", chat, *options, "--cold", "1800")
    assert code == 0
    assert json.loads(cold) != json.loads(warm)
    code, late, _ = run(capsys, "simulate", chat, *options, "--cold", "7200")
    assert code == 0 and json.loads(late) == json.loads(warm)  # no pause is past two hours


@pytest.mark.slow
def test_demo_records_cold_with_the_threads_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "demo.sqlite"
    assert run(capsys, "demo", "--cold", "300", "--db", db)[0] == 0
    code, out, _ = run(capsys, "show", demo.THREAD, "--db", db, "--json")
    assert code == 0 and json.loads(out)["settings"]["cold"] == 300.0
