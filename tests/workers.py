"""Processes for the shared-store tests: storers, workers, a slow worker; and the traces compared.

Run as a module, it is one of those processes:

    python -m tests.workers store URL FILE.jsonl   # store the messages, process nothing
    python -m tests.workers slow URL               # a worker whose summarizer takes its time
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

from history import Ask, Echo, History, HistorySettings, Message, Reply, Task
from history._trace import snapshot
from history.store import open_store

ROOT = Path(__file__).resolve().parent.parent

SETTINGS = HistorySettings(summarizer="echo", line=64, tail=(40, 80), outline=(200, 400), kept=2)
FLAGS = (
    "--summarizer",
    "echo",
    "--line",
    "64",
    "--tail",
    "40,80",
    "--outline",
    "200,400",
    "--kept",
    "2",
)
"""SETTINGS as the worker command takes them."""

WORDS = (
    "launch",
    "trailer",
    "budget",
    "Ana",
    "north",
    "December",
    "€120",
    "ID-4471",
    "✓",
    "naïve",
    "schedule",
    "the",
    "and",
    "we",
    "need",
    "a",
    "review",
    "😀",
)


def conversations(threads: Sequence[str], count: int, *, seed: int = 5) -> list[Message]:
    """`count` messages for each thread, mixed across threads: short and long, steps, files."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    out: list[Message] = []
    for n in range(count):
        for thread in threads:
            author = rng.choice(["Ana", "north", "Bo"])
            words = rng.choices(WORDS, k=rng.choice([2, 5, 9, 14, 30]))
            out.append(
                Message(
                    id=f"{thread}/{n}",
                    thread=thread,
                    author=author,
                    to="" if author == "Bo" else rng.choice(["Ana", "north"]),
                    text=" ".join(words) + ("\nsecond line" if rng.random() < 0.2 else ""),
                    at=start + timedelta(seconds=rng.randrange(100_000)),
                    step=rng.random() < 0.15,
                )
            )
    return out


def write_jsonl(path: Path, messages: Sequence[Message]) -> Path:
    with path.open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(m.to_json(), ensure_ascii=False) + "\n" for m in messages)
    return path


def spawn(*args: str, log: Path) -> subprocess.Popen[str]:
    """A process of this test run: its stdout kept, its stderr (logs) in `log`."""
    with log.open("w") as err:
        return subprocess.Popen(
            [sys.executable, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True
        )


def worker(url: str, log: Path, *flags: str) -> subprocess.Popen[str]:
    """`chat-outline worker` on the store, looking for work often."""
    return spawn(
        "-m",
        "history.cli",
        "worker",
        "--db",
        url,
        "--poll",
        "0.05",
        "--json",
        *FLAGS,
        *flags,
        log=log,
    )


def ready(process: subprocess.Popen[str], log: Path) -> None:
    """Wait until a worker looks for work."""
    wait_until(lambda: "looking for work" in log.read_text() or process.poll() is not None)
    assert process.poll() is None, log.read_text()


def stop(process: subprocess.Popen[str], log: Path) -> dict[str, int]:
    """SIGTERM a worker; it exits 0 and prints its counters."""
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 0, log.read_text()
    counters: dict[str, int] = json.loads(out.strip().splitlines()[-1])
    return counters


def wait_until(check: Callable[[], object], *, timeout: float = 60.0, every: float = 0.1) -> None:
    """Poll `check()` (sync) until it is true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"gave up after {timeout}s waiting for {check}"
        time.sleep(every)


async def _behind(url: str) -> list[str]:
    store = open_store(url)
    await store.open()
    try:
        return await store.behind()
    finally:
        await store.close()


def behind(url: str) -> list[str]:
    """Threads of the store with messages not yet processed."""
    return anyio.run(_behind, url)


async def _position(url: str, thread: str) -> int:
    store = open_store(url)
    await store.open()
    try:
        outline = await store.outline(thread)
        return -1 if outline is None else outline.position
    finally:
        await store.close()


def position(url: str, thread: str) -> int:
    return anyio.run(_position, url, thread)


async def _shared_trace(url: str) -> dict[str, Any]:
    history = History(SETTINGS, store=url, process=False)
    async with history:
        return await snapshot(history, await history.store.calls())


def shared_trace(url: str) -> dict[str, Any]:
    """The trace of what the workers wrote: asks from the recorded calls, by thread."""
    return anyio.run(_shared_trace, url)


async def _single_run(url: str) -> dict[str, Any]:
    source = open_store(url)
    await source.open()
    try:
        threads = {t: await source.messages(t, 0, 1 << 60) for t in await source.threads()}
    finally:
        await source.close()
    asks: list[Ask] = []
    async with History(SETTINGS, store=":memory:", on_ask=asks.append) as history:
        for stored in threads.values():
            for s in stored:
                await history.message_created(s.message)
            await history.wait()
        asks.sort(key=lambda a: a.thread)  # by thread, each thread's in the order made
        return await snapshot(history, asks)


def single_run(url: str) -> dict[str, Any]:
    """One in-process run over the store's messages, each thread's in its `seq` order."""
    return anyio.run(_single_run, url)


class Slow(Echo):
    """Echo, slowly: a worker killed while it waits is killed in the middle of a batch."""

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        await anyio.sleep(0.05)
        return await super().reply(task, prompts, answers)


async def _store(url: str, lines: list[str]) -> None:
    async with History(SETTINGS, store=url, process=False) as history:
        for line in lines:
            await history.message_created(Message.from_json(json.loads(line)))


async def _slow(url: str) -> None:
    from history._worker import serve

    await serve(History(SETTINGS, store=url, model=Slow(), process=False), poll=0.05)


if __name__ == "__main__":
    command, url, *rest = sys.argv[1:]
    if command == "store":
        anyio.run(_store, url, Path(rest[0]).read_text(encoding="utf-8").splitlines())
    else:
        anyio.run(_slow, url)
