"""Rebuild a thread's tree and outline from its messages, answering from its pinned calls.

After a change of `line`, `tail` or `outline`, a thread is processed again from its first
message on a scratch copy (an in-memory SQLite store holding its messages and recorded calls,
with no summaries and a fresh outline), every line asked of a `Replay` of its calls. A dry run
comes first, with a stand-in answering each miss, to count the model calls the rebuild would
make; unless they are allowed, a rebuild that needs any is refused, naming the count, and
nothing changes. The result is swapped into the store in one transaction
(`load_records(replace=True)`): the messages stay, the summaries and the outline are replaced,
and a call the rebuild made is recorded. With unchanged settings the result is byte-identical
to what incremental processing wrote. A line that fell back to a cut (its ask kept failing) is
asked again when model calls are allowed, and a dry run counts it; without them it is replayed
as the same cut.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pydantic_ai.models import Model

from ._checks import argument_text
from ._generations import carried
from ._lane import BATCH, process_one
from .contract import Ask, Outline, Reply, Stored, Task
from .errors import ConfigurationError, NotFoundError, RebuildRefused, StoreError, UnpinnedError
from .pins import Replay, model_key, pinned
from .processors.summarize import Nodes, boundaries
from .settings import HistorySettings, built_with, recorded
from .store import Store
from .store._records import ThreadRecords
from .store.sqlite import SQLiteStore
from .summarizer import (
    OFFLINE,
    Echo,
    Scripted,
    Summarizer,
    checked_summarizer,
    request,
    summarizer_for,
    summarizer_key,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Rebuilt:
    """What a rebuild did (or, for a dry run, would do)."""

    thread: str
    messages: int
    """Messages processed again."""
    asks: int
    """Lines the summarizer was asked for."""
    replayed: int
    """Requests answered from recorded calls."""
    model_calls: int
    """Requests sent to the model; for a dry run, the calls it would make with model calls
    allowed (exactly for the offline models; for another model one per line that no recorded
    call answers or that fell back, and it may need more when an answer comes back too long)."""
    summaries: int
    """Nodes in the rebuilt tree."""
    outline: Outline
    """The rebuilt outline."""
    written: bool
    """The result replaced the thread's summaries and outline (False for a dry run)."""


async def rebuild(
    store: Store,
    thread: str,
    settings: HistorySettings | None = None,
    *,
    model: Model | Summarizer | None = None,
    allow_model_calls: bool = False,
    dry_run: bool = False,
    force: bool = False,
    call_timeout: float = 60.0,
) -> Rebuilt:
    """Rebuild `thread` in the open `store` with `settings`, replaying its recorded calls.

    Args:
        store: an open store.
        thread: the thread to rebuild.
        settings: the budgets to rebuild with (and the summarizer whose calls are replayed);
            None for those the thread was built with, as its store recorded them. They are
            recorded as the thread's settings once the rebuild is written.
        model: the summarizer to use instead of the one `settings` names, as for `History`.
        allow_model_calls: ask the model for lines that no recorded call answers.
        dry_run: only count what the rebuild would do; nothing is written.
        force: go ahead even when the rebuilt outline covers fewer messages than the stored one
            (the lines of the rest are dropped).
        call_timeout: seconds one model request may take.

    Raises:
        NotFoundError: the store holds no message of the thread.
        ConfigurationError: no `settings` were given and the store has none recorded for it.
        UnpinnedError: the rebuild would call the model and that was not allowed; its `calls`
            says how often. Nothing was changed.
        SummarizerError: a model call failed; nothing was changed.
        StoreError: the thread changed while it was rebuilt; nothing was changed.
        RebuildRefused: the rebuild would leave summarized messages without a line, and
            `force` was not given; nothing was changed.
    """
    argument_text("thread", thread)
    await store.outline(thread)  # a thread whose outline a crash left unwritten gets it now
    original = await store.export_thread(thread)
    if original is None or not original.messages or original.outline is None:
        raise NotFoundError(f"thread {thread!r} has no messages in the store {store.url!r}")
    if settings is None:
        record = next((a.settings for a in await store.about(thread) if a.settings), None)
        if record is None:
            raise ConfigurationError(
                f"thread {thread!r} has no recorded settings (it was first processed before "
                "they were kept): give the settings to rebuild it with"
            )
        settings = built_with(record, HistorySettings(summarizer="echo"))
    summarizer: Summarizer | None = None
    if isinstance(model, Model):
        summarizer = summarizer_for(
            model, settings=settings.model_settings, instructions=settings.instructions
        )
    elif model is not None:
        summarizer = checked_summarizer(model)
    name = summarizer.name if summarizer is not None else settings.summarizer
    own = "" if summarizer is None else summarizer_key(summarizer)
    key = model_key(name, settings.model_settings, settings.instructions, own)
    calls = pinned(original.calls, key)
    fresh = ThreadRecords(thread=thread, messages=original.messages, calls=original.calls)

    async def run(replay: Replay) -> tuple[ThreadRecords, list[Ask]]:
        rerun = _Rerun(settings=settings, replay=replay, key=key, call_timeout=call_timeout)
        return await rerun.process(fresh)

    # The offline models answer a dry run exactly and for free; any other is stood in for.
    offline: Summarizer | None = summarizer if isinstance(summarizer, Echo | Scripted) else None
    if summarizer is None and settings.summarizer in OFFLINE:
        offline = summarizer_for(settings.summarizer)
    # A line that fell back is asked again when calls are allowed, and counted by a dry run.
    retry = allow_model_calls or dry_run
    replay = Replay(offline or _StandIn(name, settings.line), calls, retry_fallbacks=retry)
    result, asks = await run(replay)
    needed = replay.misses
    if needed and not (allow_model_calls or dry_run):
        text = _refusal(thread, needed, original, key, exact=offline is not None)
        raise UnpinnedError(text, calls=needed)
    if needed and not dry_run and offline is None:
        if summarizer is None:
            summarizer = summarizer_for(
                settings.summarizer,
                settings=settings.model_settings,
                instructions=settings.instructions,
            )
        replay = Replay(summarizer, calls)
        result, asks = await run(replay)
    assert result.outline is not None
    lost = original.outline.boundary - result.outline.boundary
    if lost > 0 and not (force or dry_run):
        # A larger tail than the thread had would quietly throw lines away.
        raise RebuildRefused(
            f"rebuilding thread {thread!r} with these settings would leave {lost} of its "
            f"{original.outline.boundary} summarized messages without a line (a larger tail "
            "than it was built with?); nothing was changed. Rebuild it with the settings it "
            "was built with (leave the options out), or force it (--force, force=True)"
        )
    if not dry_run:
        generations, shown = await carried(store, original, result)
        swapped = replace(
            result,
            outline=replace(
                result.outline, epoch=original.outline.epoch, version=original.outline.version
            ),
            generations=generations,
            shown=shown,
        )
        await store.load_records([swapped], replace=True)
        await store.describe(thread, settings=recorded(settings))
    log.info(
        "thread %r: rebuilt from %d messages, %d lines asked, %d replayed, %d model calls%s",
        thread,
        len(original.messages),
        len(asks),
        replay.hits,
        replay.misses,
        " (dry run)" if dry_run else "",
        extra={"chat_thread": thread},
    )
    return Rebuilt(
        thread=thread,
        messages=len(original.messages),
        asks=len(asks),
        replayed=replay.hits,
        model_calls=replay.misses,
        summaries=len(result.summaries),
        outline=result.outline,
        written=not dry_run,
    )


def _refusal(thread: str, needed: int, original: ThreadRecords, key: str, *, exact: bool) -> str:
    calls = "call" if needed == 1 else "calls"
    text = (
        f"rebuilding thread {thread!r} would make {needed} model {calls} for lines that no "
        f"recorded call answers{'' if exact else ' (about: an answer may come back too long)'}; "
        "nothing was changed. Allow them with --allow-model-calls (allow_model_calls=True)"
    )
    others = [c for c in original.calls if c.model != key]
    if others:
        names = sorted({c.model.split("\n", 1)[0] for c in others})
        text += (
            f". {len(others)} of its recorded calls were made by another model or with other "
            f"model settings ({', '.join(names)}): rebuild with the same summarizer to replay them"
        )
    return text


class _StandIn:
    """Answers a miss in a dry run with a line of exactly `line` bytes.

    A full line is the largest a model could give, so every merge above it is asked (and
    counted) as it could be with the model's real answer.
    """

    def __init__(self, name: str, line: int) -> None:
        self.name = name
        self._line = "x" * line

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        return Reply(text=self._line)


@dataclass(frozen=True, kw_only=True)
class _Rerun:
    """Processing a thread again, as the plugin does, with every line asked of a replay."""

    settings: HistorySettings
    replay: Replay
    key: str
    """The model key the calls it makes are recorded under."""
    call_timeout: float

    async def process(self, fresh: ThreadRecords) -> tuple[ThreadRecords, list[Ask]]:
        """Process the thread from scratch on an in-memory copy: its records, the asks made."""
        scratch = SQLiteStore(":memory:")
        await scratch.open()
        try:
            await scratch.load_records([fresh])
            state = await scratch.outline(fresh.thread)
            assert state is not None
            asks: list[Ask] = []
            while batch := await scratch.messages_after(fresh.thread, state.position, BATCH):
                for stored in batch:
                    state = await self._step(scratch, state, stored, asks)
            result = await scratch.export_thread(fresh.thread)
        finally:
            await scratch.close()
        assert result is not None
        return result, asks

    async def _step(self, store: Store, state: Outline, stored: Stored, made: list[Ask]) -> Outline:
        """One message, exactly as the plugin processes it."""
        nodes = Nodes(
            state.thread,
            lambda agent, level, index: store.summary(state.thread, level, index, agent=agent),
            boundaries=boundaries(state),
        )
        done = await process_one(
            store,
            state,
            stored,
            nodes=nodes,
            read=store.message,
            ask=self._ask,
            settings=self.settings,
            model_key=self.key,
        )
        if done is None:
            raise StoreError(f"thread {state.thread!r}: the scratch copy changed under the rebuild")
        work, asks = done
        made.extend(asks)
        return work

    async def _ask(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        return await request(self.replay, task, prompts, answers, seconds=self.call_timeout)
