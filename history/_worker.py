"""A worker: processes the threads of a shared store until it is told to stop.

Web servers open `History(..., process=False)` and only store; any number of workers, on any
machines, open the same PostgreSQL store and process (or, on one machine, the same SQLite
file). Each thread is claimed by one worker at a time (a lease in the database, given up when
its worker stops and lapsing when it dies), so threads spread over the workers, and each is
processed in `seq` order.

A worker looks for threads with unprocessed messages every `poll` seconds. On SIGTERM or SIGINT
it stops looking and lets the batches in flight finish, for at most `grace` seconds; a second
signal, or the end of the grace, cancels them. A cancelled batch commits nothing, and another
worker starts it again: nothing is lost and nothing is written twice.

A database that is away for a while (a restart, a network cut) is looked for again at each
poll, and the worker goes on when it is back; a store that is gone (its database, schema or
tables dropped) ends the worker with `StoreGoneError` instead.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator

import anyio

from .errors import ConfigurationError, StoreError, StoreGoneError
from .plugin import History
from .summarizer import Deferred

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGTERM, signal.SIGINT)


async def serve(
    history: History, *, poll: float = 1.0, grace: float = 10.0, threads: int = 16
) -> None:
    """Open `history`, process its store's threads until a signal, then close it.

    Args:
        history: a History not yet opened, made with `process=False` (so that opening takes
            no thread: the threads are taken `threads` at a time); this opens and closes it.
        poll: seconds between looks for threads with unprocessed messages.
        grace: seconds the batches in flight may take to finish after the first signal.
        threads: the most threads this worker works on at once; the rest are left to the
            other workers (or to its next look).

    Raises:
        StoreGoneError: the store's database, schema or tables were dropped.
        ConfigurationError: at its first look, a thread recorded with other settings than the
            worker's (`history._adopting`), unless the History adopts its own.
    """
    for name, value, least in (("poll", poll, 0.001), ("grace", grace, 0), ("threads", threads, 1)):
        if value < least:
            raise ConfigurationError(f"the worker's {name} must be at least {least}, got {value!r}")
    if isinstance(history.summarizer, Deferred):
        history.summarizer.resolve()  # a missing key stops the worker before it opens
    with anyio.open_signal_receiver(*SIGNALS) as signals, anyio.CancelScope() as everything:
        async with history:
            log.info(
                "worker on %r with %r: looking for work every %.2fs",
                history.store.url,
                history.summarizer.name,
                poll,
            )
            gone: list[StoreGoneError | ConfigurationError] = []
            async with anyio.create_task_group() as group:

                async def look() -> None:
                    try:
                        gone.append(await _poll(history, poll, threads))
                    except ConfigurationError as exc:  # threads recorded with other settings
                        gone.append(exc)
                    group.cancel_scope.cancel()

                group.start_soon(look)
                got = await _next(signals)
                group.cancel_scope.cancel()
            if gone:
                log.error("worker: %s", gone[0])
                raise gone[0]
            log.info("worker: %s, finishing the batches in flight (%.0fs at most)", got, grace)

            async def force() -> None:
                with anyio.move_on_after(grace):
                    got = await _next(signals)
                    log.info("worker: %s again, stopping now", got)
                everything.cancel()

            async with anyio.create_task_group() as group:
                group.start_soon(force)
                await history.wait()
                group.cancel_scope.cancel()
    if everything.cancelled_caught:
        log.info("worker: batches in flight were cancelled; another worker will redo them")
    log.info("worker stopped: %r", history.counters)


async def _poll(history: History, every: float, threads: int) -> StoreGoneError:
    """Look for work every `every` seconds until the store is gone."""
    while True:
        try:
            await history.catch_up(limit=threads)
        except StoreGoneError as exc:
            return exc
        except StoreError as exc:  # the database is away for a moment: look again later
            log.warning("worker: looking for work failed (%s)", exc)
        await anyio.sleep(every)


async def _next(signals: AsyncIterator[signal.Signals]) -> str:
    async for received in signals:
        return received.name
    return "signals closed"
