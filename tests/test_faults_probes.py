"""Fault probes from outside the project: another process erasing a thread the app runs, hostile
`--out` paths and `--db` paths, destructive commands given a vague thread, a model answering
megabytes, ids past the limit, arguments of the wrong type, secrets in DEBUG logs, byte-order
marks and a crafted export. Each test fails on the code before its fix."""

from __future__ import annotations

import pytest

from history import History, HistorySettings

from .conftest import message
from .test_faults_input import cli

pytestmark = pytest.mark.anyio


async def test_an_erase_from_another_process_leaves_the_apps_thread_running(database: str) -> None:
    settings = HistorySettings(summarizer="echo", tail=(2, 4), kept=1)
    async with History(settings, store=database, pause=0.0) as history:
        for k in range(12):
            await history.message_created(message(k, f"old word {k}", thread="Y"))
        await history.wait()
        before = await history.outline("Y")
        assert before is not None and before.position == 11
        erased = cli("--db", database, "erase", "Y")
        assert erased.returncode == 0, erased.stderr
        for k in range(8):
            await history.message_created(message(100 + k, f"new word {k}", thread="Y"))
        await history.wait()
        after = await history.outline("Y")
    assert after is not None and after.epoch != before.epoch
    assert after.position == 7
    assert [m.id for m in after.tail][-1] == "Y-107" and len(after.tail) <= 4
