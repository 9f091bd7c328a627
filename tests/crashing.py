"""A process that dies: run as `python -m tests.crashing DB MODE`, killed for real (SIGKILL).

MODE `stored`: stores the conversation and kills itself the moment the last message is
committed, before its processing can start. MODE `batch`: stores the conversation while a
summarizer that never answers holds a batch open, prints `ready`, and waits to be killed.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence

import anyio

from history import History, HistorySettings, Message, Scripted
from history.contract import Reply, Task

from .conftest import message

SETTINGS = HistorySettings(summarizer="scripted", line=64, tail=(30, 60), outline=(100, 200))


def conversation() -> list[Message]:
    return [
        message(
            k, f"{k}: " + "details and more details " * (k % 4), author="Ana" if k % 2 else "Bo"
        )
        for k in range(30)
    ]


class Stuck:
    name = "scripted"

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        if task.index >= 4:
            await anyio.sleep_forever()
        return await Scripted().reply(task, prompts, answers)


async def main(db: str, mode: str) -> None:
    messages = conversation()
    async with History(SETTINGS, store=db, model=Stuck()) as history:
        for m in messages:
            await history.message_created(m)
        if mode == "stored":
            os.kill(os.getpid(), signal.SIGKILL)
        print("ready", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], backend="asyncio")
