"""Processes for the claim tests: each opens the store with a short lease.

    python -m tests.leasing ingest URL FILE.jsonl LEASE GATE  # store and process messages
    python -m tests.leasing slow URL LEASE                     # a worker taking its time

`GATE` is a directory: an ingesting process, once open, leaves a file there named for its
process id, and starts storing once a file `go` is there, so that the processes store at once.

Each prints, when it ends, how many times its summarizer was asked (`{"replies": N}`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from history import Echo, History, Message, Reply, Task
from history.store import Store
from history.store.sqlite import SQLiteStore

from .workers import SETTINGS


def leased(url: str, lease: float) -> Store:
    """The store at `url` (a SQLite path or a PostgreSQL URL), each claim lasting `lease` s."""
    if url.startswith("postgresql://"):
        from history.store.postgres import PostgresStore

        return PostgresStore(url, lease=lease)
    return SQLiteStore(url, lease=lease)


class Counted(Echo):
    """Echo that counts the replies it makes (slowly, with `pause`)."""

    def __init__(self, pause: float = 0.0) -> None:
        super().__init__()
        self.pause = pause
        self.replies = 0

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.replies += 1
        await anyio.sleep(self.pause)
        return await super().reply(task, prompts, answers)


async def _ingest(url: str, lines: list[str], lease: float, gate: Path) -> int:
    model = Counted()
    async with History(SETTINGS, store=leased(url, lease), model=model) as history:
        (gate / str(os.getpid())).touch()
        while not (gate / "go").exists():  # noqa: ASYNC110 (made by another process)
            await anyio.sleep(0.01)
        for line in lines:
            await history.message_created(Message.from_json(json.loads(line)))
    return model.replies


async def _slow(url: str, lease: float) -> int:
    from history._worker import serve

    model = Counted(pause=0.05)
    history = History(SETTINGS, store=leased(url, lease), model=model, process=False)
    await serve(history, poll=0.05)
    return model.replies


if __name__ == "__main__":
    command, url, *rest = sys.argv[1:]
    if command == "ingest":
        lines = Path(rest[0]).read_text(encoding="utf-8").splitlines()
        replies = anyio.run(_ingest, url, lines, float(rest[1]), Path(rest[2]))
    else:
        replies = anyio.run(_slow, url, float(rest[0]))
    print(json.dumps({"replies": replies}), flush=True)
