"""`python -m benchmarks.rename [--lines N] [--db PATH]`: how long a rename of a thread of N
lines takes (docs/generations.md), and that it asks the model nothing.

It builds a thread whose every message leaves the tail with a line (half of them long enough
to be asked of the summarizer, so both kinds of line are rewritten), then renames its person
and times it, on a counting summarizer that fails the run if it is asked anything then.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio

from history import History, HistorySettings, Message
from history.contract import Reply, Task

START = datetime(2026, 12, 1, 9, tzinfo=UTC)


class Counting:
    """Answers a short line naming the person; counts what it is asked."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.calls += 1
        return Reply(text=f"user asked about item {task.index} at level {task.level}")


def messages(count: int) -> list[Message]:
    said = "user asks about the item and its price, in a message long enough to be summarized "
    return [
        Message(
            id=f"m{k}",
            thread="t",
            author="user" if k % 2 == 0 else "assistant",
            to="assistant" if k % 2 == 0 else "user",
            text=said * 2 if k % 4 == 0 else f"note {k}",
            at=START + timedelta(seconds=k),
        )
        for k in range(count)
    ]


async def measure(lines: int, db: Path) -> dict[str, float]:
    counting = Counting()
    settings = HistorySettings(summarizer="echo", line=128, tail=(20, 40), kept=1)
    async with History(settings, store=db, model=counting, pause=0.0) as history:
        started = time.perf_counter()
        for m in messages(lines + 2):
            await history.message_created(m)
        await history.wait()
        built = time.perf_counter() - started
        nodes = await history.store.summaries("t")
        asked = counting.calls
        started, cpu = time.perf_counter(), time.process_time()
        rewritten = await history.rename("user", "Ana")
        took, took_cpu = time.perf_counter() - started, time.process_time() - cpu
        assert counting.calls == asked, "a rename asked the model"
    return {
        "lines": len(nodes),
        "rewritten": rewritten,
        "build seconds": round(built, 2),
        "rename seconds": round(took, 3),
        "rename CPU seconds": round(took_cpu, 3),
        "model calls": counting.calls - asked,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rename")
    parser.add_argument(
        "--lines",
        type=int,
        default=5_000,
        help="messages with a line (5,000: 10,000 lines with their merges)",
    )
    parser.add_argument("--db", type=Path, help="a SQLite path (a temporary one by default)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        db = args.db or Path(directory) / "rename.sqlite"
        found = anyio.run(measure, args.lines, db)
    for key, value in found.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
