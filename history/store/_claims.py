"""Claims on threads across processes that share a store: one processor per thread at a time.

A claim is a lease, a row of the `lease` table (migration 0060), the same on SQLite and on
PostgreSQL: taken in a write transaction of its own when a thread's processing starts, renewed
every third of its length while it goes on and by every commit of the thread, and given up when
it ends or when the store closes. The database's clock says when it lapses. A process that dies,
or is stopped (SIGSTOP), renews nothing: once its lease lapses, the next process to claim the
thread takes it over. A process that wakes up after that commits nothing of the thread: each
commit renews the lease in its own transaction, and finds it taken (`ClaimLapsedError`), so its
batch is rolled back and left to the new holder. A lease names the host and the process that
holds it, so the leases of a process that died on this host (a crash, then a restart) are taken
over at once.

A claim tells its holder whether another process had the thread since this one last held it
(`Claim.others`, so the holder reads the thread afresh), and, once given up, whether another
asked for it meanwhile (and left the messages it stored to the holder, which looks for them).

Claims save work; they are not what keeps the data right: every commit still checks the outline's
epoch and version, so a lost claim costs at most a batch done twice, never a batch written twice.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from ..errors import ClosedError, ConfigurationError, StoreError
from ._adapter import Database, Transaction

log = logging.getLogger(__name__)

LEASE = 30.0
"""Seconds a claim lasts unless renewed: how long the threads of a process that stopped or died
wait before another takes them over."""


GIVE_UP = 1.0
"""Seconds a lease taken by a cancelled claim is given up in, at most (a store that hangs, a
full disk, must not hold a History's exit)."""


class ClaimLapsedError(StoreError):
    """This process's claim on a thread lapsed and another took it over: the commit is refused."""


@dataclass(kw_only=True)
class Claim:
    """A claim's outcome: true when granted."""

    granted: bool
    others: bool = False
    """Another process held the thread since this one last did, or asked for it while this one
    held it: what this process keeps of the thread may be stale, and what others stored of it
    waits for this one."""

    def __bool__(self) -> bool:
        return self.granted


class Claims:
    """This process's claims on the threads of one store."""

    def __init__(self, database: Database, *, lease: float = LEASE) -> None:
        """Args:
        database: the store's database, whose own transactions take and renew the leases.
        lease: seconds a claim lasts unless renewed.
        """
        if isinstance(lease, bool) or not isinstance(lease, int | float) or not lease > 0:
            raise ConfigurationError(f"a lease must last more than 0 seconds, got {lease!r}")
        self._database, self.lease = database, lease
        self._owner = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex}"
        """Who holds the leases this store takes: the host, the process, and one name per
        store, so that two stores of one process claim apart."""
        self._held: set[str] = set()

    @asynccontextmanager
    async def claim(self, thread: str) -> AsyncIterator[Claim]:
        """Hold the thread while the block runs: a true `Claim` when this process got it (a
        second claim of a thread this process holds is refused too)."""
        if thread in self._held:
            yield Claim(granted=False)
            return
        self._held.add(thread)  # before waiting: a claim of it meanwhile is refused
        try:
            claim = await self._database.run(lambda tx: self._take(tx, thread), mode="write")
        except BaseException as exc:
            self._held.discard(thread)
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                # Cancelled (a History leaving), the take may have committed its row all the
                # same: give it up, or the thread would wait a whole lease for the next open.
                with anyio.move_on_after(GIVE_UP, shield=True):
                    await self._release(thread)
            raise
        if not claim:
            self._held.discard(thread)
            yield claim
            return
        failed: BaseException | None = None
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._renewing, thread)
                try:
                    yield claim
                except BaseException as exc:
                    # Raised again below, as it came: not in the renewing task's group.
                    failed = exc
                group.cancel_scope.cancel()
        finally:
            self._held.discard(thread)
            with anyio.CancelScope(shield=True):
                claim.others |= await self._release(thread)
        if failed is not None:
            raise failed

    async def check(self, tx: Transaction, thread: str) -> None:
        """In a commit's transaction: renew this process's lease on the thread, if it holds one;
        ClaimLapsedError when another process took it over."""
        if thread in self._held and not await self._renew(tx, thread):
            raise ClaimLapsedError(
                f"thread {thread!r}: this process's claim lapsed and another took the thread "
                "over; it carries on from what is committed"
            )

    async def close(self) -> None:
        """Give up every lease this store holds (a store that closes processes nothing)."""
        if self._held:
            self._held.clear()
            try:
                await self._database.run(
                    lambda tx: tx.execute("release_leases", owner=self._owner), mode="write"
                )
            except StoreError as exc:
                log.warning("giving up the claims failed (%s); they lapse by themselves", exc)

    async def _take(self, tx: Transaction, thread: str) -> Claim:
        before = await tx.one("lease", thread=thread)
        if before is not None and _died(before["owner"]):
            await tx.execute("release_lease", thread=thread, owner=before["owner"])
        taken = await tx.execute("take_lease", thread=thread, owner=self._owner, seconds=self.lease)
        if not taken:
            await tx.execute("want_lease", thread=thread)
            return Claim(granted=False)
        return Claim(granted=True, others=before is not None and before["owner"] != self._owner)

    async def _renew(self, tx: Transaction, thread: str) -> bool:
        renewed = await tx.execute(
            "renew_lease", thread=thread, owner=self._owner, seconds=self.lease
        )
        return renewed == 1

    async def _renewing(self, thread: str) -> None:
        """Renew the lease every third of its length; stop once another took it over."""
        while True:
            await anyio.sleep(self.lease / 3)
            try:
                if not await self._database.run(lambda tx: self._renew(tx, thread), mode="write"):
                    log.warning(
                        "thread %r: this process's claim lapsed and another took the thread over",
                        thread,
                        extra={"chat_thread": thread},
                    )
                    return
            except StoreError as exc:  # the database is away for a moment: try again
                log.warning(
                    "thread %r: renewing the claim failed (%s)",
                    thread,
                    exc,
                    extra={"chat_thread": thread},
                )

    async def _release(self, thread: str) -> bool:
        """Give up the lease: whether another process asked for the thread meanwhile (or took
        it over)."""

        async def release(tx: Transaction) -> bool:
            found = await tx.one("lease", thread=thread)
            await tx.execute("release_lease", thread=thread, owner=self._owner)
            return found is not None and (found["owner"] != self._owner or bool(found["wanted"]))

        try:
            return await self._database.run(release, mode="write")
        except ClosedError:
            return False  # the store closed first, and gave its leases up
        except StoreError as exc:
            log.warning(
                "thread %r: giving up the claim failed (%s); it lapses by itself",
                thread,
                exc,
                extra={"chat_thread": thread},
            )
            return True


def _died(owner: str) -> bool:
    """Whether the lease's holder was a process of this host that is no longer running."""
    host, _, rest = owner.partition("/")
    pid = rest.partition("/")[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # running as another user's, or no process id
        return False
    return False
