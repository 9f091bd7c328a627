"""A process killed between storing and processing, or mid-batch, loses nothing on restart."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from history import Ask, History
from history._trace import snapshot

from ..crashing import SETTINGS, conversation

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


async def reference(path: Path) -> dict[str, Any]:
    asks: list[Ask] = []
    async with History(SETTINGS, store=path, on_ask=asks.append) as history:
        for m in conversation():
            await history.message_created(m)
        await history.wait()
        return await snapshot(history, await history.store.calls())


async def restarted(path: Path) -> dict[str, Any]:
    async with History(SETTINGS, store=path) as history:
        await history.wait()  # opening it catches up on what was stored
        return await snapshot(history, await history.store.calls())


def crash(path: Path, mode: str) -> None:
    command = [sys.executable, "-m", "tests.crashing", str(path), mode]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if mode == "batch":
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL


@pytest.mark.parametrize("mode", ["stored", "batch"])
async def test_a_killed_process_loses_nothing_and_writes_nothing_twice(
    tmp_path: Path, mode: str
) -> None:
    expected = await reference(tmp_path / "reference.sqlite")
    path = tmp_path / "crashed.sqlite"
    crash(path, mode)

    import sqlite3

    with sqlite3.connect(path) as db:
        stored = db.execute("SELECT count(*) FROM message").fetchone()[0]
        (position,) = db.execute("SELECT position FROM outline").fetchone()
    assert stored == 30 and position < 29  # all stored, not all processed

    assert await restarted(path) == expected
    assert expected["asks"] and expected["outlines"][0]["lines"]
