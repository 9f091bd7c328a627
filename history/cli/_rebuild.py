"""`chat-outline rebuild THREAD`: rebuild a thread's tree and outline from its messages,
replaying its recorded calls; the model is asked only with `--allow-model-calls`.

A rebuild refused because it would call the model (or leave lines out, without `--force`)
exits with status 3.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import anyio

from ..errors import RebuildRefused, UnpinnedError
from ._options import (
    EXACT_THREAD_HELP,
    Commands,
    budgets,
    command,
    db_option,
    failures_option,
    given_budgets,
    json_option,
    settings_of,
)
from ._output import print_json
from ._stores import must_exist, opened

if TYPE_CHECKING:
    from ..settings import HistorySettings
    from ..summarizer import Persistent

CALL_TIMEOUT = 60.0
"""Seconds one model request may take."""
REFUSED = 3
"""The exit status of a rebuild refused because it would call the model."""


def register(commands: Commands) -> None:
    rebuild = command(
        commands,
        "rebuild",
        _run,
        help="rebuild a thread's tree and outline from its messages, replaying recorded calls",
    )
    rebuild.add_argument("thread", help=EXACT_THREAD_HELP)
    rebuild.add_argument(
        "--allow-model-calls",
        action="store_true",
        help="ask the model for lines that no recorded call answers (refused otherwise)",
    )
    rebuild.add_argument(
        "--dry-run", action="store_true", help="count what the rebuild would do; change nothing"
    )
    rebuild.add_argument(
        "--force",
        action="store_true",
        help="rebuild even when it leaves summarized messages without a line (a larger tail)",
    )
    db_option(rebuild)
    json_option(rebuild)
    budgets(rebuild)
    failures_option(rebuild)


def _run(args: argparse.Namespace) -> int:
    must_exist(args.db)
    settings = settings_of(args)
    try:
        return anyio.run(_rebuild, args, settings)
    except (UnpinnedError, RebuildRefused) as exc:
        print(f"chat-outline: {exc}", file=sys.stderr)
        return REFUSED


async def _rebuild(args: argparse.Namespace, settings: HistorySettings) -> int:
    """With the settings the thread was built with, but those the options give."""
    from ..rebuilding import rebuild
    from ..settings import built_with, differences, listed
    from ._report import resolve

    async with opened(args.db) as store:
        thread = await resolve(store, args.thread, exact=True)
        record = next((a.settings for a in await store.about(thread) if a.settings), None)
        if record is not None:
            settings = built_with(record, settings).with_changes(**given_budgets(args))
        model = persistent(settings, args.max_failures) if args.allow_model_calls else None
        done = await rebuild(
            store,
            thread,
            settings,
            model=model,
            allow_model_calls=args.allow_model_calls,
            dry_run=args.dry_run,
            force=args.force,
            call_timeout=CALL_TIMEOUT if model is None else model.longest,
        )
    changed = differences(record, settings) if record is not None else {}
    if args.json:
        print_json(
            {
                "thread": done.thread,
                "dry_run": args.dry_run,
                "messages": done.messages,
                "nodes": done.summaries,
                "lines": len(done.outline.lines),
                "bytes": done.outline.bytes,
                "asks": done.asks,
                "replayed": done.replayed,
                "model_calls": done.model_calls,
                "recorded": record is not None,
                "changed": {name: {"was": old, "now": new} for name, (old, new) in changed.items()},
            }
        )
        return 0
    verb = "would rebuild" if args.dry_run else "rebuilt"
    calls = "would make" if args.dry_run else "made"
    if record is None:
        how = f"with {listed(_budgets_of(settings))} (no settings were recorded for it)"
    elif changed:
        now = listed({name: new for name, (_, new) in changed.items()})
        was = listed({name: old for name, (old, _) in changed.items()})
        how = f"with {now} (built with {was})"
    else:
        how = "with the settings it was built with"
    print(
        f"{verb} thread {done.thread!r} {how} from {done.messages} messages: {done.summaries} "
        f"lines in the tree, {len(done.outline.lines)} in the outline ({done.outline.bytes} "
        f"bytes); {done.asks} lines asked, {done.replayed} answers replayed, {calls} "
        f"{done.model_calls} model calls"
    )
    return 0


def persistent(settings: HistorySettings, max_failures: int) -> Persistent | None:
    """The model `settings` names, asked again after a transient failure (`--max-failures`),
    resolved (its key read) only when a call is needed; None for an offline summarizer."""
    from ..summarizer import OFFLINE, Persistent, summarizer_for

    if settings.summarizer in OFFLINE:
        return None
    model = summarizer_for(
        settings.summarizer,
        settings=settings.model_settings,
        instructions=settings.instructions,
        deferred=True,
    )
    return Persistent(model, max_failures=max_failures, timeout=CALL_TIMEOUT)


def _budgets_of(settings: HistorySettings) -> dict[str, object]:
    return {
        "line": settings.line,
        "tail": settings.tail,
        "outline": settings.outline,
        "kept": settings.kept,
    }
