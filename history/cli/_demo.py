"""`chat-outline demo`: a bundled planning chat, ingested with small budgets, then shown.

The chat (`history/data/demo.jsonl`) was written for this project: four weeks of a founder
planning a product launch with an assistant, with names, prices, dates and ids settled early,
some long messages and a few tool steps. With a small tail and outline its tree is deep, so the
demo shows cuts, merges and folds on the offline summarizer, in a few seconds.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from functools import partial
from importlib import resources
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import anyio

from ..settings import FORMER_TAIL_VARIABLE, TAIL_VARIABLE, HistorySettings
from ._ingest import write_files
from ._options import (
    Commands,
    budgets,
    command,
    given_budgets,
    json_option,
    positive,
    rebuild_option,
    settings_of,
)
from ._output import log_to_stderr, out, print_json
from ._prompt import print_prompt, prompt_json
from ._stores import opened

TAIL = (400, 800)
"""Tokens: about a dozen messages whole, so most of the chat leaves the tail."""
OUTLINE = (1_200, 2_400)
"""Bytes: room for about fifteen lines, so the outline folds again and again."""
LINE = 160
DEPTH = 2
THREAD = "launch"
AGENT = "north"
"""The assistant of the chat: the prompt shown is what it is sent."""


def register(commands: Commands) -> None:
    demo = command(
        commands,
        "demo",
        _demo,
        help="ingest a bundled planning chat with a small tail, and show its history",
        description=f"The demo's own defaults: --tail {TAIL[0]},{TAIL[1]} (or CHAT_OUTLINE_TAIL), "
        f"--outline {OUTLINE[0]},{OUTLINE[1]}, --line {LINE}; a temporary store unless --db.",
    )
    demo.add_argument("--db", help="keep the demo's store in this SQLite file (temporary)")
    demo.add_argument(
        "--depth", type=positive, default=DEPTH, help=f"levels drawn under each top node ({DEPTH})"
    )
    json_option(demo)
    budgets(demo)
    rebuild_option(demo)


def _demo(args: argparse.Namespace) -> int:
    """Into `--db` when given (kept), else into a temporary store."""
    log_to_stderr()
    given = given_budgets(args)
    settings = settings_of(args)
    if "tail" not in given and not any(map(os.environ.get, (TAIL_VARIABLE, FORMER_TAIL_VARIABLE))):
        settings = settings.with_changes(tail=TAIL)
    if "outline" not in given:
        settings = settings.with_changes(outline=OUTLINE)
    if "line" not in given:
        settings = settings.with_changes(line=LINE)
    if args.db is not None:
        show = partial(show_demo, as_json=args.json)
        return anyio.run(show, settings, args.db, args.depth, args.db, given, args.rebuild)
    with TemporaryDirectory(prefix="chat-outline-demo-") as scratch:
        db = str(Path(scratch) / "demo.sqlite")
        where = "temporary (keep it with --db demo.sqlite)"
        show = partial(show_demo, as_json=args.json, kept=False)
        return anyio.run(show, settings, db, args.depth, where, given, args.rebuild)


async def show_demo(
    settings: HistorySettings,
    db: str,
    depth: int,
    where: str,
    given: Mapping[str, Any],
    rebuild: bool,
    *,
    as_json: bool = False,
    kept: bool = True,
) -> int:
    """Ingest the chat into `db`, then show it (`as_json`: as one JSON document; the store's
    path in it null unless `kept`). A store where the demo ran before keeps the settings it was
    built with (options given otherwise are refused, unless `rebuild`)."""
    from ..ingest import read
    from ..plugin import History
    from . import _report as report
    from ._plan import plan_run

    with resources.as_file(resources.files("history") / "data" / "demo.jsonl") as path:
        parsed = read(path)
    plan = await plan_run(db, [parsed], settings, given, rebuild=rebuild)
    settings = plan.settings
    if as_json:
        await write_files([parsed], plan, db, False, quiet=True)
        return await _demo_json(settings, db if kept else None, db)
    console = out()
    console.rule("chat-outline demo")
    console.print(
        f"A planning chat of {parsed.messages} messages, ingested with a tail of "
        f"{settings.tail[0]:,} to {settings.tail[1]:,} tokens, an outline of "
        f"{settings.outline[0]:,} to {settings.outline[1]:,} bytes and lines of "
        f"{settings.line} bytes, summarized by {settings.summarizer!r}.",
        markup=False,
    )
    await write_files([parsed], plan, db, False, quiet=True)
    async with opened(db, read_only=True) as store:
        snap = await report.snapshot(store, THREAD)
    console.print(f"The store: {where}", markup=False)
    console.print(report.threads_table([report.figures(snap)]))
    console.print(report.show(snap, depth=depth))
    if settings.summarizer == "echo":
        console.print(
            "The offline echo summarizer writes these lines by copying and cutting; name a "
            "model with --summarizer (openai:gpt-4.1-nano, with OPENAI_API_KEY set) for real "
            "summaries.",
            markup=False,
        )
    console.rule(f"what {AGENT} is sent now")
    async with History(settings, store=db) as history:
        await print_prompt(history, THREAD, agent=AGENT)
    return 0


async def _demo_json(settings: HistorySettings, kept: str | None, db: str) -> int:
    """The demo's thread as `show --json` gives it, and what north is sent as `prompt --json`."""
    from ..agent.rendering import render_view
    from ..plugin import History
    from . import _report as report

    async with History(settings, store=db) as history:
        snap = await report.snapshot(history.store, THREAD)
        rendered = await render_view(history, THREAD, agent=AGENT)
    shown = report.show_json(snap)
    print_json({"store": kept, "show": shown, "prompt": prompt_json(THREAD, AGENT, rendered)})
    return 0
