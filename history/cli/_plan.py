"""The settings a thread was built with, as the commands use them.

A thread's settings (its budgets, its summarizer, its encoding) are recorded in its store when
it is first processed, and again by a rebuild. From then on:

- `ingest` and `demo` continue a thread with its own settings: an option left out takes the
  thread's value, not the default. An option given with another value is refused, naming the
  difference, unless `--rebuild` is given: then the thread's new messages are stored and it is
  rebuilt with the settings given (its recorded calls replayed, the model asked for the rest).
- `rebuild` defaults to the recorded settings; an option given replaces its value.

`History` and `worker` keep the same rule (`history._adopting`): a thread recorded with other
settings is refused, unless they adopt their own for it (as `--rebuild` does here, before the
rebuild).

Threads processed before settings were recorded have none: the options, the environment and
the defaults apply to them, as before.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..contract import Message
from ..errors import ConfigurationError
from ..ingest import Parsed
from ..settings import HistorySettings, built_with, differences, listed
from ..store import Store
from ._stores import opened


@dataclass(frozen=True, kw_only=True)
class Plan:
    """The settings a run of `ingest` or `demo` builds with, and what it rebuilds after."""

    settings: HistorySettings
    rebuild: Mapping[str, Mapping[str, tuple[object, object]]] = field(default_factory=dict)
    """The threads to rebuild once their new messages are processed: for each, the settings
    that differ, as (recorded, given)."""


async def plan_run(
    db: str,
    files: Sequence[Parsed],
    settings: HistorySettings,
    given: Mapping[str, Any],
    *,
    rebuild: bool,
) -> Plan:
    """The settings for storing `files` in `db`: `settings` (the options given over the
    environment and the defaults), with the recorded settings of the threads the files add to
    put back where no option was given. ConfigurationError, before anything is written, when a
    given option differs from a thread's record and `rebuild` is not set."""
    if "://" not in db and db != ":memory:" and not await anyio.Path(db).exists():
        return Plan(settings=settings)  # a new store: nothing is recorded yet
    threads = {r.event.thread for f in files for r in f.records if isinstance(r.event, Message)}
    async with opened(db, create=True) as store:
        records = await recorded(store, threads)
    return choose(records, settings, given, rebuild=rebuild)


async def recorded(store: Store, threads: Collection[str]) -> dict[str, str]:
    """The recorded settings of those of `threads` that have them."""
    return {a.thread: a.settings for a in await store.about() if a.thread in threads and a.settings}


def choose(
    records: Mapping[str, str],
    settings: HistorySettings,
    given: Mapping[str, Any],
    *,
    rebuild: bool,
) -> Plan:
    """See `plan_run`: `records` are the recorded settings of the threads a run adds to."""
    distinct = set(records.values())
    if len(distinct) == 1:
        settings = built_with(next(iter(distinct)), settings).with_changes(**given)
    changed = {t: d for t, r in sorted(records.items()) if (d := differences(r, settings))}
    if changed and not rebuild:
        thread, differ = next(iter(changed.items()))
        was = listed({name: old for name, (old, _) in differ.items()})
        now = listed({name: new for name, (_, new) in differ.items()})
        more = len(changed) - 1
        others = f" (and {more} more thread{'s' if more > 1 else ''})" if more else ""
        apart = (
            "; the threads it adds to were built with different settings: ingest their files apart"
            if len(distinct) > 1
            else ""
        )
        raise ConfigurationError(
            f"thread {thread!r} was built with {was}, not {now}{others}: its new messages would "
            "be summarized otherwise than its old ones, whose lines would stay as they are. Pass "
            f"--rebuild to rebuild it with {now}, or leave those options out to keep its own"
            f"{apart}; nothing was written"
        )
    return Plan(settings=settings, rebuild=changed)
