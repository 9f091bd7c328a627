"""`chat-outline prompt`, `zoom`, `search` and `messages`: what an agent of a thread reads, and
its stored messages, read only.

What is stored but not yet processed is shown whole, as an agent is sent it. The store is read
through a `ReadOnly`: nothing is summarized or written, so no budget applies and no summarizer
is named.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

import anyio

from ..contract import format_at
from ._options import THREAD_HELP, Commands, command, db_option, json_option, positive
from ._output import print_json, say
from ._stores import must_exist

if TYPE_CHECKING:
    from ..agent.rendering import Rendered
    from ..plugin import History, Reading, ReadOnly


def register(commands: Commands) -> None:
    prompt = command(
        commands, "prompt", _run(_prompt), help="exactly what an agent of the thread is sent"
    )
    prompt.add_argument("thread", help=THREAD_HELP)
    prompt.add_argument(
        "--agent",
        help="whose view: its messages are its own turns (by default the thread's agent, when it "
        "has one; '' for nobody's)",
    )
    prompt.add_argument(
        "--model",
        help="also show the request this model's provider would receive (openai:gpt-5.6, "
        "openai-chat:gpt-4.1-mini, anthropic:claude-sonnet-4-5), recorded offline: its JSON "
        "body on stdout, its tokens, cache marks and cached prefix on stderr",
    )
    db_option(prompt)
    json_option(prompt)

    zoom = command(
        commands, "zoom", _run(_zoom), help="open a line into the two under it, or a message"
    )
    zoom.add_argument("thread", help=THREAD_HELP)
    zoom.add_argument("label", help="a node's label, such as 0+8, or a message's, such as 12+1")
    zoom.add_argument("--page", type=positive, default=1, help="the page of a long message (1)")
    zoom.add_argument(
        "--agent", default="", help="whose step tree a step label (s4+2) opens: that agent's"
    )
    zoom.add_argument(
        "--generation",
        type=int,
        metavar="N",
        help="the node itself as it read in generation N (0: as first written; see "
        "docs/generations.md)",
    )
    db_option(zoom)
    json_option(zoom)

    search = command(
        commands, "search", _run(_search), help="the lines and messages that hold some words"
    )
    search.add_argument("thread", help=THREAD_HELP)
    search.add_argument("words", nargs="+")
    search.add_argument("--limit", type=positive, default=10, help="the most results shown (10)")
    search.add_argument(
        "--agent", default="", help="also search this agent's own steps and step lines"
    )
    db_option(search)
    json_option(search)

    messages = command(
        commands, "messages", _run(_messages), help="a thread's stored messages, a page at a time"
    )
    messages.add_argument("thread", help=THREAD_HELP)
    messages.add_argument(
        "--after", type=int, default=-1, metavar="SEQ", help="the page after this seq (the first)"
    )
    messages.add_argument("--limit", type=positive, default=50, help="messages a page (50)")
    db_option(messages)
    json_option(messages)


Read = Callable[["ReadOnly", str, argparse.Namespace], Awaitable[None]]
"""One of the read commands, given the store, read only, and the thread named."""


def _run(read: Read) -> Callable[[argparse.Namespace], int]:
    """The command that carries out `read` on the thread named."""

    def run(args: argparse.Namespace) -> int:
        anyio.run(_read, read, args)
        return 0

    return run


async def _read(read: Read, args: argparse.Namespace) -> None:
    async with thread_read(args.db, args.thread) as (reader, thread):
        await read(reader, thread, args)


@asynccontextmanager
async def thread_read(db: str, name: str) -> AsyncIterator[tuple[ReadOnly, str]]:
    """The store opened read only, the thread `name` resolved, and the store with the settings
    the thread was built with (`as_built`)."""
    from ..plugin import ReadOnly
    from ._report import resolve

    must_exist(db)
    async with ReadOnly.opened(db) as reader:
        thread = await resolve(reader.store, name)
        yield await as_built(reader, thread), thread


@asynccontextmanager
async def thread_as_built(db: str, name: str) -> AsyncIterator[tuple[History, str]]:
    """A History that processes nothing, for a command that changes the thread `name` (taken by
    exact id or title only), opened with the settings the thread was built with (`as_built`,
    read first through a read-only handle)."""
    from ..plugin import History, ReadOnly
    from ._report import resolve

    must_exist(db)
    async with ReadOnly.opened(db) as reader:
        thread = await resolve(reader.store, name, exact=True)
        settings = (await as_built(reader, thread)).settings
    async with History(settings, store=db, process=False) as history:
        yield history, thread


async def as_built(reader: ReadOnly, thread: str) -> ReadOnly:
    """`reader` reading `thread` with the settings it was built with (its outline's bounds
    close its blocks, its tokenizer counts) but for its summarizer: the offline one stands in,
    never asked, so a read names no key. `reader` itself for a thread with no settings
    recorded."""
    from ..settings import built_with

    record = next((a.settings for a in await reader.store.about(thread) if a.settings), None)
    if record is None:
        return reader
    settings = built_with(record, reader.settings).with_changes(summarizer="echo")
    return replace(reader, settings=settings)


async def _prompt(history: Reading, thread: str, args: argparse.Namespace) -> None:
    agent = (args.agent or None) if args.agent is not None else await only_agent(history, thread)
    if args.agent is None and agent is not None:
        say(f"{agent}'s view: the thread's agent (--agent names another, --agent '' nobody)")
    await print_prompt(history, thread, agent=agent, as_json=args.json, model=args.model)


async def _zoom(history: Reading, thread: str, args: argparse.Namespace) -> None:
    from ..agent.lookup import zoom

    if args.generation is not None:
        await _zoom_generation(history, thread, args)
        return
    opened = await zoom(history, thread, args.label, agent=args.agent or None, page=args.page)
    if args.json:
        print_json(
            {
                "thread": thread,
                "label": opened.label,
                "level": opened.level,
                "index": opened.index,
                "page": opened.page,
                "pages": opened.pages,
                "lines": [{"label": n.label, "text": n.text} for n in opened.lines],
                "message": None if opened.message is None else opened.message.id,
                "text": opened.text,
            }
        )
    else:
        sys.stdout.write(f"{opened.text}\n")


async def _zoom_generation(history: Reading, thread: str, args: argparse.Namespace) -> None:
    from ..agent._earlier import version
    from ..lines import one_line

    found = await version(history, thread, args.label, args.generation, agent=args.agent or None)
    if args.json:
        print_json(
            {
                "thread": thread,
                "label": found.label,
                "level": found.level,
                "index": found.index,
                "generation": found.generation,
                "generations": list(found.generations),
                "form": found.form,
                "fallback": found.fallback,
                "text": found.text,
            }
        )
    else:
        sys.stdout.write(f"{found.label}#{found.generation}|{one_line(found.text)}\n")


async def _search(history: Reading, thread: str, args: argparse.Namespace) -> None:
    from ..agent.lookup import search

    query = " ".join(args.words)
    hits = await search(history, thread, query, limit=args.limit, agent=args.agent or None)
    if args.json:
        print_json(
            {
                "thread": thread,
                "query": query,
                "hits": [
                    {
                        "label": h.label,
                        "level": h.level,
                        "index": h.index,
                        "text": h.text,
                        "at": format_at(h.at),
                        "message": h.message,
                        "terms": list(h.terms),
                    }
                    for h in hits
                ],
            }
        )
        return
    if not hits:
        say("nothing found")
    # A message found through the ones next to it holds none of the words: it says so.
    near = "  (next to a hit: it holds none of the words)"
    sys.stdout.write("".join(f"{h.label}|{h.text}{'' if h.terms else near}\n" for h in hits))


async def _messages(history: Reading, thread: str, args: argparse.Namespace) -> None:
    from ..lines import one_line
    from ._report import stored_json

    page = await history.store.messages_after(thread, args.after, args.limit + 1)
    after = page[args.limit - 1].seq if len(page) > args.limit else None
    del page[args.limit :]
    if args.json:
        print_json({"thread": thread, "messages": [stored_json(s) for s in page], "next": after})
        return
    for s in page:
        m = s.message
        to = f" → {m.to}" if m.to else ""
        kind = " (step)" if m.step else ""
        said = f"{m.author}{to}{kind}: {one_line(m.text)}"
        sys.stdout.write(f"{s.seq:>6}  {format_at(m.at)}  {said}\n")
    if after is not None:
        say(f"more: --after {after}")


async def only_agent(history: Reading, thread: str) -> str | None:
    """The agent whose view `prompt` shows when none is named: the one author that makes tool
    steps (in the tail, or with a step outline of its own) or, among the messages sent whole,
    is called `assistant`; None when there are none or several (those are named on stderr)."""
    from ..ingest import ASSISTANT

    snapshot = await history.store.snapshot(thread)
    if snapshot is None:
        return None
    whole = snapshot.tail
    agents = sorted(
        {s.message.author for s in whole if s.message.step or s.message.author == ASSISTANT}
        | set(snapshot.outline.steps)
    )
    if len(agents) > 1:
        say(
            f"thread {thread!r} has agents {', '.join(agents)}: showing nobody's view "
            "(name one with --agent)"
        )
    return agents[0] if len(agents) == 1 else None


def prompt_json(thread: str, agent: str | None, result: Rendered) -> dict[str, object]:
    """What `prompt --json` prints of a rendered view."""
    shown: dict[str, object] = {
        "thread": thread,
        "agent": agent,
        "text": result.text,
        "tokens": result.tokens,
        "bytes": result.bytes,
    }
    if (request := result.request) is not None:
        m = request.measured
        shown["request"] = {
            "model": m.model,
            "tokens": m.tokens,
            "bytes": m.bytes,
            "marks": m.marks,
            "max_marks": m.max_marks,
            "cached": m.cached,
            "minimum": m.minimum,
            "reaches": m.reaches,
            "body": request.body,
        }
    return shown


async def print_prompt(
    history: Reading,
    thread: str,
    *,
    agent: str | None,
    as_json: bool = False,
    model: str | None = None,
) -> None:
    """The prompt on stdout exactly as sent; its size on stderr, so a pipe gets the prompt only.

    With `model`, the request body that model's provider would receive instead, and its figures.
    """
    from ..agent.rendering import render_view

    result = await render_view(history, thread, agent=agent, model=model)
    request = result.request
    if as_json:
        print_json(prompt_json(thread, agent, result))
        return
    if request is not None:
        sys.stdout.write(json.dumps(request.body, ensure_ascii=False, indent=2) + "\n")
        sys.stdout.flush()
        print(request.measured.summary(), file=sys.stderr)
        return
    sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
    sys.stdout.flush()
    print(f"{result.tokens} tokens, {result.bytes} bytes", file=sys.stderr)
