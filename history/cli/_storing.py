"""Writing what was read: checked against the store, then handed to the plugin in file order.

The `ingest` command's (and the demo's) part that writes: the reading itself is
`history.ingest`'s, which never loads the plugin or the store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract import Message
from ..errors import SummarizerError
from ..ingest import Parsed, Problem

if TYPE_CHECKING:
    from ..breaker import Health
    from ..plugin import History
    from ..store import Store

STOPPED = 128 + 15
"""The exit status of a command stopped by SIGTERM (what it had stored is kept)."""


def fail_fast(max_failures: int) -> dict[str, Any]:
    """The `History` arguments of a command that stops when the summarizer is down (a refused
    key, an unknown model, or `max_failures` failures in a row) instead of writing fallback
    lines: its threads stop where they are, their messages pending. See `check_up`."""
    return {"max_failures": max_failures, "when_down": "stop"}


def check_up(history: History) -> None:
    """After `history.wait()` with `fail_fast`: a one-line SummarizerError when the summarizer
    was down, saying why and that what was stored is kept."""
    health = history.health()
    if health.state == "closed":
        return
    why = (
        "refused what waiting will not mend"
        if health.permanent
        else (f"failed {health.failures} times in a row")
    )
    raise SummarizerError(
        f"summarizer {history.summarizer.name!r} {why} (last: {health.last_error}); stopped, "
        "keeping what was stored: its messages are processed at the next run once it answers"
    )


def health_line(health: Health) -> str:
    """The summarizer's health as a running process's summary line ends (`; summarizer open
    since ... (last: ...), 3 fallback lines`); nothing while all is well."""
    if health.state == "closed" and not health.fallbacks:
        return ""
    state: str = health.state
    if health.since is not None and state != "closed":
        state += f" since {health.since:%Y-%m-%d %H:%M:%S}Z (last: {health.last_error})"
    lines = f"{health.fallbacks:,} fallback line{'s' * (health.fallbacks != 1)}"
    return f"; summarizer {state}, {lines}"


async def until_sigterm(work: Callable[[], Awaitable[int]]) -> int:
    """`work()`, or STOPPED once a SIGTERM comes: the work is cancelled (a History in it leaves
    as on any cancellation: bounded, every stored message not yet processed kept pending)."""
    import signal
    import threading

    import anyio

    from ._output import say

    if threading.current_thread() is not threading.main_thread():
        return await work()  # signals reach the main thread only (a command run in a test)
    code = STOPPED
    with anyio.open_signal_receiver(signal.SIGTERM) as signals, anyio.CancelScope() as work_scope:
        try:
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    async for _ in signals:
                        work_scope.cancel()
                        return

                group.start_soon(watch)
                code = await work()
                group.cancel_scope.cancel()
        except BaseExceptionGroup as errors:  # the work's own error, as itself
            if len(errors.exceptions) == 1:
                raise errors.exceptions[0] from None
            raise
    if code == STOPPED:
        say("stopped by SIGTERM: what was stored is kept, and processed at the next run")
    return code


@dataclass(kw_only=True)
class Tally:
    """What ingesting one file did."""

    new: int = 0
    """Messages stored."""
    known: int = 0
    """Messages already stored as they are (a redelivery changes nothing)."""
    erased: int = 0
    """Threads erased by `thread.deleted` records."""


async def conflicts(
    store: Store, files: Sequence[Parsed], *, advance: Callable[[], object] = lambda: None
) -> list[tuple[Path, Problem]]:
    """Records whose id the store, or an earlier record, holds with other content.

    Checked before anything is written, so that a conflict leaves the store as it was. A thread
    erased earlier in the run starts again, so the ids it held are free from there on.
    """
    found: list[tuple[Path, Problem]] = []
    seen: dict[str, Message] = {}
    erased: set[str] = set()
    for parsed in files:
        for record in parsed.records:
            advance()
            event = record.event
            if not isinstance(event, Message):
                erased.add(event.thread)
                seen = {id: m for id, m in seen.items() if m.thread != event.thread}
                continue
            known = seen.get(event.id)
            if known is None:
                stored = await store.message(event.id)
                if stored is not None and stored.message.thread not in erased:
                    known = stored.message
            if known is not None and known.content != event.content:
                reason = (
                    f"id {event.id!r} is already stored with other content "
                    f"(thread {known.thread!r}); the stored message is kept"
                )
                found.append((parsed.path, Problem(where=record.where, reason=reason)))
                continue
            seen[event.id] = event
    return found


async def strays(store: Store, files: Sequence[Parsed]) -> dict[str, int]:
    """Per thread, the stored messages that a whole-conversation file no longer holds.

    A ChatGPT export, a pydantic-ai history or a chat list holds its whole conversation, so a
    stored message it lacks was on a branch since edited or regenerated away (the store keeps
    every message it was given; erasing the thread and ingesting again follows the new branch).
    """
    ids: dict[str, set[str]] = {}
    for parsed in files:
        if parsed.format == "jsonl":
            continue  # a log: it may hold only the newest messages
        for record in parsed.records:
            if isinstance(record.event, Message):
                ids.setdefault(record.event.thread, set()).add(record.event.id)
    found: dict[str, int] = {}
    for thread, held in ids.items():
        stored = await store.messages(thread, 0, 2**62)
        gone = sum(s.message.id not in held for s in stored)
        if gone:
            found[thread] = gone
    return found


async def name_threads(store: Store, parsed: Parsed) -> None:
    """Give the threads a file wrote their titles (a title renamed since is updated)."""
    written = {r.event.thread for r in parsed.records if isinstance(r.event, Message)}
    for thread, title in parsed.titles.items():
        if thread in written:
            await store.describe(thread, title=title)


async def store_all(
    history: History, parsed: Parsed, *, advance: Callable[[], object] = lambda: None
) -> Tally:
    """Hand a file's records to the plugin in order; `advance` is called after each."""
    tally = Tally()
    for record in parsed.records:
        event = record.event
        if isinstance(event, Message):
            if await history.message_created(event) is None:
                tally.known += 1
            else:
                tally.new += 1
        else:
            await history.thread_deleted(event.thread)
            tally.erased += 1
        advance()
    return tally
